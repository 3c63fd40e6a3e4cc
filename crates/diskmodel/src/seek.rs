//! Seek time over cylinder distance.
//!
//! Two forms, as DiskSim's mechanics "g1" offers them:
//!
//! - a measured table of (distance, ms), linearly interpolated between its points (DiskSim's
//!   "extracted" seek curve, as DIXtrac measures it); past its last point the last segment's slope
//!   continues, and between 0 and its first point the line runs from (0, 0);
//! - three datasheet figures, track to track `t1`, average `tavg` and full stroke `tfull`, with
//!   Lee's seek curve (E. K. Lee, "Performance Modeling and Analysis of Disk Arrays", PhD thesis,
//!   UC Berkeley, 1993; DiskSim's "curve" seek type): `seek(d) = a*sqrt(d-1) + b*(d-1) + c` for
//!   d >= 1, with `c = t1`, `seek(D) = tfull` for the longest distance D, and `a`, `b` solved so
//!   that the mean over every pair of cylinders a seek can join (distance d >= 1 weighted by the
//!   C - d pairs that distance apart, C cylinders: the datasheet convention for "average seek")
//!   is `tavg`. The continuous approximation of the same constraints gives Lee's closed form; the
//!   sums here are exact.
//!
//! A distance of 0 costs nothing (a head switch is the drive's business, not the seek's).

use crate::spec::{bad, SeekSpec, SpecError};

#[derive(Debug, Clone)]
pub enum SeekCurve {
    Table(Vec<(f64, f64)>),
    Lee { a: f64, b: f64, c: f64 },
}

impl SeekCurve {
    /// The curve of `spec` for a drive of `cylinders` cylinders.
    pub fn new(spec: &SeekSpec, cylinders: u32) -> Result<SeekCurve, SpecError> {
        if cylinders < 3 {
            return bad(format!("zones: {cylinders} cylinders are too few for a seek curve (at least 3)"));
        }
        let curve = match (&spec.table, spec.track_to_track_ms, spec.average_ms, spec.full_stroke_ms) {
            (Some(table), _, _, _) => {
                if table.len() < 2 {
                    return bad("seek.table: at least two (distance, ms) points are needed");
                }
                let mut pts = Vec::with_capacity(table.len());
                let mut last = (0.0f64, 0.0f64);
                for (i, &(d, ms)) in table.iter().enumerate() {
                    if d == 0 || (d as f64) <= last.0 {
                        return bad(format!(
                            "seek.table[{i}]: distance {d} must be greater than 0 and than the distance before"
                        ));
                    }
                    // A measured table need not be monotone (DIXtrac's has dips of a few microseconds).
                    if !(ms.is_finite() && ms > 0.0) {
                        return bad(format!("seek.table[{i}]: {ms} ms is not a positive time"));
                    }
                    last = (d as f64, ms);
                    pts.push(last);
                }
                SeekCurve::Table(pts)
            }
            (None, Some(t1), Some(tavg), Some(tfull)) => {
                if !(t1 > 0.0 && t1 < tavg && tavg < tfull && tfull.is_finite()) {
                    return bad(format!(
                        "seek: track_to_track_ms {t1} < average_ms {tavg} < full_stroke_ms {tfull} must hold (all > 0)"
                    ));
                }
                let c = cylinders as f64;
                let dmax = c - 1.0;
                let (mut w, mut s1, mut s2) = (0.0, 0.0, 0.0);
                for d in 1..cylinders {
                    let weight = c - d as f64;
                    let x = (d - 1) as f64;
                    w += weight;
                    s1 += weight * x.sqrt();
                    s2 += weight * x;
                }
                let (s1, s2) = (s1 / w, s2 / w);
                let (f1, f2) = ((dmax - 1.0).sqrt(), dmax - 1.0);
                // a*s1 + b*s2 = tavg - t1 ; a*f1 + b*f2 = tfull - t1
                let det = s1 * f2 - s2 * f1;
                let (ra, rf) = (tavg - t1, tfull - t1);
                let a = (ra * f2 - s2 * rf) / det;
                let b = (s1 * rf - f1 * ra) / det;
                if !(a.is_finite() && b.is_finite()) || a < 0.0 || a / (2.0 * f1.max(1.0)) + b < 0.0 {
                    return bad(format!(
                        "seek: no increasing curve a*sqrt(d-1) + b*(d-1) + c passes through track_to_track_ms {t1}, \
                         average_ms {tavg} and full_stroke_ms {tfull} over {cylinders} cylinders (a = {a:.4}, b = {b:.6}): \
                         check the three figures, or give a seek.table"
                    ));
                }
                SeekCurve::Lee { a, b, c: t1 }
            }
            _ => {
                return bad("seek: give either table = [[distance, ms], ...] or all three of track_to_track_ms, \
                     average_ms and full_stroke_ms");
            }
        };
        Ok(curve)
    }

    /// Seek time for a distance of `d` cylinders, ms.
    pub fn ms(&self, d: u32) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let x = d as f64;
        match self {
            SeekCurve::Lee { a, b, c } => a * (x - 1.0).sqrt() + b * (x - 1.0) + c,
            SeekCurve::Table(pts) => {
                let i = pts.partition_point(|p| p.0 < x);
                let (lo, hi) = if i == 0 {
                    ((0.0, 0.0), pts[0])
                } else if i == pts.len() {
                    (pts[i - 2], pts[i - 1])
                } else {
                    (pts[i - 1], pts[i])
                };
                lo.1 + (hi.1 - lo.1) * (x - lo.0) / (hi.0 - lo.0)
            }
        }
    }

    /// The mean seek over every pair of distinct cylinders (distance d weighted by C - d), ms.
    pub fn average_ms(&self, cylinders: u32) -> f64 {
        let c = cylinders as f64;
        let (mut w, mut s) = (0.0, 0.0);
        for d in 1..cylinders {
            let weight = c - d as f64;
            w += weight;
            s += weight * self.ms(d);
        }
        s / w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three(t1: f64, tavg: f64, tfull: f64) -> SeekSpec {
        SeekSpec { table: None, track_to_track_ms: Some(t1), average_ms: Some(tavg), full_stroke_ms: Some(tfull) }
    }

    #[test]
    fn lee_curve_passes_through_the_three_figures() {
        let cyl = 20_000;
        let c = SeekCurve::new(&three(1.0, 9.0, 18.0), cyl).unwrap();
        assert!((c.ms(1) - 1.0).abs() < 1e-9);
        assert!((c.ms(cyl - 1) - 18.0).abs() < 1e-6);
        assert!((c.average_ms(cyl) - 9.0).abs() < 1e-6, "{}", c.average_ms(cyl));
        // increasing, concave at first (short seeks are acceleration-bound)
        let mut last = 0.0;
        for d in (1..cyl).step_by(97) {
            assert!(c.ms(d) >= last);
            last = c.ms(d);
        }
        assert!(c.ms(100) - c.ms(1) > c.ms(10_100) - c.ms(10_001));
    }

    #[test]
    fn table_interpolates_and_extrapolates() {
        let spec = SeekSpec {
            table: Some(vec![(1, 1.0), (11, 2.0), (101, 5.0)]),
            track_to_track_ms: None,
            average_ms: None,
            full_stroke_ms: None,
        };
        let c = SeekCurve::new(&spec, 200).unwrap();
        assert_eq!(c.ms(0), 0.0);
        assert!((c.ms(1) - 1.0).abs() < 1e-12);
        assert!((c.ms(6) - 1.5).abs() < 1e-12);
        assert!((c.ms(56) - 3.5).abs() < 1e-12);
        // past the last point: the last segment's slope (3 ms per 90 cylinders)
        assert!((c.ms(191) - 8.0).abs() < 1e-12);
    }

    #[test]
    fn impossible_figures_are_refused() {
        assert!(SeekCurve::new(&three(2.0, 1.0, 3.0), 1000).is_err());
        // an average so close to full stroke that the curve would have to fall somewhere
        let err = SeekCurve::new(&three(1.0, 17.9, 18.0), 10_000).unwrap_err();
        assert!(err.0.contains("no increasing curve"), "{}", err.0);
        let err = SeekCurve::new(
            &SeekSpec { table: None, track_to_track_ms: Some(1.0), average_ms: None, full_stroke_ms: None },
            100,
        );
        assert!(err.is_err());
    }
}
