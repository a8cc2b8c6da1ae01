//! The one error type of the probe and benchmark library.

use thiserror::Error;

/// Everything that can go wrong while probing or benchmarking. Each variant carries a
/// message that names what failed and, where there is one, what to do about it.
#[derive(Debug, Error)]
pub enum ProbeError {
    /// The machine or OS cannot run this (not Linux, no such page size, ...).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A page size or facility exists but is not usable now (no hugetlb pool, THP never, ...).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Bad parameters given by the caller.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A system call or file access failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Drawing the plot failed.
    #[error("plot: {0}")]
    Plot(String),
}

impl ProbeError {
    /// An I/O error with context, from the current `errno`.
    pub fn last_os(context: impl Into<String>) -> Self {
        ProbeError::Io {
            context: context.into(),
            source: std::io::Error::last_os_error(),
        }
    }
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ProbeError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, ProbeError>;
