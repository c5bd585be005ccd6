//! The micro-kernel template every SIMD path instantiates (x86 AVX2 and AVX-512, aarch64
//! NEON), so the paths cannot drift apart: the same loops over `MR × NV` accumulators,
//! the same epilogue order, the same row-dot reduction tree, with the ISA's vector type
//! and intrinsics plugged in.
//!
//! # GEMM tile
//! `MR` rows (output channels, broadcast from the packed weights) by `NV` vectors (pixels,
//! loaded from the packed input): `MR · NV` accumulators. Each `k` step loads `NV` vectors
//! of B, broadcasts `MR` values of A and issues `MR · NV` FMAs. Every output element is one
//! FMA chain over `k` in order, then the epilogue, whatever the tile it falls in: that is
//! what makes results independent of how a layer is cut.
//!
//! # Prefetching the weights
//! Each `k` step also prefetches the packed weights [`PREFETCH_AHEAD`] floats (4 KiB)
//! ahead of the ones it reads. A layer's packed weights are one run in the order the
//! kernel reads them (`PackedA`), so this keeps one stream in flight across panels, row
//! blocks and `kc` blocks. The deep layers' weights come from memory in a frame (ResNet50
//! reads 100 MB of them), and the hardware prefetcher alone left their GEMMs waiting:
//! ResNet50 at width 1 went from 59.6 to 47.3–51.9 ms a frame, VGG16 from 146–149 to
//! 127–131 ms (`frame --width 1`, interleaved runs on a 2-core AVX-512 Xeon VM; 256,
//! 512 and 2048 floats ahead measured within noise of 1024, 96 clearly worse, and the
//! L2 hint worse than L1). A prefetch never faults, so one past the weights' end is
//! harmless. NEON has no stable prefetch intrinsic: there it is a no-op.
//!
//! The channel-lanes conv prefetches each output row it is about to store into
//! ([`crate::conv::lanes::STORE_AHEAD`]): a tile writes as many planes as it has
//! channels, more streams than the hardware prefetcher follows. A GEMM that reads B in
//! place has as many streams, but prefetching them from this loop slowed every GEMM: the
//! blocked loop prefetches them instead (`crate::gemm::gemm_in_place`'s docs).
//!
//! # Lane kernel
//! The last few columns of a short panel (a 7×7 plane's 49th pixel) turn the tile around:
//! a vector of `LANES` rows of A times one broadcast value of B per column (`gemm_cols`).
//! Its products are the tile's, operands swapped, so every element keeps its bits.

/// How far ahead of its reads the GEMM tile prefetches the packed weights, in floats
/// (module docs).
pub(crate) const PREFETCH_AHEAD: usize = 1024;

/// Evaluates `$body` with `$f` bound to the activation `$act` on one vector of type `$v`
/// (`|$f| $body`), built from the ISA's operations `($v, $zero, $set1, $max, $min,
/// $leaky)` of [`isa_kernels!`], or nothing for
/// [`Activation::None`](crate::Activation::None). One match per tile: the body's loop over
/// the accumulators then has no branch on the kind. Each arm computes
/// [`Activation::apply`](crate::Activation::apply)'s rule lane by lane (see
/// [`isa_kernels!`] for what the operations must be):
/// - ReLU `$max(zero, v)`;
/// - clip `$min(max, $max(min, v))`;
/// - leaky ReLU `$leaky(v, slope)`.
macro_rules! with_vector_activation {
    (
        $act:expr, ($v:ty, $zero:ident, $set1:ident, $max:ident, $min:ident, $leaky:ident),
        |$f:ident| $body:expr
    ) => {
        match $act {
            $crate::Activation::None => {}
            $crate::Activation::Relu => {
                let zero = $zero();
                let $f = |v: $v| $max(zero, v);
                $body
            }
            $crate::Activation::Clip { min: lo, max: hi } => {
                let (lo, hi) = ($set1(lo), $set1(hi));
                let $f = |v: $v| $min(hi, $max(lo, v));
                $body
            }
            $crate::Activation::LeakyRelu { slope } => {
                let slope = $set1(slope);
                let $f = |v: $v| $leaky(v, slope);
                $body
            }
        }
    };
}

/// Generates `lanes_store_default` for [`lanes_conv!`] in the module that invokes it: the
/// portable transposed store of a finished tile, which an ISA may replace for the tiles of
/// up to `store_px` pixels by its own function of the same contract and the same floats.
///
/// `lanes_store_default::<PX>(acc, n, room, lanes, row0, ldo)`: `acc[i][j]` holds pixel
/// `i`'s channels `j·$lanes..`, and each lane `l` in `lanes` writes pixels `0..n` to `row0
/// + l·ldo` on. `room` (at least `n`) is how many floats each row may take there: a store
/// may run up to it, since the next tile overwrites them. It stores the tile into a local
/// block, then a vector of pixels a lane at a time, loaded transposed (`$load_t`).
macro_rules! lanes_store_default {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:expr, vectors = $nv:expr,
        store = $store:ident, load_t = $load_t:ident
    ) => {
        /// See [`lanes_store_default!`].
        ///
        /// # Safety
        /// The CPU has the target features; for every lane in `lanes`, `row0 + l·ldo`
        /// addresses `room >= n` writable floats.
        $(#[$attr])*
        unsafe fn lanes_store_default<const PX: usize>(
            acc: &[[$v; $nv]; PX],
            n: usize,
            room: usize,
            lanes: std::ops::Range<usize>,
            row0: *mut f32,
            ldo: usize,
        ) {
            const OC: usize = $nv * $lanes;
            let mut t = [[0.0f32; OC]; PX];
            // SAFETY: (whole body) the stores to `t` write its rows' `OC` floats; the
            // transposed loads read whole rows of it; each lane's row takes `room` floats
            // (the contract), and a whole vector is stored only where it fits them.
            unsafe {
                for (i, row) in acc.iter().enumerate() {
                    for (j, &v) in row.iter().enumerate() {
                        $store(t[i].as_mut_ptr().add(j * $lanes), v);
                    }
                }
                // Transposed a vector of pixels at a time, stored whole where the run goes
                // on past it: lanes past the tile's pixels land on the next tile's, which
                // overwrites them.
                for g in (0..n).step_by($lanes) {
                    for j in (lanes.start / $lanes)..lanes.end.div_ceil($lanes) {
                        let src: [*const f32; $lanes] = std::array::from_fn(|l| {
                            t[(g + l).min(PX - 1)].as_ptr().add(j * $lanes)
                        });
                        let vs = $load_t(&src);
                        for (l, &v) in vs.iter().enumerate() {
                            let lane = j * $lanes + l;
                            if !lanes.contains(&lane) {
                                continue;
                            }
                            let dst = row0.wrapping_add(lane * ldo).add(g);
                            if g + $lanes <= room {
                                $store(dst, v);
                            } else {
                                let mut part = [0.0f32; $lanes];
                                $store(part.as_mut_ptr(), v);
                                for (i, &x) in part.iter().enumerate().take(n - g) {
                                    *dst.add(i) = x;
                                }
                            }
                        }
                    }
                }
            }
        }
    };
}

/// Generates the channel-lanes conv kernel (`crate::conv::lanes`) in the module that
/// invokes it, for the vector type `$v` of `$lanes` floats: `lanes_conv` (a
/// [`super::LanesConvFn`]) and `LANES_OC`, with the attributes `$attr` (the ISA's
/// `target_feature`, none on the portable path). A tile is `$vectors` vectors of output
/// channels by `$short` output pixels where the reduction has at most
/// [`crate::conv::lanes::SHORT_STEPS`] steps, `$long` where it has more. `$store_t` stores
/// the tiles of up to `$store_px` pixels transposed (`lanes_store_default` or an ISA's own
/// function, [`lanes_store_default!`]), `lanes_store_default` the others. The operations
/// are [`isa_kernels!`]'s.
macro_rules! lanes_conv {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:expr, vectors = $nv:expr,
        pixels = ($short:expr, $long:expr), store_t = ($store_t:path, $store_px:expr),
        zero = $zero:ident, load = $load:ident, store = $store:ident, set1 = $set1:ident,
        fma = $fma:ident, add = $add:ident, max = $max:ident, min = $min:ident,
        leaky = $leaky:ident, load_t = $load_t:ident, prefetch = $prefetch:ident
    ) => {
        /// Output channels of a channel-lanes tile: the width of its weight panels.
        pub(crate) const LANES_OC: usize = $nv * $lanes;

        lanes_store_default!(
            attr = { $(#[$attr])* }, $v, lanes = $lanes, vectors = $nv, store = $store,
            load_t = $load_t
        );

        /// [`lanes_conv_px`] with the tile width for `call`'s reduction.
        ///
        /// # Safety
        /// As [`lanes_conv_px`].
        $(#[$attr])*
        pub(crate) unsafe fn lanes_conv(
            call: &crate::conv::lanes::Call<'_>,
            out: &mut $crate::simd::MatMut<'_>,
        ) {
            // SAFETY: the caller's.
            unsafe {
                if call.steps.len() <= crate::conv::lanes::SHORT_STEPS {
                    lanes_conv_px::<{ $short }>(call, out)
                } else {
                    lanes_conv_px::<{ $long }>(call, out)
                }
            }
        }

        /// The channel-lanes conv of `call`'s pixels into `out` (its channels × pixels):
        /// per weight panel, tiles of consecutive pixels, each output one FMA chain over
        /// the steps in order, then `+ bias`, `+ residual` and the activation
        /// ([`crate::Epilogue`]'s order) before the tile's outputs are stored transposed,
        /// a row of pixels per channel. Without a residual the bias and the activation
        /// run on the vectors; with one, the residual and the activation run in scalar
        /// code as the outputs are stored (the same operations, so the same bits).
        ///
        /// # Safety
        /// The CPU has the target features; `call` and `out` are as
        /// [`Kernels::lanes_conv`](crate::simd::Kernels::lanes_conv) checks them.
        $(#[$attr])*
        unsafe fn lanes_conv_px<const PX: usize>(
            call: &crate::conv::lanes::Call<'_>,
            out: &mut $crate::simd::MatMut<'_>,
        ) {
            const OC: usize = LANES_OC;
            const NV: usize = $nv;
            let (k, rows, cols, ldo) = (call.steps.len(), out.rows(), out.cols(), out.ld());
            let (o, x, e) = (out.as_mut_ptr(), call.x.as_ptr(), call.epilogue);
            // The residual's first element and row stride; null: none.
            let (res, ldr) = match e.residual {
                $crate::simd::Residual::None => (std::ptr::null(), 0),
                $crate::simd::Residual::From(m) => (m.as_ptr(), m.ld()),
                $crate::simd::Residual::InPlace => (o.cast_const(), ldo),
            };
            let panels = (call.skip + rows).div_ceil(OC);
            let (ow, (sy, sx)) = (call.ow, call.stride);
            // SAFETY: (whole body) every window read lies in `call.x`, every panel's
            // `k · OC` weights in `call.weights`, every row stored (and its bias and
            // residual) in `out`'s `rows` rows and `call.pixels.len()` columns (the
            // contract, which `Kernels::lanes_conv` checks); a whole-vector store only
            // where its columns are inside them (`room`), and the transposed loads read
            // whole vectors of a tile row `t[i]`, `OC` floats.
            unsafe {
                for panel in 0..panels {
                    let weights = call.weights.as_ptr().add(panel * k * OC);
                    // This panel's lanes that are rows of `out`, and their biases (zero in
                    // the others).
                    let first = call.skip.saturating_sub(panel * OC);
                    let last = (call.skip + rows - panel * OC).min(OC);
                    let mut bias = [0.0f32; OC];
                    for lane in first..last {
                        bias[lane] = e.bias[panel * OC + lane - call.skip];
                    }
                    let mut bias_v = [$zero(); NV];
                    for (j, b) in bias_v.iter_mut().enumerate() {
                        *b = $load(bias.as_ptr().add(j * $lanes));
                    }
                    let mut p = call.pixels.start;
                    // Pixel `p`'s output row and column, stepped along (no division per
                    // tile).
                    let (mut oy, mut ox) = (p / ow, p % ow);
                    while p < call.pixels.end {
                        let n = (call.pixels.end - p).min(PX);
                        // Lanes past the run's pixels read its last pixel again; their
                        // outputs are never stored.
                        let mut win = [x; PX];
                        let (mut y, mut c) = (oy, ox);
                        for (i, w) in win.iter_mut().enumerate() {
                            *w = x.add((y * sy - call.top) * call.wp + c * sx);
                            if i + 1 < n {
                                c += 1;
                                if c == ow {
                                    (y, c) = (y + 1, 0);
                                }
                            }
                        }
                        ox += n;
                        while ox >= ow {
                            (oy, ox) = (oy + 1, ox - ow);
                        }
                        let mut acc = [[$zero(); NV]; PX];
                        let mut wp = weights;
                        for &s in call.steps {
                            let s = s as usize;
                            let mut wv = [$zero(); NV];
                            for (j, w) in wv.iter_mut().enumerate() {
                                *w = $load(wp.add(j * $lanes));
                            }
                            wp = wp.add(OC);
                            for i in 0..PX {
                                let b = $set1(*win[i].add(s));
                                for j in 0..NV {
                                    acc[i][j] = $fma(b, wv[j], acc[i][j]);
                                }
                            }
                        }
                        for row in acc.iter_mut() {
                            for (v, &b) in row.iter_mut().zip(&bias_v) {
                                *v = $add(*v, b);
                            }
                        }
                        if res.is_null() {
                            with_vector_activation!(
                                e.act,
                                ($v, $zero, $set1, $max, $min, $leaky),
                                |act| {
                                    for row in acc.iter_mut() {
                                        for v in row.iter_mut() {
                                            *v = act(*v);
                                        }
                                    }
                                }
                            );
                        }
                        let col = p - call.pixels.start;
                        if res.is_null() {
                            // Lane 0's output row at the tile's first pixel (before `out`
                            // where the panel starts before the first channel computed:
                            // lanes before `first` are never stored).
                            let row0 = o
                                .wrapping_add((panel * OC) * ldo + col)
                                .wrapping_sub(call.skip * ldo);
                            let (room, lanes) = (cols - col, first..last);
                            let ahead = crate::conv::lanes::STORE_AHEAD;
                            for l in lanes.clone() {
                                $prefetch(row0.wrapping_add(l * ldo + ahead));
                            }
                            if PX <= $store_px {
                                $store_t(&acc, n, room, lanes, row0, ldo);
                            } else {
                                lanes_store_default::<PX>(&acc, n, room, lanes, row0, ldo);
                            }
                        } else {
                            let mut t = [[0.0f32; OC]; PX];
                            for (i, row) in acc.iter().enumerate() {
                                for (j, &v) in row.iter().enumerate() {
                                    $store(t[i].as_mut_ptr().add(j * $lanes), v);
                                }
                            }
                            for lane in first..last {
                                let row = panel * OC + lane - call.skip;
                                let dst = o.add(row * ldo + col);
                                let r = res.add(row * ldr + col);
                                for (i, ti) in t.iter().enumerate().take(n) {
                                    *dst.add(i) = e.act.apply(ti[lane] + *r.add(i));
                                }
                            }
                        }
                        p += n;
                    }
                }
            }
        }
    };
}

/// Generates the channel-blocked depthwise convolution (`crate::conv::depthwise`'s
/// "Channel blocks") in the module that invokes it, for the vector type `$v` of `$lanes`
/// floats: `depthwise_blocked` (a [`super::DepthwiseBlockedFn`]) and its helpers, each
/// with the attributes `$attr` (the ISA's `target_feature`, none on the portable path).
/// The operations are [`isa_kernels!`]'s (`$fma(a, b, c)` is `a·b + c`, fused or not);
/// `$load_t(rows)` loads `$lanes` floats from each of `$lanes` pointers, transposed: vector
/// `j`'s lane `i` is `rows[i][j]` (an unsafe function of the ISA's target features). It
/// turns `$lanes` pixels of each channel into a vector per pixel, and back.
macro_rules! depthwise_blocked {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:expr, zero = $zero:ident,
        load = $load:ident, store = $store:ident, set1 = $set1:ident, fma = $fma:ident,
        max = $max:ident, min = $min:ident, leaky = $leaky:ident, load_t = $ldt:ident
    ) => {
        /// Floats per vector of the channel-blocked depthwise kernel: channels per group.
        pub(crate) const DEPTHWISE_LANES: usize = $lanes;

        /// The channel-blocked depthwise convolution of a run of channels into `dst` (a
        /// plane each), `work` its scratch (`crate::conv::depthwise`'s "Channel blocks"):
        /// per group of [`DEPTHWISE_LANES`] channels, bands of output rows, each from a
        /// ring of interleaved input rows. The activation is matched once per call.
        ///
        /// # Safety
        /// The CPU has the target features; `b`, `work` and `dst` are as
        /// [`super::super::Kernels::depthwise_blocked`] checks them.
        $(#[$attr])*
        pub(crate) unsafe fn depthwise_blocked(
            b: &crate::conv::depthwise::Blocked<'_>,
            work: &mut [f32],
            dst: &mut [f32],
        ) {
            use $crate::Activation;
            // SAFETY: this function's contract, which `dw_groups` shares.
            unsafe {
                match b.act {
                    Activation::None => dw_groups(b, work, dst, |v: $v| v),
                    Activation::Relu => {
                        let zero = $zero();
                        dw_groups(b, work, dst, move |v: $v| $max(zero, v))
                    }
                    Activation::Clip { min, max } => {
                        let (lo, hi) = ($set1(min), $set1(max));
                        dw_groups(b, work, dst, move |v: $v| $min(hi, $max(lo, v)))
                    }
                    Activation::LeakyRelu { slope } => {
                        let slope = $set1(slope);
                        dw_groups(b, work, dst, move |v: $v| $leaky(v, slope))
                    }
                }
            }
        }

        /// [`depthwise_blocked`] with the activation `act` on each output vector.
        ///
        /// # Safety
        /// As [`depthwise_blocked`].
        $(#[$attr])*
        #[inline]
        unsafe fn dw_groups<F: Fn($v) -> $v>(
            b: &crate::conv::depthwise::Blocked<'_>,
            work: &mut [f32],
            dst: &mut [f32],
            act: F,
        ) {
            const L: usize = DEPTHWISE_LANES;
            let g = b.geometry;
            let lay = g.layout(L);
            let ((h, _), (oh, ow)) = (g.input, g.output);
            let (in_plane, out_plane) = (g.input.0 * g.input.1, oh * ow);
            let n = b.channels;
            let rows = Rows::new(g, &lay, work.as_mut_ptr());
            // SAFETY: (whole body) `work` holds `lay.len` floats (the contract), the ring,
            // the zero row and the staging rows inside them; `b.x` holds `n` planes of
            // `in_plane` floats and `dst` `n` of `out_plane`; the weights hold each tap's
            // `n.next_multiple_of(L)` floats `weight_stride` apart and the bias as many
            // (the contract), which every group's loads stay inside.
            unsafe {
                rows.zero_borders();
                let (x, out) = (b.x.as_ptr(), dst.as_mut_ptr());
                let mut g0 = 0;
                while g0 < n {
                    let cn = (n - g0).min(L);
                    // Lanes past the run's channels read its last channel again; their
                    // outputs are never stored.
                    let src: [*const f32; L] =
                        std::array::from_fn(|i| x.add((g0 + i.min(cn - 1)) * in_plane));
                    let taps = Taps {
                        weights: b.weights.as_ptr().add(g0),
                        stride: b.weight_stride,
                        bias: $load(b.bias.as_ptr().add(g0)),
                    };
                    let o = out.add(g0 * out_plane);
                    // Input rows below `next` are in the ring, or read by no band.
                    let mut next = 0;
                    let mut cursor = Cursor { row: 0, slot: 0 };
                    let mut oy0 = 0;
                    while oy0 < oh {
                        let oy1 = (oy0 + lay.band_rows).min(oh);
                        let (lo, hi) = g.rows_read(oy0..oy1);
                        let start = next.max(lo);
                        if start < hi {
                            rows.pack(&src, start, hi.min(h));
                            next = hi;
                        }
                        rows.band(&taps, oy0..oy1, &mut cursor, &act);
                        unpack(rows.staging, (oy1 - oy0) * ow, o.add(oy0 * ow), out_plane, cn);
                        oy0 = oy1;
                    }
                    g0 += L;
                }
            }
        }

        /// A group's weights: tap `t`'s vector at `weights + t·stride`, and its bias.
        struct Taps {
            weights: *const f32,
            stride: usize,
            bias: $v,
        }

        /// An input row inside the input and its slot in the ring.
        struct Cursor {
            row: usize,
            slot: usize,
        }

        /// Where an output row reads ([`Rows::locate`]).
        struct Located {
            iy0: isize,
            ya: usize,
            sa: usize,
        }

        /// The scratch of [`dw_groups`] and the layer's geometry: the ring of interleaved
        /// padded input rows (`ring_rows` of `pitch · L` floats, input row `iy` in slot
        /// `iy mod ring_rows`), a row of zeros for the padding rows, and the staging rows of
        /// a band's interleaved outputs.
        struct Rows<'g> {
            g: &'g crate::conv::depthwise::BlockGeometry,
            ring: *mut f32,
            ring_rows: usize,
            row_len: usize,
            zero: *mut f32,
            staging: *mut f32,
        }

        impl<'g> Rows<'g> {
            fn new(
                g: &'g crate::conv::depthwise::BlockGeometry,
                lay: &crate::conv::depthwise::BlockLayout,
                work: *mut f32,
            ) -> Self {
                Rows {
                    g,
                    ring: work.wrapping_add(lay.ring),
                    ring_rows: lay.ring_rows,
                    row_len: lay.pitch * DEPTHWISE_LANES,
                    zero: work.wrapping_add(lay.zero),
                    staging: work.wrapping_add(lay.staging),
                }
            }

            /// Zeroes each ring slot's padding columns and the zero row: the packs write
            /// only the input's columns, so these stay zero for the whole call.
            ///
            /// # Safety
            /// The scratch holds the layout's floats.
            #[inline]
            unsafe fn zero_borders(&self) {
                let (w, px) = (self.g.input.1, self.g.padding.1);
                let (left, right) = (px * DEPTHWISE_LANES, (px + w) * DEPTHWISE_LANES);
                // SAFETY: every slot and the zero row are `row_len` floats of the scratch,
                // and `right + left == row_len` (`pitch = w + 2·px`).
                unsafe {
                    for r in 0..self.ring_rows {
                        let row = self.ring.add(r * self.row_len);
                        row.write_bytes(0, left);
                        row.add(right).write_bytes(0, self.row_len - right);
                    }
                    self.zero.write_bytes(0, self.row_len);
                }
            }

            /// Where input row `iy`'s first input column lies in the ring.
            ///
            /// # Safety
            /// `iy`'s slot, `iy mod ring_rows`, is `slot`.
            #[inline(always)]
            unsafe fn slot_start(&self, slot: usize) -> *mut f32 {
                // SAFETY: `slot < ring_rows`: a slot of the scratch, `px` columns in.
                unsafe { self.ring.add(slot * self.row_len + self.g.padding.1 * DEPTHWISE_LANES) }
            }

            /// Interleaves input rows `start..end` of the group's channels (`src`, a plane
            /// each; lanes past the group's channels repeat one) into their ring slots:
            /// their pixels as one flat run, `L` at a time, the last `L` overlapping the
            /// ones before (the same values again), or fewer than `L` through a copy on the
            /// stack.
            ///
            /// # Safety
            /// Each `src` plane holds the input's rows; `start < end <= h`; the ring is not
            /// read by anyone else while the slots are written.
            $(#[$attr])*
            #[inline]
            unsafe fn pack(&self, src: &[*const f32; DEPTHWISE_LANES], start: usize, end: usize) {
                const L: usize = DEPTHWISE_LANES;
                let w = self.g.input.1;
                let (base, total) = (start * w, (end - start) * w);
                let r = self.ring_rows;
                // SAFETY: (whole body) the loads read pixels `base..base + total` of each
                // plane (rows `start..end`); each store writes one pixel's vector at its
                // row's slot and column `x < w`, inside the ring.
                unsafe {
                    // The pixel the next store writes: column `x` of the row in slot `slot`.
                    let (mut x, mut slot) = (0, start % r);
                    let mut row = self.slot_start(slot);
                    macro_rules! put {
                        ($vs:expr, $count:expr) => {
                            for v in $vs.iter().take($count) {
                                $store(row.add(x * L), *v);
                                x += 1;
                                if x == w {
                                    x = 0;
                                    slot = if slot + 1 == r { 0 } else { slot + 1 };
                                    row = self.slot_start(slot);
                                }
                            }
                        };
                    }
                    if total < L {
                        let mut tmp = [[0.0f32; L]; L];
                        for (t, s) in tmp.iter_mut().zip(src) {
                            for (j, f) in t.iter_mut().enumerate().take(total) {
                                *f = *s.add(base + j);
                            }
                        }
                        let v = $ldt(&std::array::from_fn(|i| tmp[i].as_ptr()));
                        put!(v, total);
                        return;
                    }
                    if w >= L {
                        // Row by row, the last `L` pixels of a row overlapping the ones
                        // before: no row ends inside a block.
                        let mut slot = start % r;
                        for iy in start..end {
                            let (at, row) = (iy * w, self.slot_start(slot));
                            slot = if slot + 1 == r { 0 } else { slot + 1 };
                            let mut q = 0;
                            while q < w {
                                let q0 = q.min(w - L);
                                let v = $ldt(&std::array::from_fn(|i| src[i].add(at + q0)));
                                for (j, v) in v.iter().enumerate() {
                                    $store(row.add((q0 + j) * L), *v);
                                }
                                q += L;
                            }
                        }
                        return;
                    }
                    let mut q = 0;
                    while q + L <= total {
                        let v = $ldt(&std::array::from_fn(|i| src[i].add(base + q)));
                        put!(v, L);
                        q += L;
                    }
                    if q < total {
                        // The last `L` pixels, from row `start + q0 / w`, column `q0 % w`.
                        let q0 = total - L;
                        (x, slot) = (q0 % w, (start + q0 / w) % r);
                        row = self.slot_start(slot);
                        let v = $ldt(&std::array::from_fn(|i| src[i].add(base + q0)));
                        put!(v, L);
                    }
                }
            }

            /// Output rows `oys` of the group, interleaved, into the staging rows in order
            /// (`ow` vectors each): per row, blocks of 8, 4, 2 and 1 pixels, each element
            /// `act(bias + Σ w·x)` over the taps in order. MobileNet's 3×3 kernels at column
            /// strides 1 and 2 have their own copies, whose taps and offsets are constants.
            ///
            /// # Safety
            /// The ring holds the input rows the rows read (`rows_read`), `cursor` the slot
            /// of an input row at or before the first one they read; `t` is a group's taps.
            $(#[$attr])*
            #[inline]
            unsafe fn band<F: Fn($v) -> $v>(
                &self,
                t: &Taps,
                oys: std::ops::Range<usize>,
                cursor: &mut Cursor,
                act: &F,
            ) {
                // SAFETY: the contract.
                unsafe {
                    match (self.g.kernel, self.g.stride.1) {
                        ((3, 3), 1) => self.band_of::<3, 3, 1, F>(t, oys, cursor, act),
                        ((3, 3), 2) => self.band_of::<3, 3, 2, F>(t, oys, cursor, act),
                        _ => self.band_of::<0, 0, 0, F>(t, oys, cursor, act),
                    }
                }
            }

            /// [`Rows::band`] for a `KH × KW` kernel at column stride `SX` (0: the layer's,
            /// at run time).
            ///
            /// # Safety
            /// As [`Rows::band`]; nonzero `KH`, `KW`, `SX` are the layer's.
            $(#[$attr])*
            #[inline]
            unsafe fn band_of<const KH: usize, const KW: usize, const SX: usize, F: Fn($v) -> $v>(
                &self,
                t: &Taps,
                oys: std::ops::Range<usize>,
                cursor: &mut Cursor,
                act: &F,
            ) {
                let ow = self.g.output.1;
                let mut out = self.staging;
                let mut oy = oys.start;
                while oy < oys.end {
                    if KH > 0 && ow < $crate::conv::depthwise::PAIR_BELOW && oy + 1 < oys.end {
                        // Two narrow rows at once: twice the accumulators of a block.
                        let (a0, a1) = (self.locate(oy, cursor), self.locate(oy + 1, cursor));
                        let k0: [*const f32; KH] = std::array::from_fn(|ky| self.row_ptr(&a0, ky));
                        let k1: [*const f32; KH] = std::array::from_fn(|ky| self.row_ptr(&a1, ky));
                        let rows = |r: usize, ky: usize| if r == 0 { k0[ky] } else { k1[ky] };
                        let outs = [out, out.wrapping_add(ow * DEPTHWISE_LANES)];
                        // SAFETY: as below, for both rows.
                        unsafe { self.row_blocks::<2, 4, KH, KW, SX, F>(t, &rows, outs, act) };
                        out = out.wrapping_add(2 * ow * DEPTHWISE_LANES);
                        oy += 2;
                        continue;
                    }
                    let at = self.locate(oy, cursor);
                    let known: [*const f32; KH] = std::array::from_fn(|ky| self.row_ptr(&at, ky));
                    let rows = |_: usize, ky: usize| if KH > 0 { known[ky] } else { self.row_ptr(&at, ky) };
                    // SAFETY: every block computes outputs `ox..ox + N <= ow` of the row into
                    // its staging row, reading the ring rows and zero row `rows` gives, whose
                    // padded columns reach `(ow − 1)·sx + kw ≤ pitch`.
                    unsafe { self.row_blocks::<1, 8, KH, KW, SX, F>(t, &rows, [out], act) };
                    out = out.wrapping_add(ow * DEPTHWISE_LANES);
                    oy += 1;
                }
            }

            /// `R` output rows, kernel row `ky` of row `r` reading `rows(r, ky)`, into
            /// `outs`: blocks of `N`, then halving blocks, of pixels of every row.
            ///
            /// # Safety
            /// As [`Rows::block`], for every row.
            $(#[$attr])*
            #[inline]
            unsafe fn row_blocks<
                const R: usize,
                const N: usize,
                const KH: usize,
                const KW: usize,
                const SX: usize,
                F: Fn($v) -> $v,
            >(
                &self,
                t: &Taps,
                rows: &impl Fn(usize, usize) -> *const f32,
                outs: [*mut f32; R],
                act: &F,
            ) {
                const { assert!(N == 8 || N == 4, "halving blocks of N / 2, N / 4, ..., 1") };
                let ow = self.g.output.1;
                let mut ox = 0;
                // SAFETY: the contract, for blocks of pixels `ox..ox + n <= ow`.
                unsafe {
                    while ox + N <= ow {
                        self.block::<R, N, KH, KW, SX, F>(t, rows, ox, outs, act);
                        ox += N;
                    }
                    if N == 8 && ox + 4 <= ow {
                        self.block::<R, 4, KH, KW, SX, F>(t, rows, ox, outs, act);
                        ox += 4;
                    }
                    if ox + 2 <= ow {
                        self.block::<R, 2, KH, KW, SX, F>(t, rows, ox, outs, act);
                        ox += 2;
                    }
                    if ox < ow {
                        self.block::<R, 1, KH, KW, SX, F>(t, rows, ox, outs, act);
                    }
                }
            }

            /// Where output row `oy` reads: its first input row `iy0` (negative in the top
            /// padding) and the first one inside the input, `ya`, in ring slot `sa`. Moves
            /// `cursor` (an input row at or before `ya` and its slot) to `ya`.
            #[inline(always)]
            fn locate(&self, oy: usize, cursor: &mut Cursor) -> Located {
                let (sy, py) = (self.g.stride.0, self.g.padding.0);
                let iy0 = (oy * sy) as isize - py as isize;
                let ya = iy0.max(0) as usize;
                if ya > cursor.row {
                    let mut slot = cursor.slot + (ya - cursor.row);
                    while slot >= self.ring_rows {
                        slot -= self.ring_rows;
                    }
                    *cursor = Cursor { row: ya, slot };
                }
                Located { iy0, ya, sa: cursor.slot }
            }

            /// The ring row (or the zero row) that kernel row `ky` reads for the output row
            /// at `at`.
            #[inline(always)]
            fn row_ptr(&self, at: &Located, ky: usize) -> *const f32 {
                let iy = at.iy0 + ky as isize;
                if iy < 0 || iy >= self.g.input.0 as isize {
                    return self.zero;
                }
                // `iy − ya` < the rows one output reads ≤ `ring_rows`.
                let s = at.sa + (iy as usize - at.ya);
                let s = if s >= self.ring_rows { s - self.ring_rows } else { s };
                self.ring.wrapping_add(s * self.row_len)
            }

            /// Outputs `ox..ox + N` of `R` rows: `R·N` accumulators over every tap.
            ///
            /// # Safety
            /// As [`Rows::band_of`] for each row `r`, whose kernel rows `rows(r, ky)` gives,
            /// for `ox + N <= ow`; `outs[r]` holds the row's `ow` vectors.
            $(#[$attr])*
            #[inline]
            unsafe fn block<
                const R: usize,
                const N: usize,
                const KH: usize,
                const KW: usize,
                const SX: usize,
                F: Fn($v) -> $v,
            >(
                &self,
                t: &Taps,
                rows: &impl Fn(usize, usize) -> *const f32,
                ox: usize,
                outs: [*mut f32; R],
                act: &F,
            ) {
                const L: usize = DEPTHWISE_LANES;
                let g = self.g;
                let kh = if KH > 0 { KH } else { g.kernel.0 };
                let kw = if KW > 0 { KW } else { g.kernel.1 };
                let sx = if SX > 0 { SX } else { g.stride.1 };
                let mut acc = [[t.bias; N]; R];
                // SAFETY: tap `(ky, kx)` of output `ox + i` reads padded column `(ox + i)·sx
                // + kx` of its row, inside it; the weights hold every tap (the contract of
                // `band_of`); the stores write outputs `ox..ox + N` of each row.
                unsafe {
                    for ky in 0..kh {
                        let w = t.weights.add(ky * kw * t.stride);
                        for (r, acc) in acc.iter_mut().enumerate() {
                            let row = rows(r, ky).add(ox * sx * L);
                            for (i, a) in acc.iter_mut().enumerate() {
                                let x = row.add(i * sx * L);
                                for kx in 0..kw {
                                    *a = $fma($load(w.add(kx * t.stride)), $load(x.add(kx * L)), *a);
                                }
                            }
                        }
                    }
                    for (acc, out) in acc.iter().zip(outs) {
                        for (i, a) in acc.iter().enumerate() {
                            $store(out.add((ox + i) * L), act(*a));
                        }
                    }
                }
            }
        }

        /// Turns `pixels` interleaved outputs at `staging` back into the planes of `cn`
        /// channels: channel `i`'s pixels at `out + i·plane`, `L` at a time, the last `L`
        /// overlapping the ones before, or fewer than `L` through a copy on the stack.
        ///
        /// # Safety
        /// `staging` holds `pixels` vectors; `out + i·plane` `pixels` writable floats for
        /// every `i < cn`.
        $(#[$attr])*
        #[inline]
        unsafe fn unpack(staging: *const f32, pixels: usize, out: *mut f32, plane: usize, cn: usize) {
            const L: usize = DEPTHWISE_LANES;
            // SAFETY: the loads read vectors `q..q + L <= pixels` of `staging`, the stores
            // pixels `q..q + L` of the first `cn` planes (or fewer, below): the contract.
            unsafe {
                if pixels < L {
                    let mut vs = [[0.0f32; L]; L];
                    for (j, t) in vs.iter_mut().enumerate().take(pixels) {
                        std::ptr::copy_nonoverlapping(staging.add(j * L), t.as_mut_ptr(), L);
                    }
                    let v = $ldt(&std::array::from_fn(|j| vs[j].as_ptr()));
                    let mut tmp = [0.0f32; L];
                    for (i, v) in v.iter().enumerate().take(cn) {
                        $store(tmp.as_mut_ptr(), *v);
                        std::ptr::copy_nonoverlapping(tmp.as_ptr(), out.add(i * plane), pixels);
                    }
                    return;
                }
                let mut q = 0;
                while q < pixels {
                    let q0 = q.min(pixels - L);
                    let v = $ldt(&std::array::from_fn(|j| staging.add((q0 + j) * L)));
                    if cn == L {
                        for (i, v) in v.iter().enumerate() {
                            $store(out.add(i * plane + q0), *v);
                        }
                    } else {
                        for (i, v) in v.iter().enumerate().take(cn) {
                            $store(out.add(i * plane + q0), *v);
                        }
                    }
                    q += L;
                }
            }
        }
    };
}

/// Generates the conv kernels every vector table shares beside its GEMM, in the module
/// that invokes it: the channel-blocked depthwise kernel ([`depthwise_blocked!`]), the
/// channel-lanes conv ([`lanes_conv!`], `$lcv` vectors of channels by `$short` or `$long`
/// pixels, stores by `$lst` up to `$lstpx` pixels) and
/// the Winograd transforms (`winograd_transforms!`), all with the attributes `$attr` and
/// the operations of [`isa_kernels!`]. The SIMD tables get them through [`isa_kernels!`];
/// the portable path invokes it on plain arrays.
macro_rules! conv_kernels {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:literal,
        lanes_conv = ($lcv:expr, ($short:expr, $long:expr), store_t = ($lst:path, $lstpx:expr)),
        zero = $zero:ident, load = $load:ident, store = $store:ident, set1 = $set1:ident,
        fma = $fma:ident, add = $add:ident,
        sub = $sub:ident, mul = $mul:ident, max = $max:ident, min = $min:ident,
        leaky = $leaky:ident, load_t = $load_t:ident, interleave = $interleave:ident,
        prefetch = $prefetch:ident
    ) => {
        depthwise_blocked!(
            attr = { $(#[$attr])* }, $v, lanes = $lanes, zero = $zero, load = $load,
            store = $store, set1 = $set1, fma = $fma, max = $max, min = $min,
            leaky = $leaky, load_t = $load_t
        );

        lanes_conv!(
            attr = { $(#[$attr])* }, $v, lanes = $lanes, vectors = $lcv,
            pixels = ($short, $long), store_t = ($lst, $lstpx), zero = $zero, load = $load,
            store = $store, set1 = $set1, fma = $fma, add = $add,
            max = $max, min = $min, leaky = $leaky, load_t = $load_t, prefetch = $prefetch
        );

        winograd_transforms!(
            attr = { $(#[$attr])* }, $v, lanes = $lanes, zero = $zero, load = $load,
            store = $store, set1 = $set1, add = $add, sub = $sub, mul = $mul, max = $max,
            min = $min, leaky = $leaky, interleave = $interleave
        );
    };
}

/// Generates one ISA's kernels in a module `$m`. `$v` is the vector type, `$lanes` its
/// width, `$chains` the FMA probe's independent chains, and the rest the intrinsics of
/// that width (`$fma(a, b, c)` is `a·b + c`). The module sees its parent's imports.
///
/// The epilogue's activation takes three operations, each of which must give exactly the
/// bits of [`crate::Activation::apply`]'s scalar rule on every path:
/// - `$max(a, b)` is, lane by lane, `if a > b { a } else { b }`: x86 `max_ps`, which
///   returns its *second* operand when either is NaN or both are zero. ReLU is
///   `$max(zero, v)`, so a NaN `v` stays NaN and `−0.0` stays `−0.0` (`$max(v, zero)` would
///   turn NaN into 0);
/// - `$min(a, b)` is `if a < b { a } else { b }` (x86 `min_ps`): clip is
///   `$min(max, $max(min, v))`, the scalar `x = min > v ? min : v; max < x ? max : x`;
/// - `$leaky(v, slope)` is `v ≥ 0 ? v : slope · v` by an ordered compare and a blend, so
///   a NaN `v` takes `slope · v` (NaN) and `−0.0` stays.
///
/// `$prefetch(p)` hints that the cache line at `p` will be read soon; `p` may point
/// anywhere (it is never dereferenced).
///
/// `$interleave(xs, m, n, row)` is [`crate::conv::winograd::interleave_from`] from tile 0
/// with the ISA's shuffles, an `unsafe` function of the ISA's target features.
///
/// `$load_t(&[*const f32; lanes]) -> [$v; lanes]` loads a `lanes × lanes` block, one row
/// from each pointer, transposed (the channel-blocked depthwise kernel's,
/// [`depthwise_blocked!`]).
///
/// `$max3` is the ISA's 3×3 stride-2 max pool of a plane, if it has one
/// ([`super::Kernels::max_3x3_s2`]).
macro_rules! isa_kernels {
    (
        mod $m:ident, feature = $feat:literal, $v:ty, lanes = $lanes:literal, chains = $chains:literal,
        zero = $zero:ident, load = $load:ident, store = $store:ident, set1 = $set1:ident,
        fma = $fma:ident, add = $add:ident, sub = $sub:ident, mul = $mul:ident,
        max = $max:ident, min = $min:ident,
        leaky = $leaky:ident, prefetch = $prefetch:ident, interleave = $interleave:ident,
        load_t = $load_t:ident, max_3x3_s2 = $max3:expr,
        lanes_conv = ($lcv:expr, ($short:expr, $long:expr), store_t = ($lst:path, $lstpx:expr))
    ) => {
        pub(super) mod $m {
            use super::*;

            pub(crate) const LANES: usize = $lanes;

            conv_kernels!(
                attr = { #[target_feature(enable = $feat)] }, $v, lanes = $lanes,
                lanes_conv = ($lcv, ($short, $long), store_t = ($lst, $lstpx)), zero = $zero,
                load = $load, store = $store,
                set1 = $set1, fma = $fma, add = $add, sub = $sub, mul = $mul, max = $max,
                min = $min, leaky = $leaky, load_t = $load_t, interleave = $interleave,
                prefetch = $prefetch
            );

            pub(crate) const MAX_3X3_S2: Option<$crate::simd::MaxPool3x3Fn> = $max3;

            /// The GEMM micro-kernel: full `MR`-row panels, then the remainder rows with
            /// a kernel of exactly that many rows (no wasted FMAs, no copies). It computes
            /// `NV` vectors of columns from B panels `NB` vectors wide: `NV < NB` is the
            /// narrow kernel of a panel's first columns. `X > 0` (with `NV == NB` and `MR
            /// <= LANES`) also computes the first `X` columns of the next panel, `b_next`
            /// floats on, with the rows in the lanes (as [`gemm_cols`]), in the same pass
            /// over A: a plane's last few pixels (49 = 48 + 1, 196 = 4 · 48 + 4) then cost
            /// no pass of their own over the weights.
            ///
            /// # Safety
            /// See [`super::super::GemmFn`]; the CPU has the target features.
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn gemm<
                const MR: usize,
                const NV: usize,
                const NB: usize,
                const X: usize,
            >(
                t: &RawTile,
            ) {
                let full = t.rows / MR;
                // SAFETY: panel `p` lies at `p·a_step` and rows `p·MR..` of `c`, the bias
                // and the residual exist for every `p < ceil(rows / MR)` (the contract).
                unsafe {
                    for p in 0..full {
                        tile::<MR, NV, NB, X>(t, p * MR, MR, t.a.add(p * t.a_step));
                    }
                    let (r0, a) = (full * MR, t.a.add(full * t.a_step));
                    match t.rows - r0 {
                        1 => tile::<1, NV, NB, X>(t, r0, MR, a),
                        2 => tile::<2, NV, NB, X>(t, r0, MR, a),
                        3 => tile::<3, NV, NB, X>(t, r0, MR, a),
                        4 => tile::<4, NV, NB, X>(t, r0, MR, a),
                        5 => tile::<5, NV, NB, X>(t, r0, MR, a),
                        6 => tile::<6, NV, NB, X>(t, r0, MR, a),
                        7 => tile::<7, NV, NB, X>(t, r0, MR, a),
                        8 => tile::<8, NV, NB, X>(t, r0, MR, a),
                        9 => tile::<9, NV, NB, X>(t, r0, MR, a),
                        10 => tile::<10, NV, NB, X>(t, r0, MR, a),
                        11 => tile::<11, NV, NB, X>(t, r0, MR, a),
                        12 => tile::<12, NV, NB, X>(t, r0, MR, a),
                        13 => tile::<13, NV, NB, X>(t, r0, MR, a),
                        14 => tile::<14, NV, NB, X>(t, r0, MR, a),
                        15 => tile::<15, NV, NB, X>(t, r0, MR, a),
                        _ => {}
                    }
                }
            }

            /// `R` rows of C from `R` rows of an A panel whose k-steps are `ak` floats.
            ///
            /// # Safety
            /// As [`gemm`], for rows `r0..r0 + R` and the panel at `a`.
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn tile<const R: usize, const NV: usize, const NB: usize, const X: usize>(
                t: &RawTile,
                r0: usize,
                ak: usize,
                a: *const f32,
            ) {
                let mut acc = [[$zero(); NV]; R];
                let mut extra = [$zero(); X];
                // SAFETY: (whole body) the panel at `a` holds `kc·ak` floats (`R <= ak`),
                // `b` holds `kc` steps of `NB·LANES` floats `ldb` apart, and rows `r0..r0 + R` of `c` (`NV·LANES`
                // writable floats each at `ldc`), of the bias and of the residual exist
                // (the contract).
                unsafe {
                    let c = t.c.add(r0 * t.ldc);
                    // The extra columns' rows in the lanes: lanes past `R` are never stored.
                    let mut lanes = [0.0f32; LANES];
                    let x0 = NV * LANES;
                    if t.accumulate {
                        for (i, row) in acc.iter_mut().enumerate() {
                            for (j, v) in row.iter_mut().enumerate() {
                                *v = $load(c.add(i * t.ldc + j * LANES));
                            }
                        }
                        for (x, v) in extra.iter_mut().enumerate() {
                            for (i, l) in lanes.iter_mut().enumerate().take(R) {
                                *l = *c.add(i * t.ldc + x0 + x);
                            }
                            *v = $load(lanes.as_ptr());
                        }
                    }
                    // Each step's operands from the panels' starts: a pointer stepped past
                    // the last step would point past a lone short panel's end, which `add`
                    // must not do even if it is never read (Miri caught it).
                    for k in 0..t.kc {
                        let (a, b) = (a.add(k * ak), t.b.add(k * t.ldb));
                        $prefetch(a.wrapping_add(crate::simd::template::PREFETCH_AHEAD));
                        let mut bv = [$zero(); NV];
                        for (j, v) in bv.iter_mut().enumerate() {
                            *v = $load(b.add(j * LANES));
                        }
                        for (i, row) in acc.iter_mut().enumerate() {
                            let av = $set1(*a.add(i));
                            for (v, &bj) in row.iter_mut().zip(&bv) {
                                *v = $fma(av, bj, *v);
                            }
                        }
                        if X > 0 {
                            // The step's `R` rows and what follows them in A (readable:
                            // the contract's lane span), times one B value per column.
                            let av = $load(a);
                            let b = t.b.add(t.b_next + k * t.ldb);
                            for (x, v) in extra.iter_mut().enumerate() {
                                *v = $fma(av, $set1(*b.add(x)), *v);
                            }
                        }
                    }
                    if !t.bias.is_null() {
                        for (i, row) in acc.iter_mut().enumerate() {
                            let bias = $set1(*t.bias.add(r0 + i));
                            for (j, v) in row.iter_mut().enumerate() {
                                *v = $add(*v, bias);
                                if !t.residual.is_null() {
                                    let r = t.residual.add((r0 + i) * t.ldr + j * LANES);
                                    *v = $add(*v, $load(r));
                                }
                            }
                        }
                        with_vector_activation!(
                            t.act,
                            ($v, $zero, $set1, $max, $min, $leaky),
                            |act| {
                                for row in acc.iter_mut() {
                                    for v in row.iter_mut() {
                                        *v = act(*v);
                                    }
                                }
                            }
                        );
                    }
                    for (i, row) in acc.iter().enumerate() {
                        for (j, v) in row.iter().enumerate() {
                            $store(c.add(i * t.ldc + j * LANES), *v);
                        }
                    }
                    if X > 0 {
                        extra_epilogue::<R, X>(t, r0, x0, extra);
                    }
                }
            }

            /// The epilogue and store of [`tile`]'s `X` extra columns, rows `r0..r0 + R`
            /// in the lanes: bias, residual and activation in the tile's order.
            /// [`lane_group`]'s epilogue does the same for its columns; one function shared
            /// by both was not inlined into `lane_group` (`#[inline(always)]` is refused on a
            /// `#[target_feature]` function), and the calls cost ResNet50 1.3 ms a frame at
            /// width 1 (`frame --profile`, five interleaved rounds), so each keeps its own.
            ///
            /// # Safety
            /// As [`tile`] with `X` extra columns.
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn extra_epilogue<const R: usize, const X: usize>(
                t: &RawTile,
                r0: usize,
                x0: usize,
                mut extra: [$v; X],
            ) {
                let mut lanes = [0.0f32; LANES];
                // SAFETY: rows `r0..r0 + R` of `c`, the bias and the residual exist, with
                // columns `x0..x0 + X` (the contract).
                unsafe {
                    if !t.bias.is_null() {
                        for (i, l) in lanes.iter_mut().enumerate().take(R) {
                            *l = *t.bias.add(r0 + i);
                        }
                        let bias = $load(lanes.as_ptr());
                        for (x, v) in extra.iter_mut().enumerate() {
                            *v = $add(*v, bias);
                            if !t.residual.is_null() {
                                for (i, l) in lanes.iter_mut().enumerate().take(R) {
                                    *l = *t.residual.add((r0 + i) * t.ldr + x0 + x);
                                }
                                *v = $add(*v, $load(lanes.as_ptr()));
                            }
                        }
                        with_vector_activation!(
                            t.act,
                            ($v, $zero, $set1, $max, $min, $leaky),
                            |act| {
                                for v in extra.iter_mut() {
                                    *v = act(*v);
                                }
                            }
                        );
                    }
                    for (x, &v) in extra.iter().enumerate() {
                        $store(lanes.as_mut_ptr(), v);
                        for (i, &l) in lanes.iter().enumerate().take(R) {
                            *t.c.add((r0 + i) * t.ldc + x0 + x) = l;
                        }
                    }
                }
            }

            /// A few columns of C with the rows in the vector lanes instead of the columns:
            /// columns `0..cols` of `C[rows × ·] (=|+=) A·B`, then the epilogue, `B` a panel
            /// `NB` vectors wide. Each `k` step loads a vector of `LANES` rows of an A panel
            /// and multiplies it by one broadcast value of B per column. For a panel of one
            /// column (a 7×7 plane's 49th pixel) the narrow tile used one lane in
            /// `LANES`; this uses `MR` of `MR.div_ceil(LANES) · LANES`. Every element is
            /// the same FMA chain over `k` (products commute exactly) and the same epilogue
            /// as in the tiles, so the bits do not depend on which kernel computes it.
            ///
            /// # Safety
            /// As [`gemm`] for `cols` columns of `c`, of B and of the residual, and panel
            /// `p`'s last `k` step readable for `MR.div_ceil(LANES) · LANES` floats (the
            /// vector of the last rows reads past a panel whose `MR` is not a multiple of
            /// `LANES`).
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn gemm_cols<const MR: usize, const NB: usize>(
                t: &RawTile,
                cols: usize,
            ) {
                let per_panel = MR.div_ceil(LANES);
                let vectors = t.rows.div_ceil(MR) * per_panel;
                let mut j0 = 0;
                // SAFETY: the contract, column by column group.
                unsafe {
                    while j0 < cols {
                        match cols - j0 {
                            1 => lane_group::<MR, NB, 1, 8>(t, j0, vectors),
                            2 => lane_group::<MR, NB, 2, 6>(t, j0, vectors),
                            3 => lane_group::<MR, NB, 3, 3>(t, j0, vectors),
                            _ => lane_group::<MR, NB, 4, 2>(t, j0, vectors),
                        }
                        j0 += 4;
                    }
                }
            }

            /// Columns `j0..j0 + W` for every row vector, `G` row vectors at a time (`G·W`
            /// accumulators). A last, partial group repeats its last vector rather than
            /// shortening the loops, and stores it once.
            ///
            /// # Safety
            /// As [`gemm_cols`], for columns `j0..j0 + W`.
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn lane_group<
                const MR: usize,
                const NB: usize,
                const W: usize,
                const G: usize,
            >(
                t: &RawTile,
                j0: usize,
                vectors: usize,
            ) {
                let per_panel = MR.div_ceil(LANES);
                // Row vector `q`: its first row and how many of its lanes are rows of C.
                let first_row = |q: usize| q / per_panel * MR + q % per_panel * LANES;
                let lanes_of = |q: usize| {
                    let panel_end = (q / per_panel * MR + MR).min(t.rows);
                    (panel_end.saturating_sub(first_row(q))).min(LANES)
                };
                // SAFETY: (whole body) row vector `q < vectors` reads A at panel
                // `q / per_panel`, offset `q % per_panel · LANES` of each k step, inside
                // the panel's readable span (the contract); rows `first_row(q) + i` for
                // `i < lanes_of(q)` exist in `c`, the bias and the residual; columns
                // `j0..j0 + W` exist in B's panel, `c` and the residual.
                unsafe {
                    let mut q0 = 0;
                    while q0 < vectors {
                        let qs: [usize; G] = std::array::from_fn(|g| (q0 + g).min(vectors - 1));
                        let a: [*const f32; G] = std::array::from_fn(|g| {
                            t.a.add(qs[g] / per_panel * t.a_step + qs[g] % per_panel * LANES)
                        });
                        let mut acc = [[$zero(); W]; G];
                        let mut lanes = [0.0f32; LANES];
                        if t.accumulate {
                            for (g, row) in acc.iter_mut().enumerate() {
                                for (j, v) in row.iter_mut().enumerate() {
                                    for (i, l) in lanes.iter_mut().enumerate().take(lanes_of(qs[g]))
                                    {
                                        *l = *t.c.add((first_row(qs[g]) + i) * t.ldc + j0 + j);
                                    }
                                    *v = $load(lanes.as_ptr());
                                }
                            }
                        }
                        let mut acc = lane_sums::<MR, W, G>(t, j0, &a, acc);
                        for (g, row) in acc.iter_mut().enumerate() {
                            if g > 0 && qs[g] == qs[g - 1] {
                                break;
                            }
                            let (r0, n) = (first_row(qs[g]), lanes_of(qs[g]));
                            if !t.bias.is_null() {
                                lanes = [0.0; LANES];
                                for (i, l) in lanes.iter_mut().enumerate().take(n) {
                                    *l = *t.bias.add(r0 + i);
                                }
                                let bias = $load(lanes.as_ptr());
                                for (j, v) in row.iter_mut().enumerate() {
                                    *v = $add(*v, bias);
                                    if !t.residual.is_null() {
                                        for (i, l) in lanes.iter_mut().enumerate().take(n) {
                                            *l = *t.residual.add((r0 + i) * t.ldr + j0 + j);
                                        }
                                        *v = $add(*v, $load(lanes.as_ptr()));
                                    }
                                }
                                with_vector_activation!(
                                    t.act,
                                    ($v, $zero, $set1, $max, $min, $leaky),
                                    |act| {
                                        for v in row.iter_mut() {
                                            *v = act(*v);
                                        }
                                    }
                                );
                            }
                            for (j, &v) in row.iter().enumerate() {
                                $store(lanes.as_mut_ptr(), v);
                                for (i, &l) in lanes.iter().enumerate().take(n) {
                                    *t.c.add((r0 + i) * t.ldc + j0 + j) = l;
                                }
                            }
                        }
                        q0 += G;
                    }
                }
            }

            /// [`lane_group`]'s FMA chains: `acc[g][j] += A(row vector g) · B(column j0 + j)`
            /// over the `kc` steps. A function of its own, called once per group: inlined,
            /// the accumulators lived on the stack, stored at every step (the group's
            /// epilogue takes them apart lane by lane), and on AVX2 four columns take two
            /// row vectors at a time, not three: 8 accumulators, 4 broadcasts and a row
            /// vector fit its 16 registers, where 12 spilled. A `576 → 96` 1×1 conv on
            /// 14×14 (196 = 12 · 16 + 4 columns a block) went from 83.0 to 85.4 GFLOP/s
            /// with this function and to 88.0 with both (88–90 for 192 columns), alone on the
            /// 2-core AMD EPYC Zen 3 VM (a scratch `Conv2d::forward` benchmark, best of
            /// runs, three rounds taking turns); MobileNetV2's 14×14 projections 4–8%
            /// faster in frames (`frame --width 1 --profile`, fastest of three rounds).
            ///
            /// # Safety
            /// As [`lane_group`]: `a[g]` is row vector `g`'s start in A's panel.
            #[target_feature(enable = $feat)]
            #[inline(never)]
            unsafe fn lane_sums<const MR: usize, const W: usize, const G: usize>(
                t: &RawTile,
                j0: usize,
                a: &[*const f32; G],
                mut acc: [[$v; W]; G],
            ) -> [[$v; W]; G] {
                // SAFETY: the caller's contract: every `k` step of the vectors at `a` and
                // columns `j0..j0 + W` of B's panel are readable.
                unsafe {
                    for k in 0..t.kc {
                        // As in `tile`: no pointer past the last step.
                        let b = t.b.add(j0 + k * t.ldb);
                        let mut bv = [$zero(); W];
                        for (j, v) in bv.iter_mut().enumerate() {
                            *v = $set1(*b.add(j));
                        }
                        for (g, row) in acc.iter_mut().enumerate() {
                            let av = $load(a[g].add(k * MR));
                            for (v, &bj) in row.iter_mut().zip(&bv) {
                                *v = $fma(av, bj, *v);
                            }
                        }
                    }
                }
                acc
            }

            /// `y[r] = w[r] · x` for every row, four rows at a time sharing the loads of
            /// `x`. Per row: two vector accumulators over the full vectors, summed lane by
            /// lane in a fixed tree, then the tail in order: a function of `n` only.
            ///
            /// # Safety
            /// See [`super::super::DotRowsFn`]; the CPU has the target features.
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn dot_rows(
                w: *const f32,
                n: usize,
                x: *const f32,
                rows: usize,
                y: *mut f32,
            ) {
                const STEP: usize = 2 * LANES;
                let full = n / STEP * STEP;
                // SAFETY: (whole body) `w` holds rows·n floats, `x` n, `y` rows; every
                // offset stays below those.
                unsafe {
                    let mut r = 0;
                    while r < rows {
                        let group = (rows - r).min(4);
                        let mut acc = [[$zero(); 2]; 4];
                        let mut j = 0;
                        while j < full {
                            let x0 = $load(x.add(j));
                            let x1 = $load(x.add(j + LANES));
                            for (g, a) in acc.iter_mut().enumerate().take(group) {
                                let row = w.add((r + g) * n + j);
                                a[0] = $fma($load(row), x0, a[0]);
                                a[1] = $fma($load(row.add(LANES)), x1, a[1]);
                            }
                            j += STEP;
                        }
                        for (g, a) in acc.iter().enumerate().take(group) {
                            let mut lanes = [0.0f32; LANES];
                            $store(lanes.as_mut_ptr(), $add(a[0], a[1]));
                            let mut width = LANES / 2;
                            while width > 0 {
                                for i in 0..width {
                                    lanes[i] += lanes[i + width];
                                }
                                width /= 2;
                            }
                            let mut s = lanes[0];
                            let row = w.add((r + g) * n);
                            for jj in full..n {
                                s += *row.add(jj) * *x.add(jj);
                            }
                            *y.add(r + g) = s;
                        }
                        r += group;
                    }
                }
            }

            /// The 2×2/2 max pool of one plane, compiled for this ISA.
            ///
            /// # Safety
            /// The CPU has the target features.
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn max_2x2(plane: &[f32], w: usize, dst: &mut [f32], ow: usize) {
                crate::pool::max_2x2(plane, w, dst, ow);
            }

            /// The 3×3 stride-1 max pool of one plane padded by one, compiled for this ISA.
            ///
            /// # Safety
            /// The CPU has the target features.
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn max_3x3_s1(
                plane: &[f32],
                w: usize,
                dst: &mut [f32],
                rows: &mut [f32],
            ) {
                crate::pool::max_3x3_s1(plane, w, dst, rows);
            }

            /// The depthwise convolution of a run of channels, compiled for this ISA
            /// ([`crate::conv::depthwise::channels`] with [`depthwise_run`]).
            ///
            /// # Safety
            /// The CPU has the target features; the channels and slices are as
            /// [`super::super::Kernels::depthwise`] checks them.
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn depthwise(
                ch: &crate::conv::depthwise::Channels<'_>,
                split: &mut [f32],
                wide: &mut [f32],
                dst: &mut [f32],
            ) {
                crate::conv::depthwise::channels::<LANES>(ch, split, wide, dst, |p, base, out| {
                    // SAFETY: the CPU has the target features (this function's contract);
                    // `plane` passes runs inside the plane's padded flat outputs
                    // (`Plane::padded_len`), whose taps `Kernels::depthwise` found inside
                    // the split plane, `p.src`.
                    unsafe { depthwise_run(p, base, out) }
                });
            }

            /// Flat outputs `base..base + out.len()` of a depthwise plane, before the
            /// activation: blocks of `BLOCK_VECTORS` (8) vectors whose accumulators stay
            /// in registers across the taps (one load and one FMA per tap and vector), then
            /// blocks of 4, 2 and 1 vectors for what is left, then a last vector
            /// overlapping the one before (its elements get the same operations again, so
            /// the same bits); only a run shorter than a vector is scalar (`mul_add`:
            /// fused, as the vectors). With plain loops (`f32::mul_add` over a `[f32; 64]`
            /// block) LLVM vectorised the FMAs but kept the accumulators on the stack, a
            /// load and a store around every one (`objdump` of the AVX2 build).
            ///
            /// # Safety
            /// The CPU has the target features; `p.src` holds `t + base + out.len()` floats
            /// for every tap offset `t`.
            #[target_feature(enable = $feat)]
            unsafe fn depthwise_run(
                p: &crate::conv::depthwise::Plane<'_>,
                base: usize,
                out: &mut [f32],
            ) {
                const BV: usize = crate::conv::depthwise::BLOCK_VECTORS;
                const { assert!(BV == 8, "the blocks of 4, 2 and 1 vectors cover 7") };
                let n = out.len();
                let o = out.as_mut_ptr();
                let mut j = 0;
                // SAFETY: every block below reads `p.src[t + base + j..][..its floats]` and
                // writes `out[j..][..its floats]` for a `j` that keeps them inside `n`,
                // which the contract covers.
                unsafe {
                    while j + BV * LANES <= n {
                        depthwise_block::<BV>(p, base + j, o.add(j));
                        j += BV * LANES;
                    }
                    // Fewer than `BV` vectors left: halving blocks, each still a few FMA
                    // chains side by side.
                    if j + 4 * LANES <= n {
                        depthwise_block::<4>(p, base + j, o.add(j));
                        j += 4 * LANES;
                    }
                    if j + 2 * LANES <= n {
                        depthwise_block::<2>(p, base + j, o.add(j));
                        j += 2 * LANES;
                    }
                    if j + LANES <= n {
                        depthwise_block::<1>(p, base + j, o.add(j));
                        j += LANES;
                    }
                    if j < n && n >= LANES {
                        depthwise_block::<1>(p, base + n - LANES, o.add(n - LANES));
                        j = n;
                    }
                }
                for (i, v) in out.iter_mut().enumerate().skip(j) {
                    let mut acc = p.bias;
                    for (&t, &w) in p.taps.iter().zip(p.weights) {
                        acc = w.mul_add(p.src[t + base + i], acc);
                    }
                    *v = acc;
                }
            }

            /// `NV` vectors of flat outputs from `j` on, stored at `out`.
            ///
            /// # Safety
            /// The CPU has the target features; `p.src` holds `t + j + NV·LANES` floats for
            /// every tap offset `t`, and `out` `NV·LANES` writable ones.
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn depthwise_block<const NV: usize>(
                p: &crate::conv::depthwise::Plane<'_>,
                j: usize,
                out: *mut f32,
            ) {
                let mut acc = [$set1(p.bias); NV];
                let src = p.src.as_ptr();
                // SAFETY: tap `t` reads `src[t + j..t + j + NV·LANES]` and the stores write
                // `out[..NV·LANES]`, inside both by the contract.
                unsafe {
                    for (&t, &w) in p.taps.iter().zip(p.weights) {
                        let (x, w) = (src.add(t + j), $set1(w));
                        for (v, a) in acc.iter_mut().enumerate() {
                            *a = $fma(w, $load(x.add(v * LANES)), *a);
                        }
                    }
                    for (v, a) in acc.iter().enumerate() {
                        $store(out.add(v * LANES), *a);
                    }
                }
            }

            /// Independent FMA chains, enough to cover latency × ports on any core, and
            /// few enough to stay in registers with the two operands.
            ///
            /// # Safety
            /// The CPU has the target features.
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn fma_probe(iters: u64) -> (u64, f32) {
                const CHAINS: usize = $chains;
                let a = $set1(std::hint::black_box(0.999_99f32));
                let b = $set1(std::hint::black_box(1e-7f32));
                let mut acc = [$set1(1.0); CHAINS];
                for _ in 0..iters {
                    for v in acc.iter_mut() {
                        *v = $fma(*v, a, b);
                    }
                }
                let mut sum = $zero();
                for v in acc {
                    sum = $add(sum, v);
                }
                let mut lanes = [0.0f32; LANES];
                // SAFETY: `lanes` holds one vector.
                unsafe { $store(lanes.as_mut_ptr(), sum) };
                (iters * (2 * CHAINS * LANES) as u64, lanes.iter().sum())
            }
        }
    };
}

/// A [`Kernels`](super::Kernels) table for one ISA module and GEMM tile shape.
macro_rules! table {
    ($isa:expr, $m:ident, $mr:literal, $nv:literal) => {
        table!(@build $isa, $m, $mr, $nv, None)
    };
    // With the kernels of a panel and the next panel's first 1..=N columns (`gemm`'s `X`;
    // `MR <= LANES`), listed `1, 2, …, N` in order (entry `x` computes `x + 1`). N as many
    // as keep the accumulators in the 32 registers: 4 at 12 × 32 (24 + 2 B vectors +
    // broadcast + A + 4 = 32); 2 at 8 × 48, where 4 spilled an accumulator and moved the
    // others between registers every `k` step (3 not tried).
    ($isa:expr, $m:ident, $mr:literal, $nv:literal, extra [$($x:literal),+]) => {
        table!(@build $isa, $m, $mr, $nv, Some(&[$($m::gemm::<$mr, $nv, $nv, $x> as $crate::simd::GemmFn),+]))
    };
    (@build $isa:expr, $m:ident, $mr:literal, $nv:literal, $extra:expr) => {
        Kernels {
            isa: $isa,
            mr: $mr,
            nr: $nv * $m::LANES,
            lanes: $m::LANES,
            gemm: $m::gemm::<$mr, $nv, $nv, 0>,
            gemm_extra: $extra,
            gemm_cols: Some($m::gemm_cols::<$mr, $nv> as $crate::simd::GemmColsFn),
            gemm_narrow: if $nv > 1 {
                Some($m::gemm::<$mr, 1, $nv, 0> as $crate::simd::GemmFn)
            } else {
                None
            },
            dot_rows: $m::dot_rows,
            fma_probe: $m::fma_probe,
            winograd_input: $m::winograd_input,
            winograd_output: $m::winograd_output,
            max_2x2: $m::max_2x2,
            max_3x3_s1: $m::max_3x3_s1,
            max_3x3_s2: $m::MAX_3X3_S2,
            depthwise: $m::depthwise,
            depthwise_blocked: $m::depthwise_blocked,
            depthwise_lanes: $m::DEPTHWISE_LANES,
            lanes_conv: $m::lanes_conv,
            lanes_oc: $m::LANES_OC,
        }
    };
}
