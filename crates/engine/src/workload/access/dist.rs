//! Skewed random offsets, with fio's `random_distribution` meanings: zipf, pareto and normal.
//!
//! Each draws a rank in [0, n) (n = blocks of `alignment` bytes in a file), rank 0 the most likely
//! for zipf and pareto, the middle one for normal. A rank becomes a block in two steps, both
//! bijections of [0, n), so the shape of the distribution over blocks is the shape over ranks:
//!
//! 1. a rotation: `center` (0..1) puts rank 0 (zipf, pareto) or the top of the bell (normal) at
//!    block `center * n`; without a center, zipf and pareto start at a per-file pseudo-random block
//!    (fio: a random offset per file), normal at the middle of the file (fio's default 0.5);
//! 2. a scramble (`random_scramble`, on by default): a keyed permutation of [0, n), so that the hot
//!    blocks are spread over the file instead of sitting side by side. fio spreads them by
//!    multiplying the rank by a 64-bit constant modulo n, which may send two ranks to one block; a
//!    permutation keeps every rank its own block. Without the scramble, rank r is block
//!    `(center * n + r) mod n`: the hottest blocks are neighbours.
//!
//! Everything a draw needs is computed when the generator is built; a draw is a few random numbers,
//! at most one `powf`, and no allocation.

use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A `random_distribution` as written (fio's syntax): `random`, `zipf:THETA[:CENTER]`,
/// `pareto:H[:CENTER]`, `normal:DEV[:CENTER]` (alias `gauss`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Uniform,
    /// Zipf with exponent theta (> 0, != 1): the rank-r block is hit in proportion to r^-theta.
    Zipf {
        theta: f64,
        center: Option<f64>,
    },
    /// fio's Pareto with power h (0 < h < 1): the hottest fraction x of blocks gets x^(ln(1-h)/ln h) of
    /// the hits (h = 0.2: 80% of the hits on the hottest 20% of blocks).
    Pareto {
        h: f64,
        center: Option<f64>,
    },
    /// fio's normal: the mean of 12 uniform draws over [0, n] (standard deviation n/12), plus a
    /// uniform jitter of width dev% of n (at most n/2), folded back inside the file.
    Normal {
        dev_pct: f64,
        center: Option<f64>,
    },
    /// fio's `zoned:` and `zoned_abs:` (the zones themselves: `shape::ZoneSplit`).
    Zoned,
    /// fio's `sequence:B0,B1,...` (the blocks: `shape::parse_sequence`).
    Sequence,
}

impl Dist {
    /// Parses fio's syntax; the error says what is allowed.
    pub fn parse(s: &str) -> Result<Dist, String> {
        let s = s.trim();
        let mut parts = s.split(':');
        let kind = parts.next().unwrap_or("").trim();
        let nums: Vec<&str> = parts.collect();
        if kind == "zoned" || kind == "zoned_abs" {
            return super::shape::ZoneSplit::parse(s).map(|_| Dist::Zoned);
        }
        if kind == "sequence" {
            return super::shape::parse_sequence(s).map(|_| Dist::Sequence);
        }
        if kind == "random" {
            if !nums.is_empty() {
                return Err(format!("{s:?}: random (uniform) takes no parameter"));
            }
            return Ok(Dist::Uniform);
        }
        let (default, what) = match kind {
            "zipf" => (1.1, "zipf:THETA[:CENTER]"),
            "pareto" => (0.2, "pareto:H[:CENTER]"),
            "normal" | "gauss" => (0.0, "normal:DEV%[:CENTER]"),
            _ => {
                return Err(format!(
                "{s:?}: use random, zipf:THETA, pareto:H or normal:DEV% (each with an optional :CENTER from 0 to 1), \
                 zoned:ACCESS%/SIZE%:..., zoned_abs:ACCESS%/BYTES:... or sequence:B0,B1,..."
            ))
            }
        };
        if nums.len() > 2 {
            return Err(format!("{s:?}: too many parameters: {what}"));
        }
        let num = |i: usize| -> Result<Option<f64>, String> {
            match nums.get(i).map(|t| t.trim()) {
                None => Ok(None),
                Some(t) => t
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .map(Some)
                    .ok_or_else(|| format!("{s:?}: {t:?} is not a number: {what}")),
            }
        };
        let value = num(0)?.unwrap_or(default);
        let center = num(1)?;
        if let Some(c) = center {
            if !(0.0..=1.0).contains(&c) {
                return Err(format!("{s:?}: the center {c} must be between 0 and 1 (a fraction of the file)"));
            }
        }
        match kind {
            "zipf" if value.is_nan() || value <= 0.0 || value == 1.0 => {
                Err(format!("{s:?}: zipf's theta must be > 0 and not 1 (fio's default is 1.1)"))
            }
            "zipf" => Ok(Dist::Zipf { theta: value, center }),
            "pareto" if !(value > 0.0 && value < 1.0) => {
                Err(format!("{s:?}: pareto's h must be between 0 and 1, both excluded (fio's default is 0.2)"))
            }
            "pareto" => Ok(Dist::Pareto { h: value, center }),
            _ if !(0.0..100.0).contains(&value) => {
                Err(format!("{s:?}: normal's deviation is a percentage of the file, from 0 to below 100"))
            }
            _ => Ok(Dist::Normal { dev_pct: value, center }),
        }
    }

    pub fn is_uniform(&self) -> bool {
        matches!(self, Dist::Uniform)
    }
}

/// A uniform double in [0, 1) from the top 53 bits of a draw.
#[inline(always)]
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Lemire's multiply-shift: a uniform integer in [0, n).
#[inline(always)]
fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// SplitMix64's finaliser: a well-mixed 64-bit value from any input.
#[inline(always)]
pub(super) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Zipf's normalising sum H(n, theta) = sum of i^-theta for i = 1..n. The first million terms are
/// added one by one; beyond them the Euler-Maclaurin formula gives the rest (integral plus half
/// the end terms plus the first derivative correction), exact to well below 1e-9 relative there.
/// fio stops adding at ten million terms instead.
pub fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1_000_000;
    let m = n.min(EXACT);
    let mut s = 0.0;
    for i in (1..=m).rev() {
        s += (i as f64).powf(-theta);
    }
    if n > m {
        let (a, b) = (m as f64, n as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        // sum over (m, n] = integral_m^n + (f(n) - f(m))/2 + (f'(n) - f'(m))/12
        s += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    s
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Gray et al., "Quickly generating billion-record synthetic databases" (SIGMOD 1994), the
    /// method fio's lib/zipf.c uses: ranks 0 and 1 exactly, the rest by inverting the continuous
    /// approximation of the cumulative sum.
    Zipf { zetan: f64, two: f64, alpha: f64, eta: f64 },
    /// rank = (n - 1) * u^(ln h / ln(1 - h)).
    Pareto { pow: f64 },
    /// mean of 12 uniform draws over [0, n], plus a jitter in [-width/2, width/2).
    Normal { width: u64 },
}

/// The skewed rank generator of one thread, and the map from ranks to blocks.
#[derive(Clone, Debug)]
pub struct Skew {
    kind: Kind,
    /// Blocks per file.
    n: u64,
    /// Where rank 0 goes (None: per file, from `key`).
    rotate: Option<u64>,
    scramble: Option<Scramble>,
    key: u64,
}

impl Skew {
    /// `n` blocks per file; `key` keys the scramble and the per-file rotations (the same for every
    /// thread of a run, so that threads share one hot set, as fio's jobs on one file do).
    pub fn new(dist: Dist, n: u64, scramble: bool, key: u64) -> Option<Skew> {
        let n = n.max(1);
        let at = |c: f64| ((c * n as f64) as u64).min(n - 1);
        let (kind, rotate) = match dist {
            Dist::Uniform | Dist::Zoned | Dist::Sequence => return None,
            Dist::Zipf { theta, center } => {
                let zetan = zeta(n, theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                (Kind::Zipf { zetan, two: zeta2, alpha: 1.0 / (1.0 - theta), eta }, center.map(at))
            }
            Dist::Pareto { h, center } => (Kind::Pareto { pow: h.ln() / (1.0 - h).ln() }, center.map(at)),
            Dist::Normal { dev_pct, center } => {
                let width = ((n as f64 * dev_pct / 100.0).ceil() as u64).min(n / 2);
                // The bell is centred on n/2 already: the rotation moves it to center * n.
                let to = at(center.unwrap_or(0.5));
                (Kind::Normal { width }, Some((to + n - n / 2) % n))
            }
        };
        Some(Skew { kind, n, rotate, scramble: scramble.then(|| Scramble::new(n, key)), key })
    }

    /// A rank in [0, n): 0 the most likely for zipf and pareto, n/2 for normal.
    #[inline]
    pub fn rank(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        let n = self.n;
        let r = match self.kind {
            Kind::Zipf { zetan, two, alpha, eta } => {
                let u = unit(rng.next_u64());
                let uz = u * zetan;
                if uz < 1.0 {
                    0
                } else if uz < two {
                    1
                } else {
                    (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                }
            }
            Kind::Pareto { pow } => ((n - 1) as f64 * unit(rng.next_u64()).powf(pow)) as u64,
            Kind::Normal { width } => {
                let mut sum = 0u64;
                for _ in 0..12 {
                    sum += below(rng.next_u64(), n + 1);
                }
                let mean = sum.div_ceil(12) as i64;
                let mut jitter = if width > 0 { below(rng.next_u64(), width) as i64 - (width / 2) as i64 } else { 0 };
                while jitter != 0 && !(0..n as i64).contains(&(mean + jitter)) {
                    jitter /= 2;
                }
                (mean + jitter) as u64
            }
        };
        r.min(n - 1)
    }

    /// The block of `file` a rank lands on: rotated, then scrambled (both bijections of [0, n)).
    #[inline]
    pub fn block(&self, rank: u64, file: u64) -> u64 {
        let n = self.n;
        let rot = match self.rotate {
            Some(r) => r,
            None => below(mix64(self.key ^ file.wrapping_mul(0x9E37_79B9_7F4A_7C15)), n),
        };
        let mut b = rank + rot;
        if b >= n {
            b -= n;
        }
        match &self.scramble {
            Some(s) => s.apply(b),
            None => b,
        }
    }

    pub fn blocks(&self) -> u64 {
        self.n
    }
}

/// A keyed permutation of [0, n): two rounds of xorshift and odd multiplication on the next power
/// of two (each a bijection there), values >= n walked on through the same permutation until they
/// fall inside (cycle walking: a bijection of [0, n), under two steps on average).
#[derive(Clone, Debug)]
struct Scramble {
    n: u64,
    mask: u64,
    shift: u32,
    mul: [u64; 2],
    add: u64,
}

impl Scramble {
    fn new(n: u64, key: u64) -> Scramble {
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        Scramble {
            n,
            mask,
            shift: (bits / 2).max(1),
            mul: [mix64(key) | 1, mix64(key ^ 0x5555) | 1],
            add: mix64(key ^ 0xAAAA),
        }
    }

    #[inline]
    fn step(&self, mut x: u64) -> u64 {
        for m in self.mul {
            x = x.wrapping_add(self.add) & self.mask;
            x ^= x >> self.shift;
            x = x.wrapping_mul(m) & self.mask;
        }
        x ^ (x >> self.shift)
    }

    #[inline]
    fn apply(&self, b: u64) -> u64 {
        let mut x = self.step(b);
        while x >= self.n {
            x = self.step(x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn counts(skew: &Skew, draws: usize, seed: u64) -> Vec<u64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut c = vec![0u64; skew.blocks() as usize];
        for _ in 0..draws {
            c[skew.block(skew.rank(&mut rng), 0) as usize] += 1;
        }
        c
    }

    /// Least-squares slope of y on x.
    fn slope(xy: &[(f64, f64)]) -> f64 {
        let n = xy.len() as f64;
        let (mx, my) = (xy.iter().map(|p| p.0).sum::<f64>() / n, xy.iter().map(|p| p.1).sum::<f64>() / n);
        let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
        sxy / sxx
    }

    #[test]
    fn parses_fios_syntax_and_refuses_the_rest() {
        assert_eq!(Dist::parse("random"), Ok(Dist::Uniform));
        assert_eq!(Dist::parse("zipf"), Ok(Dist::Zipf { theta: 1.1, center: None }));
        assert_eq!(Dist::parse("zipf:1.2:0.25"), Ok(Dist::Zipf { theta: 1.2, center: Some(0.25) }));
        assert_eq!(Dist::parse("pareto:0.3"), Ok(Dist::Pareto { h: 0.3, center: None }));
        assert_eq!(Dist::parse("gauss:5"), Ok(Dist::Normal { dev_pct: 5.0, center: None }));
        assert_eq!(Dist::parse("normal:5:0.1"), Ok(Dist::Normal { dev_pct: 5.0, center: Some(0.1) }));
        for bad in [
            "zipf:1",
            "zipf:0",
            "zipf:x",
            "pareto:1",
            "pareto:0",
            "normal:100",
            "zipf:1.2:1.5",
            "zoned:60/10:30/90",
            "random:3",
            "zipf:1:2:3",
        ] {
            assert!(Dist::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn zeta_beyond_the_exact_terms_matches_the_plain_sum() {
        // 3 million terms added one by one vs one million plus Euler-Maclaurin.
        for theta in [0.8, 1.2] {
            let plain: f64 = (1..=3_000_000u64).rev().map(|i| (i as f64).powf(-theta)).sum();
            let z = zeta(3_000_000, theta);
            assert!(((z - plain) / plain).abs() < 1e-9, "theta {theta}: {z} vs {plain}");
        }
        // Hand-checked: H(2, 1.2) = 1 + 2^-1.2 = 1.435275...
        assert!((zeta(2, 1.2) - 1.435_275_281_648_062).abs() < 1e-12);
    }

    #[test]
    fn zipf_rank_frequency_slope_is_minus_theta() {
        // Zipf's law: the block of rank r is hit in proportion to r^-theta, so log(hits) against
        // log(rank) is a line of slope -theta. 4M draws over 100k blocks; ranks 3..300 (ranks 1 and
        // 2 are drawn exactly by the method, rank 300 still gets ~ 4M * 300^-1.2 / 5.5 = 800 hits).
        for theta in [0.8, 1.2] {
            let skew = Skew::new(Dist::Zipf { theta, center: None }, 100_000, true, 11).unwrap();
            let mut c = counts(&skew, 4_000_000, 1);
            c.sort_unstable_by(|a, b| b.cmp(a));
            let pts: Vec<(f64, f64)> = (3..=300).map(|r| ((r as f64).ln(), (c[r - 1] as f64).ln())).collect();
            let s = slope(&pts);
            eprintln!(
                "zipf theta {theta}: slope {s:.4}, hottest block share {:.5} (1/H = {:.5})",
                c[0] as f64 / 4e6,
                1.0 / zeta(100_000, theta)
            );
            assert!((s + theta).abs() < 0.05, "theta {theta}: slope {s}");
            // The hottest block's share is 1 / H(n, theta).
            let share = c[0] as f64 / 4e6;
            let want = 1.0 / zeta(100_000, theta);
            assert!((share - want).abs() < 0.01 * want + 0.0005, "theta {theta}: top share {share} vs {want}");
        }
    }

    #[test]
    fn pareto_puts_one_minus_h_of_the_hits_on_the_hottest_h_of_the_blocks() {
        // fio's definition: rank = (n-1) u^p, p = ln h / ln(1-h), so the hottest fraction x of the
        // blocks gets x^(1/p) of the hits. h = 0.2: x = 0.2 -> 0.2^(ln 0.8 / ln 0.2) = 0.8 exactly;
        // x = 0.01 -> exp(ln 0.01 * ln 0.8 / ln 0.2) = 0.5278.
        let skew = Skew::new(Dist::Pareto { h: 0.2, center: None }, 10_000, true, 5).unwrap();
        let mut c = counts(&skew, 2_000_000, 2);
        c.sort_unstable_by(|a, b| b.cmp(a));
        let share = |frac: f64| c[..(frac * 10_000.0) as usize].iter().sum::<u64>() as f64 / 2e6;
        eprintln!("pareto h 0.2: hottest 20% {:.4} (0.8), hottest 1% {:.4} (0.5278)", share(0.2), share(0.01));
        assert!((share(0.2) - 0.8).abs() < 0.01, "hottest 20%: {}", share(0.2));
        assert!((share(0.01) - 0.5278).abs() < 0.01, "hottest 1%: {}", share(0.01));
    }

    #[test]
    fn normal_has_fios_mean_and_spread_in_blocks() {
        // Unscrambled, centre 0.5: the mean of 12 uniform integers over [0, n] has variance
        // ((n+1)^2 - 1) / 12 / 12; the jitter, uniform over `width` = ceil(n dev/100) values,
        // adds (width^2 - 1) / 12. n = 10,000, dev = 10% (width 1,000):
        // sd = sqrt(100,020,000 / 144 + 999,999 / 12) = sqrt(694,583 + 83,333) = 882.0 blocks;
        // dev = 0: sd = sqrt(694,583) = 833.4.
        for (dev, sd_want) in [(10.0, 882.0), (0.0, 833.4)] {
            let skew = Skew::new(Dist::Normal { dev_pct: dev, center: None }, 10_000, false, 3).unwrap();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
            let n = 400_000;
            let xs: Vec<f64> = (0..n).map(|_| skew.block(skew.rank(&mut rng), 0) as f64).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            eprintln!("normal dev {dev}%: mean {mean:.1} (5000), sd {sd:.1} ({sd_want})");
            assert!((mean - 5000.0).abs() < 10.0, "dev {dev}: mean {mean}");
            assert!((sd - sd_want).abs() < 0.01 * sd_want, "dev {dev}: sd {sd} vs {sd_want}");
        }
        // A centre moves the bell: 0.4 of 10,000 blocks (its tails, 4.8 sd away, would wrap around
        // the file's ends, as fio's do).
        let skew = Skew::new(Dist::Normal { dev_pct: 0.0, center: Some(0.4) }, 10_000, false, 3).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mean = (0..100_000).map(|_| skew.block(skew.rank(&mut rng), 0) as f64).sum::<f64>() / 1e5;
        assert!((mean - 4000.0).abs() < 10.0, "mean {mean}");
    }

    #[test]
    fn the_scramble_is_a_permutation_and_spreads_the_hot_blocks() {
        for n in [1u64, 2, 3, 100, 4096, 5000] {
            let s = Scramble::new(n, 77);
            let mut seen = vec![false; n as usize];
            for b in 0..n {
                let x = s.apply(b) as usize;
                assert!(!seen[x], "{x} twice for n = {n}");
                seen[x] = true;
            }
        }
        // Zipf's 10 hottest blocks of 100k: scrambled they are not neighbours; unscrambled with
        // centre 0 they are blocks 0..9.
        let hot = |scramble: bool| {
            let skew = Skew::new(Dist::Zipf { theta: 1.2, center: Some(0.0) }, 100_000, scramble, 4).unwrap();
            let c = counts(&skew, 500_000, 3);
            let mut idx: Vec<usize> = (0..c.len()).collect();
            idx.sort_unstable_by(|a, b| c[*b].cmp(&c[*a]));
            let mut top: Vec<usize> = idx[..10].to_vec();
            top.sort_unstable();
            top
        };
        assert_eq!(hot(false), (0..10).collect::<Vec<_>>());
        let spread = hot(true);
        assert!(spread.last().unwrap() - spread[0] > 10_000, "{spread:?}");
    }
}
