//! Cache sizes, and the GEMM blocking derived from them.
//!
//! Sizes come from Linux sysfs (`/sys/devices/system/cpu/cpu0/cache/index*/`), per core
//! for L1d and L2 and for the whole cache for L3; where they are missing, 32 KiB, 512 KiB
//! and 8 MiB. The blocking follows BLIS's analysis of where each operand should live:
//!
//! - **`kc`** (the reduction block): one packed micro-panel of activations (`kc × NR`
//!   floats) takes half of L1d, so it stays there while the weight micro-panels stream
//!   past it; rounded up to a multiple of [`KC_STEP`] where the panel then still fits
//!   three quarters of L1d, else down to a multiple of 8; clamped to 64..=512.
//!   Where the GEMM reads B in place (no pack), a row of a column panel touches one line
//!   more than its `NR` floats fill, and long reductions take shorter blocks
//!   ([`Blocking::kc_in_place`]).
//! - **`mc`** (output channels per block): a block of packed weights (`mc × kc`) takes a
//!   quarter of L2, so it is reused from L2 across every activation panel of a column
//!   block, with room left for the `kc` slice of those panels and the output tiles; a
//!   multiple of `MR`.
//! - **`column block`** (pixels packed at once): one `kc` slice of a block's packed
//!   activations takes half of L2, so each slice a weight block meets stays in L2 while
//!   every weight block passes over it. The whole block (all `C·kh·kw` rows) may be larger
//!   and sit in L3. Sizing by the slice, not the whole reduction, keeps blocks wide for
//!   deep layers: sized by the whole 3×3×512 reduction, VGG16's `conv5` blocks were one
//!   panel wide and streamed all 9.4 MB of weights from L3 for every 16 pixels.
//!
//!   Where the weights are the smaller operand (fewer output channels than pixels), the
//!   whole block takes half of L2 instead ([`Blocking::whole_columns`], chosen in
//!   `conv/direct.rs`): more blocks stream the weights more often, but each block is
//!   packed into L2 and read back from there, and a gang of two gets blocks of its own
//!   instead of sharing one.

use std::sync::OnceLock;

use crate::simd::Kernels;

/// Data-cache sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    /// L1 data cache of one core.
    pub l1d: usize,
    /// L2 of one core.
    pub l2: usize,
    /// The last level.
    pub l3: usize,
}

impl CacheSizes {
    /// This machine's, read once (the defaults under Miri, which isolates the file system).
    pub fn get() -> CacheSizes {
        static SIZES: OnceLock<CacheSizes> = OnceLock::new();
        *SIZES.get_or_init(|| {
            if cfg!(miri) {
                CacheSizes::DEFAULT
            } else {
                CacheSizes::from_sysfs("/sys/devices/system/cpu/cpu0/cache")
            }
        })
    }

    /// What [`CacheSizes::from_sysfs`] assumes for a size sysfs does not give.
    pub const DEFAULT: CacheSizes = CacheSizes {
        l1d: 32 << 10,
        l2: 512 << 10,
        l3: 8 << 20,
    };

    /// The sizes a sysfs `cache` folder describes, [`CacheSizes::DEFAULT`] for what it
    /// lacks.
    pub fn from_sysfs(dir: impl AsRef<std::path::Path>) -> CacheSizes {
        let mut sizes = CacheSizes::DEFAULT;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return sizes;
        };
        for entry in entries.flatten() {
            let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
            else {
                continue;
            };
            let Some(bytes) = parse_size(size.trim()) else {
                continue;
            };
            match (level.trim(), kind.trim()) {
                ("1", "Data") => sizes.l1d = bytes,
                ("2", "Unified" | "Data") => sizes.l2 = bytes,
                ("3", "Unified" | "Data") => sizes.l3 = bytes,
                _ => {}
            }
        }
        sizes
    }
}

/// `32K`, `1024K`, `32M`, or plain bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok().map(|n| n * mult)
}

/// What `kc` is rounded up to where L1d allows (a decision, from a measurement). Most of
/// the zoo's reductions (`C·kh·kw`, `C` a multiple of 64) are multiples of 64, so such a
/// `kc` leaves them no short last block, whose tile reloads and stores its outputs for a
/// few steps. Half of a 32 KiB L1d gives the 8 × 48 tile a `kc` of 80: ResNet50's
/// `256`-deep 1×1 convs ran in blocks of 80, 80, 80 and 16. Rounded up to 128 (24 KiB of panel), the report's 36 VGG16
/// and ResNet50 direct layers summed 334.8 and 334.2 → 329.8 and 329.5 ms at width 1,
/// 169.7 and 169.5 → 167.8 and 168.1 at width 2 (`cargo bench -p taopipe-nets --bench
/// bench_main -- report`, two rounds each, the settings taking turns; 2-core AMD EPYC Zen
/// 4 VM); ResNet50 frames at width 2 ran 1.024× faster (nine paired rounds). Where half of
/// L1d already gives a multiple of 64 (the 12 × 32 tile there, and both AVX-512 tiles with
/// a 48 KiB L1d), nothing changes. NEON's 8 × 12 tile on a 32 KiB L1d goes from 336 to 384,
/// not measured (no aarch64 machine here).
pub const KC_STEP: usize = 64;

/// GEMM block sizes for one micro-kernel on one machine (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// Reduction block.
    pub kc: usize,
    /// Output channels per weight block (a multiple of `MR`).
    pub mc: usize,
    /// Bytes of packed activations per column block.
    pub column_bytes: usize,
    /// Longest reduction block whose micro-panel fits three quarters of L1d
    /// ([`Blocking::kc_for`]).
    pub kc_max: usize,
    /// Longest reduction block where the GEMM reads B in place
    /// ([`Blocking::kc_in_place`]).
    pub kc_in_place_max: usize,
}

impl Blocking {
    /// The blocking for `kernels` on a machine with `caches`.
    pub fn new(kernels: &Kernels, caches: CacheSizes) -> Blocking {
        let panel_row = kernels.nr * 4;
        let half = caches.l1d / 2 / panel_row;
        let up = half.next_multiple_of(KC_STEP);
        let most = caches.l1d / 4 * 3 / panel_row;
        let kc = if up <= most { up } else { half / 8 * 8 };
        let kc = kc.clamp(64, 512);
        let mc = (caches.l2 / 4 / (kc * 4)).max(kernels.mr) / kernels.mr * kernels.mr;
        // A row of a column panel read in place starts anywhere in a line.
        let row_lines = (panel_row.div_ceil(64) + 1) * 64;
        Blocking {
            kc,
            mc,
            column_bytes: caches.l2 / 2,
            kc_max: most.max(kc),
            kc_in_place_max: (caches.l1d / 2 / row_lines / 8 * 8).max(8),
        }
    }

    /// The reduction block for a reduction of `kdim`: `kc`, unless `kdim` is not a
    /// multiple of it and one block fewer, evened out, fits [`Blocking::kc_max`]. A short
    /// last block costs its tiles a reload and a store of their outputs for a few steps.
    /// VGG16's `conv1_2` (a reduction of 576) ran in blocks of 256, 256 and 64 on AVX2;
    /// in two of 288 its direct path went from 75.4 and 74.9 to 77.3 and 77.1 GFLOP/s at
    /// width 1, from 150.1 and 149.6 to 154.1 and 153.4 at width 2, the other layers level
    /// (`cargo bench -p taopipe-nets --bench bench_main -- report`, two runs each taking
    /// turns, 2-core AMD EPYC Zen 3 VM). The bits do not change: C carries each output's
    /// FMA chain from block to block. The direct path uses it; Winograd's reductions (the
    /// input channels) keep `kc`.
    pub fn kc_for(&self, kdim: usize) -> usize {
        let blocks = kdim.div_ceil(self.kc);
        if blocks <= 1 || kdim.is_multiple_of(self.kc) {
            return self.kc;
        }
        let fewer = kdim.div_ceil(blocks - 1).next_multiple_of(8);
        if fewer <= self.kc_max { fewer } else { self.kc }
    }

    /// The reduction block where the GEMM reads B in place, straight from the input's
    /// planes (`conv/direct.rs`, `reads_in_place`), for a reduction of `kdim`:
    /// [`Blocking::kc_for`]'s, unless its rows' lines would fill more than three quarters
    /// of L1d; then blocks of at most [`Blocking::kc_in_place_max`] (lines filling half of
    /// it), evened out (a decision, from a measurement).
    ///
    /// Each of a column panel's `kc` rows lies in another plane, at any offset in a line,
    /// so it touches one line more than its `NR` floats fill: AVX2's 16 floats take two
    /// lines, 128 bytes. Every row panel passes over the column panel, which must stay in
    /// L1d; `kc_for` gave up to 384 rows, 48 KiB of lines against a 32 KiB L1d. Capped at
    /// 128 rows there, one pointwise conv alone went faster (a scratch `Conv2d::forward`
    /// benchmark, best of runs, fastest of three rounds taking turns; 2-core AMD EPYC Zen 3
    /// VM, AVX2): SqueezeNet's `384 → 48`, `384 → 64` on 13×13 and `256 → 32` on 27×27
    /// 0.0764, 0.1027 and 0.1618 ms → 0.0716, 0.0956 and 0.1557; MobileNetV2's `384 → 64`
    /// on 14×14 0.1154 → 0.1076; GoogLeNet's `480 → 64`, `512 → 64` and `528 → 32` on
    /// 14×14 0.1401, 0.1518 and 0.0843 → 0.1336, 0.1443 and 0.0815, its `832 → 48` and
    /// `832 → 32` on 7×7 0.0546 and 0.0406 → 0.0482 and 0.0358; level within 1%: `256 → 48`
    /// and `512 → 64` on 13×13, `256 → 32` on 28×28. Reductions of 144 and 192 rows (up to
    /// 24 KiB of lines) measured level or up to 2% slower cut in two, so they keep one
    /// block. In frames (`frame --net NET --width 1 --profile`, fastest of three rounds,
    /// the rules taking turns) SqueezeNet's `features.7`, `10` and `11` squeezes went 5–7%
    /// faster, MobileNetV2's `features.8` to `10` projections 5%; the frames stayed within
    /// the VM's noise. The bits do not change: C carries each output's FMA chain from
    /// block to block. A conv of several blocks cannot read its fused residual from its
    /// output (`Conv2d::in_place_input`), so those MobileNetV2 projections now take it as
    /// an input of its own.
    ///
    /// On the 16-core x86-64 Linux machine (AVX-512, 48 KiB of L1d) the 8 × 48 tile's
    /// 48 floats touch four lines, and `kc_for`'s blocks of 128 to 144 rows fill at most
    /// three quarters of L1d: cut to 96 anyway (a first version of this rule, which cut
    /// every reduction past 1.5 times the cap), the `384 → 64`, `512 → 64` and `528 → 32`
    /// convs above ran 1–3% slower alone than with `kc_for` (fastest of three rounds, the
    /// builds taking turns, one core), so such blocks are kept.
    pub fn kc_in_place(&self, kdim: usize) -> usize {
        let kc = self.kc_for(kdim);
        if 2 * kc.min(kdim) <= 3 * self.kc_in_place_max {
            return kc;
        }
        let blocks = kdim.div_ceil(self.kc_in_place_max);
        kdim.div_ceil(blocks).next_multiple_of(8)
    }

    /// Columns per packed block for a reduction of `kdim` rows, so that one `kc` slice of
    /// the block fits: a multiple of `nr`, at least one panel (module docs).
    pub fn columns(&self, kdim: usize, nr: usize) -> usize {
        (self.column_bytes / (kdim.clamp(1, self.kc_for(kdim)) * 4) / nr).max(1) * nr
    }

    /// Columns per packed block so that the whole block, all `kdim` rows, fits: a multiple
    /// of `nr`, at least one panel (module docs).
    pub fn whole_columns(&self, kdim: usize, nr: usize) -> usize {
        (self.column_bytes / (kdim.max(1) * 4) / nr).max(1) * nr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_sizes_parse_and_default() {
        let dir = std::env::temp_dir().join(format!("taopipe-cache-{}", std::process::id()));
        for (i, (level, kind, size)) in [
            ("1", "Data", "48K"),
            ("1", "Instruction", "32K"),
            ("2", "Unified", "2048K"),
        ]
        .into_iter()
        .enumerate()
        {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), level).unwrap();
            std::fs::write(d.join("type"), kind).unwrap();
            std::fs::write(d.join("size"), size).unwrap();
        }
        let s = CacheSizes::from_sysfs(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            s,
            CacheSizes {
                l1d: 48 << 10,
                l2: 2 << 20,
                l3: 8 << 20
            }
        );
        assert_eq!(CacheSizes::from_sysfs("/nonexistent").l1d, 32 << 10);
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("x"), None);
    }

    /// AVX2's 6 × 16 tile on a 32 KiB L1d: `kc` 256, and blocks of up to 384 rows.
    #[test]
    fn reduction_blocks_even_out_short_last_blocks() {
        let tile = Kernels {
            nr: 16,
            ..*crate::Isa::Portable.kernels()
        };
        let caches = CacheSizes {
            l1d: 32 << 10,
            l2: 512 << 10,
            l3: 32 << 20,
        };
        let b = Blocking::new(&tile, caches);
        assert_eq!((b.kc, b.kc_max), (256, 384));
        for (kdim, kc) in [
            (576, 288),  // 256 + 256 + 64 → 288 + 288
            (1152, 288), // 4 · 256 + 128 → 4 · 288
            (300, 304),  // 256 + 44 → one block
            (2000, 288), // 7 · 256 + 208 → 7 blocks
            (147, 256),  // one block already
            (512, 256),  // no short block
            (4608, 256), // no short block
            (1100, 280), // 4 · 256 + 76 → 3 · 280 + 260
            (400, 256),  // 256 + 144: one block of 400 would not fit
        ] {
            assert_eq!(b.kc_for(kdim), kc, "kdim {kdim}");
        }
    }

    /// B read in place: 16 floats a row touch two lines, so half of a 32 KiB L1d holds 128
    /// rows; reductions past 192 (three quarters of it) are cut into even blocks of at
    /// most 128, shorter ones keep `kc_for`'s block.
    #[test]
    fn in_place_reduction_blocks_fit_half_of_l1d() {
        let tile = |nr| Kernels {
            nr,
            ..*crate::Isa::Portable.kernels()
        };
        let caches = CacheSizes {
            l1d: 32 << 10,
            l2: 512 << 10,
            l3: 32 << 20,
        };
        let b = Blocking::new(&tile(16), caches);
        assert_eq!(b.kc_in_place_max, 128);
        for (kdim, kc) in [
            (64, 256),  // one block, as `kc_for`
            (144, 256), // one block of 18 KiB of lines
            (192, 256), // 24 KiB: the most kept whole
            (200, 104), // two blocks of 100, rounded up to 8
            (256, 128), // `kc_for`'s 256 rows would fill 32 KiB
            (384, 128),
            (576, 120), // 4 · 120 + 96
            (960, 120),
            (1000, 128), // 7 · 128 + 104
        ] {
            assert_eq!(b.kc_in_place(kdim), kc, "kdim {kdim}");
            let kc = kc.min(kdim);
            assert!(kdim <= 192 || kc * 128 <= caches.l1d / 2, "kdim {kdim}");
        }
        // 48 floats a row (AVX-512's 8 × 48 tile) touch four lines: 96 rows in 24 KiB, but
        // `kc_for`'s blocks of up to 144 rows fit three quarters of a 48 KiB L1d and stay.
        let wide = Blocking::new(
            &tile(48),
            CacheSizes {
                l1d: 48 << 10,
                ..caches
            },
        );
        assert_eq!(wide.kc_in_place_max, 96);
        for kdim in [144, 256, 384, 832] {
            let kc = wide.kc_in_place(kdim);
            assert_eq!(kc, wide.kc_for(kdim), "kdim {kdim}");
            assert!(kc.min(kdim) * 256 <= (48 << 10) / 4 * 3, "kdim {kdim}");
        }
        // A 32 KiB L1d holds 72 such rows in three quarters: `kc_for`'s 128 are cut.
        let small = Blocking::new(&tile(48), caches);
        assert_eq!(small.kc_for(384), 128);
        assert_eq!(small.kc_in_place(384), 64);
    }

    #[test]
    fn blocking_fits_the_caches() {
        let k = crate::Isa::Portable.kernels();
        let caches = CacheSizes {
            l1d: 32 << 10,
            l2: 512 << 10,
            l3: 32 << 20,
        };
        let b = Blocking::new(k, caches);
        assert!(b.kc * k.nr * 4 <= caches.l1d / 4 * 3);
        // Rounded up to a multiple of `KC_STEP` where three quarters of L1d allow it; not
        // where they do not: 48 columns in a 28 KiB L1d get 72 (half of it holds 74 rows;
        // 128 rows need 24 KiB of the 21 allowed).
        for (nr, l1d, kc) in [
            (48, 32 << 10, 128),
            (32, 32 << 10, 128),
            (48, 48 << 10, 128),
            (48, 28 << 10, 72),
        ] {
            let tile = Kernels {
                nr,
                ..*crate::Isa::Portable.kernels()
            };
            let caches = CacheSizes { l1d, ..caches };
            assert_eq!(Blocking::new(&tile, caches).kc, kc, "NR {nr}, L1d {l1d}");
        }
        assert!(b.mc * b.kc * 4 <= caches.l2 / 4 && b.mc.is_multiple_of(k.mr));
        let cols = b.columns(576, k.nr);
        assert!(cols.is_multiple_of(k.nr) && cols * b.kc * 4 <= caches.l2 / 2);
        // Deep reductions keep wide blocks: their `kc` slices are what must fit.
        assert_eq!(b.columns(1 << 30, k.nr), b.columns(b.kc * 5, k.nr));
        assert!(b.columns(27, k.nr) > cols);
        // Whole blocks: all rows fit; the same as a slice's up to `kc` rows.
        let whole = b.whole_columns(576, k.nr);
        assert!(whole.is_multiple_of(k.nr) && whole * 576 * 4 <= caches.l2 / 2 && whole < cols);
        assert_eq!(b.whole_columns(b.kc, k.nr), b.columns(b.kc, k.nr));
        assert_eq!(b.whole_columns(1 << 30, k.nr), k.nr);
    }
}
