//! The simulator's one error type.

/// Anything that can stop a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Invalid configuration (names the file and key).
    #[error("{0}")]
    Config(String),
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] mmulab_trace::TraceError),
    /// A model failed (e.g. simulated memory exhausted).
    #[error(transparent)]
    Model(#[from] mmulab_model::ModelError),
    /// A GPU model refused its input (names the BO, trace line, page or address).
    #[error("{0}")]
    Gpu(String),
}
