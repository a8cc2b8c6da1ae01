pub mod bench;
pub mod convert;
pub mod demo;
pub mod machines;
pub mod probe;
pub mod record;
pub mod sim;
pub mod trace_info;
