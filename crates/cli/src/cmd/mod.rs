pub mod bench;
pub mod convert;
pub mod demo;
pub mod probe;
pub mod sim;
