//! The Winograd transforms as vector code, one template for every ISA: a vector of tiles
//! side by side in a tile row at a time, every transform in registers.
//!
//! They replaced versions that swept each transform over every tile of a block, a row of
//! a buffer at a time. On SqueezeNet's `16 → 64` 3×3 conv on 55×55, `perf record` of the
//! layer alone put more time in those transforms than in the GEMMs. The figures after are
//! in `crate::conv::winograd`'s docs.

/// Generates both transforms, `winograd_input` and `winograd_output`, in the module that
/// invokes it: [`winograd_input!`] and [`winograd_output!`] with these operations.
macro_rules! winograd_transforms {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:expr, zero = $zero:ident,
        load = $load:ident, store = $store:ident, set1 = $set1:ident, add = $add:ident,
        sub = $sub:ident, mul = $mul:ident, max = $max:ident, min = $min:ident,
        leaky = $leaky:ident, interleave = $interleave:ident
    ) => {
        winograd_output!(
            attr = { $(#[$attr])* }, $v, lanes = $lanes, zero = $zero, load = $load,
            store = $store, set1 = $set1, add = $add, sub = $sub, mul = $mul, max = $max,
            min = $min, leaky = $leaky, interleave = $interleave
        );
        winograd_input!(
            attr = { $(#[$attr])* }, $v, lanes = $lanes, zero = $zero, load = $load,
            store = $store, set1 = $set1, add = $add, sub = $sub, mul = $mul
        );
    };
}

/// Generates `winograd_output` (a [`super::WinogradOutputFn`]) in the module that invokes
/// it, for the vector type `$v` of `$lanes` floats, with the attributes `$attr` (the
/// ISA's `target_feature`, none on the portable path). The operations are
/// [`isa_kernels!`]'s, plus `$sub(a, b)` (`a − b`) and `$mul(a, b)` (`a·b`), and
/// `$interleave` is the ISA's [`crate::conv::winograd::interleave_steps`].
///
/// `Y = Aᵀ m A` of a vector of tiles side by side in a tile row at a time, in registers:
/// along y (`q[i][j] = Aᵀ[i] · m[·][j]`), then along x (`Aᵀ[k] · q[i][·]`), `+ bias`,
/// then the activation, or `+ residual` and the activation once interleaved into output
/// pixels ([`crate::Epilogue`]'s order). Every sum is taken in the scalar formulas' order
/// with multiplies and adds apart (no FMA), so every ISA computes the same bits.
macro_rules! winograd_output {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:expr, zero = $zero:ident,
        load = $load:ident, store = $store:ident, set1 = $set1:ident, add = $add:ident,
        sub = $sub:ident, mul = $mul:ident, max = $max:ident, min = $min:ident,
        leaky = $leaky:ident, interleave = $interleave:ident
    ) => {
        /// The Winograd output transform of the first `n` channels of `m`, tile rows
        /// `rows`, then the epilogue, into `out` (`n` channels × the block's pixels).
        ///
        /// # Safety
        /// The CPU has the target features.
        $(#[$attr])*
        pub(crate) unsafe fn winograd_output(
            g: &$crate::conv::winograd::Geometry,
            m: $crate::conv::winograd::Products<'_>,
            n: usize,
            rows: std::ops::Range<usize>,
            e: &$crate::gemm::BlockEpilogue<'_>,
            out: &mut $crate::simd::MatMut<'_>,
        ) {
            use $crate::conv::winograd::Tile;
            // SAFETY: the CPU has the target features (this function's contract).
            unsafe {
                match g.tile {
                    Tile::F2 => winograd_output_tiles::<2, 4>(g, m, n, rows, e, out),
                    Tile::F4 => winograd_output_tiles::<4, 6>(g, m, n, rows, e, out),
                    Tile::F2K5 => winograd_output_tiles::<2, 6>(g, m, n, rows, e, out),
                }
            }
        }

        /// [`winograd_output`] for output tiles of side `M` (products of side `T`).
        ///
        /// # Safety
        /// The CPU has the target features.
        $(#[$attr])*
        unsafe fn winograd_output_tiles<const M: usize, const T: usize>(
            g: &$crate::conv::winograd::Geometry,
            m: $crate::conv::winograd::Products<'_>,
            n: usize,
            rows: std::ops::Range<usize>,
            e: &$crate::gemm::BlockEpilogue<'_>,
            out: &mut $crate::simd::MatMut<'_>,
        ) {
            const L: usize = $lanes;
            let (two, four, eight) = ($set1(2.0), $set1(4.0), $set1(8.0));
            // Row `k` of `Aᵀ` (`M × T`) applied to `x` (its first `T` vectors).
            // F(2×2, 5×5)'s two rows are F(4×4, 3×3)'s first two, but that the point at ∞
            // now adds to the last row.
            let at = |k: usize, x: &[$v; 6]| -> $v {
                match (M, T, k) {
                    (_, 6, 0) => $add($add(x[0], $add(x[1], x[2])), $add(x[3], x[4])),
                    (2, 6, _) => $add($add($sub(x[1], x[2]), $mul(two, $sub(x[3], x[4]))), x[5]),
                    (_, 6, 1) => $add($sub(x[1], x[2]), $mul(two, $sub(x[3], x[4]))),
                    (_, 6, 2) => $add($add(x[1], x[2]), $mul(four, $add(x[3], x[4]))),
                    (_, 6, _) => $add($add($sub(x[1], x[2]), $mul(eight, $sub(x[3], x[4]))), x[5]),
                    (_, _, 0) => $add(x[0], $add(x[1], x[2])),
                    _ => $sub($sub(x[1], x[2]), x[3]),
                }
            };
            let tw = g.tw;
            let oy0 = rows.start * M;
            let values = m.values;
            // Staging for one output row's vectors and their interleaved pixels, set once
            // (zeroing them per row cost a `memset` call each).
            let (mut xs, mut row) = ([0.0f32; 4 * L], [0.0f32; 4 * L]);
            let residual = !matches!(e.residual, $crate::simd::Residual::None);
            for ch in 0..n {
                let bias = $set1(e.bias[ch]);
                for (ri, ty) in rows.clone().enumerate() {
                    for tx in (0..tw).step_by(L) {
                        let t0 = ri * tw + tx;
                        // Tile `t0`'s products under `ξ`, `L` of them: lanes past the tile
                        // row hold other tiles' products (or the next row's floats), whose
                        // outputs are never stored; past the end of the products, zeros.
                        let product = |xi: usize| -> $v {
                            let from = (xi * m.stride + ch) * m.ldm + t0;
                            let rest = &values[from..];
                            if rest.len() >= L {
                                // SAFETY: `rest` holds `L` floats.
                                unsafe { $load(rest.as_ptr()) }
                            } else {
                                let mut part = [0.0f32; L];
                                part[..rest.len()].copy_from_slice(rest);
                                // SAFETY: `part` holds `L` floats.
                                unsafe { $load(part.as_ptr()) }
                            }
                        };
                        // Along y: q[i][j] = Aᵀ[i] · (m[0][j], …, m[T − 1][j]).
                        let mut q = [[$zero(); 6]; 4];
                        for j in 0..T {
                            let col: [$v; 6] =
                                std::array::from_fn(|i| if i < T { product(i * T + j) } else { $zero() });
                            for (i, qi) in q.iter_mut().enumerate().take(M) {
                                qi[j] = at(i, &col);
                            }
                        }
                        let ox = tx * M;
                        let count = (M * (tw - tx).min(L)).min(g.ow - ox);
                        for (i, qi) in q.iter().enumerate().take(M) {
                            let oy = ty * M + i;
                            if oy >= g.oh {
                                break;
                            }
                            // Along x: output column `M·t + k` of tile `t` is Aᵀ[k] · q[i].
                            let mut ys = [$zero(); 4];
                            for (k, y) in ys.iter_mut().enumerate().take(M) {
                                *y = $add(at(k, qi), bias);
                            }
                            if !residual {
                                with_vector_activation!(
                                    e.act,
                                    ($v, $zero, $set1, $max, $min, $leaky),
                                    |act| {
                                        for y in ys.iter_mut() {
                                            *y = act(*y);
                                        }
                                    }
                                );
                            }
                            for (k, &y) in ys.iter().enumerate().take(M) {
                                // SAFETY: `xs` holds `M` vectors of `L` floats.
                                unsafe { $store(xs.as_mut_ptr().add(k * L), y) };
                            }
                            let pixel = (oy - oy0) * g.ow + ox;
                            let dst = &mut out.row_mut(ch)[pixel..pixel + count];
                            if !residual && count == M * L {
                                // SAFETY: the CPU has the target features.
                                unsafe { $interleave(&xs[..M * L], M, L, dst) };
                                continue;
                            }
                            // SAFETY: as above.
                            unsafe { $interleave(&xs[..M * L], M, L, &mut row[..M * L]) };
                            let y = &row[..count];
                            match e.residual {
                                $crate::simd::Residual::None => {
                                    for (d, &y) in dst.iter_mut().zip(y) {
                                        *d = y;
                                    }
                                }
                                $crate::simd::Residual::From(r) => {
                                    let r = &r.row(ch)[pixel..pixel + count];
                                    for ((d, &y), &r) in dst.iter_mut().zip(y).zip(r) {
                                        *d = e.act.apply(y + r);
                                    }
                                }
                                // The output holds the residual: read each element, then
                                // overwrite it.
                                $crate::simd::Residual::InPlace => {
                                    for (d, &y) in dst.iter_mut().zip(y) {
                                        *d = e.act.apply(y + *d);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
}

/// Generates `winograd_input` (a [`super::WinogradInputFn`]) in the module that invokes
/// it, as [`winograd_output!`] does, with the same operations.
///
/// `V = Bᵀ d B` of input channels `channels` and tile rows `rows`, packed into the GEMMs'
/// column panels: row `ξ·panels + p` of `out` is column panel `p` of `V_ξ` (`nr` tiles per
/// channel), restricted to these channels (column `(c − channels.start)·nr + lane`). Per
/// channel, each input row of the block is split once into the `M` phases of its
/// stride-`M` windows, zero-padded (column `j` of tile `t`'s window is entry `t + j / M` of
/// phase `j mod M`), so a window column of a vector of tiles is one load. Then per vector
/// of tiles: along x (`r[i][j] = Bᵀ[j] · d[i][·]`), along y (`Bᵀ[i] · r[·][j]`), staged
/// a row of tiles per `ξ`, and copied into the panels. Every sum is taken in the scalar
/// formulas' order, with multiplies and adds apart.
macro_rules! winograd_input {
    (
        attr = { $(#[$attr:meta])* }, $v:ty, lanes = $lanes:expr, zero = $zero:ident,
        load = $load:ident, store = $store:ident, set1 = $set1:ident, add = $add:ident,
        sub = $sub:ident, mul = $mul:ident
    ) => {
        /// The Winograd input transform of `channels`, tile rows `rows`, into `out`.
        ///
        /// # Safety
        /// The CPU has the target features.
        $(#[$attr])*
        pub(crate) unsafe fn winograd_input(
            g: &$crate::conv::winograd::Geometry,
            x: &[f32],
            rows: std::ops::Range<usize>,
            channels: std::ops::Range<usize>,
            nr: usize,
            out: &mut $crate::simd::MatMut<'_>,
            work: &mut [f32],
        ) {
            use $crate::conv::winograd::Tile;
            // SAFETY: the CPU has the target features (this function's contract).
            unsafe {
                match g.tile {
                    Tile::F2 => winograd_input_tiles::<2, 4>(g, x, rows, channels, nr, out, work),
                    Tile::F4 => winograd_input_tiles::<4, 6>(g, x, rows, channels, nr, out, work),
                    Tile::F2K5 => winograd_input_tiles::<2, 6>(g, x, rows, channels, nr, out, work),
                }
            }
        }

        /// [`winograd_input`] for output tiles of side `M` (input tiles of side `T`).
        ///
        /// # Safety
        /// The CPU has the target features.
        $(#[$attr])*
        unsafe fn winograd_input_tiles<const M: usize, const T: usize>(
            g: &$crate::conv::winograd::Geometry,
            x: &[f32],
            rows: std::ops::Range<usize>,
            channels: std::ops::Range<usize>,
            nr: usize,
            out: &mut $crate::simd::MatMut<'_>,
            work: &mut [f32],
        ) {
            use $crate::conv::winograd::{input_work_len, phase_len};
            const L: usize = $lanes;
            let (two, four, five) = ($set1(2.0), $set1(4.0), $set1(5.0));
            // Row `k` of `Bᵀ` (`T × T`) applied to `x` (its first `T` vectors).
            let bt = |k: usize, x: &[$v; 6]| -> $v {
                match (T, k) {
                    (6, 0) => $add($sub($mul(four, x[0]), $mul(five, x[2])), x[4]),
                    (6, 1) => $sub($add(x[4], x[3]), $mul(four, $add(x[1], x[2]))),
                    (6, 2) => $add($sub(x[4], x[3]), $mul(four, $sub(x[1], x[2]))),
                    (6, 3) => $add($sub(x[4], x[2]), $mul(two, $sub(x[3], x[1]))),
                    (6, 4) => $sub($sub(x[4], x[2]), $mul(two, $sub(x[3], x[1]))),
                    (6, _) => $add($sub($mul(four, x[1]), $mul(five, x[3])), x[5]),
                    (_, 0) => $sub(x[0], x[2]),
                    (_, 1) => $add(x[1], x[2]),
                    (_, 2) => $sub(x[2], x[1]),
                    _ => $sub(x[1], x[3]),
                }
            };
            let tw = g.tw;
            let tiles = rows.len() * tw;
            let panels = tiles.div_ceil(nr);
            let plane = g.h * g.w;
            let plen = phase_len(tw);
            let in_rows = M * rows.len() + T - M;
            let work = &mut work[..input_work_len(g.tile, tiles, tw)];
            let (strip, work) = work.split_at_mut(M * plen);
            let (phases, stage) = work.split_at_mut(in_rows * M * plen);
            // Staged rows of tiles, one per `ξ`, a vector longer: a tile row's last vector
            // runs on into the next row's tiles (stored over later) or that padding.
            let ld = tiles + L;
            for c in channels.clone() {
                let xc = &x[c * plane..(c + 1) * plane];
                for (r, ph) in phases.chunks_exact_mut(M * plen).enumerate() {
                    let iy = (rows.start * M + r).wrapping_sub(g.py);
                    if iy >= g.h {
                        ph.fill(0.0);
                        continue;
                    }
                    // The row zero-padded (strip[k] = x[k − px]), then split into phases.
                    let n = g.w.min(strip.len() - g.px);
                    strip[..g.px].fill(0.0);
                    strip[g.px..g.px + n].copy_from_slice(&xc[iy * g.w..iy * g.w + n]);
                    strip[g.px + n..].fill(0.0);
                    for (t, q) in strip.chunks_exact(M).enumerate() {
                        for (k, &v) in q.iter().enumerate() {
                            ph[k * plen + t] = v;
                        }
                    }
                }
                for ri in 0..rows.len() {
                    for tx in (0..tw).step_by(L) {
                        // Along x: r[i][j] = Bᵀ[j] · (window row i of each tile).
                        let mut r = [[$zero(); 6]; 6];
                        for (i, ri_row) in r.iter_mut().enumerate().take(T) {
                            let ph = &phases[(M * ri + i) * M * plen..];
                            let d: [$v; 6] = std::array::from_fn(|j| {
                                if j < T {
                                    let from = (j % M) * plen + tx + j / M;
                                    let w = &ph[from..from + L];
                                    // SAFETY: `w` holds `L` floats.
                                    unsafe { $load(w.as_ptr()) }
                                } else {
                                    $zero()
                                }
                            });
                            for (j, rj) in ri_row.iter_mut().enumerate().take(T) {
                                *rj = bt(j, &d);
                            }
                        }
                        // Along y, staged by `ξ = i·T + j`.
                        let t0 = ri * tw + tx;
                        for j in 0..T {
                            let col: [$v; 6] =
                                std::array::from_fn(|i| if i < T { r[i][j] } else { $zero() });
                            for i in 0..T {
                                let from = (i * T + j) * ld + t0;
                                let dst = &mut stage[from..from + L];
                                // SAFETY: `dst` holds `L` floats.
                                unsafe { $store(dst.as_mut_ptr(), bt(i, &col)) };
                            }
                        }
                    }
                }
                // Into the panels.
                let lane0 = (c - channels.start) * nr;
                let full = tiles / nr;
                for xi in 0..T * T {
                    let vals = &stage[xi * ld..xi * ld + tiles];
                    out.copy_rows(xi * panels..xi * panels + full, lane0, vals, nr, nr);
                    let tail = tiles - full * nr;
                    if tail > 0 {
                        let last = out.row_mut(xi * panels + full);
                        last[lane0..lane0 + tail].copy_from_slice(&vals[full * nr..]);
                        // Lanes past the last tile are zero (computed, then dropped).
                        last[lane0 + tail..lane0 + nr].fill(0.0);
                    }
                }
            }
        }
    };
}
