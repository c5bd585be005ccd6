//! Linear least squares by Householder QR with column pivoting, on column-scaled data (the
//! terms of Eq. 5 span ten orders of magnitude).

/// The solution of `min ‖A·x − b‖₂`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Solution {
    /// One coefficient per column; 0 for the columns dropped as dependent.
    pub(crate) x: Vec<f64>,
    /// Independent columns found.
    pub(crate) rank: usize,
}

/// A column whose remaining norm, after removing its projection on the columns already
/// chosen, is below this fraction of its own norm adds nothing the others do not span.
const DEPENDENT: f64 = 1e-9;

/// Solves `min ‖A·x − b‖₂` for the rows of `a` (all of one length `n`). Columns are scaled
/// to a largest magnitude of 1, then factorised with Householder reflections, always taking
/// the independent column with the largest remaining norm next (Businger–Golub pivoting); a
/// column whose remaining norm falls below [`DEPENDENT`] of its scaled norm is dropped (its coefficient is
/// 0: the basic solution). `None` when `a` is empty or ragged, or a value is not finite.
pub(crate) fn lstsq(a: &[Vec<f64>], b: &[f64]) -> Option<Solution> {
    let m = a.len();
    let n = a.first()?.len();
    if m != b.len()
        || a.iter().any(|r| r.len() != n)
        || a.iter().flatten().chain(b).any(|v| !v.is_finite())
    {
        return None;
    }
    // column-major copy, scaled
    let mut scale = vec![0.0f64; n];
    for row in a {
        for (s, v) in scale.iter_mut().zip(row) {
            *s = s.max(v.abs());
        }
    }
    let mut cols: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            let s = if scale[j] > 0.0 { scale[j] } else { 1.0 };
            a.iter().map(|r| r[j] / s).collect()
        })
        .collect();
    let original: Vec<f64> = cols.iter().map(|c| norm(c)).collect();
    let mut rhs = b.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut rank = 0;
    let steps = n.min(m);
    while rank < steps {
        // the column with the largest remaining norm (rows rank..)
        // (the remaining norm only shrinks as columns are added: once dependent, always)
        let Some((best, best_norm)) = (rank..n)
            .map(|j| (j, norm(&cols[j][rank..])))
            .filter(|&(j, r)| r > DEPENDENT * original[perm[j]])
            .fold(None, |acc: Option<(usize, f64)>, x| match acc {
                Some(a) if a.1 >= x.1 => Some(a),
                _ => Some(x),
            })
        else {
            break;
        };
        cols.swap(rank, best);
        perm.swap(rank, best);
        // Householder reflection zeroing column `rank` below the diagonal
        let col = &cols[rank];
        let alpha = if col[rank] > 0.0 {
            -best_norm
        } else {
            best_norm
        };
        let mut v: Vec<f64> = col[rank..].to_vec();
        v[0] -= alpha;
        let vv = dot(&v, &v);
        if vv > 0.0 {
            for c in cols.iter_mut().skip(rank) {
                reflect(&mut c[rank..], &v, vv);
            }
            reflect(&mut rhs[rank..], &v, vv);
        }
        rank += 1;
    }
    // back substitution on the rank × rank upper triangle
    let mut y = vec![0.0; rank];
    for i in (0..rank).rev() {
        let mut s = rhs[i];
        for (j, yj) in y.iter().enumerate().skip(i + 1) {
            s -= cols[j][i] * yj;
        }
        y[i] = s / cols[i][i];
    }
    let mut x = vec![0.0; n];
    for (i, &yi) in y.iter().enumerate() {
        let j = perm[i];
        x[j] = if scale[j] > 0.0 { yi / scale[j] } else { 0.0 };
    }
    Some(Solution { x, rank })
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `x ← (I − 2·v·vᵀ / vᵀv)·x`.
fn reflect(x: &mut [f64], v: &[f64], vv: f64) {
    let f = 2.0 * dot(v, x) / vv;
    for (xi, vi) in x.iter_mut().zip(v) {
        *xi -= f * vi;
    }
}
