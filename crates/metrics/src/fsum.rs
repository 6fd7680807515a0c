//! Exactly rounded floating-point sum, as Python's `math.fsum` (Shewchuk's algorithm with the
//! same final rounding), so that BLEU's sum of weighted logs matches nltk to the last bit.

pub fn fsum(values: &[f64]) -> f64 {
    let mut partials: Vec<f64> = Vec::with_capacity(4);
    for &v in values {
        let mut x = v;
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        if x != 0.0 {
            partials.push(x);
        }
    }
    // Sum from the top, correcting the final rounding as CPython does (round-half-even).
    let Some(mut hi) = partials.pop() else { return 0.0 };
    let mut lo = 0.0;
    while let Some(y) = partials.pop() {
        let x = hi;
        hi = x + y;
        let yr = hi - x;
        lo = y - yr;
        if lo != 0.0 {
            break;
        }
    }
    if let Some(&next) = partials.last()
        && ((lo < 0.0 && next < 0.0) || (lo > 0.0 && next > 0.0))
    {
        let y = lo * 2.0;
        let x = hi + y;
        if y == x - hi {
            hi = x;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::fsum;

    #[test]
    fn sums_exactly() {
        assert_eq!(fsum(&[]), 0.0);
        assert_eq!(fsum(&[0.1; 10]), 1.0); // naive summation gives 0.9999999999999999
        assert_eq!(fsum(&[1e100, 1.0, -1e100, 1e-100]), 1.0);
        assert_eq!(fsum(&[-0.5, 0.25]), -0.25);
    }
}
