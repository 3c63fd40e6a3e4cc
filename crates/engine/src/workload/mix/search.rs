//! Which task count comes next, when to stop, and the run's headline: the
//! peak JPM and its N, and the crossover N (re-aim's driver rules).

use serde::Deserialize;

use super::driver::SubrunResult;
use super::MixSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// re-aim -g: rise until past the peak (the job rate drops more than 1%
    /// below the mean of the last five subruns, or those five vary under 1%).
    Peak,
    /// re-aim -x: rise until JPM per task falls to the crossover threshold.
    Crossover,
}

pub struct Schedule {
    list: Vec<usize>,
    search: Option<Search>,
    next_n: usize,
    incr: usize,
    adaptive: bool,
    max_tasks: usize,
    threshold: f64,
    /// Times of the last two subruns (re-aim's a_tn, a_tn1).
    a_tn: f64,
    a_tn1: f64,
    count: usize,
    window: [f64; 5],
    stop: &'static str,
}

impl Schedule {
    pub fn new(spec: &MixSpec) -> Schedule {
        Schedule {
            list: spec.tasks.clone(),
            search: if spec.tasks.is_empty() { spec.search } else { None },
            next_n: spec.start_tasks,
            incr: spec.increment,
            adaptive: spec.adaptive_increment,
            max_tasks: spec.max_tasks,
            threshold: spec.crossover_jpm_per_task,
            a_tn: 0.0,
            a_tn1: 0.0,
            count: 0,
            window: [0.0; 5],
            stop: "",
        }
    }

    /// Number of subruns when it is known in advance.
    pub fn known_total(&self) -> Option<usize> {
        if self.search.is_none() {
            Some(self.list.len())
        } else {
            None
        }
    }

    pub fn stop_reason(&self) -> &'static str {
        self.stop
    }

    /// The next N, given the subrun just finished (None before the first).
    pub fn next(&mut self, last: Option<&SubrunResult>) -> Option<usize> {
        let Some(search) = self.search else {
            let i = self.count;
            self.count += 1;
            if i >= self.list.len() {
                self.stop = "schedule done";
            }
            return self.list.get(i).copied();
        };
        if let Some(r) = last {
            self.count += 1;
            if r.tasks >= self.max_tasks {
                self.stop = "max_tasks reached";
                return None;
            }
            if search == Search::Crossover && r.jpm_per_task <= self.threshold {
                self.stop = "crossover reached";
                return None;
            }
            if search == Search::Peak && self.past_peak(r.jpm) {
                return None;
            }
            if self.a_tn1 > 0.0 {
                self.a_tn = self.a_tn1;
            }
            self.a_tn1 = r.real_time_s;
            if self.adaptive {
                self.incr = adaptive_increment(self.incr, self.count - 1, r.jpm, r.tasks, &mut self.a_tn, self.a_tn1);
            }
            self.next_n = (r.tasks + self.incr).min(self.max_tasks);
        }
        Some(self.next_n)
    }

    /// re-aim's -g rules over the last five JPM values.
    fn past_peak(&mut self, jpm: f64) -> bool {
        self.window.rotate_right(1);
        self.window[0] = jpm;
        if self.window[4] <= 0.0 {
            return false;
        }
        let mean = self.window.iter().sum::<f64>() / 5.0;
        if self.window[0] < self.window[1] && (mean - self.window[0]) / mean * 100.0 > 1.0 {
            self.stop = "job rate dropping (past the peak)";
            return true;
        }
        let var = self.window.iter().map(|x| x * x).sum::<f64>() / 5.0 - mean * mean;
        if var.max(0.0).sqrt() / mean * 100.0 < 1.0 {
            self.stop = "maximum sustained job rate reached";
            return true;
        }
        false
    }
}

/// re-aim's adjust_adaptive_timer: after nine subruns, close to the
/// (JPM == N) line step by half the distance; otherwise widen the step when
/// subrun times grow slowly (ratio < 1.2) and narrow it when they grow fast
/// (> 1.3). Kept as re-aim computes it, including its use of JPM - N.
pub fn adaptive_increment(incr: usize, cnt: usize, jpm: f64, tasks: usize, a_tn: &mut f64, a_tn1: f64) -> usize {
    let mut step = incr as f64;
    if cnt > 8 {
        let n = tasks as f64;
        if (jpm - n) / n <= 0.10 {
            step = ((jpm - n) / 2.0).max(1.0);
        } else {
            let mut avg = (*a_tn + a_tn1) / 2.0;
            if avg == 0.0 {
                avg = 1.0;
            }
            if *a_tn == 0.0 {
                *a_tn = 1.0;
            }
            let ratio = a_tn1 / *a_tn;
            if ratio < 1.2 {
                step *= 2.0 / (*a_tn / avg);
            } else if ratio > 1.3 {
                step /= 2.0 / (*a_tn / avg);
            }
            if step < 1.0 {
                step = incr as f64;
            }
        }
    }
    (step as usize).max(1)
}

pub struct Summary {
    pub peak_jpm: f64,
    pub peak_tasks: usize,
    pub crossover_tasks: Option<usize>,
}

/// Peak JPM and its N; the first N whose JPM per task is at or below the threshold.
pub fn summarise(results: &[SubrunResult], threshold: f64) -> Summary {
    let mut s = Summary { peak_jpm: 0.0, peak_tasks: 0, crossover_tasks: None };
    for r in results {
        if r.jpm > s.peak_jpm {
            s.peak_jpm = r.jpm;
            s.peak_tasks = r.tasks;
        }
        if s.crossover_tasks.is_none() && r.jpm_per_task <= threshold {
            s.crossover_tasks = Some(r.tasks);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(tasks: usize, jpm: f64) -> SubrunResult {
        SubrunResult {
            tasks,
            jobs_per_task: 100,
            file_kib: 10,
            real_time_s: 100.0 * 60.0 * tasks as f64 / jpm,
            jpm,
            jpm_per_task: jpm / tasks as f64,
            jti: 100.0,
            task_time_min_s: 0.0,
            task_time_max_s: 0.0,
            task_time_stddev_s: 0.0,
            task_start_min_s: 0.0,
            task_start_max_s: 0.0,
            user_s: 0.0,
            sys_s: 0.0,
            tasks_rss_max_bytes: 0,
            tasks_pss_max_bytes: 0,
            disk_kib_per_s: 0.0,
            jobs: Default::default(),
            interrupted: false,
            release_mono_ns: 0,
            end_mono_ns: 0,
            verify_blocks_checked: 0,
            verify_mismatches: 0,
            verify_first: Vec::new(),
        }
    }

    #[test]
    fn peak_and_crossover() {
        let rs = vec![result(1, 100.0), result(2, 180.0), result(4, 200.0), result(8, 160.0)];
        let s = summarise(&rs, 25.0);
        assert_eq!((s.peak_jpm, s.peak_tasks), (200.0, 4));
        assert_eq!(s.crossover_tasks, Some(8)); // 160 / 8 = 20 <= 25
        assert_eq!(summarise(&rs, 10.0).crossover_tasks, None);
    }

    #[test]
    fn peak_search_stops_when_the_rate_drops() {
        let spec: MixSpec = serde_json::from_str(
            r#"{"weights":[{"job":"disk_rr","hits":1}],"search":"peak","adaptive_increment":false}"#,
        )
        .unwrap();
        let mut s = Schedule::new(&spec);
        let jpm = [100.0, 190.0, 260.0, 300.0, 310.0, 290.0, 250.0];
        let mut seen = vec![];
        let mut last: Option<SubrunResult> = None;
        while let Some(n) = s.next(last.as_ref()) {
            seen.push(n);
            last = Some(result(n, jpm[n - 1]));
        }
        // At 6, 290 < 310 but above the five-run mean (270): go on. At 7, 250 is
        // under 290 and 11% under the mean (282): past the peak.
        assert_eq!(seen, vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(s.stop_reason(), "job rate dropping (past the peak)");
    }

    #[test]
    fn crossover_search_stops_at_the_threshold() {
        let spec: MixSpec =
            serde_json::from_str(r#"{"weights":[{"job":"disk_rr","hits":1}],"search":"crossover","crossover_jpm_per_task":50,"increment":2,"adaptive_increment":false}"#)
                .unwrap();
        let mut s = Schedule::new(&spec);
        let mut seen = vec![];
        let mut last: Option<SubrunResult> = None;
        while let Some(n) = s.next(last.as_ref()) {
            seen.push(n);
            last = Some(result(n, 200.0)); // JPM per task 200 / n
        }
        assert_eq!(seen, vec![1, 3, 5]); // 200/5 = 40 <= 50
    }

    #[test]
    fn adaptive_increment_is_fixed_for_the_first_nine_subruns() {
        let mut a = 0.0;
        assert_eq!(adaptive_increment(3, 8, 1000.0, 10, &mut a, 5.0), 3);
        // Slowly growing times widen the step.
        let mut a = 10.0;
        assert_eq!(adaptive_increment(2, 9, 1000.0, 10, &mut a, 11.0), 4);
    }
}
