//! Every table of every ISA this CPU runs gets the same tests (XNNPACK's habit: a new path
//! cannot skip a case), against f64 references.

use proptest::prelude::*;

use super::*;
use crate::test_util::{
    ACTIVATIONS, activation, bits, proptest_config, random_vec, same_bits, sprinkle_specials,
};

fn tables() -> Vec<&'static Kernels> {
    Isa::available()
        .into_iter()
        .flat_map(Kernels::variants)
        // Under Miri, each ISA's own table: the other tile shapes are the same template
        // code with other constants, and every case is interpreted.
        .filter(|k| !cfg!(miri) || std::ptr::eq(*k, k.isa.kernels()))
        .collect()
}

/// `act` in f64, by the rules of [`Activation::apply`] (NaN compares false, so it stays).
fn act_f64(act: Activation, v: f64) -> f64 {
    match act {
        Activation::None => v,
        Activation::Relu => {
            if v < 0.0 {
                0.0
            } else {
                v
            }
        }
        Activation::Clip { min, max } => {
            let x = if f64::from(min) > v {
                f64::from(min)
            } else {
                v
            };
            if f64::from(max) < x {
                f64::from(max)
            } else {
                x
            }
        }
        Activation::LeakyRelu { slope } => {
            if v >= 0.0 {
                v
            } else {
                f64::from(slope) * v
            }
        }
    }
}

/// `C = A·B (+ C0) + bias + residual`, then `act`, in f64, for packed panels.
#[allow(clippy::too_many_arguments)]
fn reference(
    k: &Kernels,
    kc: usize,
    a: &[f32],
    b: &[f32],
    c0: Option<&[f32]>,
    bias: &[f32],
    res: Option<&[f32]>,
    act: Activation,
) -> Vec<f64> {
    let (mr, nr) = (k.mr, k.nr);
    let mut out = vec![0.0f64; mr * nr];
    for i in 0..mr {
        for j in 0..nr {
            let mut v = c0.map_or(0.0, |c| f64::from(c[i * nr + j]));
            for p in 0..kc {
                v += f64::from(a[p * mr + i]) * f64::from(b[p * nr + j]);
            }
            v += f64::from(bias[i]);
            if let Some(r) = res {
                v += f64::from(r[i * nr + j]);
            }
            // ReLU keeps NaN (and −0.0): `v.max(0.0)` would drop NaN.
            out[i * nr + j] = act_f64(act, v);
        }
    }
    out
}

/// The residual a case asks for: none, `res` (`rows × w`) apart, or C itself (never
/// under partial sums, where C does not hold it). Also whether it is C itself.
fn residual_case(
    res: &[f32],
    rows: usize,
    w: usize,
    residual: bool,
    in_place: bool,
    accumulate: bool,
) -> (Residual<'_>, bool) {
    let in_place = residual && in_place && !accumulate;
    let residual = match (residual, in_place) {
        (false, _) => Residual::None,
        (true, false) => Residual::From(MatRef::from_slice(res, w, rows, w)),
        (true, true) => Residual::InPlace,
    };
    (residual, in_place)
}

/// `start` (`rows × w`) as the first columns of an output `ld` wide, NaN past them.
fn widened(start: &[f32], rows: usize, w: usize, ld: usize) -> Vec<f32> {
    let mut big = vec![f32::NAN; rows * ld];
    for i in 0..rows {
        big[i * ld..i * ld + w].copy_from_slice(&start[i * w..(i + 1) * w]);
    }
    big
}

/// `big`'s first `w` columns have `want`'s bits, and its columns past them stayed NaN.
fn same_bits_within(
    k: &Kernels,
    big: &[f32],
    ld: usize,
    want: &[f32],
    rows: usize,
    w: usize,
    residual: Residual<'_>,
) -> Result<(), TestCaseError> {
    for i in 0..rows {
        for j in 0..w {
            prop_assert_eq!(
                big[i * ld + j].to_bits(),
                want[i * w + j].to_bits(),
                "{}: row {} column {} of {}×{} ({:?})",
                k,
                i,
                j,
                rows,
                w,
                residual
            );
        }
        prop_assert!(big[i * ld + w..(i + 1) * ld].iter().all(|v| v.is_nan()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(48))]

    /// Full and partial tiles of one to three panels, with and without accumulation and
    /// each epilogue part, against the f64 reference; and a partial tile's elements are
    /// the bits of the full tile's, whichever kernel computes its last columns (the lane
    /// kernel where `A` has room for its last vector of rows, else the narrow or full
    /// tile on a copy). (Shorter reductions under Miri, which interprets every FMA.)
    #[test]
    fn gemm_tiles_match_reference(
        kc in 0usize..if cfg!(miri) { 12 } else { 70 }, accumulate: bool, act in activation(), residual: bool, padded: bool,
        panels in 1usize..4, rows_cut in 0usize..16, cols_cut in 0usize..64, seed in 0u64..1000,
    ) {
        for k in tables() {
            let (mr, nr) = (k.mr, k.nr);
            let m = panels * mr;
            let pad = if padded { MAX_LANES } else { 0 };
            let a = random_vec(panels * kc * mr + pad, seed);
            let b = random_vec(kc * nr, seed + 1);
            let c0 = random_vec(m * nr, seed + 2);
            let bias = random_vec(m, seed + 3);
            let res = random_vec(m * nr, seed + 4);
            let e = Epilogue {
                bias: &bias,
                residual: if residual { Residual::From(MatRef::from_slice(&res, nr, m, nr)) } else { Residual::None },
                act,
            };
            let mut full = c0.clone();
            k.gemm(kc, &a, kc * mr, &b, &mut MatMut::from_slice(&mut full, nr, m, nr), accumulate, Some(&e));
            for p in 0..panels {
                let want = reference(
                    k, kc, &a[p * kc * mr..], &b,
                    accumulate.then_some(&c0[p * mr * nr..]), &bias[p * mr..],
                    residual.then_some(&res[p * mr * nr..]), act,
                );
                for (i, (&g, &w)) in full[p * mr * nr..(p + 1) * mr * nr].iter().zip(&want).enumerate() {
                    let bound = 1e-5 * (kc as f64 + 3.0);
                    prop_assert!((f64::from(g) - w).abs() <= bound, "{k}: panel {p} element {i}: {g} vs {w}");
                }
            }
            // A partial tile in the middle of a bigger output (ld > cols), C starting as
            // `start`: the bits of the full tile, and nothing outside it written.
            let (rows, cols) = (m - rows_cut % mr, nr - cols_cut % nr);
            let ld = nr + 3;
            let partial = |start: &[f32], e: &Epilogue<'_>| -> Result<(), TestCaseError> {
                let mut big = vec![f32::NAN; m * ld];
                for i in 0..rows {
                    big[i * ld..i * ld + cols].copy_from_slice(&start[i * nr..i * nr + cols]);
                }
                let mut view = MatMut::from_slice(&mut big, ld, rows, cols);
                k.gemm(kc, &a, kc * mr, &b, &mut view, accumulate, Some(e));
                for i in 0..rows {
                    for j in 0..cols {
                        prop_assert_eq!(
                            big[i * ld + j].to_bits(), full[i * nr + j].to_bits(),
                            "{}: row {} column {} of {}×{} ({:?})", k, i, j, rows, cols, e.residual
                        );
                    }
                    prop_assert!(big[i * ld + cols..(i + 1) * ld].iter().all(|v| v.is_nan()));
                }
                prop_assert!(big[rows * ld..].iter().all(|v| v.is_nan()));
                Ok(())
            };
            partial(&c0, &e)?;
            // The residual read from C itself (no partial sums in C): the same bits.
            if residual && !accumulate {
                let e = Epilogue { residual: Residual::InPlace, ..e };
                let mut whole = res.clone();
                k.gemm(kc, &a, kc * mr, &b, &mut MatMut::from_slice(&mut whole, nr, m, nr), false, Some(&e));
                prop_assert!(
                    whole.iter().zip(&full).all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{}: the whole tile in place", k
                );
                partial(&res, &e)?;
            }
        }
    }

    /// A whole panel and the next panel's first `x` columns in one pass
    /// ([`Kernels::gemm_extra`]): the bits of the two panels computed apart, for any rows
    /// (a lone short panel too, its A ending right after the lane span), with and without
    /// accumulation and each epilogue part, the residual in place too; nothing outside
    /// `c` written.
    #[test]
    fn extra_columns_have_the_bits_of_their_own_panel(
        kc in 1usize..40, accumulate: bool, act in activation(), residual: bool, in_place: bool,
        rows in 1usize..40, x in 1usize..5, gap in 0usize..3, seed in 0u64..1000,
    ) {
        for k in tables().into_iter().filter(|k| x <= k.extra_cols()) {
            let (mr, nr, w) = (k.mr, k.nr, k.nr + x);
            let panels = rows.div_ceil(mr);
            let a = random_vec((panels - 1) * kc * mr + (kc - 1) * mr + k.lane_span(), seed);
            let b_next = kc * nr + gap * nr;
            let b = random_vec(b_next + (kc - 1) * nr + x, seed + 1);
            let (c0, res) = (random_vec(rows * w, seed + 2), random_vec(rows * w, seed + 3));
            let bias = random_vec(rows, seed + 4);
            let (residual, in_place) = residual_case(&res, rows, w, residual, in_place, accumulate);
            let e = Epilogue { bias: &bias, residual, act };
            let start = if in_place { &res } else { &c0 };
            // Apart: the panel, then the extra columns as a panel of their own.
            let mut want = start.clone();
            let mut view = MatMut::from_slice(&mut want, w, rows, w);
            let e0 = Epilogue { residual: residual.sub(0, 0, rows, nr), ..e };
            k.gemm(kc, &a, kc * mr, &b, &mut view.sub(0, 0, rows, nr), accumulate, Some(&e0));
            let e1 = Epilogue { residual: residual.sub(0, nr, rows, x), ..e };
            let mut next = b[b_next..].to_vec();
            next.resize(kc * nr, 0.0);
            k.gemm(kc, &a, kc * mr, &next, &mut view.sub(0, nr, rows, x), accumulate, Some(&e1));
            // Together, in a bigger output.
            let ld = w + 5;
            let mut big = widened(start, rows, w, ld);
            let residual = match residual {
                Residual::From(_) => Residual::From(MatRef::from_slice(&res, w, rows, w)),
                other => other,
            };
            let e = Epilogue { residual, ..e };
            let mut view = MatMut::from_slice(&mut big, ld, rows, w);
            k.gemm_extra(kc, &a, kc * mr, &b, b_next, &mut view, accumulate, Some(&e));
            same_bits_within(k, &big, ld, &want, rows, w, residual)?;
        }
    }

    /// Whole panels in one call have the bits of one call per panel, with B's panels any
    /// distance apart or read in place from rows of a matrix, and C inside a wider output
    /// (columns past it untouched).
    #[test]
    fn panels_in_one_call_have_the_bits_of_one_call_each(
        kc in 0usize..if cfg!(miri) { 8 } else { 40 }, accumulate: bool, act in activation(),
        residual: bool, in_place: bool, rows in 1usize..30, panels in 1usize..4,
        gap in 0usize..3, seed in 0u64..1000,
    ) {
        for k in tables() {
            let (mr, nr) = (k.mr, k.nr);
            let w = panels * nr;
            let a = random_vec(rows.div_ceil(mr) * kc.max(1) * mr, seed);
            let step = (kc + gap) * nr;
            let b = random_vec((panels - 1) * step + kc * nr, seed + 1);
            let (c0, res) = (random_vec(rows * w, seed + 2), random_vec(rows * w, seed + 3));
            let bias = random_vec(rows, seed + 4);
            let (residual, in_place) = residual_case(&res, rows, w, residual, in_place, accumulate);
            let e = Epilogue { bias: &bias, residual, act };
            let start = if in_place { &res } else { &c0 };
            let a_step = kc * mr;
            // One call per panel.
            let mut want = start.clone();
            let mut view = MatMut::from_slice(&mut want, w, rows, w);
            for q in 0..panels {
                let eq = Epilogue { residual: residual.sub(0, q * nr, rows, nr), ..e };
                let bq = &b[q * step..q * step + kc * nr];
                k.gemm(kc, &a, a_step, bq, &mut view.sub(0, q * nr, rows, nr), accumulate, Some(&eq));
            }
            // One call, in a bigger output.
            let ld = w + 3;
            let mut big = widened(start, rows, w, ld);
            let mut view = MatMut::from_slice(&mut big, ld, rows, w);
            k.gemm_panels(kc, &a, a_step, &b, step, k.nr, &mut view, accumulate, Some(&e));
            same_bits_within(k, &big, ld, &want, rows, w, residual)?;
            // B read in place: the same values as rows of a matrix `w + gap` wide (panels
            // `NR` apart, steps a row apart), NaN past its `w` columns, which no kernel reads.
            let ldb = w + gap;
            let mut in_rows = vec![f32::NAN; kc.saturating_sub(1) * ldb + w];
            for q in 0..panels {
                for s in 0..kc {
                    let at = s * ldb + q * nr;
                    in_rows[at..at + nr].copy_from_slice(&b[q * step + s * nr..][..nr]);
                }
            }
            let mut big = widened(start, rows, w, ld);
            let mut view = MatMut::from_slice(&mut big, ld, rows, w);
            k.gemm_panels(kc, &a, a_step, &in_rows, nr, ldb, &mut view, accumulate, Some(&e));
            same_bits_within(k, &big, ld, &want, rows, w, residual)?;
        }
    }

    /// Row dot products against f64, and each row's bits do not depend on the rows
    /// computed with it. (Shorter rows under Miri, still several vectors and a tail.)
    #[test]
    fn dot_rows_match_reference(n in 0usize..if cfg!(miri) { 70 } else { 200 }, rows in 1usize..11, seed in 0u64..1000) {
        for k in tables() {
            let w = random_vec(rows * n, seed);
            let x = random_vec(n, seed + 1);
            let mut y = vec![0.0; rows];
            k.dot_rows(&w, &x, &mut y);
            for r in 0..rows {
                let want: f64 = (0..n).map(|j| f64::from(w[r * n + j]) * f64::from(x[j])).sum();
                prop_assert!((f64::from(y[r]) - want).abs() <= 1e-5 * (n as f64 + 1.0));
                let mut one = [0.0];
                k.dot_rows(&w[r * n..(r + 1) * n], &x, &mut one);
                prop_assert_eq!(one[0].to_bits(), y[r].to_bits(), "{}: row {}", k, r);
            }
        }
    }

    /// The depthwise kernel of every ISA ([`Kernels::depthwise`]) against f64, on a split
    /// plane exactly as long as its taps may read (Miri catches a read past it): planes as
    /// one run into scratch and, from a block's width on, row by row straight into the
    /// output; several channels a call; every activation; and the bits do not depend on
    /// the scratch's contents. (Narrower planes under Miri.)
    #[test]
    fn depthwise_planes_match_reference(
        rows in 1usize..5, cols in 1usize..if cfg!(miri) { 40 } else { 150 }, extra in 0usize..4,
        taps in 1usize..10, channels in 1usize..4, act in 0usize..4, seed in 0u64..1000,
    ) {
        use crate::activation::Activation;
        use crate::conv::depthwise::{Channels, Geometry, SLACK};
        let act = [
            Activation::None,
            Activation::Relu,
            Activation::Clip { min: -0.3, max: 0.4 },
            Activation::LeakyRelu { slope: 0.3 },
        ][act];
        let offsets: Vec<usize> = random_vec(taps, seed).iter().map(|v| ((v + 1.0) * 20.0) as usize).collect();
        let weights = random_vec(taps * channels, seed + 1);
        let bias = random_vec(channels, seed + 3);
        let pitch = cols + extra;
        let padded = (rows - 1) * pitch + cols + SLACK;
        // No copies: the split plane is `split` as given, for every channel.
        let split = random_vec(offsets.iter().max().unwrap() + padded, seed + 2);
        let g = Geometry {
            rows: 1, pitch, stride: (1, 1), input: (1, 1), padding: (0, 0), taps: offsets.clone(), copies: Vec::new(),
        };
        // An input plane of one float each, which no copy reads.
        let x = vec![0.0; channels];
        let ch = Channels {
            x: &x, in_plane: 1, weights: &weights, bias: &bias, geometry: &g, act, rows, cols,
        };
        let plane = rows * cols;
        for k in Isa::available().into_iter().map(Isa::kernels) {
            let mut got = vec![f32::NAN; channels * plane];
            k.depthwise(&ch, &mut split.clone(), &mut vec![f32::NAN; padded], &mut got);
            let mut again = vec![0.0; channels * plane];
            k.depthwise(&ch, &mut split.clone(), &mut vec![1.0; padded + 5], &mut again);
            prop_assert!(bits(&got) == bits(&again), "{}: bits depend on the scratch", k.isa);
            for c in 0..channels {
                let w = &weights[c * taps..(c + 1) * taps];
                for oy in 0..rows {
                    for ox in 0..cols {
                        let j = oy * pitch + ox;
                        let terms = offsets.iter().zip(w).map(|(&t, &w)| f64::from(w) * f64::from(split[t + j]));
                        let sum: f64 = f64::from(bias[c]) + terms.clone().sum::<f64>();
                        let scale: f64 = f64::from(bias[c].abs()) + terms.map(f64::abs).sum::<f64>();
                        let want = f64::from(act.apply(sum as f32));
                        let g = f64::from(got[c * plane + oy * cols + ox]);
                        prop_assert!((g - want).abs() <= 1e-5 * scale, "{}: channel {} ({}, {}): {} vs {}", k.isa, c, oy, ox, g, want);
                    }
                }
            }
        }
    }
}

/// A table of each channel-blocked depthwise kernel built for the ISAs this CPU runs: each
/// ISA's own and any other lane width among its variants (AVX-512's 16 lanes, which its
/// tables leave for AVX2's 8).
fn depthwise_tables() -> Vec<&'static Kernels> {
    let mut seen = Vec::new();
    Isa::available()
        .into_iter()
        .flat_map(Kernels::variants)
        .filter(|k| {
            let key = (k.isa, k.depthwise_lanes);
            let new = !seen.contains(&key);
            seen.push(key);
            new
        })
        .collect()
}

/// The channel-blocked depthwise kernel of every ISA ([`Kernels::depthwise_blocked`]) on
/// `c` channels of an `h × w` input: against the f64 reference, with NaN in the weights and
/// biases past the run's channels (the lanes of a part vector compute with them, and must
/// never store), and the same bits whatever the scratch holds. Returns each ISA's output.
#[allow(clippy::too_many_arguments)]
fn check_depthwise_blocked(
    c: usize,
    (h, w): (usize, usize),
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    act: crate::activation::Activation,
    seed: u64,
) -> Vec<(Isa, Vec<f32>)> {
    use crate::conv::depthwise::{BlockGeometry, Blocked};
    use crate::naive;
    use crate::tensor::Shape;
    use crate::{DepthwiseParams, activation::Activation};
    let p = DepthwiseParams {
        channels: c,
        kernel,
        stride,
        padding,
        act,
    };
    let input = Shape::new(c, h, w);
    let out = p.out_shape(input).expect("valid geometry");
    let taps = kernel.0 * kernel.1;
    let (wt, b, x) = (
        random_vec(c * taps, seed),
        random_vec(c, seed + 1),
        random_vec(input.len(), seed + 2),
    );
    // Tap-major, `c + MAX_LANES` apart, NaN past the channels.
    let stride_w = c + MAX_LANES;
    let mut tap_w = vec![f32::NAN; taps * stride_w];
    for (ch, row) in wt.chunks_exact(taps).enumerate() {
        for (t, &v) in row.iter().enumerate() {
            tap_w[t * stride_w + ch] = v;
        }
    }
    let mut bias = b.clone();
    bias.resize(c + MAX_LANES, f32::NAN);
    let g = BlockGeometry::new(&p, input, out);
    let blocked = Blocked {
        x: &x,
        channels: c,
        weights: &tap_w,
        weight_stride: stride_w,
        bias: &bias,
        geometry: &g,
        act,
    };
    let want = naive::depthwise(&p, input, &x, &wt, &b);
    let scale = naive::depthwise(
        &p.with_act(Activation::None),
        input,
        &crate::test_util::abs(&x),
        &crate::test_util::abs(&wt),
        &crate::test_util::abs(&b),
    );
    let mut outs = Vec::new();
    for k in depthwise_tables() {
        let len = g.layout(k.depthwise_lanes).len;
        let mut got = vec![f32::NAN; out.len()];
        k.depthwise_blocked(&blocked, &mut vec![f32::NAN; len], &mut got);
        let mut again = vec![-1.0; out.len()];
        k.depthwise_blocked(&blocked, &mut vec![1.0; len + 7], &mut again);
        let what = format!("{p:?} {input} {}", k.isa);
        assert!(
            got.iter().zip(&again).all(|(&a, &b)| same_bits(a, b)),
            "{what}: bits depend on the scratch"
        );
        crate::test_util::assert_close(&got, &want, &scale, crate::test_util::TOL, &what);
        outs.push((k.isa, got));
    }
    outs
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// [`check_depthwise_blocked`] on random shapes: channel counts that are not whole
    /// vectors, planes from one pixel on, every kernel to 5, stride to 3 and padding to 2
    /// per axis (even padding as wide as the kernel: rows and columns of zeros only), every
    /// activation. (Smaller planes under Miri.)
    #[test]
    fn depthwise_blocked_matches_reference(
        c in 1usize..=20, h in 1usize..=if cfg!(miri) { 6 } else { 24 },
        w in 1usize..=if cfg!(miri) { 6 } else { 24 },
        kh in 1usize..=5, kw in 1usize..=5, sy in 1usize..=3, sx in 1usize..=3,
        py in 0usize..=2, px in 0usize..=2, act in activation(), seed in 0u64..1000,
    ) {
        prop_assume!(h + 2 * py >= kh && w + 2 * px >= kw);
        check_depthwise_blocked(c, (h, w), (kh, kw), (sy, sx), (py, px), act, seed);
    }
}

/// MobileNet's 3×3 kernels at strides 1 and 2 have their own copies of the kernel's loops,
/// and rows narrower than `PAIR_BELOW` go two at a time: every plane side to 17 (odd and
/// even band heights), channel counts around the vector widths, both paddings.
#[test]
fn depthwise_blocked_3x3_matches_reference() {
    use crate::activation::Activation;
    let sides: Vec<usize> = if cfg!(miri) {
        vec![1, 2, 5]
    } else {
        (1..=17).collect()
    };
    let channels: &[usize] = if cfg!(miri) {
        &[3, 5]
    } else {
        &[1, 3, 4, 5, 8, 9, 15, 16, 17, 33]
    };
    for &side in &sides {
        for &c in channels {
            for stride in [1, 2] {
                for pad in [0, 1] {
                    if side + 2 * pad < 3 {
                        continue;
                    }
                    let act = if (side + c) % 2 == 0 {
                        Activation::RELU6
                    } else {
                        Activation::None
                    };
                    check_depthwise_blocked(
                        c,
                        (side, side + 1),
                        (3, 3),
                        (stride, stride),
                        (pad, pad),
                        act,
                        9,
                    );
                }
            }
        }
    }
}

/// Each ISA's blocked kernel checks its arguments (the contract of the `unsafe` kernel).
#[test]
fn depthwise_blocked_refuses_bad_arguments() {
    use crate::activation::Activation;
    use crate::conv::depthwise::{BlockGeometry, Blocked};
    let good = BlockGeometry {
        input: (4, 4),
        output: (4, 4),
        kernel: (3, 3),
        stride: (1, 1),
        padding: (1, 1),
    };
    let x = vec![0.0; 2 * 16];
    let (w, b) = (vec![0.0; 9 * 32], vec![0.0; 32]);
    fn blocked<'a>(x: &'a [f32], w: &'a [f32], b: &'a [f32], g: &'a BlockGeometry) -> Blocked<'a> {
        Blocked {
            x,
            channels: 2,
            weights: w,
            weight_stride: 32,
            bias: b,
            geometry: g,
            act: Activation::None,
        }
    }
    for k in depthwise_tables() {
        let len = good.layout(k.depthwise_lanes).len;
        let run = |g: BlockGeometry, work: usize, out: usize| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                k.depthwise_blocked(
                    &blocked(&x, &w, &b, &g),
                    &mut vec![0.0; work],
                    &mut vec![0.0; out],
                );
            }))
            .is_ok()
        };
        assert!(run(good, len, 32), "{}: a good call", k.isa);
        assert!(!run(good, len - 1, 32), "{}: short scratch", k.isa);
        assert!(!run(good, len, 31), "{}: short output", k.isa);
        assert!(
            !run(
                BlockGeometry {
                    output: (4, 5),
                    ..good
                },
                len,
                32
            ),
            "{}: a wrong output width",
            k.isa
        );
        assert!(
            !run(
                BlockGeometry {
                    kernel: (7, 3),
                    ..good
                },
                len,
                32
            ),
            "{}: a kernel past the padding",
            k.isa
        );
    }
}

#[test]
fn isa_names_round_trip_and_portable_is_always_there() {
    for isa in Isa::ALL {
        assert_eq!(isa.name().parse::<Isa>(), Ok(isa));
    }
    assert_eq!("AVX2".parse::<Isa>(), Ok(Isa::Avx2));
    let err = "sse9".parse::<Isa>().unwrap_err();
    assert!(err.to_string().contains("sse9"), "{err}");
    assert_eq!(Isa::available().last(), Some(&Isa::Portable));
    // Every aarch64 core has NEON (and so does qemu-aarch64, where CI runs these tests).
    #[cfg(target_arch = "aarch64")]
    assert!(Isa::Neon.is_supported());
    assert!(Isa::detect().is_supported());
}

#[test]
fn fma_probe_counts_flops() {
    for k in tables() {
        assert_eq!(k.fma_probe(10) % 10, 0);
        assert!(k.fma_probe(10) >= 10 * 2 * k.lanes as u64);
    }
}

#[test]
#[should_panic(expected = "wider")]
fn oversized_tile_is_refused() {
    let k = Isa::Portable.kernels();
    let mut c = vec![0.0; (k.mr + 1) * k.nr];
    k.gemm(
        0,
        &[],
        0,
        &[],
        &mut MatMut::from_slice(&mut c, k.nr + 1, 1, k.nr + 1),
        false,
        None,
    );
}

/// Every table's GEMM, through every column count (the full tile, the narrow kernel, the
/// lane kernel and the local copy), with NaN, ±∞ and −0.0 in A, B, C, the bias and the
/// residual: NaN and +∞ come out of the fused ReLU (−∞ becomes 0), as in the f64
/// reference. `max(v, zero)` on x86 and `f32::max` on the portable path turned NaN into 0.
#[test]
fn gemm_epilogue_propagates_nan_and_inf() {
    for k in tables() {
        let (mr, nr) = (k.mr, k.nr);
        let (mut nan, mut inf, mut zeroed) = (0, 0, 0);
        // Under Miri, the small cases and the column counts of each path (one, a short
        // copy, the full tile): every case is interpreted.
        let cases: &[(usize, usize)] = if cfg!(miri) {
            &[(1, 1), (3, 2)]
        } else {
            &[(1, 1), (5, 2), (37, 3)]
        };
        let widths: Vec<usize> = if cfg!(miri) {
            vec![1, nr / 2 + 1, nr]
        } else {
            (1..=nr).collect()
        };
        for (case, &(kc, panels)) in cases.iter().enumerate() {
            let seed = 100 * case as u64;
            let m = panels * mr;
            let mut a = random_vec(panels * kc * mr + MAX_LANES, seed);
            let mut b = random_vec(kc * nr, seed + 1);
            let mut c0 = random_vec(m * nr, seed + 2);
            let mut bias = random_vec(m, seed + 3);
            let mut res = random_vec(m * nr, seed + 4);
            sprinkle_specials(&mut a[..panels * kc * mr], 23, seed + 5);
            sprinkle_specials(&mut b, 29, seed + 6);
            sprinkle_specials(&mut c0, 31, seed + 7);
            sprinkle_specials(&mut bias, 5, seed + 8);
            sprinkle_specials(&mut res, 17, seed + 9);
            for (accumulate, residual) in [(false, false), (true, true), (false, true)] {
                let e = Epilogue {
                    bias: &bias,
                    residual: if residual {
                        Residual::From(MatRef::from_slice(&res, nr, m, nr))
                    } else {
                        Residual::None
                    },
                    act: Activation::Relu,
                };
                let want: Vec<Vec<f64>> = (0..panels)
                    .map(|p| {
                        reference(
                            k,
                            kc,
                            &a[p * kc * mr..],
                            &b,
                            accumulate.then_some(&c0[p * mr * nr..]),
                            &bias[p * mr..],
                            residual.then_some(&res[p * mr * nr..]),
                            Activation::Relu,
                        )
                    })
                    .collect();
                for &cols in &widths {
                    let mut c = c0.clone();
                    let mut view = MatMut::from_slice(&mut c, nr, m, cols);
                    k.gemm(kc, &a, kc * mr, &b, &mut view, accumulate, Some(&e));
                    for i in 0..m {
                        for j in 0..cols {
                            let (g, w) = (c[i * nr + j], want[i / mr][i % mr * nr + j]);
                            // Formatted only for a failure's message.
                            let at = format_args!("{k}: kc {kc} row {i} column {j} of {cols}");
                            if w.is_nan() {
                                assert!(g.is_nan(), "{at}: {g}, want NaN");
                                nan += 1;
                            } else if w.is_infinite() {
                                assert_eq!(f64::from(g), w, "{at}");
                                inf += 1;
                            } else {
                                let bound = 1e-5 * (kc as f64 + 3.0);
                                assert!((f64::from(g) - w).abs() <= bound, "{at}: {g} vs {w}");
                                zeroed += usize::from(w == 0.0);
                            }
                        }
                    }
                }
            }
        }
        // The cases exercise what they claim to.
        assert!(
            nan > 0 && inf > 0 && zeroed > 0,
            "{k}: {nan} {inf} {zeroed}"
        );
    }
}

/// Every activation of [`ACTIVATIONS`] on NaN, ±∞, ±0.0 and values on both sides of
/// every bound, on every table and through every column count (`kc = 0` accumulating
/// into C makes `v = C + bias` exactly): the bits of [`Activation::apply`], whichever ISA
/// and kernel computes it. So ReLU of −0.0 is −0.0 and of a negative value +0.0.
#[test]
fn activation_bits_are_the_same_on_every_path() {
    let values = [
        -0.0f32,
        0.0,
        -3.0,
        2.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        6.0,
        7.5,
        0.25,
        0.3,
        -0.5,
        -0.7,
        1.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
    ];
    for k in tables() {
        let (mr, nr) = (k.mr, k.nr);
        let m = 2 * mr;
        let c0: Vec<f32> = (0..m * nr).map(|i| values[i % values.len()]).collect();
        let bias = vec![-0.0f32; m];
        let (a, b) = (vec![0.0f32; MAX_LANES], vec![0.0f32; nr]);
        let widths: Vec<usize> = if cfg!(miri) {
            vec![1, nr / 2 + 1, nr]
        } else {
            (1..=nr).collect()
        };
        for act in ACTIVATIONS {
            let e = Epilogue {
                bias: &bias,
                residual: Residual::None,
                act,
            };
            for &cols in &widths {
                let mut c = c0.clone();
                let mut view = MatMut::from_slice(&mut c, nr, m, cols);
                k.gemm(0, &a, 0, &b, &mut view, true, Some(&e));
                for i in 0..m {
                    for j in 0..cols {
                        let (g, x) = (c[i * nr + j], c0[i * nr + j]);
                        let want = act.apply(x + -0.0);
                        assert!(
                            same_bits(g, want),
                            "{k}: {act:?}({x}) = {g} ({:#x}), want {want} ({:#x}), column {j} of {cols}",
                            g.to_bits(),
                            want.to_bits()
                        );
                    }
                }
            }
        }
    }
}

/// A fused activation has the bits of [`Activation::apply`] on the value the same call
/// stores without it, for each of [`ACTIVATIONS`], on every table, with NaN, ±∞ and −0.0
/// in A, B, C, the bias and the residual: through every column count of [`Kernels::gemm`]
/// (the full tile, the narrow, lane and local-copy kernels), the extra columns of
/// [`Kernels::gemm_extra`] and the panels of [`Kernels::gemm_panels`], with and without
/// accumulation and a residual apart or in place.
#[test]
fn fused_activation_is_apply_of_the_unfused_value() {
    let cases: &[(usize, usize)] = if cfg!(miri) {
        &[(3, 2)]
    } else {
        &[(1, 1), (5, 2), (37, 3)]
    };
    let acts: &[Activation] = if cfg!(miri) {
        &[
            Activation::Relu,
            Activation::RELU6,
            Activation::LeakyRelu { slope: 0.1 },
        ]
    } else {
        &ACTIVATIONS
    };
    // The first `cols` columns of `got`, rows `w` wide, against `plain`'s.
    let check =
        |k: &Kernels, what: &str, (got, plain): (&[f32], &[f32]), w, cols, act: Activation| {
            for (i, (&g, &u)) in got.iter().zip(plain).enumerate() {
                if i % w >= cols {
                    assert_eq!(
                        g.to_bits(),
                        u.to_bits(),
                        "{k} {what}: column {} written",
                        i % w
                    );
                    continue;
                }
                let want = act.apply(u);
                assert!(
                    same_bits(g, want),
                    "{k} {what} {act:?}: element {i}: {g} ({:#x}) for {u}, want {want} ({:#x})",
                    g.to_bits(),
                    want.to_bits()
                );
            }
        };
    for k in tables() {
        let (mr, nr, x) = (k.mr, k.nr, k.extra_cols());
        let widths: Vec<usize> = if cfg!(miri) {
            vec![1, nr / 2 + 1, nr]
        } else {
            (1..=nr).collect()
        };
        for (case, &(kc, panels)) in cases.iter().enumerate() {
            let seed = 1000 + 100 * case as u64;
            // Two panels of columns: `w` wide, room for the extra columns and `gemm_panels`.
            let (m, w) = (panels * mr, 2 * nr);
            let mut a = random_vec(panels * kc * mr + MAX_LANES, seed);
            let mut b = random_vec(2 * kc * nr, seed + 1);
            let mut c0 = random_vec(m * w, seed + 2);
            let mut bias = random_vec(m, seed + 3);
            let mut res = random_vec(m * w, seed + 4);
            sprinkle_specials(&mut a[..panels * kc * mr], 23, seed + 5);
            sprinkle_specials(&mut b, 29, seed + 6);
            sprinkle_specials(&mut c0, 31, seed + 7);
            sprinkle_specials(&mut bias, 7, seed + 8);
            sprinkle_specials(&mut res, 17, seed + 9);
            let (a, b) = (&a[..], &b[..]);
            for (accumulate, residual, in_place) in [
                (false, false, false),
                (true, true, false),
                (false, true, false),
                (false, true, true),
            ] {
                let (residual, in_place) =
                    residual_case(&res, m, w, residual, in_place, accumulate);
                let start = if in_place { &res } else { &c0 };
                // Runs `f` on C (`start`, `m × w`) with the epilogue's activation `act`.
                let run = |act: Activation, f: &dyn Fn(&mut MatMut<'_>, &Epilogue<'_>)| {
                    let mut c = start.clone();
                    let e = Epilogue {
                        bias: &bias,
                        residual,
                        act,
                    };
                    f(&mut MatMut::from_slice(&mut c, w, m, w), &e);
                    c
                };
                // Each call, with the columns it writes.
                type Call<'c> = Box<dyn Fn(&mut MatMut<'_>, &Epilogue<'_>) + 'c>;
                let mut calls: Vec<(String, usize, Call<'_>)> = Vec::new();
                for &cols in &widths {
                    calls.push((
                        format!("kc {kc}, {cols} columns"),
                        cols,
                        Box::new(move |c, e| {
                            let e = Epilogue {
                                residual: e.residual.sub(0, 0, m, cols),
                                ..*e
                            };
                            k.gemm(
                                kc,
                                a,
                                kc * mr,
                                b,
                                &mut c.sub(0, 0, m, cols),
                                accumulate,
                                Some(&e),
                            );
                        }),
                    ));
                }
                for extra in 1..=x {
                    calls.push((
                        format!("kc {kc}, {extra} extra columns"),
                        nr + extra,
                        Box::new(move |c, e| {
                            let e = Epilogue {
                                residual: e.residual.sub(0, 0, m, nr + extra),
                                ..*e
                            };
                            let mut c = c.sub(0, 0, m, nr + extra);
                            k.gemm_extra(kc, a, kc * mr, b, kc * nr, &mut c, accumulate, Some(&e));
                        }),
                    ));
                }
                calls.push((
                    format!("kc {kc}, two panels in one call"),
                    w,
                    Box::new(move |c, e| {
                        k.gemm_panels(kc, a, kc * mr, b, kc * nr, nr, c, accumulate, Some(e));
                    }),
                ));
                for (what, cols, call) in &calls {
                    let plain = run(Activation::None, call.as_ref());
                    for &act in acts {
                        let got = run(act, call.as_ref());
                        check(k, what, (&got, &plain), w, *cols, act);
                    }
                }
            }
        }
    }
}

/// An empty reduction (`kc = 0`) with an empty A and B, through every column count: C
/// becomes `act(C + bias)` (accumulating) or `act(bias)`. The lane kernel's columns were
/// sliced out of B past its end (a proptest case under Miri found it).
#[test]
fn an_empty_reduction_reads_neither_a_nor_b() {
    for k in tables() {
        let (mr, nr) = (k.mr, k.nr);
        let m = mr + 1;
        let c0 = random_vec(m * nr, 1);
        let bias = random_vec(m, 2);
        let e = Epilogue {
            bias: &bias,
            residual: Residual::None,
            act: Activation::RELU6,
        };
        for cols in 1..=nr {
            for accumulate in [false, true] {
                let mut c = c0.clone();
                let mut view = MatMut::from_slice(&mut c, nr, m, cols);
                k.gemm(0, &[], 0, &[], &mut view, accumulate, Some(&e));
                for i in 0..m {
                    for j in 0..nr {
                        let x = c0[i * nr + j];
                        let want = match (j < cols, accumulate) {
                            (false, _) => x,
                            (true, true) => e.act.apply(x + bias[i]),
                            (true, false) => e.act.apply(0.0 + bias[i]),
                        };
                        let got = c[i * nr + j];
                        assert!(same_bits(got, want), "{k}: {cols} columns: {got} != {want}");
                    }
                }
            }
        }
    }
}

/// A lone panel entered mid-way (`rows < MR`, what `gemm::gemm` runs for a row range that
/// starts inside a panel) may be given exactly `(kc − 1)·MR + rows` floats of A, as
/// [`Kernels::gemm`] checks: its last `k` step ends after its `rows` rows. Each case's A is
/// its own allocation of that length, so a kernel that reads a whole `MR` past it fails
/// under Miri (the portable kernel did: it sliced `kc·MR` floats).
#[test]
fn a_lone_short_panel_is_read_no_further_than_its_rows() {
    for k in tables() {
        let (mr, nr) = (k.mr, k.nr);
        for (kc, rows) in [(1, 1), (3, mr - 1), (2, mr.div_ceil(2))] {
            let padded = random_vec(kc * mr, kc as u64);
            let exact: Vec<f32> = padded[..(kc - 1) * mr + rows].to_vec();
            let b = random_vec(kc * nr, 7);
            let bias = random_vec(mr, 8);
            let e = Epilogue {
                bias: &bias,
                residual: Residual::None,
                act: Activation::None,
            };
            for cols in [nr, 1] {
                let (mut want, mut got) = (vec![0.0; rows * nr], vec![0.0; rows * nr]);
                let mut view = MatMut::from_slice(&mut want, nr, rows, cols);
                k.gemm(kc, &padded, kc * mr, &b, &mut view, false, Some(&e));
                let mut view = MatMut::from_slice(&mut got, nr, rows, cols);
                k.gemm(kc, &exact, kc * mr, &b, &mut view, false, Some(&e));
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{k}: kc {kc}, {rows} rows, {cols} cols"
                );
            }
        }
    }
}

/// Two tiles of one runtime buffer, claimed side by side and written through
/// [`MatMut::from_rect`] while both claims live, as two ranks of a conv layer do: the GEMMs
/// (and a strided copy into a sub-view) give the bits they give into a plain buffer, and
/// nothing outside the tiles changes. Under Miri this checks the pointer a claim lends
/// (derived from the whole buffer's cells) and the kernels' stores through it.
#[test]
fn kernels_write_runtime_rect_claims_held_together() {
    use taopipe_runtime::{Rect, SharedSlice};

    for k in tables() {
        let (mr, nr) = (k.mr, k.nr);
        let (m, ld, kc) = (mr + 1, 2 * nr + 3, 3);
        let a = random_vec(2 * kc * mr + MAX_LANES, 1);
        let b = random_vec(kc * nr, 2);
        let src = random_vec(4 * 5, 3);
        let (left, right) = (Rect::new(0, ld, m, nr), Rect::new(nr + 1, ld, m, nr - 2));
        // What each tile gets: two GEMMs (the second accumulating) on the left one, a GEMM
        // and a strided copy into a sub-view on the right one.
        let gemm =
            |c: &mut MatMut<'_>, accumulate| k.gemm(kc, &a, kc * mr, &b, c, accumulate, None);
        let copy = |c: &mut MatMut<'_>| c.sub(1, 1, 4, 5).copy_rows(0..4, 0, &src, 5, 5);
        // One tile after the other into a plain buffer (they are disjoint).
        let mut plain = vec![f32::NAN; m * ld];
        let mut l = MatMut::from_slice(&mut plain, ld, m, nr);
        gemm(&mut l, false);
        gemm(&mut l, true);
        let mut r = MatMut::from_slice(&mut plain[nr + 1..], ld, m, nr - 2);
        gemm(&mut r, false);
        copy(&mut r);
        // Interleaved through two claims held together.
        let shared = SharedSlice::new(vec![f32::NAN; m * ld]);
        {
            let mut lg = shared.write_rect(left).expect("left tile");
            let mut rg = shared.write_rect(right).expect("right tile, disjoint");
            let (mut l, mut r) = (MatMut::from_rect(&mut lg), MatMut::from_rect(&mut rg));
            gemm(&mut l, false);
            gemm(&mut r, false);
            gemm(&mut l, true);
            copy(&mut r);
        }
        let got = shared.read().expect("claims released");
        assert_eq!(bits(&got), bits(&plain), "{k}");
        assert!(
            got[nr].is_nan() && got[ld - 1].is_nan(),
            "{k}: between and after the tiles"
        );
    }
}

/// Each path's interleave of Winograd's output tiles (`unsafe`, with the ISA's shuffles or
/// interleaving stores) equals the portable one, on whole vectors and on tails.
#[test]
fn interleaves_equal_the_portable_one() {
    type Interleave = unsafe fn(&[f32], usize, usize, &mut [f32]);
    let paths: Vec<(Isa, Interleave)> = vec![
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2, x86::interleave_avx2),
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx512, x86::interleave_avx512),
        #[cfg(target_arch = "aarch64")]
        (Isa::Neon, neon::interleave),
    ];
    let mut ran = 0;
    for (isa, interleave) in paths.into_iter().filter(|(i, _)| i.is_supported()) {
        for m in [2, 4] {
            for n in [1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 56, 64] {
                let xs = random_vec(m * n, (m * 100 + n) as u64);
                let mut want = vec![f32::NAN; m * n];
                crate::conv::winograd::interleave_from(&xs, m, n, 0, &mut want);
                assert!(want.iter().all(|v| !v.is_nan()), "every output written");
                let mut got = vec![f32::NAN; m * n];
                // SAFETY: this CPU runs `isa`, whose target features the function needs.
                unsafe { interleave(&xs, m, n, &mut got) };
                assert_eq!(bits(&got), bits(&want), "{isa}: {m} outputs of {n} tiles");
                ran += 1;
            }
        }
    }
    if !cfg!(miri) && Isa::available().len() > 1 {
        assert!(ran > 0, "a SIMD path ran");
    }
}

#[test]
#[should_panic(expected = "not whole panels")]
fn panels_in_one_call_must_be_whole() {
    let k = Isa::Portable.kernels();
    let (a, b) = (vec![1.0; k.mr], vec![1.0; 2 * k.nr]);
    let mut c = vec![0.0; k.nr + 1];
    let mut view = MatMut::from_slice(&mut c, k.nr + 1, 1, k.nr + 1);
    k.gemm_panels(1, &a, k.mr, &b, k.nr, k.nr, &mut view, false, None);
}

#[test]
#[should_panic(expected = "for 2 panels")]
fn panels_in_one_call_need_all_of_b() {
    let k = Isa::Portable.kernels();
    let (a, b) = (vec![1.0; k.mr], vec![1.0; 2 * k.nr - 1]);
    let mut c = vec![0.0; 2 * k.nr];
    let mut view = MatMut::from_slice(&mut c, 2 * k.nr, 1, 2 * k.nr);
    k.gemm_panels(1, &a, k.mr, &b, k.nr, k.nr, &mut view, false, None);
}

/// Every ISA's own 3×3 stride-2 max pool (AVX2's and AVX-512's) against the portable
/// path's separable route, bit for bit, NaN and ±∞ included: padding 0 and 1, odd and even
/// sides, and the ceil-mode overhang (`right` past the padding before) that SqueezeNet's
/// and GoogLeNet's pools have. Under Miri it runs the AVX2 kernel on small planes.
#[test]
fn max_pool_3x3_s2_kernels_match_the_separable_route() {
    use crate::kernel::Kernel;
    use crate::{Pool2d, PoolParams, Shape};
    let sides: &[usize] = if cfg!(miri) {
        &[5, 10]
    } else {
        &[5, 10, 13, 27, 56, 111]
    };
    for kernels in tables().into_iter().filter(|k| k.max_3x3_s2.is_some()) {
        for &side in sides {
            for (pad, ceil) in [(0, false), (0, true), (1, false), (1, true)] {
                let params = PoolParams::max(3, 2, pad).with_ceil(ceil);
                let input = Shape::new(2, side, side + 1);
                let mut x = random_vec(input.len(), side as u64);
                sprinkle_specials(&mut x, 9, side as u64);
                let pool = |isa| Pool2d::new(params, input).unwrap().with_isa(isa).unwrap();
                let want = pool(Isa::Portable).forward(&[&x], &mut crate::Scratch::new());
                let got = pool(kernels.isa).forward(&[&x], &mut crate::Scratch::new());
                assert_eq!(got.len(), want.len());
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        same_bits(g, w),
                        "{} {params:?} on {input}: output {i}: {g} vs {w}",
                        kernels.isa
                    );
                }
            }
        }
    }
}

/// `p` (with ReLU) on `input`, forced to `algo` on every table: against the naive conv
/// within `tol`; the chunks `chunks(count)` of output channels with the whole layer's
/// bits; a fused residual, given apart and read from the output in place, with the bits
/// of the conv followed by the add. `label` names the case in failures.
fn check_forced_conv(
    p: crate::conv::Conv2dParams,
    input: crate::tensor::Shape,
    algo: crate::conv::ConvAlgo,
    tol: f32,
    chunks: impl Fn(usize) -> Vec<usize>,
    label: &str,
) {
    use crate::conv::Conv2d;
    use crate::kernel::{Kernel, Scratch};
    use crate::naive;
    use crate::test_util::{abs, assert_close, bits, random_vec};
    let (w, b, x) = (
        random_vec(p.weight_len(), 1),
        random_vec(p.out_channels, 2),
        random_vec(input.len(), 3),
    );
    let want = naive::conv2d(&p, input, &x, &w, &b);
    let scale = naive::conv2d(
        &p.with_act(Activation::None),
        input,
        &abs(&x),
        &abs(&w),
        &abs(&b),
    );
    for k in tables() {
        let conv = |act| {
            let (w, b) = (w.clone(), Some(b.clone()));
            Conv2d::with_options(p.with_act(act), input, w, b, Some(algo), k.isa).unwrap()
        };
        let relu = conv(Activation::Relu);
        assert_eq!(relu.algo(), algo);
        let what = format!("{label} {}", k.isa);
        let got = relu.forward(&[&x], &mut Scratch::new());
        assert_close(&got, &want, &scale, tol, &what);
        for chunk in chunks(relu.plan().count()) {
            let range = relu.output_range(chunk..chunk + 1);
            let mut part = vec![f32::NAN; range.len()];
            relu.compute_chunks(&[&x], chunk..chunk + 1, &mut part, &mut Scratch::new());
            assert_eq!(bits(&part), bits(&got[range]), "{what} chunk {chunk}");
        }
        let plain = conv(Activation::None);
        let r = random_vec(got.len(), 4);
        let sum: Vec<f32> = plain
            .forward(&[&x], &mut Scratch::new())
            .iter()
            .zip(&r)
            .map(|(&y, &r)| Activation::Relu.apply(y + r))
            .collect();
        let fused = relu.clone().with_residual(true);
        let apart = fused.forward(&[&x, &r], &mut Scratch::new());
        assert_eq!(bits(&apart), bits(&sum), "{what} residual");
        let mut own = r.clone();
        let all = 0..fused.plan().count();
        fused.compute_chunks(&[&x], all, &mut own, &mut Scratch::new());
        assert_eq!(bits(&own), bits(&sum), "{what} residual in place");
    }
}

/// The channel-lanes conv kernel of every ISA ([`Kernels::lanes_conv`], through
/// `conv::lanes`): a layer small enough for Miri, with more channels than one panel, at
/// strides 1 to 4, on planes narrower than a tile and (stride 1, 26 wide; not under Miri,
/// which takes minutes there and runs no 10-pixel tile) on rows of whole tiles and tiles
/// that run on into the next row; and (not under Miri either) one of more than
/// [`SHORT_STEPS`](crate::conv::lanes::SHORT_STEPS) steps, which AVX-512 runs in wider
/// tiles with another store: against the reference; output channels computed from inside
/// a panel (a chunk) keep the bits of the whole layer; a fused residual given apart and
/// read from the output in place give the same bits as the add after the conv.
#[test]
fn lanes_conv_matches_reference() {
    use crate::conv::lanes::SHORT_STEPS;
    use crate::conv::{Conv2dParams, ConvAlgo};
    use crate::tensor::Shape;
    let long = SHORT_STEPS / 9 + 1;
    let wide = if cfg!(miri) {
        vec![]
    } else {
        vec![(3, 1, 26), (long, 1, 13), (long, 2, 11)]
    };
    let small = [(3, 1, 5), (3, 2, 7), (3, 4, 13), (3, 3, 11)];
    for (channels, stride, side) in small.into_iter().chain(wide) {
        let p = Conv2dParams::new(channels, 20, 3, stride, 1).with_act(Activation::Relu);
        // Chunks of 4 channels: the second starts inside a panel (of 8 or more).
        check_forced_conv(
            p,
            Shape::new(channels, side, side),
            ConvAlgo::Lanes,
            crate::test_util::TOL,
            |count| vec![1, count - 1],
            &format!("{channels} channels, stride {stride}"),
        );
    }
}

/// The vector Winograd transforms (`simd/winograd.rs`) through a whole conv, on every
/// table, for each tiling: against the naive conv within Winograd's bound; chunks of output
/// channels with the whole layer's bits; a fused residual, apart and in place, with the
/// bits of the conv followed by the add. The plane (9 × 37) makes tile rows of 10 and 19
/// tiles, so a row ends part-way through a vector on every ISA, and its last tile row
/// runs past the output's last row. Not under Miri (minutes there):
/// `winograd_transforms_match_f64` runs the transforms' unsafe loads and stores.
#[test]
#[cfg_attr(miri, ignore)]
fn winograd_conv_matches_reference() {
    use crate::conv::winograd::ERROR_BOUND;
    use crate::conv::{Conv2dParams, ConvAlgo};
    use crate::tensor::Shape;
    for (algo, kernel) in [
        (ConvAlgo::Winograd, 3),
        (ConvAlgo::Winograd2, 3),
        (ConvAlgo::Winograd5, 5),
    ] {
        let p = Conv2dParams::new(2, 5, kernel, 1, kernel / 2).with_act(Activation::Relu);
        check_forced_conv(
            p,
            Shape::new(2, 9, 37),
            algo,
            ERROR_BOUND as f32,
            |count| (0..count).collect(),
            &format!("{algo:?}"),
        );
    }
}

/// `Bᵀ` and `Aᵀ` of `tile` as matrices (rows of six, zero past `t`): Lavin & Gray's F(4×4,
/// 3×3) and F(2×2, 3×3); F(2×2, 5×5) takes F(4×4)'s `Bᵀ`, and `Aᵀ`'s first two rows with
/// the point at ∞ added to the second.
fn winograd_matrices(tile: crate::conv::winograd::Tile) -> (Vec<[f64; 6]>, Vec<[f64; 6]>) {
    use crate::conv::winograd::Tile;
    let bt6 = vec![
        [4.0, 0.0, -5.0, 0.0, 1.0, 0.0],
        [0.0, -4.0, -4.0, 1.0, 1.0, 0.0],
        [0.0, 4.0, -4.0, -1.0, 1.0, 0.0],
        [0.0, -2.0, -1.0, 2.0, 1.0, 0.0],
        [0.0, 2.0, -1.0, -2.0, 1.0, 0.0],
        [0.0, 4.0, 0.0, -5.0, 0.0, 1.0],
    ];
    let bt4 = vec![
        [1.0, 0.0, -1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, -1.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, -1.0, 0.0, 0.0],
    ];
    let first = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0];
    match tile {
        Tile::F4 => (
            bt6,
            vec![
                first,
                [0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
                [0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
                [0.0, 1.0, -1.0, 8.0, -8.0, 1.0],
            ],
        ),
        Tile::F2K5 => (bt6, vec![first, [0.0, 1.0, -1.0, 2.0, -2.0, 1.0]]),
        Tile::F2 => (
            bt4,
            vec![
                [1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, -1.0, -1.0, 0.0, 0.0],
            ],
        ),
    }
}

/// `P x Qᵀ` of a `t × t` tile `x` in f64 (`P`, `Q`: rows of six, `t` used), and the same
/// with every term's magnitude: `out[a][b] = Σ_ij P[a][i]·x[i][j]·Q[b][j]`, one axis then
/// the other.
fn sandwich(p: &[[f64; 6]], q: &[[f64; 6]], t: usize, x: &[[f64; 6]; 6]) -> Vec<(f64, f64)> {
    // half[b][i] = Σ_j x[i][j]·Q[b][j], with its magnitude.
    let half: Vec<[(f64, f64); 6]> = q
        .iter()
        .map(|qb| {
            std::array::from_fn(|i| {
                (0..t).fold((0.0, 0.0), |(v, m), j| {
                    (v + x[i][j] * qb[j], m + (x[i][j] * qb[j]).abs())
                })
            })
        })
        .collect();
    let mut out = Vec::new();
    for pa in p {
        for hb in &half {
            let (mut v, mut scale) = (0.0, 0.0);
            for i in 0..t {
                v += pa[i] * hb[i].0;
                scale += pa[i].abs() * hb[i].1;
            }
            out.push((v, scale));
        }
    }
    out
}

/// The vector Winograd transforms (`simd/winograd.rs`), Miri-sized: the portable table's
/// equal `Bᵀ d B` and `Aᵀ m A` (+ bias, + residual, ReLU) in f64 within rounding, and every
/// other table gives its bits (every ISA takes the sums in one order, multiplies and adds
/// apart). A block of tile rows 1 and 2 of a 3-row plane whose last row runs past the
/// output; rows of 9 tiles, so one ends part-way through a vector on every ISA;
/// the input transform of a channel range that does not start at 0; products that end
/// part-way through a vector; each residual kind.
#[test]
fn winograd_transforms_match_f64() {
    use crate::conv::winograd::{Geometry, Products, Tile, input_work_len};
    use crate::gemm::BlockEpilogue;
    for tile in [Tile::F2, Tile::F4, Tile::F2K5] {
        let (m, t, r) = (tile.m(), tile.t(), tile.r());
        let (c, oh, ow) = (3, 2 * m + 1, 37usize);
        let (th, tw) = (oh.div_ceil(m), ow.div_ceil(m));
        let (py, px) = (r / 2, r / 2);
        let g = Geometry {
            c,
            h: oh,
            w: ow,
            oh,
            ow,
            py,
            px,
            tw,
            tile,
        };
        let x = random_vec(c * oh * ow, 1);
        let rows = 1..th;
        let tiles = rows.len() * tw;
        let (bt, at) = winograd_matrices(tile);
        // `V[ξ][tile][channel]` of input channels 1 and 2, from a table's panels.
        let run_input = |k: &Kernels| {
            let (nr, panels) = (k.nr, tiles.div_ceil(k.nr));
            let ld = 2 * nr;
            let mut packed = vec![f32::NAN; t * t * panels * ld];
            let mut out = MatMut::from_slice(&mut packed, ld, t * t * panels, ld);
            let mut work = vec![0.0; input_work_len(tile, tiles, tw)];
            k.winograd_input(&g, &x, rows.clone(), 1..3, &mut out, &mut work);
            let mut v = Vec::new();
            for xi in 0..t * t {
                for q in 0..panels * nr {
                    for ch in 0..2 {
                        let got = packed[(xi * panels + q / nr) * ld + ch * nr + q % nr];
                        if q < tiles {
                            v.push(got);
                        } else {
                            assert_eq!(got, 0.0, "{tile:?} {}: lane past the tiles", k.isa);
                        }
                    }
                }
            }
            v
        };
        // Two output channels, `n` of them per `ξ` in the products, rows of exactly the
        // tiles: the last vector of tiles runs past the products' end on every ISA.
        let (n, ldm) = (2, tiles);
        let products = random_vec(t * t * n * ldm, 2);
        let bias = random_vec(n, 3);
        let y0 = rows.start * m;
        let pixels = (rows.end * m).min(oh) * ow - y0 * ow;
        let residual = random_vec(n * pixels, 4);
        let run_output = |k: &Kernels, kind: usize| {
            let mut y = if kind == 2 {
                residual.clone()
            } else {
                vec![f32::NAN; n * pixels]
            };
            let e = BlockEpilogue {
                bias: &bias,
                residual: match kind {
                    0 => Residual::None,
                    1 => Residual::From(MatRef::from_slice(&residual, pixels, n, pixels)),
                    _ => Residual::InPlace,
                },
                act: Activation::Relu,
            };
            let mut out = MatMut::from_slice(&mut y, pixels, n, pixels);
            let mv = Products {
                values: &products,
                ldm,
                stride: n,
            };
            k.winograd_output(&g, mv, n, rows.clone(), &e, &mut out);
            y
        };
        // The portable table against f64.
        let portable = Isa::Portable.kernels();
        let v = run_input(portable);
        for q in 0..tiles {
            let (ty, tx) = (rows.start + q / tw, q % tw);
            for ch in 0..2 {
                let plane = &x[(ch + 1) * oh * ow..(ch + 2) * oh * ow];
                let mut d = [[0.0f64; 6]; 6];
                for (i, di) in d.iter_mut().enumerate().take(t) {
                    for (j, dij) in di.iter_mut().enumerate().take(t) {
                        let iy = (m * ty + i).wrapping_sub(py);
                        let ix = (m * tx + j).wrapping_sub(px);
                        if iy < oh && ix < ow {
                            *dij = f64::from(plane[iy * ow + ix]);
                        }
                    }
                }
                for (xi, (want, scale)) in sandwich(&bt, &bt, t, &d).into_iter().enumerate() {
                    let got = f64::from(v[(xi * tiles + q) * 2 + ch]);
                    assert!(
                        (got - want).abs() <= 1e-6 * scale,
                        "{tile:?}: V[{xi}] tile {q} channel {ch}: {got} against {want}"
                    );
                }
            }
        }
        let outputs: Vec<Vec<f32>> = (0..3).map(|kind| run_output(portable, kind)).collect();
        for ch in 0..n {
            for q in 0..tiles {
                let (ty, tx) = (rows.start + q / tw, q % tw);
                let mut mm = [[0.0f64; 6]; 6];
                for (i, mi) in mm.iter_mut().enumerate().take(t) {
                    for (j, mij) in mi.iter_mut().enumerate().take(t) {
                        *mij = f64::from(products[((i * t + j) * n + ch) * ldm + q]);
                    }
                }
                let ys = sandwich(&at, &at, t, &mm);
                for (k, &(y, scale)) in ys.iter().enumerate() {
                    let (oy, ox) = (ty * m + k / m, tx * m + k % m);
                    if oy >= oh || ox >= ow {
                        continue;
                    }
                    let p = (oy - y0) * ow + ox;
                    for (kind, out) in outputs.iter().enumerate() {
                        let mut want = y + f64::from(bias[ch]);
                        if kind > 0 {
                            want += f64::from(residual[ch * pixels + p]);
                        }
                        let want = act_f64(Activation::Relu, want);
                        let got = f64::from(out[ch * pixels + p]);
                        assert!(
                            (got - want).abs() <= 1e-6 * (scale + 2.0),
                            "{tile:?}: residual {kind}, channel {ch}, pixel {p}: {got} against {want}"
                        );
                    }
                }
            }
        }
        // Every other table against the portable one, bit for bit.
        for k in tables().into_iter().filter(|k| !std::ptr::eq(*k, portable)) {
            let what = format!("{tile:?} {}", k.isa);
            assert_eq!(bits(&run_input(k)), bits(&v), "{what}: input transform");
            for (kind, want) in outputs.iter().enumerate() {
                let got = run_output(k, kind);
                assert_eq!(
                    bits(&got),
                    bits(want),
                    "{what}: output transform, residual {kind}"
                );
            }
        }
    }
}

/// A prefetch is a hint: inside a slice, past its end, far off or null, it reads nothing
/// and never faults (`gemm_in_place` and the lanes conv prefetch past their data).
#[test]
fn a_prefetch_never_faults() {
    let v = vec![1.0f32; 64];
    for offset in [0isize, 15, 63, 64, 1 << 20, -(1 << 20)] {
        super::prefetch_l2(v.as_ptr().wrapping_offset(offset));
    }
    super::prefetch_l2(std::ptr::null());
    assert_eq!(v, vec![1.0; 64]);
}
