//! Max and average pooling over `k×k` windows with stride and padding, in floor or ceil
//! mode.
//!
//! Padding semantics: padded positions are *not* values. Max pooling takes the maximum of
//! the window's in-bounds elements (PyTorch `MaxPool2d`); average pooling divides by the
//! number of in-bounds elements (PyTorch `AvgPool2d(count_include_pad=False)`; note that
//! PyTorch's default is `True`). The padding after the last row and column may differ from
//! the padding before (ONNX's `SAME_UPPER`, YOLO's last pool), and ceil mode (PyTorch's and
//! ONNX's `ceil_mode`) lets a last window hang past the end; what hangs past is not a value
//! either. Geometry is validated so that every window holds at least one in-bounds element
//! (`padding <= kernel / 2` before, as PyTorch requires, and below the kernel after).
//!
//! NaN propagates as in PyTorch: a max-pool window holding a NaN gives NaN (`f32::max`
//! would drop it), and an average over a NaN is NaN anyway.
//!
//! Chunks: groups of channels, at most 32 (`ceil(C / 32)` channels each).
//!
//! Both are computed separably: for each output row, the window's input rows are reduced
//! column by column (contiguous runs, vectorised), then each output reduces its columns
//! of that (an unpadded 2×2/2 max pool in one pass: `max_2x2`). An average sums rows
//! first, so its rounding is not the row-major order's; it is the same for every width.

use crate::activation::max_nan;
use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::simd::{COLUMN_SLACK, Isa, Kernels};
use crate::tensor::Shape;

/// Max or average.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Maximum of the in-bounds window elements.
    Max,
    /// Mean of the in-bounds window elements (padding excluded).
    Avg,
}

/// Pooling hyperparameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolParams {
    /// Max or average.
    pub kind: PoolKind,
    /// Window size (square).
    pub kernel: usize,
    /// Stride.
    pub stride: usize,
    /// Padding before the first row and column.
    pub padding: usize,
    /// Padding after the last row and column (usually `padding`).
    pub padding_end: usize,
    /// Ceil mode: the output size rounds up (a last window must still start before the
    /// end of the input and the padding before it).
    pub ceil: bool,
}

impl PoolParams {
    /// Max pooling, `padding` on each side, floor mode.
    pub const fn max(kernel: usize, stride: usize, padding: usize) -> PoolParams {
        PoolParams {
            kind: PoolKind::Max,
            kernel,
            stride,
            padding,
            padding_end: padding,
            ceil: false,
        }
    }

    /// Average pooling (padding excluded from the count), `padding` on each side, floor
    /// mode.
    pub const fn avg(kernel: usize, stride: usize, padding: usize) -> PoolParams {
        PoolParams {
            kind: PoolKind::Avg,
            kernel,
            stride,
            padding,
            padding_end: padding,
            ceil: false,
        }
    }

    /// The same with `padding_end` after the last row and column.
    pub const fn with_padding_end(mut self, padding_end: usize) -> PoolParams {
        self.padding_end = padding_end;
        self
    }

    /// The same in ceil mode (or floor mode).
    pub const fn with_ceil(mut self, ceil: bool) -> PoolParams {
        self.ceil = ceil;
        self
    }

    /// Outputs along an axis of `n`: `(n + p₀ + p₁ − k) / s + 1`, rounded down, or up in
    /// ceil mode where a last window must start before `n + p₀` (PyTorch's rule, which
    /// ONNX Runtime follows; the same as `net!`'s).
    fn outputs(&self, n: usize) -> usize {
        let span = n + self.padding + self.padding_end - self.kernel;
        let mut out = if self.ceil {
            span.div_ceil(self.stride)
        } else {
            span / self.stride
        } + 1;
        if self.ceil && (out - 1) * self.stride >= n + self.padding {
            out -= 1;
        }
        out
    }

    /// Output shape: `(H + p₀ + p₁ − k) / s + 1` (floor, or ceil in ceil mode), likewise
    /// for W; channels unchanged.
    ///
    /// # Errors
    /// Zero kernel/stride, `padding > kernel / 2`, `padding_end >= kernel`, or a window
    /// larger than the padded input.
    ///
    /// ```
    /// use taopipe_nets::{PoolParams, Shape};
    /// assert_eq!(PoolParams::max(3, 2, 1).out_shape(Shape::new(64, 112, 112))?, Shape::new(64, 56, 56));
    /// // GoogLeNet's first pool, in ceil mode
    /// let ceil = PoolParams::max(3, 2, 0).with_ceil(true);
    /// assert_eq!(ceil.out_shape(Shape::new(64, 112, 112))?, Shape::new(64, 56, 56));
    /// // YOLOv2-tiny's last: 2×2, stride 1, one row and column of padding after
    /// let same = PoolParams::max(2, 1, 0).with_padding_end(1);
    /// assert_eq!(same.out_shape(Shape::new(512, 13, 13))?, Shape::new(512, 13, 13));
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn out_shape(&self, input: Shape) -> Result<Shape, KernelError> {
        let geo = |reason: String| KernelError::Geometry {
            layer: "pool",
            input,
            reason,
        };
        if self.kernel == 0 || self.stride == 0 || input.len() == 0 {
            return Err(geo(format!("zero size in {self:?}")));
        }
        if self.padding > self.kernel / 2 {
            return Err(geo(format!(
                "padding {} > kernel {} / 2",
                self.padding, self.kernel
            )));
        }
        if self.padding_end >= self.kernel {
            return Err(geo(format!(
                "padding after {} >= kernel {}",
                self.padding_end, self.kernel
            )));
        }
        let both = self.padding + self.padding_end;
        let (hp, wp) = (input.h + both, input.w + both);
        if hp < self.kernel || wp < self.kernel {
            return Err(geo(format!(
                "window {} larger than padded input {hp}×{wp}",
                self.kernel
            )));
        }
        Ok(Shape::new(
            input.c,
            self.outputs(input.h),
            self.outputs(input.w),
        ))
    }
}

/// A pooling layer bound to its input shape.
#[derive(Clone, Debug)]
pub struct Pool2d {
    params: PoolParams,
    in_shape: Shape,
    out_shape: Shape,
    chunks: ChunkPlan,
    /// For the 2×2/2 max pool ([`max_2x2`]).
    kernels: &'static Kernels,
}

impl Pool2d {
    /// A pooling layer for `in_shape`.
    ///
    /// # Errors
    /// As [`PoolParams::out_shape`]; a bad `TAOPIPE_ISA`.
    pub fn new(params: PoolParams, in_shape: Shape) -> Result<Pool2d, KernelError> {
        let out_shape = params.out_shape(in_shape)?;
        Ok(Pool2d {
            params,
            in_shape,
            out_shape,
            chunks: ChunkPlan::new(in_shape.c, out_shape.plane(), 1, 1),
            kernels: Isa::current()?.kernels(),
        })
    }

    /// Runs on another ISA path: the same bits on every path (max is exact).
    ///
    /// # Errors
    /// [`KernelError::Isa`] when this CPU cannot run it.
    ///
    /// ```
    /// use taopipe_nets::{Isa, Kernel, Pool2d, PoolParams, Scratch, Shape};
    /// let pool = Pool2d::new(PoolParams::max(2, 2, 0), Shape::new(1, 2, 2))?;
    /// let pool = pool.with_isa(Isa::Portable)?;
    /// assert_eq!(pool.forward(&[&[1.0, 4.0, 3.0, 2.0]], &mut Scratch::new()), vec![4.0]);
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn with_isa(mut self, isa: Isa) -> Result<Pool2d, KernelError> {
        self.kernels = isa.supported()?.kernels();
        Ok(self)
    }

    /// The ISA path in use.
    pub fn isa(&self) -> Isa {
        self.kernels.isa
    }

    /// The hyperparameters.
    pub fn params(&self) -> &PoolParams {
        &self.params
    }

    /// In-bounds input range `[lo, hi)` of output position `o` along an axis of `len`.
    fn window(&self, o: usize, len: usize) -> (usize, usize) {
        let start = o * self.params.stride;
        let lo = start.saturating_sub(self.params.padding);
        let hi = (start + self.params.kernel)
            .saturating_sub(self.params.padding)
            .min(len);
        (lo, hi)
    }
}

impl Kernel for Pool2d {
    fn kind(&self) -> &'static str {
        match self.params.kind {
            PoolKind::Max => "maxpool",
            PoolKind::Avg => "avgpool",
        }
    }

    fn in_shape(&self) -> Shape {
        self.in_shape
    }

    fn out_shape(&self) -> Shape {
        self.out_shape
    }

    fn flops(&self) -> u64 {
        (self.out_shape.len() * self.params.kernel * self.params.kernel) as u64
    }

    fn plan(&self) -> &ChunkPlan {
        &self.chunks
    }

    fn compute_chunk(
        &self,
        inputs: &[&[f32]],
        chunk: usize,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let want = self.chunks.range(chunk).len();
        check_io(self.kind(), inputs, 1, self.in_shape.len(), out.len(), want);
        let input = inputs[0];
        let (h, w) = (self.in_shape.h, self.in_shape.w);
        let (oh, ow) = (self.out_shape.h, self.out_shape.w);
        let channels = self.chunks.channels_of(chunk);
        let first = channels.start;
        let max = self.params.kind == PoolKind::Max;
        let (k, s, pad) = (self.params.kernel, self.params.stride, self.params.padding);
        // Columns the last window reaches past the row (ceil mode, padding after): the
        // row of column maxima is padded with −∞ that far, and at least `pad`.
        let right = ((ow - 1) * s + k).saturating_sub(pad + w).max(pad);
        // Separable: reduce the window's rows column by column (contiguous, vectorised),
        // then each output's columns of that. Max pooling reduces the columns from a row
        // padded with −∞ on both sides, which max ignores exactly as it ignores padding,
        // in `k` vectorisable passes over the outputs.
        let cols = pad + w + right;
        // GoogLeNet's branch pools: 3×3 stride 1, padded by one all round (`max_3x3_s1`).
        let s1 = max && (k, s, pad, right) == (3, 1, 1, 1) && (oh, ow) == (h, w);
        let (column, rest) = scratch
            .take(2 * cols + COLUMN_SLACK + if s1 { h * w } else { 0 })
            .split_at_mut(cols + COLUMN_SLACK);
        let (phases, rows) = rest.split_at_mut(cols);
        column[..pad].fill(f32::NEG_INFINITY);
        column[pad + w..].fill(f32::NEG_INFINITY);
        // `max_2x2` takes windows that stay inside the plane; the ISA's 3×3/2 kernel any
        // padding after (its row of column maxima padded `right`).
        let even = right == pad && ((oh - 1) * s + k) <= h + 2 * pad;
        for c in channels {
            let plane = &input[c * h * w..(c + 1) * h * w];
            let dst = &mut out[(c - first) * oh * ow..(c - first + 1) * oh * ow];
            if max && even && (k, s, pad) == (2, 2, 0) {
                self.kernels.max_2x2(plane, w, dst, ow);
                continue;
            }
            if s1 {
                self.kernels.max_3x3_s1(plane, w, dst, rows);
                continue;
            }
            // ResNet50's and AlexNet's pools: the ISA's own kernel where it has one
            // (`Kernels::max_3x3_s2`, docs at [`max_columns`]).
            if max
                && (k, s) == (3, 2)
                && self
                    .kernels
                    .max_3x3_s2(plane, w, (pad, right), dst, ow, column)
            {
                continue;
            }
            let column = &mut column[..cols];
            for oy in 0..oh {
                let (y0, y1) = self.window(oy, h);
                let inner = &mut column[pad..pad + w];
                let row = |y: usize| &plane[y * w..(y + 1) * w];
                // The first two rows' maximum in one pass instead of a copy and a pass.
                let next = if max && y1 - y0 >= 2 {
                    for ((m, &a), &b) in inner.iter_mut().zip(row(y0)).zip(row(y0 + 1)) {
                        *m = max_nan(a, b);
                    }
                    y0 + 2
                } else {
                    inner.copy_from_slice(row(y0));
                    y0 + 1
                };
                for y in next..y1 {
                    if max {
                        inner
                            .iter_mut()
                            .zip(row(y))
                            .for_each(|(m, &v)| *m = max_nan(*m, v));
                    } else {
                        inner.iter_mut().zip(row(y)).for_each(|(s, &v)| *s += v);
                    }
                }
                let dst = &mut dst[oy * ow..(oy + 1) * ow];
                if max {
                    max_columns(column, k, s, phases, dst);
                } else {
                    for (ox, d) in dst.iter_mut().enumerate() {
                        let (x0, x1) = self.window(ox, w);
                        let sum = column[pad + x0..pad + x1].iter().sum::<f32>();
                        *d = sum / ((y1 - y0) * (x1 - x0)) as f32;
                    }
                }
            }
        }
    }
}

/// 2×2/2 max pooling of one unpadded plane (`w` wide) into `dst` (`ow` wide), in one
/// pass: each output `max(max(a₀, b₀), max(a₁, b₁))` from its two rows `a` and `b`, the
/// separable route's operations in its order (rows first, then the pair), without the
/// row of maxima written and read back. VGG16's five pools summed a frame went from
/// 2.22–2.46 to 2.02–2.20 ms at width 1 (six rounds) and 1.22–1.26 to 1.13–1.16 at width
/// 2 (three rounds; `frame --net vgg16 --profile`, taking turns with the build before,
/// 2-core AVX-512 Xeon VM); ORT's take 1.06 and 0.53.
///
/// It is compiled once per ISA path with the path's target features, as the Winograd
/// transforms are (the `Kernels` table's `max_2x2`): a generic x86-64 build otherwise ran
/// it on SSE2. On AVX-512, VGG16's three largest pools went from 1.35, 0.61 and 0.28 ms to
/// 0.95, 0.40 and 0.21 at width 1, and from 0.67, 0.31 and 0.14 to 0.47, 0.19 and 0.10 at
/// width 2 (`frame --net vgg16 --profile`, three rounds taking turns with the build
/// before, 2-core AVX-512 Xeon VM). The separable route (`max_columns`) stays on the
/// baseline build: compiled for AVX-512 it took AlexNet's 3×3/2 pools on 55-wide rows
/// from 0.088 to 0.151 ms and left ResNet50's level (0.44 against 0.42), its short
/// rows spending their time in the vector loops' remainders. Max is exact, so every path
/// gives the same bits (tested).
#[inline(always)]
pub(crate) fn max_2x2(plane: &[f32], w: usize, dst: &mut [f32], ow: usize) {
    for (d, rows) in dst.chunks_exact_mut(ow).zip(plane.chunks_exact(2 * w)) {
        let (r0, r1) = rows.split_at(w);
        for ((d, a), b) in d.iter_mut().zip(r0.chunks_exact(2)).zip(r1.chunks_exact(2)) {
            *d = max_nan(max_nan(a[0], b[0]), max_nan(a[1], b[1]));
        }
    }
}

/// The 3×3 stride-1 max pool of a plane padded by one on every side (GoogLeNet's
/// inception branch pools), `dst` as large as `plane`, in two flat passes over the whole
/// plane instead of a pass per output row: the vertical maximum of each pixel and its row
/// neighbours into `rows` (the first and last rows taking two), then the horizontal one of
/// that into `dst`, the two ends of each row fixed up after. Each pass is one long loop
/// over slices of the plane that LLVM vectorises; per output row, the separable route
/// (`max_columns`) spent more on the loops of a 14- or 28-float row than on the maxima.
/// The operations and their order are the separable route's (the padding's `−∞` drops out:
/// `max_nan(−∞, v)` and `max_nan(v, −∞)` are `v`, bit for bit), so the bits are the same.
///
/// Compiled once per ISA path with its target features (`Kernels::max_3x3_s1`), as
/// [`max_2x2`] is. GoogLeNet's nine branch pools went from 1.77–1.99 to 0.44 ms a frame at
/// width 1 and from 2.13–2.32 to 0.54 at width 2, the frame from 30.8–34.5 to 30.1 ms at
/// width 1 (`frame --net googlenet --width W --profile`, two rounds each taking turns with
/// the build before; 2-core Zen 3 VM, AVX2). ORT's nine took 0.43 ms at one thread
/// (`bench/peers/ort_profile.py googlenet 1 20`).
#[inline(always)]
pub(crate) fn max_3x3_s1(plane: &[f32], w: usize, dst: &mut [f32], rows: &mut [f32]) {
    let n = plane.len();
    let h = n / w;
    let v = &mut rows[..n];
    if h == 1 {
        v.copy_from_slice(plane);
    } else {
        // Rows 1..h − 1: the row above, the row, the row below.
        let inner = (h - 2) * w;
        let (above, here, below) = (&plane[..inner], &plane[w..w + inner], &plane[2 * w..]);
        for (((d, &a), &b), &c) in v[w..w + inner].iter_mut().zip(above).zip(here).zip(below) {
            *d = max_nan(max_nan(a, b), c);
        }
        let (first, last) = (0..w, (h - 1) * w..n);
        for (i, d) in first.clone().zip(&mut v[first]) {
            *d = max_nan(plane[i], plane[i + w]);
        }
        for i in last {
            v[i] = max_nan(plane[i - w], plane[i]);
        }
    }
    if w == 1 {
        dst.copy_from_slice(v);
        return;
    }
    let (left, mid, right) = (&v[..n - 2], &v[1..n - 1], &v[2..]);
    for (((d, &a), &b), &c) in dst[1..n - 1].iter_mut().zip(left).zip(mid).zip(right) {
        *d = max_nan(max_nan(a, b), c);
    }
    // Each row's ends: the flat pass took a neighbour from the next or the previous row.
    for y in 0..h {
        let (a, z) = (y * w, y * w + w - 1);
        dst[a] = max_nan(v[a], v[a + 1]);
        dst[z] = max_nan(v[z - 1], v[z]);
    }
}

/// `dst[o]` = the max of `column[o·s .. o·s + k]`, through the column's `s` phases:
/// phase `p` holds `column[p + s·i]`, so window element `j` of every output is one
/// contiguous slice, phase `j mod s` from `j / s`, and each of the `k` passes is a
/// vectorised max of two contiguous slices. Phase-splitting stride 2 is the even/odd
/// deinterleave that LLVM vectorises with shuffles. The earlier route, `k − 1` in-place
/// neighbour passes over the whole column and then a scalar pick of every `s`-th, took
/// ResNet50's 3×3/2 max pool 0.61 ms and VGG16's first 2×2/2 2.37 ms a frame against
/// ORT's 0.16 and 1.12 (2-core AVX-512 VM).
///
/// The common windows take fewer passes: 2×2/2 (padded; an unpadded one is `max_2x2`'s)
/// takes each pair's maximum straight from the column (no phases), 3×3 the three slices'
/// maximum in one pass (not a copy and two passes), and the caller reduces a window's
/// first two rows in one pass (not a copy and a pass). The pools summed per frame
/// (`frame --net N --width 1 --profile`, three rounds with the build before taking turns,
/// 2-core AVX-512 Xeon VM): VGG16's 2.39–2.58 → 1.98–2.22 ms, ResNet50's 0.29–0.31 →
/// 0.25–0.28, AlexNet's 0.30–0.31 → 0.20–0.21. A 3×3/2 window straight from the column, as
/// for 2×2, helped AlexNet's 55-wide rows but made ResNet50's 112-wide ones slower (0.30 →
/// 0.37–0.40 ms): LLVM keeps a strided third operand scalar. Max is exact, so the order of
/// the reduction does not change a value (only, for a tie of `±0.0` or two NaNs, which of
/// them is kept: the order, `j` ascending, is fixed by the shape, so that too is the same
/// at every width). `phases` must hold `column.len()` floats.
///
/// AVX-512 runs 3×3/2 pools through a kernel of its own (`x86::max_3x3_s2_avx512`): the
/// same operations in the same order on 16-float vectors with masked tails, each output's
/// three columns picked by two-source permutes instead of this phase split. Against this
/// route on the same CPU (`cargo bench -p taopipe-nets --bench bench_main -- pool/`, which
/// times every path; 2-core AVX-512 Xeon VM), at width 1 ResNet50's pool streamed its
/// input at 13.8 GiB/s against 11.3 on the AVX2 path, AlexNet's three at 10.8, 8.0 and 5.8
/// against 7.8, 6.9 and 2.5. In frames (`frame --net N --profile`, rounds taking turns
/// with the build before) ResNet50's pool went from 0.43–0.48 to 0.34–0.36 ms at width 1
/// and 0.20–0.22 to 0.16–0.17 at width 2 (five rounds), AlexNet's three summed from
/// 0.21–0.22 to 0.14–0.15 and 0.13–0.14 to 0.09–0.11 (three). An earlier AVX-512 version
/// measured ResNet50's pool level and was not kept (`docs/kernel-log.md`, "What falls
/// short of issue 9"); this one's gain there held in every round. ResNet50's stays above
/// ORT's 0.16 ms at width 1: at 3.2 MB its input no longer fits L2, and the kernel reads
/// it at about the one-core read bandwidth. With the column maxima kept in registers (the
/// kernel's docs) one pool alone went from 0.066 to 0.040–0.042 ms on SqueezeNet's 27×27
/// planes, 0.097 to 0.073–0.074 on its 55×55 and 0.192–0.196 to 0.164–0.168 on ResNet50's
/// (a scratch `Pool2d::forward` benchmark, best of runs of a second, two rounds; 2-core
/// Intel Xeon VM), and SqueezeNet's three summed 0.34–0.36 → 0.26–0.30 ms a frame (`frame
/// --net squeezenet1_1 --width 1 --profile`, three rounds taking turns), AlexNet's
/// 0.19–0.21 → 0.12–0.14.
fn max_columns(column: &[f32], k: usize, s: usize, phases: &mut [f32], dst: &mut [f32]) {
    let Some(last) = dst.len().checked_sub(1) else {
        return;
    };
    let n = dst.len();
    let column = &column[..last * s + k];
    if s == 2 && k == 2 {
        for (d, p) in dst.iter_mut().zip(column.chunks_exact(2)) {
            *d = max_nan(p[0], p[1]);
        }
        return;
    }

    let len = |p: usize| (column.len() - 1 - p) / s + 1;
    // Phase `p` starts after the phases before it; only `p < min(s, k)` are read.
    let start = |p: usize| (0..p).map(len).sum::<usize>();
    let phases: &[f32] = match s {
        1 => column,
        2 => {
            let (even, odd) = phases.split_at_mut(len(0));
            let pairs = column.chunks_exact(2);
            if let [tail] = pairs.remainder() {
                even[len(0) - 1] = *tail;
            }
            for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(pairs) {
                *e = pair[0];
                *o = pair[1];
            }
            phases
        }
        _ => {
            for p in 0..s.min(k) {
                let phase = &mut phases[start(p)..start(p) + len(p)];
                for (d, &v) in phase.iter_mut().zip(column[p..].iter().step_by(s)) {
                    *d = v;
                }
            }
            phases
        }
    };
    let slice = |j: usize| {
        let from = start(j % s) + j / s;
        &phases[from..from + n]
    };
    if k == 3 {
        let (a, b, c) = (slice(0), slice(1), slice(2));
        for (((d, &a), &b), &c) in dst.iter_mut().zip(a).zip(b).zip(c) {
            *d = max_nan(max_nan(a, b), c);
        }
        return;
    }
    dst.copy_from_slice(slice(0));
    for j in 1..k {
        dst.iter_mut()
            .zip(slice(j))
            .for_each(|(m, &v)| *m = max_nan(*m, v));
    }
}

#[cfg(test)]
mod test;
