//! Copying many short runs of floats at fixed strides: the inner loop of im2col packing
//! (one run per input channel, each run one panel row of `NR` floats). Bounds are checked
//! once per call, so the loop is a pointer walk: with a bounds check and an index
//! computation per run, packing cost a third of a 64-channel conv's time.

/// Copies `runs` runs of `len` floats: run `i` takes every `sx`-th float of `src` from
/// `i · src_step` and stores them contiguously at `i · dst_step` of `dst`.
///
/// # Panics
/// If the last run does not fit `dst` or `src`, or `sx` is 0.
pub(crate) fn copy_runs(
    dst: &mut [f32],
    dst_step: usize,
    src: &[f32],
    src_step: usize,
    runs: usize,
    len: usize,
    sx: usize,
) {
    assert!(sx > 0, "source stride 0");
    if runs == 0 || len == 0 {
        return;
    }
    assert!(
        dst.len() >= (runs - 1) * dst_step + len,
        "{runs} runs of {len} at step {dst_step} overrun a destination of {}",
        dst.len()
    );
    assert!(
        src.len() > (runs - 1) * src_step + (len - 1) * sx,
        "{runs} runs of {len} (stride {sx}) at step {src_step} overrun a source of {}",
        src.len()
    );
    // SAFETY: run `i < runs` reads `src[i·src_step + j·sx]` for `j < len` and writes
    // `dst[i·dst_step + j]`, all in bounds by the asserts above; `dst` is borrowed
    // mutably, so the two never alias.
    unsafe {
        raw_runs(
            dst.as_mut_ptr(),
            dst_step,
            src.as_ptr(),
            src_step,
            runs,
            len,
            sx,
        )
    }
}

/// The loop of [`copy_runs`] on raw pointers.
///
/// # Safety
/// Run `i < runs` may read `s[i·src_step + j·sx]` and write `d[i·dst_step + j]` for
/// `j < len`; the two regions do not overlap.
pub(super) unsafe fn raw_runs(
    d: *mut f32,
    dst_step: usize,
    s: *const f32,
    src_step: usize,
    runs: usize,
    len: usize,
    sx: usize,
) {
    // SAFETY (every arm): the caller's contract.
    unsafe {
        match (len, sx) {
            (8, 1) => fixed::<8>(d, dst_step, s, src_step, runs),
            (12, 1) => fixed::<12>(d, dst_step, s, src_step, runs),
            (16, 1) => fixed::<16>(d, dst_step, s, src_step, runs),
            (48, 1) => fixed::<48>(d, dst_step, s, src_step, runs),
            (_, 1) => {
                for i in 0..runs {
                    std::ptr::copy_nonoverlapping(s.add(i * src_step), d.add(i * dst_step), len);
                }
            }
            _ => {
                for i in 0..runs {
                    let (di, si) = (d.add(i * dst_step), s.add(i * src_step));
                    for j in 0..len {
                        *di.add(j) = *si.add(j * sx);
                    }
                }
            }
        }
    }
}

/// Writes zeros to `runs` runs of `len` floats at `i · step`.
///
/// # Panics
/// If the last run does not fit.
pub(crate) fn zero_runs(dst: &mut [f32], step: usize, runs: usize, len: usize) {
    if runs == 0 || len == 0 {
        return;
    }
    assert!(
        dst.len() >= (runs - 1) * step + len,
        "{runs} runs of {len} at step {step} overrun a destination of {}",
        dst.len()
    );
    for i in 0..runs {
        dst[i * step..i * step + len].fill(0.0);
    }
}

/// # Safety
/// `runs` runs of `L` floats at the two steps lie inside their buffers, which do not
/// overlap.
#[inline(always)]
pub(super) unsafe fn fixed<const L: usize>(
    d: *mut f32,
    dst_step: usize,
    s: *const f32,
    src_step: usize,
    runs: usize,
) {
    for i in 0..runs {
        // SAFETY: the caller's bounds; `[f32; L]` has align 4 like the floats.
        unsafe {
            let v = std::ptr::read_unaligned(s.add(i * src_step).cast::<[f32; L]>());
            std::ptr::write_unaligned(d.add(i * dst_step).cast::<[f32; L]>(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_match_a_plain_loop() {
        let src: Vec<f32> = (0..500).map(|i| i as f32).collect();
        for (len, sx) in [(8, 1), (12, 1), (16, 1), (48, 1), (5, 1), (7, 2), (3, 4)] {
            for runs in [0, 1, 3] {
                let (ds, ss) = (60, 70);
                let mut got = vec![-1.0; 200];
                copy_runs(&mut got, ds, &src, ss, runs, len, sx);
                let mut want = vec![-1.0; 200];
                for i in 0..runs {
                    for j in 0..len {
                        want[i * ds + j] = src[i * ss + j * sx];
                    }
                }
                assert_eq!(got, want, "len {len} sx {sx} runs {runs}");
            }
        }
        let mut z = vec![1.0; 20];
        zero_runs(&mut z, 7, 3, 2);
        assert_eq!(z.iter().filter(|&&v| v == 0.0).count(), 6);
    }

    #[test]
    #[should_panic(expected = "overrun a source")]
    fn short_source_is_refused() {
        copy_runs(&mut [0.0; 64], 16, &[0.0; 20], 16, 2, 16, 1);
    }
}
