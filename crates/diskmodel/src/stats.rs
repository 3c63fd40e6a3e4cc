//! What the daemon counts about the requests it served, for its caller (`stats.json`).
//!
//! Per kind of request: how many, bytes, buffer hits, and the sums of the modelled service time
//! (from when the drive took the request up to its completion), response time (from arrival), and
//! of the parts of the service (controller overhead, positioning, rotational wait, transfer,
//! destaging), and of the read-ahead done while the drive waited for the request. Two histograms over every request: the modelled service time, and the lateness of
//! the reply (the wall-clock instant the reply was sent minus the modelled completion: what this
//! machine's scheduling added), and the two parts of the lateness: the drive thread's wake-up (the
//! instant it was running again after its sleep to the modelled completion, minus that completion)
//! and its wait for the request's data I/O on the image after that. The histograms are exported bucket by bucket so that the caller can
//! subtract one snapshot from another (a trial's requests) and take percentiles of the difference.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::drive::{Op, Service};

/// A served request's wall-clock instants (CLOCK_MONOTONIC ns).
#[derive(Clone, Copy)]
pub struct Instants {
    /// The request reached the daemon.
    pub arrival: u64,
    /// The drive thread was running again after its sleep to the modelled completion.
    pub woke: u64,
    /// The request's data I/O on the image was done as well.
    pub ready: u64,
    /// The reply was handed over.
    pub sent: u64,
}

#[derive(Default, Clone, Copy)]
struct Sums {
    count: u64,
    bytes: u64,
    hits: u64,
    service_ns: f64,
    response_ns: f64,
    overhead_ns: f64,
    seek_ns: f64,
    rotation_ns: f64,
    transfer_ns: f64,
    destage_ns: f64,
    readahead_ns: f64,
}

impl Sums {
    fn json(&self) -> Value {
        json!({
            "count": self.count,
            "bytes": self.bytes,
            "hits": self.hits,
            "service_ns": self.service_ns.round() as u64,
            "response_ns": self.response_ns.round() as u64,
            "overhead_ns": self.overhead_ns.round() as u64,
            "seek_ns": self.seek_ns.round() as u64,
            "rotation_ns": self.rotation_ns.round() as u64,
            "transfer_ns": self.transfer_ns.round() as u64,
            "destage_ns": self.destage_ns.round() as u64,
            "readahead_ns": self.readahead_ns.round() as u64,
        })
    }
}

pub const KINDS: [&str; 5] = ["read", "write", "flush", "discard", "write_zeroes"];

fn kind_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Flush => 2,
        Op::Discard => 3,
        Op::WriteZeroes => 4,
    }
}

pub struct Stats {
    kinds: [Sums; 5],
    /// Modelled service time, ns.
    service: Histogram<u64>,
    /// Reply sent minus modelled completion, ns (a reply sent early counts as 0).
    lateness: Histogram<u64>,
    /// The drive thread running again after its sleep minus the modelled completion, ns.
    wake: Histogram<u64>,
    /// From that wake-up until the request's data I/O on the image was done, ns.
    image_wait: Histogram<u64>,
    /// Replies sent before their modelled completion (should never happen; counted, not hidden).
    early: u64,
    max_queue: u64,
}

fn histogram() -> Histogram<u64> {
    // 1 ns to 10 min at 3 significant digits: fixed memory, never resized on the hot path.
    Histogram::new_with_bounds(1, 600_000_000_000, 3).expect("fixed histogram bounds are valid")
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            kinds: [Sums::default(); 5],
            service: histogram(),
            lateness: histogram(),
            wake: histogram(),
            image_wait: histogram(),
            early: 0,
            max_queue: 0,
        }
    }
}

impl Stats {
    /// Count one served request: `at` its wall-clock instants, `svc` the model's times.
    pub fn record(&mut self, op: Op, bytes: u64, svc: &Service, at: Instants) {
        let Instants { arrival, woke, ready, sent } = at;
        let k = &mut self.kinds[kind_index(op)];
        k.count += 1;
        k.bytes += bytes;
        k.hits += svc.hit as u64;
        k.service_ns += (svc.end - svc.start) as f64;
        k.response_ns += svc.end.saturating_sub(arrival) as f64;
        k.overhead_ns += svc.overhead_ns;
        k.seek_ns += svc.seek_ns;
        k.rotation_ns += svc.rotation_ns;
        k.transfer_ns += svc.transfer_ns;
        k.destage_ns += svc.destage_ns;
        k.readahead_ns += svc.readahead_ns;
        self.service.saturating_record((svc.end - svc.start).max(1));
        if sent < svc.end {
            self.early += 1;
        }
        self.lateness.saturating_record(sent.saturating_sub(svc.end).max(1));
        self.wake.saturating_record(woke.saturating_sub(svc.end).max(1));
        self.image_wait.saturating_record(ready.saturating_sub(woke).max(1));
    }

    pub fn queue_seen(&mut self, len: usize) {
        self.max_queue = self.max_queue.max(len as u64);
    }

    pub fn reset(&mut self) {
        *self = Stats::default();
    }

    fn buckets(h: &Histogram<u64>) -> Value {
        let b: Vec<[u64; 2]> =
            h.iter_recorded().map(|v| [h.highest_equivalent(v.value_iterated_to()), v.count_at_value()]).collect();
        json!(b)
    }

    pub fn json(&self, extra: Value) -> Value {
        let mut kinds = serde_json::Map::new();
        for (i, name) in KINDS.iter().enumerate() {
            kinds.insert((*name).into(), self.kinds[i].json());
        }
        json!({
            "format": "fsmeter-diskmodel-stats",
            "version": 1,
            "kinds": kinds,
            "service_ns": Stats::buckets(&self.service),
            "lateness_ns": Stats::buckets(&self.lateness),
            "wake_ns": Stats::buckets(&self.wake),
            "image_wait_ns": Stats::buckets(&self.image_wait),
            "early_replies": self.early,
            "max_queue": self.max_queue,
            "state": extra,
        })
    }
}
