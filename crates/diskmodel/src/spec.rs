//! The drive description the model is built from (JSON, made by fsmeter from a profile file).
//!
//! Every field is a number a profile cites a source for; nothing here has a hidden default but
//! the ones documented on the field (a profile that leaves out an overhead says its sources give
//! none, and the model then adds none).

use serde::Deserialize;

/// A bad description, naming the field.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

pub(crate) fn bad<T>(msg: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(msg.into()))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriveSpec {
    pub name: String,
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// Recording surfaces (heads).
    pub surfaces: u32,
    /// Logical blocks the drive reports (its capacity); the zones may hold more (spares are not
    /// modelled), never fewer. Default: every sector of the zones.
    #[serde(default)]
    pub capacity_sectors: Option<u64>,
    pub zones: Vec<ZoneSpec>,
    pub seek: SeekSpec,
    /// Extra settling before a write after a seek or head switch, ms.
    #[serde(default)]
    pub write_settle_ms: f64,
    /// Switching to another surface of the same cylinder, ms.
    #[serde(default)]
    pub head_switch_ms: f64,
    #[serde(default)]
    pub overhead: OverheadSpec,
    /// The interface's transfer rate between the drive's buffer and the host, MB/s (10^6 bytes).
    pub bus_mb_s: f64,
    pub cache: CacheSpec,
    #[serde(default)]
    pub queue: QueueSpec,
}

/// A band of cylinders with the same number of sectors per track. Sectors are 512 bytes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    pub first_cylinder: u32,
    pub last_cylinder: u32,
    pub sectors_per_track: u32,
    /// Sectors the first block of the next track is shifted by at a head switch (DiskSim's "Skew
    /// for track switch"), so that a sequential transfer does not lose a revolution.
    #[serde(default)]
    pub track_skew: u32,
    /// The same at a cylinder switch.
    #[serde(default)]
    pub cylinder_skew: u32,
}

/// The seek curve: a table of (distance in cylinders, ms), or three datasheet figures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeekSpec {
    #[serde(default)]
    pub table: Option<Vec<(u32, f64)>>,
    #[serde(default)]
    pub track_to_track_ms: Option<f64>,
    #[serde(default)]
    pub average_ms: Option<f64>,
    #[serde(default)]
    pub full_stroke_ms: Option<f64>,
}

/// The controller's own time per command (ms): before a request is served from the buffer (hit)
/// or from the media (miss). Zero when the profile's sources give none.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverheadSpec {
    #[serde(default)]
    pub read_hit_ms: f64,
    #[serde(default)]
    pub read_miss_ms: f64,
    /// A write taken into the write cache.
    #[serde(default)]
    pub write_hit_ms: f64,
    /// A write that goes to the media before it completes (write cache off, or too large).
    #[serde(default)]
    pub write_miss_ms: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Read segments of the buffer.
    pub segments: u32,
    /// Sectors one segment holds.
    pub segment_sectors: u32,
    /// Sectors read ahead past the end of a read while the drive is idle (0: no read-ahead).
    pub read_ahead_sectors: u32,
    /// A read found at the end of a segment the read-ahead filled, once the read-ahead has stopped,
    /// starts it again from there (DiskSim's "Read-ahead on idle hit"): a slow sequential reader
    /// keeps its stream. Default false.
    #[serde(default)]
    pub read_ahead_on_hit: bool,
    /// The write cache's state as the drive ships (write-back when true).
    pub write_cache: bool,
    /// Dirty sectors the write cache may hold before a write has to wait for destaging.
    pub write_cache_sectors: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// In arrival order.
    Fifo,
    /// Shortest access (positioning) time first among the queued requests the drive sees.
    Satf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    pub policy: Policy,
    /// How many queued requests the drive sees at once (its command queue: 1 = none).
    pub depth: u32,
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec { policy: Policy::Fifo, depth: 1 }
    }
}

fn positive(name: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        bad(format!("{name}: {v} is not a positive number"))
    }
}

fn non_negative(name: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        bad(format!("{name}: {v} is not a number >= 0"))
    }
}

impl DriveSpec {
    pub fn from_json(text: &str) -> Result<DriveSpec, SpecError> {
        let spec: DriveSpec = serde_json::from_str(text).map_err(|e| SpecError(format!("drive description: {e}")))?;
        spec.check()?;
        Ok(spec)
    }

    /// Field checks that do not need the geometry (the geometry and the seek curve check the rest).
    pub fn check(&self) -> Result<(), SpecError> {
        positive("rpm", self.rpm)?;
        if !(1..=64).contains(&self.surfaces) {
            return bad(format!("surfaces: {} is not between 1 and 64", self.surfaces));
        }
        non_negative("write_settle_ms", self.write_settle_ms)?;
        non_negative("head_switch_ms", self.head_switch_ms)?;
        let o = &self.overhead;
        for (n, v) in [
            ("overhead.read_hit_ms", o.read_hit_ms),
            ("overhead.read_miss_ms", o.read_miss_ms),
            ("overhead.write_hit_ms", o.write_hit_ms),
            ("overhead.write_miss_ms", o.write_miss_ms),
        ] {
            non_negative(n, v)?;
        }
        positive("bus_mb_s", self.bus_mb_s)?;
        let c = &self.cache;
        if c.segments == 0 && c.read_ahead_sectors > 0 {
            return bad("cache.read_ahead_sectors: read-ahead needs at least one segment (cache.segments)");
        }
        if c.read_ahead_sectors > c.segment_sectors {
            return bad(format!(
                "cache.read_ahead_sectors: {} is more than a segment holds (cache.segment_sectors = {})",
                c.read_ahead_sectors, c.segment_sectors
            ));
        }
        if c.write_cache && c.write_cache_sectors == 0 {
            return bad("cache.write_cache_sectors: a write cache needs room (> 0 sectors)");
        }
        if !(1..=256).contains(&self.queue.depth) {
            return bad(format!("queue.depth: {} is not between 1 and 256", self.queue.depth));
        }
        Ok(())
    }
}
