//! A clock read once per batch of operations, for a loop that counts its operations without
//! timing each one (a family's `latency = false`) but still needs the time for its warm-up's end
//! and its deadline.
//!
//! The batch adapts so that a reading is at most about `TARGET_NS` old: it doubles (up to
//! `MAX_EVERY`) while a batch takes under half the target, and drops to one operation as soon as a
//! batch takes more. Fast cached requests then read the clock every few dozen; requests of
//! milliseconds read it each time. When requests turn slow all at once, the batch then running
//! (at most `MAX_EVERY` operations) still shares its reading: a loop on this clock may stop that
//! much after its deadline, and an operation is put on the side of the warm-up's end where the
//! last reading was.

use super::clock::now_ns;

/// How old a reading may get, about.
pub const TARGET_NS: u64 = 100_000;
/// The most operations between two readings.
pub const MAX_EVERY: u32 = 64;

/// The clock of one worker's loop: `now()` once per operation.
pub struct SparseClock {
    /// False: every `now()` reads the clock.
    sparse: bool,
    every: u32,
    left: u32,
    last: u64,
}

impl SparseClock {
    /// `sparse` false gives a plain clock (every call reads it).
    pub fn new(sparse: bool) -> SparseClock {
        SparseClock { sparse, every: 1, left: 0, last: now_ns() }
    }

    /// Whether it reads the clock once per batch.
    #[inline(always)]
    pub fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// The time, read now or at the last reading of this batch.
    #[inline(always)]
    pub fn now(&mut self) -> u64 {
        if self.sparse && self.left > 1 {
            self.left -= 1;
            return self.last;
        }
        self.read()
    }

    #[inline]
    fn read(&mut self) -> u64 {
        let t = now_ns();
        if self.sparse {
            let took = t.saturating_sub(self.last);
            if took < TARGET_NS / 2 {
                self.every = (self.every * 2).min(MAX_EVERY);
            } else if took > TARGET_NS {
                self.every = 1;
            }
            self.left = self.every;
        }
        self.last = t;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_reads_every_time() {
        let mut c = SparseClock::new(false);
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(c.now() >= a + 1_000_000);
    }

    #[test]
    fn fast_operations_share_a_reading_and_it_stays_fresh() {
        let mut c = SparseClock::new(true);
        // Operations of no time at all: the batch grows to MAX_EVERY readings of one value.
        for _ in 0..1000 {
            c.now();
        }
        assert_eq!(c.every, MAX_EVERY);
        let t = c.now();
        let mut same = 0;
        while c.now() == t {
            same += 1;
        }
        assert!(same <= MAX_EVERY as usize, "{same} operations on one reading");
        // Slow operations (over the target each): the running batch ends, then every reading is fresh.
        for _ in 0..=MAX_EVERY {
            std::thread::sleep(std::time::Duration::from_nanos(2 * TARGET_NS));
            c.now();
        }
        assert_eq!(c.every, 1);
        let before = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(c.now() > before, "a slow operation read a stale clock");
    }
}
