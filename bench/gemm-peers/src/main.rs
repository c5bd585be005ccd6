//! The GEMM-core comparison the project's issue asked for: taopipe's own micro-kernels,
//! the `gemm` crate 0.19 (feature `x86-v4`) and tract-linalg's packed kernels, side by side
//! in one process, on the real conv GEMM shapes of `shapes.rs`: `m = K` (output channels),
//! `n = OH·OW`, `k = C·kh·kw`. Each product is `C = ReLU(A·B + bias)`:
//!
//! - **taopipe**: `A` (weights) packed once into `MR`-row panels outside the timed loop, as
//!   at model build; inside it, every column block of `B` (the engine's `Blocking::columns`)
//!   packed into `NR`-column panels from the row-major `k × n` matrix, then `gemm` with the
//!   fused bias + ReLU epilogue. Every tile shape of `Kernels::variants(Isa::detect())`.
//! - **gemm 0.19**: `gemm::gemm` on row-major `A`, `B`, `C` with `Parallelism::None` (the
//!   crate decides per call what to pack; a profile shows it reading this `B` in place),
//!   then bias + ReLU in a second pass: it has no fused epilogue.
//! - **tract**: the kernel tract's own dispatcher picks for the shape
//!   (`MmmDispatch::native().pick`), `A` packed once into its format, `B` re-packed each call
//!   into a buffer allocated once (`PackedFormat::repack_tensor_view`), bias and ReLU fused
//!   (`BinPerRow(Add)`, `BinScalar(Max, 0)`), one scratch space reused.
//!
//! Two kinds of rows: the whole layer as one GEMM (each candidate blocks as its authors
//! intend), and, marked `[block]`, the column block the conv engine really issues per call
//! (`n` = `Blocking::columns(k, NR)` of the default tile: 256 pixels for any `k >= kc` with
//! a 512 KiB L2), given to every candidate as is. Identical shapes are measured once, their names joined.
//!
//! Before timing, every candidate is checked against a naive f64 reference on small awkward
//! shapes (partial panels, two `kc` blocks, two column blocks), and on every measured shape
//! each output is compared with taopipe's; a mismatch panics.
//!
//! Times are per-thread CPU time (`CLOCK_THREAD_CPUTIME_ID`: time other processes take
//! from us on a shared machine is not counted), best of several runs, the candidates
//! interleaved in rounds so a slow phase of the machine hits them all. GFLOP/s count
//! `2·m·n·k` per product; % is of the single-core FMA peak measured in the same run
//! (`probe::fma_peak`).
//!
//! ```text
//! cargo run --release --manifest-path bench/gemm-peers/Cargo.toml
//! ```
//!
//! A crate of its own, outside the workspace, so that the project's tests never build the
//! two candidates (tract-linalg alone adds minutes to a cold build).

use std::collections::BTreeMap;

use std::time::{Duration, Instant};

use taopipe_nets::cache::{Blocking, CacheSizes};
use taopipe_nets::gemm::{BlockEpilogue, PackedA, gemm, packed_b_len};
use taopipe_nets::{Activation, Isa, Kernels, MatMut, Residual, probe};
use tract_data::internal::{DatumType, Tensor, tensor0};
use tract_linalg::BinOp;
use tract_linalg::mmm::{
    AsInputValue, EagerPackedInput, FusedSpec, MMMInputValue, MatMatMul, MmmDispatch, OutputStore,
    Query, ScratchSpace,
};
use tract_linalg::pack::PackedFormat;

#[path = "../../../nets/benches/shapes.rs"]
#[allow(dead_code)]
mod shapes;

/// One product to compute: `C[m × n] = ReLU(A[m × k] · B[k × n] + bias)`, all row-major.
pub(crate) struct Problem {
    name: String,
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    bias: Vec<f32>,
}

impl Problem {
    /// Deterministic pseudo-random operands, scaled like a conv layer's (weights ±0.05,
    /// activations ±1, bias ±0.1).
    fn new(name: String, m: usize, n: usize, k: usize) -> Problem {
        let val = |i: usize| ((i.wrapping_mul(2_654_435_761) >> 7) % 2001) as f32 / 1000.0 - 1.0;
        Problem {
            name,
            m,
            n,
            k,
            a: (0..m * k).map(|i| val(i) * 0.05).collect(),
            b: (0..k * n).map(|i| val(i + 13)).collect(),
            bias: (0..m).map(|i| val(i + 7) * 0.1).collect(),
        }
    }

    fn flops(&self) -> f64 {
        2.0 * (self.m * self.n * self.k) as f64
    }

    /// The f64 reference, and per element the bound its f32 result may be off by:
    /// `1e-5 · (Σ|a·b| + |bias|)`.
    fn reference(&self) -> (Vec<f64>, Vec<f64>) {
        let (m, n, k) = (self.m, self.n, self.k);
        let mut c = vec![0.0; m * n];
        let mut tol = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut mag) = (f64::from(self.bias[i]), f64::from(self.bias[i]).abs());
                for p in 0..k {
                    let t = f64::from(self.a[i * k + p]) * f64::from(self.b[p * n + j]);
                    s += t;
                    mag += t.abs();
                }
                c[i * n + j] = s.max(0.0);
                tol[i * n + j] = 1e-5 * mag + 1e-30;
            }
        }
        (c, tol)
    }

    /// Bound on how far two correct f32 results may differ: `1e-5 · k · max|a| · max|b|`
    /// (plus the bias), far above summation-order effects and far below a wrong result.
    fn cross_tolerance(&self) -> f32 {
        let amax = self.a.iter().fold(0.0f32, |x, v| x.max(v.abs()));
        let bmax = self.b.iter().fold(0.0f32, |x, v| x.max(v.abs()));
        1e-5 * (self.k as f32 * amax * bmax + 1.0)
    }
}

/// A GEMM core set up for one problem: whatever it does once per model is done; `run`
/// does the per-frame work and leaves `C` in `output`.
trait Core {
    /// The column label and, for cores with choices, the variant.
    fn label(&self) -> String;
    /// One product, timed: pack the activations, multiply, bias + ReLU.
    fn run(&mut self);
    /// `C`, row-major `m × n`.
    fn output(&self) -> &[f32];
}

/// taopipe's core, as the conv engine drives it.
struct Taopipe<'p> {
    kernels: &'static Kernels,
    blocking: Blocking,
    /// Pixels per packed block (the engine's choice).
    columns: usize,
    a: PackedA,
    b: &'p [f32],
    bias: &'p [f32],
    packed: Vec<f32>,
    c: Vec<f32>,
    m: usize,
    n: usize,
    k: usize,
}

impl<'p> Taopipe<'p> {
    fn new(kernels: &'static Kernels, p: &'p Problem) -> Taopipe<'p> {
        let blocking = Blocking::new(kernels, CacheSizes::get());
        let nr = kernels.nr;
        let columns = blocking.columns(p.k, nr).min(p.n.next_multiple_of(nr));
        Taopipe {
            kernels,
            blocking,
            columns,
            a: PackedA::from_rows(kernels.mr, blocking.kc, p.m, p.k, &p.a),
            b: &p.b,
            bias: &p.bias,
            packed: vec![0.0; packed_b_len(p.k, columns / nr, nr)],
            c: vec![0.0; p.m * p.n],
            m: p.m,
            n: p.n,
            k: p.k,
        }
    }
}

/// Packs columns `j0..j0 + w` of the row-major `k × n` matrix `b` into panels of `nr`
/// columns, each `k × nr` (k-major), columns past `w` zero. Row by row, so the source is
/// read contiguously (a panel at a time would touch `k` pages per panel of a wide `b`).
fn pack_b(b: &[f32], n: usize, k: usize, j0: usize, w: usize, nr: usize, out: &mut [f32]) {
    let panels = w.div_ceil(nr);
    for row in 0..k {
        let src = &b[row * n + j0..row * n + j0 + w];
        for p in 0..panels {
            let dst = &mut out[(p * k + row) * nr..(p * k + row + 1) * nr];
            let part = &src[p * nr..((p + 1) * nr).min(w)];
            dst[..part.len()].copy_from_slice(part);
            dst[part.len()..].fill(0.0);
        }
    }
}

impl Core for Taopipe<'_> {
    fn label(&self) -> String {
        format!("taopipe {}x{}", self.kernels.mr, self.kernels.nr)
    }

    fn run(&mut self) {
        let (m, n, k, nr) = (self.m, self.n, self.k, self.kernels.nr);
        let mut c = MatMut::from_slice(&mut self.c, n, m, n);
        let epilogue = BlockEpilogue {
            bias: self.bias,
            residual: Residual::None,
            act: Activation::Relu,
        };
        for j0 in (0..n).step_by(self.columns) {
            let w = self.columns.min(n - j0);
            pack_b(self.b, n, k, j0, w, nr, &mut self.packed);
            gemm(
                self.kernels,
                &self.blocking,
                &self.a,
                0..m,
                &self.packed,
                &mut c.sub(0, j0, m, w),
                Some(&epilogue),
            );
        }
    }

    fn output(&self) -> &[f32] {
        &self.c
    }
}

/// The `gemm` crate 0.19: one call on the row-major operands, then bias + ReLU.
struct GemmCrate<'p> {
    p: &'p Problem,
    c: Vec<f32>,
}

impl Core for GemmCrate<'_> {
    fn label(&self) -> String {
        "gemm 0.19".to_string()
    }

    fn run(&mut self) {
        let Problem {
            m,
            n,
            k,
            a,
            b,
            bias,
            ..
        } = self.p;
        let (m, n, k) = (*m, *n, *k);
        // SAFETY: `c` is `m × n` (row stride `n`), `a` `m × k` (row stride `k`), `b`
        // `k × n` (row stride `n`), all row-major with unit column stride, as passed;
        // `c` aliases neither input; `read_dst = false` so `c` need not be initialised.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                self.c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        for (row, &bias) in self.c.chunks_exact_mut(n).zip(bias) {
            for v in row {
                *v = (*v + bias).max(0.0);
            }
        }
    }

    fn output(&self) -> &[f32] {
        &self.c
    }
}

/// tract-linalg's kernel for the shape, A packed once, B re-packed per call.
struct Tract {
    mmm: Box<dyn MatMatMul>,
    ops: TractOperands,
    b_format: PackedFormat,
    b: Tensor,
    c: Tensor,
    scratch: Box<dyn ScratchSpace>,
    m: usize,
    n: usize,
}

/// What the fused ops of one product borrow (apart from `C`).
struct TractOperands {
    packing: usize,
    a: Box<dyn MMMInputValue>,
    b_packed: EagerPackedInput,
    bias: Tensor,
    zero: Tensor,
}

impl TractOperands {
    /// Multiply, bias per row, ReLU, store.
    fn specs(&self, store: OutputStore) -> [FusedSpec<'_>; 4] {
        [
            FusedSpec::AddMatMul {
                a: AsInputValue::Borrowed(&*self.a),
                b: AsInputValue::Borrowed(&self.b_packed),
                packing: self.packing,
            },
            FusedSpec::BinPerRow(self.bias.view(), BinOp::Add),
            FusedSpec::BinScalar(&self.zero, BinOp::Max),
            FusedSpec::Store(store),
        ]
    }
}

impl Tract {
    fn new(p: &Problem) -> Tract {
        let query = Query {
            // Weights packed once, ahead of time: no per-call panel extractor.
            allow_extractor: false,
            ..Query::plain(DatumType::F32, Some(p.m), Some(p.k), Some(p.n))
        };
        let (mmm, packing, extractor) = MmmDispatch::native()
            .pick(&query)
            .expect("tract has an f32 kernel");
        assert!(extractor.is_none(), "tract picked a panel extractor");
        let (a_format, b_format) = &mmm.packings()[packing];
        let b_format = b_format
            .downcast_ref::<PackedFormat>()
            .expect("tract's f32 B packing is a PackedFormat")
            .clone();
        let a = Tensor::from_shape(&[p.m, p.k], &p.a).expect("A tensor");
        let ops = TractOperands {
            packing,
            a: a_format.prepare_one(&a, 1, 0).expect("tract packs A"),
            b_packed: b_format
                .new_packed_buffer(p.k, p.n)
                .expect("tract B buffer"),
            bias: Tensor::from_shape(&[p.m], &p.bias).expect("bias tensor"),
            zero: tensor0(0.0f32),
        };
        let mut tract = Tract {
            ops,
            b_format,
            b: Tensor::from_shape(&[p.k, p.n], &p.b).expect("B tensor"),
            c: Tensor::zero::<f32>(&[p.m, p.n]).expect("C tensor"),
            // SAFETY: a scratch space of the kernel's own type, used only with it.
            scratch: unsafe { mmm.allocate_scratch_space() },
            mmm,
            m: p.m,
            n: p.n,
        };
        let store = tract.store();
        for spec in &tract.ops.specs(store) {
            assert!(tract.mmm.can_fuse(spec), "tract cannot fuse {spec:?}");
        }
        tract
    }

    /// Where the kernel stores `C`: the `m × n` tensor `c`, m on axis 0, n on axis 1.
    fn store(&mut self) -> OutputStore {
        // SAFETY: the spec is the kernel's own and the view is of `c`, an `m × n` f32
        // tensor that lives, unmoved, as long as `self`, which every use of the store is
        // inside of.
        unsafe { self.mmm.c_view(Some(0), Some(1)).wrap(&self.c.view_mut()) }
    }
}

impl Core for Tract {
    fn label(&self) -> String {
        let name = self.mmm.name();
        format!("tract {}", name.rsplit('_').next().unwrap_or(name))
    }

    fn run(&mut self) {
        self.b_format
            .repack_tensor_view(&mut self.ops.b_packed, &self.b.view(), 0, 1)
            .expect("tract packs B");
        let store = self.store();
        let specs = self.ops.specs(store);
        // SAFETY: A and B were packed by the formats of `packing` for this kernel, with the
        // problem's `k`; the store covers `m × n`; the scratch space is the kernel's own.
        unsafe {
            self.mmm
                .run_with_scratch_space(self.m, self.n, &mut *self.scratch, &specs)
        }
        .expect("tract matmul runs");
    }

    fn output(&self) -> &[f32] {
        self.c
            .try_as_plain_ram()
            .and_then(|c| c.as_slice::<f32>())
            .expect("C is plain f32")
    }
}

/// The three kinds of candidate, for the table's columns.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Taopipe,
    GemmCrate,
    Tract,
}

/// Every candidate for `p`: each taopipe tile of `isa`, then the crates.
fn cores<'p>(isa: Isa, p: &'p Problem) -> Vec<(Kind, Box<dyn Core + 'p>)> {
    let mut cores: Vec<(Kind, Box<dyn Core + 'p>)> = Kernels::variants(isa)
        .into_iter()
        .map(|k| (Kind::Taopipe, Box::new(Taopipe::new(k, p)) as Box<dyn Core>))
        .collect();
    cores.push((
        Kind::GemmCrate,
        Box::new(GemmCrate {
            p,
            c: vec![0.0; p.m * p.n],
        }),
    ));
    cores.push((Kind::Tract, Box::new(Tract::new(p))));
    cores
}

/// Panics unless every candidate matches the f64 reference on `p`.
fn check_against_reference(isa: Isa, p: &Problem) {
    let (want, tol) = p.reference();
    for (_, mut core) in cores(isa, p) {
        core.run();
        // Twice: the second run must not depend on what the first left behind.
        core.run();
        for (i, (&got, (&w, &t))) in core.output().iter().zip(want.iter().zip(&tol)).enumerate() {
            let err = (f64::from(got) - w).abs();
            assert!(
                err <= t,
                "{} wrong on {} ({}×{}×{}) at row {} col {}: {got} vs {w} (tolerance {t:e})",
                core.label(),
                p.name,
                p.m,
                p.n,
                p.k,
                i / p.n,
                i % p.n
            );
        }
    }
}

/// Seconds of CPU time this thread has used.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Best CPU seconds per run of each core: one warm-up each, then `ROUNDS` rounds in which
/// every core runs for about `secs / ROUNDS` wall time (at least `MIN_RUNS` runs).
fn time_cores(cores: &mut [(Kind, Box<dyn Core + '_>)], secs: f64) -> Vec<f64> {
    const ROUNDS: usize = 5;
    const MIN_RUNS: usize = 2;
    for (_, core) in cores.iter_mut() {
        core.run();
    }
    let mut best = vec![f64::MAX; cores.len()];
    for _ in 0..ROUNDS {
        for ((_, core), best) in cores.iter_mut().zip(&mut best) {
            let start = Instant::now();
            let mut runs = 0;
            while runs < MIN_RUNS || start.elapsed().as_secs_f64() < secs / ROUNDS as f64 {
                let t = thread_cpu_secs();
                core.run();
                *best = best.min(thread_cpu_secs() - t);
                runs += 1;
            }
        }
    }
    best
}

/// A named GEMM shape of the conv engine.
struct Shape {
    names: Vec<String>,
    m: usize,
    n: usize,
    k: usize,
}

/// The whole-layer shapes of `shapes.rs`, then the engine's column blocks where smaller;
/// identical `(m, n, k)` measured once.
fn gemm_shapes(isa: Isa) -> Vec<Shape> {
    let kernels = isa.kernels();
    let blocking = Blocking::new(kernels, CacheSizes::get());
    let mut layers = Vec::new();
    let mut blocks = Vec::new();
    for layer in shapes::all() {
        let p = layer.params;
        let n = p
            .out_shape(layer.input)
            .expect("table shapes are valid")
            .plane();
        let (m, k) = (p.out_channels, p.in_channels * p.kernel.0 * p.kernel.1);
        layers.push((layer.name.to_string(), m, n, k));
        let block = blocking.columns(k, kernels.nr);
        if block < n {
            blocks.push((format!("{} [block]", layer.name), m, block, k));
        }
    }
    let mut seen: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
    let mut out: Vec<Shape> = Vec::new();
    for (name, m, n, k) in layers.into_iter().chain(blocks) {
        match seen.get(&(m, n, k)) {
            Some(&i) => out[i].names.push(name),
            None => {
                seen.insert((m, n, k), out.len());
                out.push(Shape {
                    names: vec![name],
                    m,
                    n,
                    k,
                });
            }
        }
    }
    out
}

/// `["vgg.conv4_2", "vgg.conv4_3"]` as `vgg.conv4_2 = conv4_3`.
fn joined(names: &[String]) -> String {
    let mut s = names[0].clone();
    for other in &names[1..] {
        let common = s
            .bytes()
            .zip(other.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let cut = other[..common].rfind('.').map_or(0, |i| i + 1);
        s.push_str(" = ");
        s.push_str(&other[cut..]);
    }
    s
}

/// Which of its kernel sets gemm 0.19 runs on this CPU: its `init_gemm_fn` takes AVX-512F
/// when detected (compiled in by `x86-v4`), else FMA (AVX2), else scalar.
#[cfg(target_arch = "x86_64")]
fn gemm_crate_path() -> &'static str {
    if std::arch::is_x86_feature_detected!("avx512f") {
        "AVX-512F (x86-v4)"
    } else if std::arch::is_x86_feature_detected!("fma") {
        "AVX2 + FMA (this CPU has no AVX-512F)"
    } else {
        "scalar"
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn gemm_crate_path() -> &'static str {
    "non-x86"
}

/// `GFLOP/s (% of peak)` for a best time.
fn cell(flops: f64, secs: f64, peak: f64) -> String {
    let gf = flops / secs / 1e9;
    format!("{gf:.1} ({:.0}%)", 100.0 * gf / peak)
}

fn main() {
    let started = Instant::now();
    let isa = Isa::detect();
    let variants = Kernels::variants(isa);
    let caches = CacheSizes::get();
    // Partial panels everywhere; the second also two `kc` blocks and two column blocks.
    let two_blocks = Blocking::new(isa.kernels(), caches).columns(300, isa.kernels().nr) + 37;
    let check = [
        Problem::new("check.small-k".into(), 13, 37, 27),
        Problem::new("check.two-blocks".into(), 21, two_blocks, 300),
    ];
    for p in &check {
        check_against_reference(isa, p);
    }
    let peak = probe::fma_peak(isa, 0.3);
    println!("\n## GEMM cores: C = ReLU(A·B + bias), 1 thread, GFLOP/s (% of FMA peak)\n");
    println!(
        "ISA {isa}; FMA peak {peak:.1} GFLOP/s (probe::fma_peak, this run); caches L1d {} KiB, L2 {} KiB.",
        caches.l1d >> 10,
        caches.l2 >> 10
    );
    for k in &variants {
        let b = Blocking::new(k, caches);
        println!(
            "taopipe {}x{}: kc {}, mc {}, column block {} KiB.",
            k.mr,
            k.nr,
            b.kc,
            b.mc,
            b.column_bytes >> 10
        );
    }
    println!(
        "gemm 0.19 runs its {} kernels here; tract runs the kernel its dispatcher picks.",
        gemm_crate_path()
    );
    println!(
        "All candidates matched the f64 reference on {} before timing.\n",
        check
            .iter()
            .map(|p| format!("{}×{}×{}", p.m, p.n, p.k))
            .collect::<Vec<_>>()
            .join(" and ")
    );

    let shapes = gemm_shapes(isa);
    let mut tiles = Vec::new();
    let mut ratios: BTreeMap<Kind, Vec<f64>> = BTreeMap::new();
    let mut within = BTreeMap::<Kind, usize>::new();
    println!("| shape | m | n | k | taopipe best tile | gemm 0.19 | tract | winner |");
    println!("|---|---:|---:|---:|---|---|---|---|");
    for s in &shapes {
        let p = Problem::new(joined(&s.names), s.m, s.n, s.k);
        let mut cands = cores(isa, &p);
        // Enough runs for a best-of on the small shapes; the large ones get 2 per round.
        let secs = (p.flops() / 40e9 * 8.0).clamp(0.05, 0.25);
        let times = time_cores(&mut cands, secs);
        let reference = cands[0].1.output();
        let tol = p.cross_tolerance();
        for (_, core) in &cands[1..] {
            let worst = core
                .output()
                .iter()
                .zip(reference)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst <= tol,
                "{} differs from {} on {} by {worst} (tolerance {tol})",
                core.label(),
                cands[0].1.label(),
                p.name
            );
        }
        // Best time of each kind (taopipe: its best tile).
        let mut best: BTreeMap<Kind, (f64, String)> = BTreeMap::new();
        for ((kind, core), &t) in cands.iter().zip(&times) {
            let e = best.entry(*kind).or_insert((f64::MAX, String::new()));
            if t < e.0 {
                *e = (t, core.label());
            }
        }
        tiles.push((p.name.clone(), times[..variants.len()].to_vec(), p.flops()));
        let fastest = best.values().map(|b| b.0).fold(f64::MAX, f64::min);
        for (kind, (t, _)) in &best {
            ratios.entry(*kind).or_default().push(fastest / t);
            if *t <= fastest * 1.05 {
                *within.entry(*kind).or_default() += 1;
            }
        }
        let (win_kind, (win_t, win_label)) = best
            .iter()
            .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
            .expect("three kinds");
        let runner_up = best
            .iter()
            .filter(|(k, _)| *k != win_kind)
            .map(|(_, b)| b.0)
            .fold(f64::MAX, f64::min);
        let show = |kind: Kind| {
            let (t, label) = &best[&kind];
            let detail = match kind {
                Kind::Taopipe => format!(" {}", label.trim_start_matches("taopipe ")),
                Kind::Tract => format!(" {}", label.trim_start_matches("tract ")),
                Kind::GemmCrate => String::new(),
            };
            format!("{}{detail}", cell(p.flops(), *t, peak))
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} +{:.0}% |",
            p.name,
            p.m,
            p.n,
            p.k,
            show(Kind::Taopipe),
            show(Kind::GemmCrate),
            show(Kind::Tract),
            win_label.split(' ').next().unwrap_or(win_label),
            100.0 * (runner_up / win_t - 1.0)
        );
    }
    println!(
        "\nWinner: the fastest kind, and by how much it beats the next kind (time ratio − 1)."
    );
    println!(
        "Geometric mean over the {} rows of (best time / kind's time):",
        shapes.len()
    );
    for (kind, r) in &ratios {
        let geo = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
        let name = match kind {
            Kind::Taopipe => "taopipe (best tile)",
            Kind::GemmCrate => "gemm 0.19",
            Kind::Tract => "tract",
        };
        println!(
            "- {name}: {geo:.3}; within 5% of the best on {} of {} rows",
            within.get(kind).copied().unwrap_or(0),
            r.len()
        );
    }

    println!("\n### taopipe tile shapes, GFLOP/s\n");
    let head: Vec<String> = variants
        .iter()
        .map(|k| format!("{}x{}", k.mr, k.nr))
        .collect();
    println!("| shape | {} |", head.join(" | "));
    println!("|---|{}", "---:|".repeat(variants.len()));
    for (name, times, flops) in &tiles {
        let cells: Vec<String> = times
            .iter()
            .map(|t| format!("{:.1}", flops / t / 1e9))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    println!(
        "\n(gemm table: {:.0} s)",
        Duration::from_secs_f64(started.elapsed().as_secs_f64()).as_secs_f64()
    );
}
