//! What a comparison can resolve: the minimal detectable difference of a paired comparison.

/// z for a two-sided 5% test.
pub const Z_ALPHA: f64 = 1.959_963_984_540_054;
/// z for 80% power.
pub const Z_POWER: f64 = 0.841_621_233_572_914_3;

/// The smallest mean paired difference a two-sided paired test at 5% detects with 80% power, over
/// `n` paired items whose differences have standard deviation `sd`: (z₀.₉₇₅ + z₀.₈) · sd / √n.
/// `None` with fewer than two items (no variance, no test).
pub fn min_detectable_difference(n: usize, sd: f64) -> Option<f64> {
    (n >= 2 && sd.is_finite() && sd >= 0.0).then(|| (Z_ALPHA + Z_POWER) * sd / (n as f64).sqrt())
}

/// The smallest difference between the means of two independent groups (`n_a` items of spread
/// `sd_a`, `n_b` of `sd_b`) that a two-sided test at 5% detects with 80% power:
/// (z₀.₉₇₅ + z₀.₈) · √(sd_a²/n_a + sd_b²/n_b). `None` when a group has fewer than two items.
pub fn min_detectable_between(n_a: usize, sd_a: f64, n_b: usize, sd_b: f64) -> Option<f64> {
    (n_a >= 2 && n_b >= 2 && sd_a.is_finite() && sd_b.is_finite())
        .then(|| (Z_ALPHA + Z_POWER) * (sd_a * sd_a / n_a as f64 + sd_b * sd_b / n_b as f64).sqrt())
}

/// The smallest effect a two-sided test at 5% detects with 80% power when its estimate has
/// standard error `se` (a bootstrap's, where there is no closed form): (z₀.₉₇₅ + z₀.₈) · se.
pub fn min_detectable_from_se(se: f64) -> f64 {
    (Z_ALPHA + Z_POWER) * se
}

/// The standard deviation (n − 1) of paired differences; `None` with fewer than two.
pub fn sd(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    Some((values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_textbook_figure() {
        // 2.80 · 0.5 / √98 ≈ 0.1415: about 100 pairs resolve 0.14 at sd 0.5.
        let d = min_detectable_difference(98, 0.5).unwrap();
        assert!((d - 2.801585 * 0.5 / 98f64.sqrt()).abs() < 1e-6, "{d}");
        assert_eq!(min_detectable_difference(1, 0.5), None);
        assert!((sd(&[1.0, 2.0, 3.0, 4.0]).unwrap() - 1.2909944).abs() < 1e-6);
        assert_eq!(sd(&[1.0]), None);
        // Two groups of 50 at sd 0.2: 2.80 · √(0.0008 + 0.0008) = 0.112.
        let d = min_detectable_between(50, 0.2, 50, 0.2).unwrap();
        assert!((d - 2.801585 * 0.0016f64.sqrt()).abs() < 1e-6, "{d}");
        assert_eq!(min_detectable_between(1, 0.2, 50, 0.2), None);
    }
}
