//! Run-time ISA dispatch: one table of micro-kernels per instruction set, chosen once.
//!
//! As in MLAS's platform table or XNNPACK's configs, call sites never test CPU features:
//! they ask [`Isa::kernels`] for a [`Kernels`] table and call through it. One generic
//! x86-64 binary uses AVX-512F where the CPU has it, otherwise AVX2 + FMA, otherwise the
//! portable path; an aarch64 build uses NEON.
//!
//! # Knobs
//! - `TAOPIPE_ISA=avx512|avx2|neon|portable` forces a path for the whole process (a path
//!   the CPU lacks is an error naming it, reported when the first model is built).
//! - Otherwise the best path the CPU has ([`Isa::detect`]).
//!
//! Layers take their ISA when they are built (weights are packed for its micro-kernel), so
//! tests can build the same layer for every ISA in one process ([`Isa::available`]).
//!
//! # Unsafe
//! The micro-kernels are `unsafe fn`s over raw pointers (SIMD loads and stores); they live
//! in this folder only, behind the safe wrappers of this module, which check every slice
//! length and tile size first. [`MatMut`] (in `mat.rs`) is the one safe view of a strided
//! output that they write.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::activation::Activation;
use crate::conv::depthwise::{Blocked, Channels};
use crate::conv::lanes::Call as LanesCall;
use crate::conv::winograd::{Geometry, Products};
use crate::gemm::BlockEpilogue;

#[macro_use]
mod winograd;
#[macro_use]
mod template;
mod mat;
#[cfg(target_arch = "aarch64")]
mod neon;
mod portable;
mod runs;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Hints that the cache line at `p` will be read soon, into L2 (`gemm_in_place`'s docs
/// say why not L1). A hint never faults, so `p` may point anywhere. A no-op off x86-64:
/// NEON has no stable prefetch intrinsic.
#[inline(always)]
pub(crate) fn prefetch_l2(p: *const f32) {
    #[cfg(target_arch = "x86_64")]
    x86::prefetch_l2(p);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

pub use mat::{MatMut, MatRef};
pub(crate) use runs::{copy_runs, zero_runs};

/// An instruction-set path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// Plain Rust, no intrinsics: any CPU, and what Miri runs.
    Portable,
    /// x86-64 AVX2 with FMA (Haswell, Zen and later).
    Avx2,
    /// x86-64 AVX-512F (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4 and later).
    Avx512,
    /// aarch64 Advanced SIMD (every ARMv8-A core: Cortex-A53/A57/A72, Carmel, Apple).
    Neon,
}

/// An unknown or unusable `TAOPIPE_ISA` value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IsaError {
    /// Not one of the names.
    #[error("TAOPIPE_ISA={0}: unknown ISA; choose one of avx512, avx2, neon, portable")]
    Unknown(String),
    /// A path this CPU (or this build's architecture) cannot run.
    #[error("TAOPIPE_ISA={isa}: this CPU cannot run it (it has: {have})")]
    Unsupported {
        /// The path asked for.
        isa: Isa,
        /// The paths it has, comma-separated.
        have: String,
    },
}

impl Isa {
    /// Every path, fastest first.
    pub const ALL: [Isa; 4] = [Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Portable];

    /// The name `TAOPIPE_ISA` takes and reports show.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }

    /// Whether this CPU can run the path.
    pub fn is_supported(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            // AVX2 too: the AVX-512 tables run AVX2's depthwise kernel (`x86::AVX512`).
            Isa::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("fma")
                    && Isa::Avx2.is_supported()
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The paths this CPU can run, fastest first (always ends with [`Isa::Portable`]).
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.is_supported()).collect()
    }

    /// The fastest path this CPU has.
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .find(|i| i.is_supported())
            .unwrap_or(Isa::Portable)
    }

    /// The process-wide path: `TAOPIPE_ISA` if set, else [`Isa::detect`]. Read once.
    ///
    /// # Errors
    /// A `TAOPIPE_ISA` that names no path, or one this CPU cannot run.
    ///
    /// ```
    /// let isa = taopipe_nets::Isa::current()?;
    /// assert!(isa.is_supported());
    /// println!("kernels: {isa}");
    /// # Ok::<(), taopipe_nets::IsaError>(())
    /// ```
    pub fn current() -> Result<Isa, IsaError> {
        static CURRENT: OnceLock<Result<Isa, IsaError>> = OnceLock::new();
        CURRENT
            .get_or_init(|| match std::env::var("TAOPIPE_ISA") {
                Ok(v) if !v.is_empty() => v.parse::<Isa>()?.supported(),
                _ => Ok(Isa::detect()),
            })
            .clone()
    }

    /// This path if this CPU can run it, else an error naming the paths it can run.
    ///
    /// # Errors
    /// [`IsaError::Unsupported`].
    ///
    /// ```
    /// use taopipe_nets::Isa;
    /// assert_eq!(Isa::Portable.supported()?, Isa::Portable);
    /// # Ok::<(), taopipe_nets::IsaError>(())
    /// ```
    pub fn supported(self) -> Result<Isa, IsaError> {
        if self.is_supported() {
            return Ok(self);
        }
        Err(IsaError::Unsupported {
            isa: self,
            have: Isa::available()
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// The micro-kernel table of this path.
    ///
    /// # Panics
    /// If this CPU cannot run the path ([`Isa::is_supported`]): calling its kernels would
    /// be undefined behaviour, so this is checked here, once per layer build.
    pub fn kernels(self) -> &'static Kernels {
        assert!(
            self.is_supported(),
            "ISA {self} is not supported by this CPU"
        );
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => &x86::AVX2,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => &x86::AVX512,
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => &neon::NEON,
            _ => &portable::PORTABLE,
        }
    }

    /// The micro-kernel table of this path for GEMMs that stream their weights past each
    /// column panel (the direct path's longer reductions, `conv/direct.rs` says which): a
    /// wider, shorter tile than [`Isa::kernels`]' on AVX-512, the same table elsewhere.
    ///
    /// # Panics
    /// As [`Isa::kernels`].
    pub fn wide_kernels(self) -> &'static Kernels {
        let kernels = self.kernels();
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => &x86::AVX512_WIDE,
            _ => kernels,
        }
    }
}

impl Kernels {
    /// Every GEMM tile shape built for `isa` (its two tables first: [`Isa::kernels`], then
    /// [`Isa::wide_kernels`] where it differs), for benchmarks that compare them. Empty
    /// when this CPU cannot run `isa`.
    pub fn variants(isa: Isa) -> Vec<&'static Kernels> {
        if !isa.is_supported() {
            return Vec::new();
        }
        let (main, wide) = (isa.kernels(), isa.wide_kernels());
        let first = std::iter::once(main).chain((!std::ptr::eq(main, wide)).then_some(wide));
        #[cfg(target_arch = "x86_64")]
        let first = first.chain(x86::VARIANTS.iter().filter(move |k| k.isa == isa));
        first.collect()
    }
}

impl fmt::Display for Kernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}x{}", self.isa, self.mr, self.nr)
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Isa {
    type Err = IsaError;

    fn from_str(s: &str) -> Result<Isa, IsaError> {
        Isa::ALL
            .into_iter()
            .find(|i| i.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| IsaError::Unknown(s.to_string()))
    }
}

/// The raw micro-kernel: for `rows` rows of packed A (panels of `MR`, `a_step` floats
/// apart, the last one possibly short), `C[rows × NR] (=|+=) A·B` over `kc`, then the
/// epilogue. Looping over the panels inside the kernel keeps the call overhead off short
/// reductions (`kc` = 27 for a 3-channel 3×3 conv).
///
/// # Safety
/// The CPU runs the kernel's ISA; panel `p < ceil(rows / MR)` of `a` holds `kc·MR` floats
/// at `p·a_step`, except a lone panel (`rows < MR`), whose last `k` step may end after its
/// `rows` rows (`(kc − 1)·MR + rows` floats); `b` holds `kc` steps of `NR` floats, `ldb`
/// apart (`NR` for a packed panel); `c` addresses `rows` rows of `NR` floats at stride
/// `ldc`, writable and aliasing nothing else but the residual; `bias` is null or holds
/// `rows` floats; `residual` is null or addresses `rows × NR` at `ldr`, either apart from
/// `c` or `c` itself (same pointer and stride: every element is read before its store). A narrow kernel
/// ([`Kernels::gemm_narrow`]) reads and writes only the first `lanes` columns of `c` and of
/// the residual.
pub(crate) type GemmFn = unsafe fn(&RawTile);

/// The raw lane kernel of a few columns (`gemm_cols` in the template): [`GemmFn`]'s
/// contract for the columns `0..cols` of `c`, B and the residual, and each panel's last
/// `k` step readable for [`Kernels::lane_span`] floats.
pub(crate) type GemmColsFn = unsafe fn(&RawTile, cols: usize);

/// The raw row-dot kernel of [`Kernels::dot_rows`].
///
/// # Safety
/// The CPU runs the kernel's ISA; `w` holds `rows · n` floats, `x` `n`, `y` `rows`.
pub(crate) type DotRowsFn =
    unsafe fn(w: *const f32, n: usize, x: *const f32, rows: usize, y: *mut f32);

/// The raw FMA-throughput probe: runs `iters` rounds of independent FMA chains and returns
/// the floating-point operations done (and a value that keeps them alive).
///
/// # Safety
/// The CPU runs the kernel's ISA.
pub(crate) type FmaProbeFn = unsafe fn(iters: u64) -> (u64, f32);

/// The Winograd input transform (`winograd_input!` in `simd/winograd.rs`), compiled for the
/// table's ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA.
pub(crate) type WinogradInputFn =
    unsafe fn(&Geometry, &[f32], Range<usize>, Range<usize>, usize, &mut MatMut<'_>, &mut [f32]);

/// The Winograd output transform (`winograd_output!` in `simd/winograd.rs`), compiled for
/// the table's ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA.
pub(crate) type WinogradOutputFn =
    unsafe fn(&Geometry, Products<'_>, usize, Range<usize>, &BlockEpilogue<'_>, &mut MatMut<'_>);

/// The 2×2/2 max pool of one plane ([`crate::pool::max_2x2`]), compiled for the table's
/// ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA.
pub(crate) type MaxPool2x2Fn = unsafe fn(&[f32], usize, &mut [f32], usize);

/// The 3×3 stride-1 max pool of one plane padded by one ([`crate::pool::max_3x3_s1`]),
/// `(plane, w, dst, rows)`, compiled for the table's ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA.
pub(crate) type MaxPool3x3S1Fn = unsafe fn(&[f32], usize, &mut [f32], &mut [f32]);

/// Floats of scratch past a 3×3/2 pool's row of column maxima ([`MaxPool3x3Fn`]): room for
/// a kernel to store the row's last vector whole, its lanes past the row set to −∞ (the
/// padding's value), instead of by a masked store, which AMD's cores run as microcode.
pub(crate) const COLUMN_SLACK: usize = 16;

/// The 3×3 stride-2 max pool of one plane, `(plane, w, (pad, right), dst, ow, column)`:
/// `plane` holds whole rows `w` wide, `dst` whole output rows `ow` wide, and `column` at
/// least `pad + w + right` floats of scratch: the row of column maxima, `pad` columns of
/// padding before it and `right` after (a ceil-mode pool's last window may reach past the
/// padding before), then [`COLUMN_SLACK`] more. Its bits are [`crate::pool`]'s separable
/// route's.
///
/// # Safety
/// The CPU runs the kernel's ISA; the slices are as [`Kernels::max_3x3_s2`] checks.
pub(crate) type MaxPool3x3Fn =
    unsafe fn(&[f32], usize, (usize, usize), &mut [f32], usize, &mut [f32]);

/// The depthwise convolution of a run of channels ([`crate::conv::depthwise::channels`]),
/// `(channels, split, wide, dst)`, compiled for the table's ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA; the channels and the slices are as
/// [`Kernels::depthwise`] checks them.
pub(crate) type DepthwiseFn = unsafe fn(&Channels<'_>, &mut [f32], &mut [f32], &mut [f32]);

/// The channel-blocked depthwise convolution of a run of channels
/// ([`crate::conv::depthwise`]'s "Channel blocks"), `(channels, work, dst)`, compiled for the
/// table's ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA; the channels and the slices are as
/// [`Kernels::depthwise_blocked`] checks them.
pub(crate) type DepthwiseBlockedFn = unsafe fn(&Blocked<'_>, &mut [f32], &mut [f32]);

/// The channel-lanes conv kernel of [`Kernels::lanes_conv`], compiled for the table's ISA.
///
/// # Safety
/// The CPU runs the kernel's ISA; the call and the output are as [`Kernels::lanes_conv`]
/// checks them.
pub(crate) type LanesConvFn = unsafe fn(&LanesCall<'_>, &mut MatMut<'_>);

/// Arguments of one micro-kernel call (see [`GemmFn`]).
#[derive(Debug)]
pub(crate) struct RawTile {
    pub(crate) kc: usize,
    pub(crate) rows: usize,
    pub(crate) a: *const f32,
    pub(crate) a_step: usize,
    pub(crate) b: *const f32,
    /// Floats from one `k` step of B to the next: `NR` in a packed panel, the plane for an
    /// input read in place ([`crate::gemm::BLayout::Rows`]).
    pub(crate) ldb: usize,
    /// Floats from `b` to the next panel (read by a kernel with extra columns only).
    pub(crate) b_next: usize,
    pub(crate) c: *mut f32,
    pub(crate) ldc: usize,
    /// Add to what `c` holds (a later `kc` block) instead of overwriting it.
    pub(crate) accumulate: bool,
    /// Null: no epilogue (not the last `kc` block).
    pub(crate) bias: *const f32,
    pub(crate) residual: *const f32,
    pub(crate) ldr: usize,
    /// Applied after the bias and the residual; like them, only where `bias` is not null.
    pub(crate) act: Activation,
}

impl RawTile {
    /// The arguments for `c`'s columns from `col` on (`b` already starts at that column,
    /// its `k` steps `ldb` floats apart), with `c`'s rows.
    #[allow(clippy::too_many_arguments)]
    fn new(
        kc: usize,
        a: &[f32],
        a_step: usize,
        b: &[f32],
        ldb: usize,
        c: &mut MatMut<'_>,
        col: usize,
        accumulate: bool,
        epilogue: Option<&Epilogue<'_>>,
    ) -> RawTile {
        let c_ptr = c.as_mut_ptr().wrapping_add(col);
        // An in-place residual is `c` itself: the same pointer, so the kernel's reads of it
        // and its stores to `c` go through one provenance.
        let (residual, ldr) = match epilogue.map_or(Residual::None, |e| e.residual) {
            Residual::None => (std::ptr::null(), 0),
            Residual::From(r) => (r.as_ptr().wrapping_add(col), r.ld()),
            Residual::InPlace => (c_ptr.cast_const(), c.ld()),
        };
        RawTile {
            kc,
            rows: c.rows(),
            a: a.as_ptr(),
            a_step,
            b: b.as_ptr(),
            ldb,
            b_next: 0,
            c: c_ptr,
            ldc: c.ld(),
            accumulate,
            bias: epilogue.map_or(std::ptr::null(), |e| e.bias.as_ptr()),
            residual,
            ldr,
            act: epilogue.map_or(Activation::None, |e| e.act),
        }
    }
}

/// One ISA's micro-kernels and their tile shapes.
#[derive(Debug)]
pub struct Kernels {
    /// The path.
    pub isa: Isa,
    /// Rows of the GEMM micro-tile (output channels).
    pub mr: usize,
    /// Columns of the GEMM micro-tile (pixels), a multiple of the vector width.
    pub nr: usize,
    /// Floats per vector register.
    pub lanes: usize,
    pub(crate) gemm: GemmFn,
    /// [`Kernels::gemm`]'s kernels that also compute the first `x + 1` columns of the next
    /// panel, entry `x` ([`Kernels::gemm_extra`]): as many as leave the extra accumulators
    /// in registers. `None` where `MR` rows do not fit one vector, or no register is left.
    pub(crate) gemm_extra: Option<&'static [GemmFn]>,
    /// The kernel of a panel's first `lanes` columns, for panels about that short (a
    /// 28×28 plane's 784 pixels end in a panel of 16 on AVX-512): half the FMAs of
    /// [`Kernels::gemm`]'s kernel where the tile is two vectors wide. `None` where the
    /// tile is one vector.
    pub(crate) gemm_narrow: Option<GemmFn>,
    /// The kernel of a panel's last few columns with the rows in the lanes
    /// ([`Kernels::gemm`] uses it for at most `lanes / 2` columns past a vector). `None`
    /// on the portable path.
    pub(crate) gemm_cols: Option<GemmColsFn>,
    pub(crate) dot_rows: DotRowsFn,
    pub(crate) fma_probe: FmaProbeFn,
    pub(crate) winograd_input: WinogradInputFn,
    pub(crate) winograd_output: WinogradOutputFn,
    pub(crate) max_2x2: MaxPool2x2Fn,
    pub(crate) max_3x3_s1: MaxPool3x3S1Fn,
    /// The 3×3 stride-2 max pool, where the ISA has one of its own.
    pub(crate) max_3x3_s2: Option<MaxPool3x3Fn>,
    /// The depthwise convolution of a run of channels, plane by plane.
    pub(crate) depthwise: DepthwiseFn,
    /// The depthwise convolution of a run of channels, in blocks of
    /// [`Kernels::depthwise_lanes`] channels.
    pub(crate) depthwise_blocked: DepthwiseBlockedFn,
    /// Channels a vector of the channel-blocked depthwise kernel holds.
    pub depthwise_lanes: usize,
    /// The channel-lanes conv of a run of pixels ([`crate::conv::lanes`]).
    pub(crate) lanes_conv: LanesConvFn,
    /// Output channels of a channel-lanes tile: its weight panels' width.
    pub lanes_oc: usize,
}

/// The last-`kc`-block epilogue, applied in registers before the store: per row
/// `v = acc + bias[row]`, then `v += residual` if any, then `v = act(v)`. The order is
/// fixed, and every ISA computes [`Activation::apply`]'s bits, so that a fused layer gives
/// the bits of the unfused chain (conv with bias, then residual add, then the activation
/// layer). The kernels match on `act` once per tile, not per element.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue<'a> {
    /// One value per row of the tile.
    pub bias: &'a [f32],
    /// What to add (ResNet's shortcut), if anything.
    pub residual: Residual<'a>,
    /// The activation (ReLU, clip, leaky ReLU), if any.
    pub act: Activation,
}

/// Where a fused residual add finds its operand.
///
/// A residual that sits in a buffer of its own doubles the cache lines each tile's store
/// touches: on ResNet50's 56×56 `64 → 256` conv the fused add cost 27% (2.3 ms a frame,
/// `docs/kernel-log.md`, "Where ResNet50 loses now"). When the conv is its shortcut's
/// last reader, the memory plan gives the conv the shortcut's buffer and the add reads
/// the residual from the output itself ([`Residual::InPlace`]).
#[derive(Clone, Copy, Debug, Default)]
pub enum Residual<'a> {
    /// No residual add.
    #[default]
    None,
    /// Add this matrix, at least as big as the output.
    From(MatRef<'a>),
    /// Add what the output holds: each element is read just before it is overwritten, so
    /// nothing may write the output earlier (no partial sums of an earlier `kc` block).
    InPlace,
}

impl<'a> Residual<'a> {
    /// Whether there is an add.
    pub fn is_some(&self) -> bool {
        !matches!(self, Residual::None)
    }

    /// The residual of the `rows × cols` block at `(r, c)` of the output.
    pub fn sub(&self, r: usize, c: usize, rows: usize, cols: usize) -> Residual<'a> {
        match self {
            Residual::From(m) => Residual::From(m.sub(r, c, rows, cols)),
            other => *other,
        }
    }
}

/// Widest vector of any table, in floats.
pub(crate) const MAX_LANES: usize = 16;

/// Largest `MR · NR` of any table (the partial-tile buffer).
const MAX_TILE: usize = 16 * 64;

impl Kernels {
    /// `C (=|+=) A·B` for one column panel: `a` holds packed `MR`-row panels of the
    /// reduction (`kc × MR` each, k-major, `a_step` floats apart), `b` a packed `kc × NR`
    /// panel, `c` any number of rows by at most `NR` columns; the epilogue (last `kc`
    /// block only) as [`Epilogue`]. Columns short of `NR`: up to half a vector past the
    /// last whole vector by the lane kernel (rows in the lanes), exactly one vector by the
    /// narrow kernel, both in place; other widths on a local copy, with the narrow kernel
    /// where they fit its vector. Every element sees the same operations (one FMA chain
    /// over `k`, then the epilogue) whatever the tile's size and kernel.
    ///
    /// # Panics
    /// If a panel is too short, `c` is wider than `NR`, the epilogue's bias or residual
    /// do not cover `c`, or the residual is in place while `accumulate` is set.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(
        &self,
        kc: usize,
        a: &[f32],
        a_step: usize,
        b: &[f32],
        c: &mut MatMut<'_>,
        accumulate: bool,
        epilogue: Option<&Epilogue<'_>>,
    ) {
        let (mr, nr) = (self.mr, self.nr);
        let (rows, cols) = (c.rows(), c.cols());
        if rows == 0 || cols == 0 {
            return;
        }
        self.check(kc, a, a_step, c, accumulate, epilogue);
        assert!(b.len() >= kc * nr, "B panel: {} < {kc}×{nr}", b.len());
        assert!(cols <= nr, "tile {rows}×{cols} wider than {nr}");
        let panels = rows.div_ceil(mr);
        if cols == nr {
            // SAFETY: the asserts above and `check` checked the panels' extents, that `c`
            // (a `MatMut`: exclusive and in bounds by construction) is `rows × NR`, that
            // `bias` has `rows` values and that the residual (a `MatRef`, in bounds, or `c`
            // itself) covers it.
            unsafe { self.run(self.gemm, kc, a, a_step, b, c, accumulate, epilogue) };
            return;
        }
        // Short columns: the few past the last whole vector (all of them, or those after
        // the narrow kernel's) by the lane kernel, in place; then one vector of columns by
        // the narrow kernel, in place; any other width on a local copy.
        let room = kc == 0 || a.len() >= (panels - 1) * a_step + (kc - 1) * mr + self.lane_span();
        let tail = match self.gemm_narrow {
            Some(_) if cols > self.lanes => cols - self.lanes,
            _ => cols,
        };
        let lane_cols = if self.gemm_cols.is_some() && room && tail <= self.lanes / 2 {
            tail
        } else {
            0
        };
        let cols = cols - lane_cols;
        if let (Some(kernel), true) = (self.gemm_cols, lane_cols > 0) {
            // An empty reduction (`kc = 0`) may come with an empty B, which it never reads.
            let b = &b[cols.min(b.len())..];
            let raw = RawTile::new(kc, a, a_step, b, self.nr, c, cols, accumulate, epilogue);
            // SAFETY: as for the tiles below, for columns `cols..cols + lane_cols` of `c`,
            // B's panel and the residual (all inside the `≤ NR` columns checked); `a`
            // holds `lane_span` floats from the last panel's last `k` step (checked).
            unsafe { kernel(&raw, lane_cols) };
            if cols == 0 {
                return;
            }
        }
        if let (Some(narrow), true) = (self.gemm_narrow, cols == self.lanes) {
            // SAFETY: as for the whole tile above; the narrow kernel reads and writes the
            // first `lanes` columns of `c` and of the residual, which has that many.
            unsafe { self.run(narrow, kc, a, a_step, b, c, accumulate, epilogue) };
            return;
        }
        let narrow = self.gemm_narrow.filter(|_| cols < self.lanes);
        // Other short columns: each panel on a local MR × NR copy.
        let mut tile = [0.0f32; MAX_TILE];
        let mut res = [0.0f32; MAX_TILE];
        for p in 0..panels {
            let r0 = p * mr;
            let h = mr.min(rows - r0);
            let tile = &mut tile[..mr * nr];
            if accumulate {
                for i in 0..h {
                    tile[i * nr..i * nr + cols].copy_from_slice(&c.row(r0 + i)[..cols]);
                }
            }
            let residual = epilogue.map_or(Residual::None, |e| e.residual);
            if residual.is_some() {
                for i in 0..h {
                    let row = match residual {
                        Residual::From(r) => r.row(r0 + i),
                        _ => c.row(r0 + i), // in place: C holds it
                    };
                    res[i * nr..i * nr + cols].copy_from_slice(&row[..cols]);
                }
            }
            let e = epilogue.map(|e| Epilogue {
                bias: &e.bias[r0..r0 + h],
                residual: if e.residual.is_some() {
                    Residual::From(MatRef::from_slice(&res[..mr * nr], nr, h, nr))
                } else {
                    Residual::None
                },
                act: e.act,
            });
            let mut local = MatMut::from_slice(tile, nr, h, nr);
            let a = &a[p * a_step..];
            // SAFETY: as above, for the local `h × NR` tile and residual copy; panel `p`
            // of `a` is the first of `a[p·a_step..]`.
            unsafe {
                let kernel = narrow.unwrap_or(self.gemm);
                self.run(kernel, kc, a, a_step, b, &mut local, accumulate, e.as_ref());
            }
            for i in 0..h {
                c.row_mut(r0 + i)[..cols].copy_from_slice(&local.row(i)[..cols]);
            }
        }
    }

    /// [`Kernels::gemm`] for a whole panel and the first `c.cols() − NR` columns (1 to
    /// [`Kernels::extra_cols`]) of the panel `b_next` floats after it in `b`, in one pass over
    /// `a`: the extra columns with the rows in the lanes. Their elements see the
    /// operations they would in a panel of their own, so the bits are the same.
    ///
    /// # Panics
    /// As [`Kernels::gemm`]; also if the table has no such kernel
    /// ([`Kernels::extra_cols`] is 0), if `c` is not `NR` plus 1 to that many columns
    /// wide, or if `a` lacks the lane span after its last panel's last `k` step or `b`
    /// the next panel's columns.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_extra(
        &self,
        kc: usize,
        a: &[f32],
        a_step: usize,
        b: &[f32],
        b_next: usize,
        c: &mut MatMut<'_>,
        accumulate: bool,
        epilogue: Option<&Epilogue<'_>>,
    ) {
        let (mr, nr) = (self.mr, self.nr);
        let (rows, cols) = (c.rows(), c.cols());
        let kernels = self.gemm_extra.expect("no kernel with extra columns");
        assert!(
            (nr + 1..=nr + kernels.len()).contains(&cols),
            "{cols} columns: not {nr} and 1 to {} more",
            kernels.len()
        );
        if rows == 0 {
            return;
        }
        self.check(kc, a, a_step, c, accumulate, epilogue);
        let last = (rows.div_ceil(mr) - 1) * a_step;
        assert!(
            kc == 0 || a.len() >= last + (kc - 1) * mr + self.lane_span(),
            "A: {} floats, no lane span after its last panel",
            a.len()
        );
        assert!(
            b_next >= kc * nr && b.len() >= b_next + kc.saturating_sub(1) * nr + cols - nr,
            "B: {} floats for two panels {b_next} apart",
            b.len()
        );
        let mut raw = RawTile::new(kc, a, a_step, b, self.nr, c, 0, accumulate, epilogue);
        raw.b_next = b_next;
        // SAFETY: `Isa::kernels` checked the CPU runs this table's ISA; the asserts above
        // and `check`, the rest of the contract: A's panels with their lane span, both
        // panels of B, `c` (a `MatMut`: exclusive and in bounds) `rows × cols`, the bias
        // and the residual covering it.
        unsafe { kernels[cols - nr - 1](&raw) };
    }

    /// [`Kernels::gemm`] for `c.cols() / NR` whole column panels, B's panel `q` at `q ·
    /// b_step` and its `k` steps `ldb` floats apart (`NR` where B is packed; an input read
    /// in place has its panels `NR` apart and its steps a plane apart): the checks and
    /// slicing once, then the kernel panel by panel. The GEMM's
    /// row-panel order (reductions up to `STORE_BOUND_K`) made a call per tile, and short
    /// reductions lost to it: one 12×32 tile over 64 ran at 74–76% of the FMA peak through
    /// [`Kernels::gemm`] against 83–87% for a bare loop of the same FMAs (operands in L1, a
    /// scratch benchmark; 2-core AVX-512 Xeon VM). With this call VGG16's `conv1_1` (a
    /// reduction of 27) went from 1.50 and 1.50 ms to 1.37 and 1.41 at width 1 (`cargo
    /// bench -p taopipe-nets --bench bench_main -- "conv/w1/vgg.conv1_1$"`, two rounds
    /// taking turns with the build before); the layers over 64 to 192 and whole VGG16 and
    /// ResNet50 frames measured level within this VM's noise.
    ///
    /// # Panics
    /// As [`Kernels::gemm`]; also if `c`'s columns are not whole panels, or `b` lacks a
    /// panel.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_panels(
        &self,
        kc: usize,
        a: &[f32],
        a_step: usize,
        b: &[f32],
        b_step: usize,
        ldb: usize,
        c: &mut MatMut<'_>,
        accumulate: bool,
        epilogue: Option<&Epilogue<'_>>,
    ) {
        let (nr, cols) = (self.nr, c.cols());
        assert!(
            cols.is_multiple_of(nr),
            "{cols} columns: not whole panels of {nr}"
        );
        let panels = cols / nr;
        if c.rows() == 0 || panels == 0 {
            return;
        }
        self.check(kc, a, a_step, c, accumulate, epilogue);
        let packed = ldb == nr && b_step >= kc * nr;
        let rows_apart = b_step == nr && ldb >= cols;
        // The last panel's last step ends there (an empty reduction reads nothing).
        let end = kc
            .checked_sub(1)
            .map_or(0, |k| (panels - 1) * b_step + k * ldb + nr);
        assert!(
            (packed || rows_apart) && b.len() >= end,
            "B: {} floats for {panels} panels {b_step} apart, steps {ldb} apart",
            b.len()
        );
        let first = RawTile::new(kc, a, a_step, b, ldb, c, 0, accumulate, epilogue);
        for q in 0..panels {
            let raw = RawTile {
                b: first.b.wrapping_add(q * b_step),
                c: first.c.wrapping_add(q * nr),
                residual: if first.residual.is_null() {
                    first.residual
                } else {
                    first.residual.wrapping_add(q * nr)
                },
                ..first
            };
            // SAFETY: as [`Kernels::gemm`]'s whole-panel call, for columns `q·NR..(q +
            // 1)·NR` of `c` (and of the residual, which `check` found as wide as `c`, or
            // `c` itself) and B's panel at `q·b_step`, whose `kc` steps of `NR` floats
            // `ldb` apart the assert above found in `b`.
            unsafe { (self.gemm)(&raw) };
        }
    }

    /// The most columns past a whole panel that [`Kernels::gemm_extra`] takes (0: none).
    pub fn extra_cols(&self) -> usize {
        self.gemm_extra.map_or(0, <[GemmFn]>::len)
    }

    /// The checks every GEMM entry makes: `a`'s panels cover `c`'s rows, and the
    /// epilogue covers `c`.
    #[allow(clippy::too_many_arguments)]
    fn check(
        &self,
        kc: usize,
        a: &[f32],
        a_step: usize,
        c: &MatMut<'_>,
        accumulate: bool,
        epilogue: Option<&Epilogue<'_>>,
    ) {
        let (mr, rows, cols) = (self.mr, c.rows(), c.cols());
        let panels = rows.div_ceil(mr);
        assert!(
            a_step >= kc * mr,
            "A panels overlap: step {a_step} < {kc}×{mr}"
        );
        // The first panel may be entered at row `mr − lead` (a row range starting inside
        // a panel): then it has `lead < mr` rows and its last k step ends `mr − lead` early.
        let need = match (kc, panels) {
            (0, _) => 0,
            (_, 1) => (kc - 1) * mr + rows,
            _ => (panels - 1) * a_step + kc * mr,
        };
        assert!(
            a.len() >= need,
            "A: {} floats for {rows} rows in panels of {kc}×{mr}",
            a.len()
        );
        if let Some(e) = epilogue {
            assert!(e.bias.len() >= rows, "bias: {} < {rows}", e.bias.len());
            match &e.residual {
                Residual::From(r) => assert!(
                    r.rows() >= rows && r.cols() >= cols,
                    "residual smaller than tile"
                ),
                Residual::InPlace => assert!(
                    !accumulate,
                    "an in-place residual under partial sums: C no longer holds it"
                ),
                Residual::None => {}
            }
        }
    }

    /// Columns the narrow kernel computes in place (one vector), if the table has one.
    pub(crate) fn narrow_cols(&self) -> Option<usize> {
        self.gemm_narrow.map(|_| self.lanes)
    }

    /// Floats the lane kernel reads from the start of a panel's `k` step: whole vectors
    /// of `lanes` rows, past `MR` where it is not a multiple of `lanes`.
    pub(crate) fn lane_span(&self) -> usize {
        self.mr.div_ceil(self.lanes) * self.lanes
    }

    /// Calls `kernel` (this table's [`Kernels::gemm`] or `gemm_narrow`) on `c`.
    ///
    /// # Safety
    /// The [`GemmFn`] contract for `c.rows()` rows: `a`, `b`, the bias and the residual
    /// cover them, and `c` has `NR` columns (the first `lanes` for the narrow kernel).
    #[allow(clippy::too_many_arguments)]
    unsafe fn run(
        &self,
        kernel: GemmFn,
        kc: usize,
        a: &[f32],
        a_step: usize,
        b: &[f32],
        c: &mut MatMut<'_>,
        accumulate: bool,
        epilogue: Option<&Epilogue<'_>>,
    ) {
        let raw = RawTile::new(kc, a, a_step, b, self.nr, c, 0, accumulate, epilogue);
        // SAFETY: `Isa::kernels` checked the CPU runs this table's ISA; the caller, the
        // rest of the contract.
        unsafe { kernel(&raw) };
    }

    /// `y[r] = Σ_j w[r·n + j] · x[j]` for `r < y.len()`, `n = x.len()`: the FC layer's
    /// matrix-vector product. Each row's sum is a fixed function of `n`, so it does not
    /// depend on which rows are computed together.
    ///
    /// # Panics
    /// If `w` holds fewer than `y.len() · x.len()` values.
    pub fn dot_rows(&self, w: &[f32], x: &[f32], y: &mut [f32]) {
        let n = x.len();
        assert!(
            w.len() >= y.len() * n,
            "weights: {} < {}×{n}",
            w.len(),
            y.len()
        );
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); lengths checked above.
        unsafe { (self.dot_rows)(w.as_ptr(), n, x.as_ptr(), y.len(), y.as_mut_ptr()) }
    }

    /// The Winograd input transform of tile rows `rows` and input channels `channels`
    /// (`winograd_input!`), compiled for this table's ISA.
    pub(crate) fn winograd_input(
        &self,
        g: &Geometry,
        x: &[f32],
        rows: Range<usize>,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        work: &mut [f32],
    ) {
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); the function loads and
        // stores vectors only from slices it has cut to a vector's length.
        unsafe { (self.winograd_input)(g, x, rows, channels, self.nr, out, work) }
    }

    /// The Winograd output transform of the first `n` channels of `m` (`winograd_output!`),
    /// compiled for this table's ISA.
    pub(crate) fn winograd_output(
        &self,
        g: &Geometry,
        m: Products<'_>,
        n: usize,
        rows: Range<usize>,
        e: &BlockEpilogue<'_>,
        out: &mut MatMut<'_>,
    ) {
        // SAFETY: as `winograd_input`.
        unsafe { (self.winograd_output)(g, m, n, rows, e, out) }
    }

    /// The 2×2/2 max pool of one unpadded plane (see [`crate::pool::max_2x2`]), compiled
    /// for this table's ISA.
    pub(crate) fn max_2x2(&self, plane: &[f32], w: usize, dst: &mut [f32], ow: usize) {
        // SAFETY: as `winograd_input`.
        unsafe { (self.max_2x2)(plane, w, dst, ow) }
    }

    /// The 3×3 stride-1 max pool of a plane `w` wide padded by one on every side into
    /// `dst`, as large (see [`crate::pool::max_3x3_s1`]), compiled for this table's ISA;
    /// `rows` is scratch of at least the plane's length.
    ///
    /// # Panics
    /// On sizes that do not match (caller bugs).
    pub(crate) fn max_3x3_s1(&self, plane: &[f32], w: usize, dst: &mut [f32], rows: &mut [f32]) {
        assert!(
            w > 0 && !plane.is_empty() && plane.len().is_multiple_of(w),
            "plane {} not rows of {w}",
            plane.len()
        );
        assert!(
            dst.len() == plane.len() && rows.len() >= plane.len(),
            "plane {}, output {}, scratch {}",
            plane.len(),
            dst.len(),
            rows.len()
        );
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); the function is safe code
        // compiled with the ISA's target features.
        unsafe { (self.max_3x3_s1)(plane, w, dst, rows) }
    }

    /// The 3×3 stride-2 max pool of an `h × w` plane with padding `pad` before and `right`
    /// columns of padding after (at least `pad`: more in ceil mode) into `dst` (`oh × ow`,
    /// as [`crate::PoolParams::out_shape`] gives them), through this ISA's own kernel;
    /// `false`, with nothing written, where it has none. `column` is scratch.
    ///
    /// # Panics
    /// On sizes that do not match (caller bugs).
    pub(crate) fn max_3x3_s2(
        &self,
        plane: &[f32],
        w: usize,
        (pad, right): (usize, usize),
        dst: &mut [f32],
        ow: usize,
        column: &mut [f32],
    ) -> bool {
        let Some(f) = self.max_3x3_s2 else {
            return false;
        };
        let (h, oh) = (plane.len() / w, dst.len() / ow);
        assert!(
            plane.len() == h * w && dst.len() == oh * ow && pad <= 1 && right >= pad,
            "plane {} not rows of {w}, or output {} not rows of {ow}, or padding {pad} and {right}",
            plane.len(),
            dst.len()
        );
        assert!(
            oh >= 1
                && ow >= 1
                && 2 * (oh - 1) < h + pad
                && 2 * (ow - 1) + 3 <= w + pad + right
                && column.len() >= w + pad + right + COLUMN_SLACK,
            "{oh}×{ow} outputs of 3×3/2 windows do not start in {h}×{w} with padding {pad} before and {right} after, or the column ({}) is short",
            column.len()
        );
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); the sizes are checked.
        unsafe { f(plane, w, (pad, right), dst, ow, column) };
        true
    }

    /// The depthwise convolution of a run of channels into `dst` (a plane each; see
    /// [`crate::conv::depthwise::channels`]), compiled for this table's ISA: `split` holds
    /// the layer's split plane with its zero borders written, `wide` is scratch for the
    /// flat outputs of a plane (`Plane::padded_len`).
    ///
    /// # Panics
    /// If the channels' inputs, weights or outputs do not all have their lengths, the
    /// output rows are wider than the pitch, or `split` is shorter than the taps read
    /// (`Plane::padded_len` floats from each offset) or `wide` than a plane's padded flat
    /// outputs (caller bugs).
    pub(crate) fn depthwise(
        &self,
        ch: &Channels<'_>,
        split: &mut [f32],
        wide: &mut [f32],
        dst: &mut [f32],
    ) {
        let (n, g) = (ch.len(), ch.geometry);
        assert!(
            ch.rows > 0 && ch.cols > 0 && ch.cols <= g.pitch,
            "depthwise plane of {}×{} at pitch {}",
            ch.rows,
            ch.cols,
            g.pitch
        );
        assert!(
            ch.weights.len() == n * g.taps.len()
                && ch.x.len() == n * ch.in_plane
                && dst.len() == n * ch.rows * ch.cols,
            "depthwise: {n} channels of {} taps, {} weights, {} inputs and {} outputs",
            g.taps.len(),
            ch.weights.len(),
            ch.x.len(),
            dst.len()
        );
        if n == 0 {
            return;
        }
        let padded = ch.plane(0, split).padded_len();
        let reach = g.taps.iter().max().map_or(0, |&t| t + padded);
        assert!(
            split.len() >= reach && wide.len() >= padded,
            "depthwise: taps read {reach} floats of a split plane of {}, and {padded} of {} of scratch",
            split.len(),
            wide.len()
        );
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); the checks above are the
        // function's contract (`DepthwiseFn`): every channel's plane has the rows, columns,
        // pitch and taps checked, on `split`.
        unsafe { (self.depthwise)(ch, split, wide, dst) }
    }

    /// The channel-blocked depthwise convolution of a run of channels into `dst` (a plane
    /// each; see [`crate::conv::depthwise`]'s "Channel blocks"), compiled for this table's
    /// ISA, with `work` as scratch ([`crate::conv::depthwise::BlockGeometry::layout`]'s
    /// floats for [`Kernels::depthwise_lanes`]).
    ///
    /// # Panics
    /// If the geometry is not a valid layer's, the channels' inputs or outputs do not have
    /// their lengths, the weights or the bias do not reach the run's channels rounded up to
    /// whole vectors, or `work` is short (caller bugs).
    pub(crate) fn depthwise_blocked(&self, b: &Blocked<'_>, work: &mut [f32], dst: &mut [f32]) {
        let g = b.geometry;
        let ((h, w), (oh, ow), (kh, kw), (sy, sx), (py, px)) =
            (g.input, g.output, g.kernel, g.stride, g.padding);
        // Output `o` along an axis reads padded coordinates `o·s..o·s + k`: inside the
        // padded input `n + 2p` for every `o < (n + 2p − k) / s + 1`.
        let fits = |n: usize, p: usize, k: usize, s: usize, o: usize| {
            n > 0 && k > 0 && s > 0 && n + 2 * p >= k && o == (n + 2 * p - k) / s + 1
        };
        assert!(
            fits(h, py, kh, sy, oh) && fits(w, px, kw, sx, ow),
            "depthwise: {g:?} is no layer's geometry"
        );
        let (n, lanes) = (b.channels, self.depthwise_lanes);
        assert!(
            b.x.len() == n * h * w && dst.len() == n * oh * ow,
            "depthwise: {n} channels, {} inputs and {} outputs",
            b.x.len(),
            dst.len()
        );
        if n == 0 {
            return;
        }
        let (taps, whole) = (kh * kw, n.next_multiple_of(lanes));
        assert!(
            b.bias.len() >= whole && b.weights.len() >= (taps - 1) * b.weight_stride + whole,
            "depthwise: {n} channels, {} weights {} apart, {} biases",
            b.weights.len(),
            b.weight_stride,
            b.bias.len()
        );
        let need = g.layout(lanes).len;
        assert!(
            work.len() >= need,
            "depthwise: {} floats of scratch, {need} needed",
            work.len()
        );
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); the checks above are the
        // function's contract (`DepthwiseBlockedFn`).
        unsafe { (self.depthwise_blocked)(b, work, dst) }
    }

    /// The channel-lanes conv ([`crate::conv::lanes`]) of `call`'s output channels and
    /// pixels into `out` (those channels × pixels).
    ///
    /// # Panics
    /// If a pixel's window reaches outside `call.x` (or starts above it), the weights do
    /// not hold every panel of the channels, the bias is short, or the residual or `out`
    /// do not have the channels × pixels (caller bugs).
    pub(crate) fn lanes_conv(&self, call: &LanesCall<'_>, out: &mut MatMut<'_>) {
        let (rows, cols) = (out.rows(), out.cols());
        assert_eq!(
            cols,
            call.pixels.len(),
            "conv lanes: {cols} columns for {:?}",
            call.pixels
        );
        if rows == 0 || cols == 0 {
            return;
        }
        let (first, last) = (call.pixels.start, call.pixels.end - 1);
        let (sy, sx) = call.stride;
        assert!(
            call.ow > 0 && sy > 0 && sx > 0 && (call.ow - 1) * sx < call.wp,
            "conv lanes: output rows of {} at stride {:?} in padded rows of {}",
            call.ow,
            call.stride,
            call.wp
        );
        let reach = call.steps.iter().max().map_or(0, |&s| s as usize);
        assert!(
            first / call.ow * sy >= call.top && call.base(last) + reach < call.x.len(),
            "conv lanes: pixels {:?} read past the {} floats of the block",
            call.pixels,
            call.x.len()
        );
        let (oc, k) = (self.lanes_oc, call.steps.len());
        let panels = (call.skip + rows).div_ceil(oc);
        assert!(
            call.skip < oc && call.weights.len() >= panels * k * oc,
            "conv lanes: {} weights for {panels} panels of {k} steps",
            call.weights.len()
        );
        let e = call.epilogue;
        assert!(
            e.bias.len() >= rows,
            "conv lanes: {} biases for {rows} channels",
            e.bias.len()
        );
        if let Residual::From(r) = e.residual {
            assert!(
                r.rows() >= rows && r.cols() >= cols,
                "conv lanes: a {}×{} residual for {rows}×{cols}",
                r.rows(),
                r.cols()
            );
        }
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`); the checks above are the
        // function's contract (`LanesConvFn`): windows grow with the pixel, so the last
        // one's reach bounds them all, and the first starts at or below `top`.
        unsafe { (self.lanes_conv)(call, out) }
    }

    /// Runs `iters` rounds of the FMA-throughput probe; returns the floating-point
    /// operations done. See [`crate::probe`].
    pub(crate) fn fma_probe(&self, iters: u64) -> u64 {
        // SAFETY: the CPU runs this table's ISA (`Isa::kernels`).
        let (flops, sink) = unsafe { (self.fma_probe)(iters) };
        std::hint::black_box(sink);
        flops
    }
}

#[cfg(test)]
mod test;
