//! The run phase's loop for one request at a time with nothing to pace, hold or log: draw, issue,
//! wait, count. The general loop (`worker.rs`) keeps `queue_depth` slots in flight and checks per
//! request for pacing, flows, a latency target, held overlaps, logs and verification; where the
//! thread has none of these, this loop makes the same requests and the same calls, and counts them
//! the same way (`next_io` and `completed_ok` are the general loop's own), without the slot
//! bookkeeping around them. On a cached 4 KiB read (about 2 us here) that bookkeeping was a few
//! percent of the request: docs/bare-loops.md.

use super::errors::OnError;
use super::worker::{RunState, SlotMeta};
use super::workload::Access;
use crate::backend::IoBackend;
use crate::error::Result;
use crate::measure::now_ns;
use crate::measure::sparse_clock::SparseClock;
use crate::measure::Recorder;
use crate::settings::Settings;

impl Access {
    /// Whether thread state `st` may run on `depth1_loop` (the caller has no verification): one
    /// slot, and nothing that paces, holds, logs or fills requests beyond the general loop's
    /// `next_io` and `completed_ok`.
    pub(super) fn depth1_plain<B: IoBackend>(&self, st: &RunState<B>) -> bool {
        let spec = &self.spec;
        st.slots.len() == 1
            && st.pacer.is_none()
            && st.flow.is_none()
            && st.lat.is_none()
            && st.io_log.is_none()
            && st.issue_log.is_none()
            && st.backlog.is_none()
            && st.cmdprio.is_none()
            && st.content.is_none()
            && st.deferred.is_empty()
            && self.meta.is_none()
            && spec.replay.is_none()
            && !spec.serialize_overlap
            && spec.write_pattern().is_empty()
    }

    /// One request at a time until the deadline, the byte quota or a stop: the general loop's
    /// requests, times, counts and errors, for a thread `depth1_plain` accepts.
    pub(super) fn depth1_loop<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
        clock: &mut SparseClock,
    ) -> Result<Vec<[u64; 5]>> {
        let spec = &self.spec;
        let buf = st.bufs[0].as_ptr();
        let mut issued_bytes = 0u64;
        let mut writes_since_fsync = 0u64;
        let mut t0 = 0;
        let mut first = true;
        while let Some((mut op, trimmed)) = self.next_io(st, rec, quota, &mut issued_bytes, job)? {
            if first || (trimmed && !clock.is_sparse()) {
                // The first request, or trims came first: the request starts now.
                t0 = now_ns();
                first = false;
            }
            if rec.measuring(t0) {
                issued_bytes += op.req.len as u64;
            }
            if spec.ioprio.thread != 0 {
                // Drawn requests carry 0; set only when there is a priority (a narrow store into the
                // request just before it is copied whole costs a stalled load on every request).
                op.req.ioprio = spec.ioprio.thread;
            }
            st.backend.queue(0, op.req, buf)?;
            let mut res = 0i64;
            st.backend.reap(1, |_, r| res = r)?;
            let t1 = clock.now();
            let mut stopping = false;
            let mut synced = false;
            let short_fill = spec.fill && res >= 0 && (res as u64) < op.req.len as u64;
            if res < 0 || short_fill {
                // As in the general loop: counted and gone on after, the end of a fill, or fatal.
                let errno = if res < 0 { -res as i32 } else { libc::ENOSPC };
                match st.errors.note(&spec.continue_on, spec.fill, op.req.write as usize, errno, &op.req) {
                    OnError::Go => {}
                    OnError::Full => {
                        stopping = true;
                        if short_fill {
                            st.errors.full_short = 1;
                        }
                    }
                    OnError::Fatal => return Err(self.io_failure(op.req, errno, job)),
                }
            } else {
                let meta = SlotMeta { t0, op: Some(op), generation: 0, backlog: false };
                self.completed_ok::<B, false>(
                    st,
                    0,
                    op,
                    meta,
                    res,
                    t1,
                    rec,
                    false,
                    job,
                    &mut stopping,
                    &mut synced,
                    &mut writes_since_fsync,
                )?;
            }
            if stopping || rec.should_stop(t1) || quota.is_some_and(|q| issued_bytes >= q) {
                break;
            }
            // The completion time doubles as the next request's issue time, unless a sync came after it.
            t0 = if synced && !clock.is_sparse() { now_ns() } else { t1 };
        }
        self.worker_end::<B, false>(st, rec, false, job)
    }
}
