//! CPU use over a window: this process's user/sys (getrusage) and the system's
//! user/sys/iowait/idle shares (/proc/stat, aggregate "cpu" line).

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSnapshot {
    user_s: f64,
    sys_s: f64,
    /// /proc/stat jiffies: user, nice, system, idle, iowait, irq, softirq, steal
    stat: [u64; 8],
    /// When it was taken (CLOCK_MONOTONIC ns).
    at_ns: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuUsage {
    /// This process, seconds of CPU in the window (all threads).
    pub user_s: f64,
    pub sys_s: f64,
    /// (user + sys) / the wall time between the two snapshots, in percent of one CPU (can exceed
    /// 100 with threads). The snapshots bracket the measured window plus the phase's start and
    /// end (threads joining, histograms merging): dividing that CPU by the measured window alone
    /// overstated a phase of a few milliseconds (245% of one CPU on two CPUs).
    pub process_pct: f64,
    /// Shares of all CPUs of the machine over the window, in percent.
    pub sys_user_pct: f64,
    pub sys_system_pct: f64,
    pub sys_iowait_pct: f64,
    pub sys_idle_pct: f64,
}

fn tv_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

pub fn snapshot() -> CpuSnapshot {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let mut stat = [0u64; 8];
    if let Ok(text) = std::fs::read_to_string("/proc/stat") {
        if let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) {
            for (slot, v) in stat.iter_mut().zip(line.split_whitespace().skip(1)) {
                *slot = v.parse().unwrap_or(0);
            }
        }
    }
    CpuSnapshot { user_s: tv_s(ru.ru_utime), sys_s: tv_s(ru.ru_stime), stat, at_ns: super::clock::now_ns() }
}

pub fn usage(a: &CpuSnapshot, b: &CpuSnapshot) -> CpuUsage {
    let elapsed_s = b.at_ns.saturating_sub(a.at_ns) as f64 / 1e9;
    let d: Vec<f64> = (0..8).map(|i| b.stat[i].saturating_sub(a.stat[i]) as f64).collect();
    let total: f64 = d.iter().sum();
    let pct = |x: f64| if total > 0.0 { 100.0 * x / total } else { 0.0 };
    let user_s = (b.user_s - a.user_s).max(0.0);
    let sys_s = (b.sys_s - a.sys_s).max(0.0);
    CpuUsage {
        user_s,
        sys_s,
        process_pct: if elapsed_s > 0.0 { 100.0 * (user_s + sys_s) / elapsed_s } else { 0.0 },
        sys_user_pct: pct(d[0] + d[1]),
        sys_system_pct: pct(d[2] + d[5] + d[6]),
        sys_iowait_pct: pct(d[4]),
        sys_idle_pct: pct(d[3]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share divides the CPU time by the wall time between the two snapshots: 0.3 s of CPU
    /// over 0.4 s is 75%, whatever the measured window inside was. (Synthetic snapshots: a live
    /// busy loop cannot be checked here, since the test runner's other threads share the
    /// process's getrusage.)
    #[test]
    fn share_is_cpu_over_the_wall_time_between_snapshots() {
        let a = CpuSnapshot { user_s: 1.0, sys_s: 0.5, stat: [100, 0, 50, 800, 50, 0, 0, 0], at_ns: 1_000_000_000 };
        let b = CpuSnapshot { user_s: 1.2, sys_s: 0.6, stat: [160, 0, 70, 900, 70, 0, 0, 0], at_ns: 1_400_000_000 };
        let u = usage(&a, &b);
        assert!((u.user_s - 0.2).abs() < 1e-9 && (u.sys_s - 0.1).abs() < 1e-9);
        assert!((u.process_pct - 75.0).abs() < 1e-6, "{}", u.process_pct);
        assert!((u.sys_user_pct - 30.0).abs() < 1e-9);
        assert!((u.sys_system_pct - 10.0).abs() < 1e-9);
        assert!((u.sys_iowait_pct - 10.0).abs() < 1e-9);
        assert!((u.sys_idle_pct - 50.0).abs() < 1e-9);
        // Snapshots in the wrong order or at the same instant give 0, not a division by zero.
        assert_eq!(usage(&b, &b).process_pct, 0.0);
    }
}
