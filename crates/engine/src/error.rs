//! Engine errors: each says what went wrong and, where it can, what to do.

use std::fmt;

#[derive(Debug)]
pub enum EngineError {
    /// The job spec is wrong; `field` names the offending parameter.
    InvalidJob { field: String, message: String },
    /// A system call failed; `context` says what fsmeter was doing.
    Io { context: String, source: std::io::Error },
    /// A phase name the workload does not have.
    UnknownPhase { phase: String, known: Vec<&'static str> },
}

pub type Result<T> = std::result::Result<T, EngineError>;

impl EngineError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        EngineError::InvalidJob { field: field.into(), message: message.into() }
    }
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EngineError::Io { context: context.into(), source }
    }
    /// Errno-style result of a raw syscall return value.
    pub fn last_os(context: impl Into<String>) -> Self {
        EngineError::io(context, std::io::Error::last_os_error())
    }
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::InvalidJob { .. } => "invalid_job",
            EngineError::Io { .. } => "io",
            EngineError::UnknownPhase { .. } => "unknown_phase",
        }
    }
}

/// What fsmeter says when one of its names is a symbolic link it did not make.
pub const LINK_HINT: &str = "is a symbolic link fsmeter did not make: remove it or use an empty --dir";

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::InvalidJob { field, message } => write!(f, "{field}: {message}"),
            EngineError::Io { context, source } => {
                if source.raw_os_error() == Some(libc::ELOOP) {
                    // Under O_NOFOLLOW: a link stands where fsmeter names a file of its own.
                    return write!(f, "{context}: the name {}", LINK_HINT);
                }
                write!(f, "{context}: {source}")?;
                if source.raw_os_error() == Some(libc::ENOSPC) {
                    write!(f, " (the filesystem is full: use fewer or smaller files, or a larger target)")?;
                }
                Ok(())
            }
            EngineError::UnknownPhase { phase, known } => {
                write!(f, "unknown phase {phase:?}; this workload has: {}", known.join(", "))
            }
        }
    }
}

impl std::error::Error for EngineError {}
