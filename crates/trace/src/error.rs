use std::path::PathBuf;

/// A trace could not be read. Names the input, the byte offset (or line) where reading
/// failed, and how many references were delivered before the damage.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The input is malformed or truncated at `offset`.
    #[error("{}: {what} at byte offset {offset}{}; {refs_before} references were read before it", path.display(), line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset in the (decompressed) stream where the problem was found.
        offset: u64,
        /// Line number for text formats.
        line: Option<u64>,
        /// What is wrong and, where useful, what to do.
        what: String,
        /// References successfully delivered before the damage.
        refs_before: u64,
    },
    /// The input could not be opened or read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error: in the message, and not repeated as the error's
        /// source (a chain printer such as anyhow's would print it twice).
        error: std::io::Error,
    },
    /// The trace's events are malformed (e.g. an unmap marker without its end).
    #[error("{trace}: {what}, after {refs_before} references")]
    Event {
        /// The trace (its description).
        trace: String,
        /// References delivered before the bad event.
        refs_before: u64,
        /// What is wrong.
        what: String,
    },
    /// A workload spec or format option is invalid.
    #[error("{0}")]
    Spec(String),
    /// A reference lies outside the user address space (`user_space::UserOnly`).
    #[error("{trace}: reference {index} (counted from 0) is at {addr:#x}, outside the {space} [0, {end:#x}): a kernel or non-canonical address that no user program can touch. Give `--outside-user drop` to drop and count such references, or cut them from the trace")]
    OutsideUser {
        /// The trace (its description).
        trace: String,
        /// The reference's index in the trace (references before it).
        index: u64,
        /// Its address.
        addr: u64,
        /// One past the last user address.
        end: u64,
        /// The address space's name.
        space: String,
    },
}

impl TraceError {
    /// References delivered before the error, when known.
    pub fn refs_before(&self) -> Option<u64> {
        match self {
            TraceError::Corrupt { refs_before, .. } | TraceError::Event { refs_before, .. } => Some(*refs_before),
            TraceError::OutsideUser { index, .. } => Some(*index),
            _ => None,
        }
    }
}
