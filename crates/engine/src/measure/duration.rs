//! Durations as a spec gives them (seconds, possibly fractional) in the
//! nanoseconds the harness counts.

use crate::error::{EngineError, Result};

/// Seconds (as the spec gives them) to nanoseconds, rejecting negatives and NaN.
pub fn secs_to_ns(field: &str, s: f64) -> Result<u64> {
    if !(s >= 0.0 && s.is_finite()) {
        return Err(EngineError::invalid(field, "must be a finite number of seconds >= 0"));
    }
    Ok((s * 1e9) as u64)
}
