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
/// Runs are short (a panel row is 16 floats, a segment of one often less), and a call to
/// `memcpy` or `memset` per run costs more than the copy: runs of 4 to [`SHORT`] floats are
/// copied in 4-float chunks, the last one overlapping the one before, and stride 2 (the
/// im2col of every stride-2 conv) picks the even floats of 8 loaded at once instead of
/// gathering float by float. Before, `perf` put this loop and those calls at about 10% of
/// a ResNet50 frame on 1 worker (7% here, 2.4% `memset`, 1.4% `memcpy`). Runs of 1 to 3
/// floats (a padded column of a 7×7 plane's 3×3 taps, one run per input channel) are
/// single moves too: by `memset` and `memcpy` they cost about 7% of ResNet50's 7×7 3×3
/// conv at width 2 (`perf record` on `cargo bench -p taopipe-nets --bench bench_main --
/// conv/w2/rn.l4.c2$`).
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
    // SAFETY: every arm reads and writes the runs the caller's contract allows.
    unsafe {
        match (len, sx) {
            (1, 1) => fixed::<1>(d, dst_step, s, src_step, runs),
            (2, 1) => fixed::<2>(d, dst_step, s, src_step, runs),
            (3, 1) => fixed::<3>(d, dst_step, s, src_step, runs),
            (8, 1) => fixed::<8>(d, dst_step, s, src_step, runs),
            (12, 1) => fixed::<12>(d, dst_step, s, src_step, runs),
            (16, 1) => fixed::<16>(d, dst_step, s, src_step, runs),
            (48, 1) => fixed::<48>(d, dst_step, s, src_step, runs),
            (4.., 1) if len <= SHORT => {
                for i in 0..runs {
                    chunks::copy(d.add(i * dst_step), s.add(i * src_step), len);
                }
            }
            (_, 1) => {
                for i in 0..runs {
                    std::ptr::copy_nonoverlapping(s.add(i * src_step), d.add(i * dst_step), len);
                }
            }
            (5.., 2) => {
                for i in 0..runs {
                    chunks::copy_even(d.add(i * dst_step), s.add(i * src_step), len);
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

/// Runs up to this long are copied and zeroed inline; longer ones by `memcpy`/`memset`.
const SHORT: usize = 64;

/// Runs copied in 4-float chunks: SSE on x86-64 (every x86-64 CPU has it), plain loops
/// elsewhere.
mod chunks {
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::{_mm_loadu_ps, _mm_setzero_ps, _mm_shuffle_ps, _mm_storeu_ps};

    /// The chunk starts covering `0..len` (`len >= 4`): every 4th, and `len − 4`.
    fn starts(len: usize) -> impl Iterator<Item = usize> {
        (0..len - 4).step_by(4).chain(std::iter::once(len - 4))
    }

    /// `d[j] = s[j]` for `j < len`, `len >= 4`.
    ///
    /// # Safety
    /// `s[..len]` readable, `d[..len]` writable, not overlapping.
    #[inline(always)]
    pub(super) unsafe fn copy(d: *mut f32, s: *const f32, len: usize) {
        for j in starts(len) {
            // SAFETY: `j + 4 <= len`: in both runs.
            unsafe {
                #[cfg(target_arch = "x86_64")]
                _mm_storeu_ps(d.add(j), _mm_loadu_ps(s.add(j)));
                #[cfg(not(target_arch = "x86_64"))]
                std::ptr::copy_nonoverlapping(s.add(j), d.add(j), 4);
            }
        }
    }

    /// `d[j] = 0` for `j < len`, `len >= 4`.
    ///
    /// # Safety
    /// `d[..len]` writable.
    #[inline(always)]
    pub(super) unsafe fn zero(d: *mut f32, len: usize) {
        for j in starts(len) {
            // SAFETY: `j + 4 <= len`.
            unsafe {
                #[cfg(target_arch = "x86_64")]
                _mm_storeu_ps(d.add(j), _mm_setzero_ps());
                #[cfg(not(target_arch = "x86_64"))]
                d.add(j).cast::<[f32; 4]>().write_unaligned([0.0; 4]);
            }
        }
    }

    /// `d[j] = s[2j]` for `j < len`, `len >= 5`. A chunk loads the 8 floats from `s[2j]`
    /// and keeps the even ones; chunks after the first load from `s[2j − 1]` and keep the
    /// odd ones, so that none reads past `s[2·len − 2]`.
    ///
    /// # Safety
    /// `s[..2·len − 1]` readable, `d[..len]` writable, not overlapping.
    #[inline(always)]
    pub(super) unsafe fn copy_even(d: *mut f32, s: *const f32, len: usize) {
        // SAFETY: the first chunk reads `s[0..8]`, inside `s[..2·len − 1]` as `len >= 5`;
        // chunk `j >= 1` (`j + 4 <= len`) reads `s[2j − 1..2j + 7]`, whose last index
        // `2j + 6 <= 2·len − 2`; each writes `d[j..j + 4]`.
        unsafe {
            for j in starts(len) {
                let (from, keep_odd) = if j == 0 {
                    (0, false)
                } else {
                    (2 * j - 1, true)
                };
                #[cfg(target_arch = "x86_64")]
                {
                    let (a, b) = (_mm_loadu_ps(s.add(from)), _mm_loadu_ps(s.add(from + 4)));
                    let v = if keep_odd {
                        _mm_shuffle_ps::<0b11_01_11_01>(a, b)
                    } else {
                        _mm_shuffle_ps::<0b10_00_10_00>(a, b)
                    };
                    _mm_storeu_ps(d.add(j), v);
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    let first = from + usize::from(keep_odd);
                    for k in 0..4 {
                        *d.add(j + k) = *s.add(first + 2 * k);
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
    if len > SHORT {
        for i in 0..runs {
            dst[i * step..i * step + len].fill(0.0);
        }
        return;
    }
    let d = dst.as_mut_ptr();
    // SAFETY: run `i` is `dst[i·step..i·step + len]`, inside `dst` by the assert.
    unsafe {
        match len {
            1 => zero_fixed::<1>(d, step, runs),
            2 => zero_fixed::<2>(d, step, runs),
            3 => zero_fixed::<3>(d, step, runs),
            _ => {
                for i in 0..runs {
                    chunks::zero(d.add(i * step), len);
                }
            }
        }
    }
}

/// # Safety
/// `runs` runs of `L` floats at `step` lie inside the buffer at `d`.
#[inline(always)]
unsafe fn zero_fixed<const L: usize>(d: *mut f32, step: usize, runs: usize) {
    for i in 0..runs {
        // SAFETY: the caller's bounds; `[f32; L]` has align 4 like the floats.
        unsafe { std::ptr::write_unaligned(d.add(i * step).cast::<[f32; L]>(), [0.0; L]) };
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
        for (len, sx) in [(8, 1), (12, 1), (16, 1), (48, 1), (5, 1), (7, 2), (3, 4)]
            .into_iter()
            .chain((1..=20).flat_map(|len| [(len, 1), (len, 2)]))
            .chain([(63, 1), (64, 1), (65, 1), (33, 2)])
        {
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
        for len in (1..=20).chain([63, 64, 65]) {
            for runs in [0, 1, 3] {
                let step = 70;
                let mut z = vec![1.0; 220];
                zero_runs(&mut z, step, runs, len);
                let zeroed = |i: usize| i / step < runs && i % step < len;
                assert!(
                    z.iter()
                        .enumerate()
                        .all(|(i, &v)| v == if zeroed(i) { 0.0 } else { 1.0 }),
                    "zero len {len} runs {runs}"
                );
            }
        }
    }

    /// Sources exactly as long as the runs need, each its own allocation: a chunk that
    /// read one float too far would fail under Miri.
    #[test]
    fn runs_read_nothing_past_the_source() {
        for sx in 1..=3 {
            for len in 1..=21 {
                let (runs, ss) = (2, 2 * len * sx);
                let src: Vec<f32> = (0..ss + (len - 1) * sx + 1).map(|i| i as f32).collect();
                let mut got = vec![0.0; runs * len];
                copy_runs(&mut got, len, &src, ss, runs, len, sx);
                let want: Vec<f32> = (0..runs)
                    .flat_map(|i| (0..len).map(move |j| (i * ss + j * sx) as f32))
                    .collect();
                assert_eq!(got, want, "len {len} sx {sx}");
                let mut z = vec![1.0; len];
                zero_runs(&mut z, len, 1, len);
                assert!(z.iter().all(|&v| v == 0.0), "zeroed {len}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "overrun a source")]
    fn short_source_is_refused() {
        copy_runs(&mut [0.0; 64], 16, &[0.0; 20], 16, 2, 16, 1);
    }
}
