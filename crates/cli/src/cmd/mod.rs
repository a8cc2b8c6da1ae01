pub mod convert;
pub mod demo;
pub mod sim;
