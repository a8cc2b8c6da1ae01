/// An error raised by a model: invalid configuration caught late, or a simulated
/// resource exhausted.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A configuration value the model cannot honour.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Input the model cannot use (a DRAM request stream's line, naming the file and
    /// line; a stream generator's options).
    #[error("{0}")]
    Input(String),
    /// Simulated physical memory ran out.
    #[error("out of simulated physical memory: {0}")]
    OutOfMemory(String),
    /// A mapping request conflicts with the page table's contents.
    #[error("mapping conflict: {0}")]
    Conflict(String),
}
