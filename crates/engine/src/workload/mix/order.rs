//! From workfile weights to what one task runs: how many of each job
//! (re-aim's rounding) and in which order (re-aim's random walk over the list).

use super::catalog::JobId;

/// A small seeded generator (splitmix64): each task has its own, so a seed
/// gives every task the same order run after run.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0); the modulo bias is below 2^-40 for the sizes used here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Seed of task `task` in the subrun with `tasks` tasks.
pub fn task_seed(seed: u64, tasks: usize, task: usize) -> u64 {
    let mut r = Rng::new(seed ^ ((tasks as u64) << 32) ^ (task as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    r.next_u64()
}

/// Runs of each job per task: jobs_per_task x hits / total hits, rounded
/// half up, and at least 1 for a job with a non-zero share (as re-aim's
/// runloop does). The sum is the task's job count used in the JPM formula.
pub fn per_task_counts(weights: &[(JobId, u32)], jobs_per_task: u32) -> Vec<(JobId, u32)> {
    let total: u64 = weights.iter().map(|&(_, h)| h as u64).sum();
    weights
        .iter()
        .map(|&(id, hits)| {
            let load = hits as f64 / total as f64 * jobs_per_task as f64;
            let mut n = load as u32;
            let frac = load - n as f64;
            if frac >= 0.5 {
                n += 1;
            } else if frac != 0.0 && n == 0 {
                n = 1;
            }
            (id, n)
        })
        .collect()
}

/// One task's job order. re-aim's walk: from the current list position step
/// forward (wrapping) a random number of entries below the list's size; take
/// that job if it has runs left, else drop it from the list and restart at the
/// head; a job whose last run was just taken is dropped too.
pub fn task_order(counts: &[(JobId, u32)], rng: &mut Rng) -> Vec<JobId> {
    let mut list: Vec<(JobId, u32)> = counts.iter().copied().filter(|&(_, n)| n > 0).collect();
    let total: usize = list.iter().map(|&(_, n)| n as usize).sum();
    let mut out = Vec::with_capacity(total);
    let mut pos = 0usize;
    while out.len() < total {
        let k = rng.below(list.len() as u64) as usize;
        pos = (pos + k) % list.len();
        if list[pos].1 == 0 {
            list.remove(pos);
            pos = 0;
            continue;
        }
        list[pos].1 -= 1;
        out.push(list[pos].0);
        if list[pos].1 == 0 {
            list.remove(pos);
            pos = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::mix::catalog::JobId::*;

    #[test]
    fn counts_round_like_reaim() {
        // workfile.disk: 20 jobs of 20 hits, 100 jobs per task: 5 each.
        let w: Vec<_> = [DiskRr, DiskRw, DiskRd].iter().map(|&j| (j, 20)).collect();
        assert_eq!(per_task_counts(&w, 100), vec![(DiskRr, 33), (DiskRw, 33), (DiskRd, 33)]);
        // A tiny share still runs once; 0.5 rounds up.
        let w = vec![(DiskRr, 1), (DiskRw, 999)];
        assert_eq!(per_task_counts(&w, 100), vec![(DiskRr, 1), (DiskRw, 100)]);
        let w = vec![(DiskRr, 1), (DiskRw, 3)];
        assert_eq!(per_task_counts(&w, 2), vec![(DiskRr, 1), (DiskRw, 2)]);
    }

    #[test]
    fn order_is_a_permutation_and_depends_on_the_seed() {
        let counts = vec![(DiskRr, 3), (ForkTest, 2), (AddInt, 5), (CreatClo, 0)];
        let a = task_order(&counts, &mut Rng::new(task_seed(42, 4, 0)));
        let b = task_order(&counts, &mut Rng::new(task_seed(42, 4, 1)));
        let a2 = task_order(&counts, &mut Rng::new(task_seed(42, 4, 0)));
        assert_eq!(a, a2);
        assert_ne!(a, b);
        for o in [&a, &b] {
            assert_eq!(o.len(), 10);
            assert_eq!(o.iter().filter(|&&j| j == DiskRr).count(), 3);
            assert_eq!(o.iter().filter(|&&j| j == ForkTest).count(), 2);
            assert_eq!(o.iter().filter(|&&j| j == AddInt).count(), 5);
        }
    }
}
