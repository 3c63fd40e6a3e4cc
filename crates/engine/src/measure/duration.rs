//! Durations as a spec gives them (seconds, possibly fractional) in the
//! nanoseconds the harness counts.

use crate::error::{EngineError, Result};

/// The longest duration a spec may give: 10,000,000 s (about 116 days). Python refuses longer ones
/// first; the engine checks again so that no caller can hand it a time that overflows the clock.
pub const MAX_DURATION_S: f64 = 1e7;

/// Seconds (as the spec gives them) to nanoseconds, rejecting negatives, NaN, infinities and anything
/// beyond MAX_DURATION_S (an `as u64` of a larger product would saturate, and adding it to a clock wrap).
pub fn secs_to_ns(field: &str, s: f64) -> Result<u64> {
    if !(s >= 0.0 && s.is_finite()) {
        return Err(EngineError::invalid(field, "must be a finite number of seconds >= 0"));
    }
    if s > MAX_DURATION_S {
        return Err(EngineError::invalid(field, "must be at most 10000000 s (about 116 days)"));
    }
    Ok((s * 1e9) as u64)
}
