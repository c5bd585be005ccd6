//! Deterministic reductions that vectorize without `-ffast-math`: 16 independent
//! accumulators (one AVX-512 or two AVX2 registers), combined in a fixed tree. The
//! summation order depends only on the length, so a value is the same whichever chunk or
//! rank computes it.

const LANES: usize = 16;

fn combine(mut acc: [f32; LANES]) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            acc[i] += acc[i + width];
        }
        width /= 2;
    }
    acc[0]
}

/// `Σ a[i]·b[i]` over the common length.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; LANES];
    let mut ac = a.chunks_exact(LANES);
    let mut bc = b.chunks_exact(LANES);
    for (x, y) in (&mut ac).zip(&mut bc) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    for (i, (x, y)) in ac.remainder().iter().zip(bc.remainder()).enumerate() {
        acc[i] += x * y;
    }
    combine(acc)
}

/// `Σ a[i]`.
pub(crate) fn sum(a: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut ac = a.chunks_exact(LANES);
    for x in &mut ac {
        for i in 0..LANES {
            acc[i] += x[i];
        }
    }
    for (i, x) in ac.remainder().iter().enumerate() {
        acc[i] += x;
    }
    combine(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_and_sum_match_f64() {
        for n in [0, 1, 5, 16, 17, 100, 1000] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let d64: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            let s64: f64 = a.iter().map(|x| f64::from(*x)).sum();
            assert!((f64::from(dot(&a, &b)) - d64).abs() < 1e-4, "dot n={n}");
            assert!((f64::from(sum(&a)) - s64).abs() < 1e-4, "sum n={n}");
        }
    }
}
