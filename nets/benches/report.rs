//! The `report` pseudo-group: the tables of the README's "Kernels" section, printed as
//! Markdown (not criterion: each number is the best of several runs, which on a shared
//! machine is the least noisy statistic; the conv table takes its runs in rounds over
//! every layer, [`ROUNDS`]). Runs when no filter is given or the filter contains "report":
//!
//! ```text
//! cargo bench -p taopipe-nets -- report
//! TAOPIPE_REPORT_ROUNDS=6 cargo bench -p taopipe-nets -- report   # more rounds
//! cargo bench -p taopipe-nets --bench bench_main -- report-depthwise   # that table only
//! ```
//!
//! Every figure is divided by limits measured in the same run (`probe::limits_on`): the FMA
//! peak of one core and the memory bandwidth (copy and read) of one and of two cores at
//! once. The memory-bound layers (FC, depthwise convs) read as GB/s against the bandwidth.

use std::sync::Arc;
use std::time::Instant;

use taopipe_nets::cache::{Blocking, CacheSizes};
use taopipe_nets::gemm::{BlockEpilogue, PackedA, gemm, packed_b_len};
use taopipe_nets::probe;
use taopipe_nets::{
    Activation, ConvAlgo, DepthwiseAlgo, Isa, Kernel, Kernels, Linear, MatMut, Residual, Shape,
};
use taopipe_runtime::{Place, Runtime};

use crate::conv::build;
use crate::depthwise;
use crate::gang::Gang;
use crate::shapes;

/// Best seconds per call of `f` over runs totalling at least `min_secs` (at least 3 runs,
/// after one warm-up call).
pub(crate) fn best_time(f: &mut dyn FnMut(), min_secs: f64) -> f64 {
    f();
    let start = Instant::now();
    let mut best = f64::MAX;
    let mut runs = 0;
    while runs < 3 || start.elapsed().as_secs_f64() < min_secs {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    best
}

/// Whether the command line selects the report.
fn selected() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--test" || a == "--list") {
        return false;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    filters.is_empty() || filters.iter().any(|f| f.contains("report"))
}

/// Rounds of the conv table (`TAOPIPE_REPORT_ROUNDS`, default [`ROUNDS`]).
fn rounds() -> usize {
    match std::env::var("TAOPIPE_REPORT_ROUNDS") {
        Err(_) => ROUNDS,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                panic!("TAOPIPE_REPORT_ROUNDS={v:?}: expected a whole number of rounds, 1 or more")
            }
        },
    }
}

/// Rounds of the conv table by default. Each layer is timed once per round, the rounds one
/// after the other over every layer, and keeps its best: a burst of time stolen by a
/// shared machine's hypervisor (seconds long on the 2-core VM, where two runs of the same
/// layer shape in one report differed by 13 points of the peak) then spoils one round of
/// a layer, not all its runs.
const ROUNDS: usize = 4;

/// Seconds of runs per layer, algorithm and width in each round.
const ROUND_SECS: f64 = 0.1;

/// One conv layer with one algorithm, run as gangs of width 1 and 2.
struct ConvRuns {
    algo: ConvAlgo,
    kernel: Arc<dyn Kernel>,
    gangs: [Gang; 2],
    /// Best seconds at widths 1 and 2 over the rounds so far.
    best: [f64; 2],
}

impl ConvRuns {
    fn new(algo: ConvAlgo, kernel: Arc<dyn Kernel>, x: &[f32]) -> ConvRuns {
        let gang = |w| Gang::new(kernel.clone(), vec![x.to_vec()], w);
        ConvRuns {
            gangs: [gang(1), gang(2)],
            algo,
            kernel,
            best: [f64::MAX; 2],
        }
    }

    /// One round: each width for at least [`ROUND_SECS`].
    fn round(&mut self, rt: &Runtime) {
        for (gang, best) in self.gangs.iter().zip(&mut self.best) {
            *best = best.min(best_time(&mut || gang.run(rt), ROUND_SECS));
        }
    }

    /// GFLOP/s at widths 1 and 2, after checking that their outputs are bit-identical.
    fn gflops(&self, layer: &str) -> [f64; 2] {
        let (y1, y2) = (self.gangs[0].output(), self.gangs[1].output());
        let same = y1.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            same,
            "{layer} {}: width 2 differs from width 1",
            self.algo.name()
        );
        self.best.map(|s| self.kernel.flops() as f64 / s / 1e9)
    }
}

pub(crate) fn run_if_selected() {
    if !selected() {
        return;
    }
    let isa = Isa::current().expect("TAOPIPE_ISA names a path this CPU runs");
    let rounds = rounds();
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let limits = |width| {
        probe::limits_on(&rt, Place::new(0, width), isa, 0.5, probe::LIMITS_BYTES)
            .expect("the runtime has 2 workers")
    };
    let (one, two) = (limits(1), limits(2));
    let (peak, bw1, bw2) = (one.fma_gflops, one.bandwidth, two.bandwidth);
    if std::env::args().any(|a| a.contains("report-depthwise")) {
        println!(
            "kernels `{isa}`; copy bandwidth {:.1} GB/s on 1 core, {:.1} on 2",
            bw1.copy_gbs, bw2.copy_gbs
        );
        depthwise_table(&rt, rounds, [bw1.copy_gbs, bw2.copy_gbs]);
        return;
    }
    println!("\n## The machine, measured now\n");
    println!(
        "- kernels: `{isa}` ({}; {} for the direct path's reductions over 192)",
        isa.kernels(),
        isa.wide_kernels()
    );
    println!(
        "- FMA peak of one core: **{peak:.1} GFLOP/s**; of two at once {:.1} ({:.2}×) (independent FMA chains, `probe::limits_on`)",
        two.fma_gflops,
        two.fma_gflops / peak
    );
    println!(
        "- memory bandwidth, 1 core: copy {:.1} GB/s, read {:.1} GB/s; 2 cores at once: copy {:.1} GB/s, read {:.1} GB/s (`probe::limits_on`, {} MiB of buffers shared out)",
        bw1.copy_gbs,
        bw1.read_gbs,
        bw2.copy_gbs,
        bw2.read_gbs,
        probe::LIMITS_BYTES >> 20
    );

    println!("\n## Conv layers, GFLOP/s through the runtime at gang widths 1 and 2\n");
    println!(
        "Direct: im2col into panels + the packed GEMM. Lanes: the channel-lanes direct conv (output channels in the vector lanes, the input read in place from a padded copy). Winograd: the tiling `chosen` names, else F(4×4,3×3); effective GFLOP/s"
    );
    println!(
        "(the direct FLOP count over Winograd's time), where it applies. % is of the measured"
    );
    println!("peak (w2: of twice it). `chosen` is what `ConvAlgo::choose` runs in a model.");
    println!(
        "Each figure is the best over {rounds} rounds (`TAOPIPE_REPORT_ROUNDS`) of at least {ROUND_SECS} s of runs; the rounds pass over every layer in turn.\n"
    );
    println!(
        "| layer | in → out | GFLOP | chosen | direct w1 | % | direct w2 | % | lanes w1 | % | lanes w2 | % | Winograd w1 | × direct | Winograd w2 | × direct |"
    );
    println!("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut flops_all = 0.0;
    // Seconds of all layers at widths 1 and 2: direct, lanes, the algorithm chosen.
    let (mut direct_s, mut lanes_s, mut chosen_s) = ([0.0; 2], [0.0; 2], [0.0; 2]);
    // Seconds of the faster direct conv of each layer, at widths 1 and 2.
    let mut either_s = [0.0; 2];
    let mut percents = Vec::new();
    // Every layer with every algorithm that applies (Direct, Lanes, then Winograd), built
    // once.
    let mut layers: Vec<_> = shapes::all()
        .map(|layer| {
            let (conv, x) = build(layer);
            let chosen = conv.algo();
            let winograd = if chosen.tile().is_some() {
                chosen
            } else {
                ConvAlgo::Winograd
            };
            let runs: Vec<ConvRuns> = [ConvAlgo::Direct, ConvAlgo::Lanes, winograd]
                .into_iter()
                .filter(|algo| algo.applies(conv.params()))
                .map(|algo| {
                    let c = conv.clone().with_algo(algo).expect("applies");
                    ConvRuns::new(algo, Arc::new(c), &x)
                })
                .collect();
            (layer, conv, runs)
        })
        .collect();
    for round in 0..rounds {
        eprintln!("conv layers: round {} of {rounds}", round + 1);
        for (_, _, runs) in &mut layers {
            for r in runs.iter_mut() {
                r.round(&rt);
            }
        }
    }
    for (layer, conv, runs) in &layers {
        let flops = conv.flops() as f64;
        let chosen = conv.algo();
        let of = |algo: ConvAlgo| {
            runs.iter()
                .find(|r| r.algo == algo)
                .map(|r| r.gflops(layer.name))
        };
        let (direct, lanes) = (
            of(ConvAlgo::Direct).expect("always applies"),
            of(ConvAlgo::Lanes).expect("always applies"),
        );
        let winograd = runs
            .iter()
            .find(|r| r.algo.tile().is_some())
            .map(|r| r.gflops(layer.name));
        let fastest = of(chosen).expect("the chosen algorithm is run");
        flops_all += flops;
        for w in 0..2 {
            direct_s[w] += flops / direct[w];
            lanes_s[w] += flops / lanes[w];
            either_s[w] += flops / direct[w].max(lanes[w]);
            chosen_s[w] += flops / fastest[w];
        }
        percents.push(100.0 * direct[0] / peak);
        let wino = |i: usize| {
            winograd.map_or("—|—".to_string(), |w| {
                format!("{:.1}|{:.2}", w[i], w[i] / direct[i])
            })
        };
        println!(
            "| {} | {} → {} | {:.3} | {} | {:.1} | {:.0}% | {:.1} | {:.0}% | {:.1} | {:.0}% | {:.1} | {:.0}% | {} | {} |",
            layer.name,
            conv.in_shape(),
            conv.out_shape(),
            flops / 1e9,
            chosen.name(),
            direct[0],
            100.0 * direct[0] / peak,
            direct[1],
            100.0 * direct[1] / (2.0 * peak),
            lanes[0],
            100.0 * lanes[0] / peak,
            lanes[1],
            100.0 * lanes[1] / (2.0 * peak),
            wino(0),
            wino(1),
        );
    }
    let n = percents.len() as f64;
    println!(
        "\n**Direct path, all {} layers at width 1: {:.1} GFLOP/s = {:.1}% of the peak** (total FLOPs over total time); mean of the per-layer percentages {:.1}%. Width 2: {:.1} GFLOP/s = {:.1}% of twice the peak.",
        percents.len(),
        flops_all / direct_s[0],
        100.0 * flops_all / direct_s[0] / peak,
        percents.iter().sum::<f64>() / n,
        flops_all / direct_s[1],
        100.0 * flops_all / direct_s[1] / (2.0 * peak),
    );
    println!(
        "**Channel-lanes path, the same layers: {:.1} GFLOP/s = {:.1}% of the peak at width 1**; {:.1} GFLOP/s = {:.1}% of twice the peak at width 2.",
        flops_all / lanes_s[0],
        100.0 * flops_all / lanes_s[0] / peak,
        flops_all / lanes_s[1],
        100.0 * flops_all / lanes_s[1] / (2.0 * peak),
    );
    println!(
        "The faster of the two direct convs on each layer: {:.1} GFLOP/s = {:.1}% of the peak at width 1, {:.1} GFLOP/s = {:.1}% of twice the peak at width 2.",
        flops_all / either_s[0],
        100.0 * flops_all / either_s[0] / peak,
        flops_all / either_s[1],
        100.0 * flops_all / either_s[1] / (2.0 * peak),
    );
    println!(
        "With the algorithm each layer is built with: {:.1} effective GFLOP/s at width 1, {:.1} at width 2 ({:.2}× and {:.2}× the direct path). Every layer's width-2 output is bit-identical to width 1's.",
        flops_all / chosen_s[0],
        flops_all / chosen_s[1],
        direct_s[0] / chosen_s[0],
        direct_s[1] / chosen_s[1],
    );

    residuals(&rt, rounds);
    tiles(isa, peak);

    println!("\n## Fully connected layers (batch 1: memory-bound), GB/s of weights read\n");
    println!(
        "| layer | weights MB | w1 ms | w1 GB/s | % of 1-core read | % of 1-core copy | w2 ms | w2 GB/s | % of 2-core read | % of 2-core copy |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for fc in shapes::FC {
        let weights: Vec<f32> = (0..fc.inputs * fc.outputs)
            .map(|i| (i % 7) as f32 * 0.01)
            .collect();
        let layer = Linear::new(Shape::vector(fc.inputs), fc.outputs, weights, None, true)
            .expect("table shapes are valid");
        let bytes = (fc.inputs * fc.outputs * 4) as f64;
        let layer: Arc<dyn Kernel> = Arc::new(layer);
        let x: Vec<f32> = (0..fc.inputs).map(|i| (i % 5) as f32 * 0.1).collect();
        let secs: Vec<f64> = [1, 2]
            .into_iter()
            .map(|w| {
                let gang = Gang::new(layer.clone(), vec![x.clone()], w);
                best_time(&mut || gang.run(&rt), 0.3)
            })
            .collect();
        let gbs = |s: f64| bytes / s / 1e9;
        println!(
            "| {} | {:.1} | {:.2} | {:.1} | {:.0}% | {:.0}% | {:.2} | {:.1} | {:.0}% | {:.0}% |",
            fc.name,
            bytes / 1e6,
            secs[0] * 1e3,
            gbs(secs[0]),
            100.0 * gbs(secs[0]) / bw1.read_gbs,
            100.0 * gbs(secs[0]) / bw1.copy_gbs,
            secs[1] * 1e3,
            gbs(secs[1]),
            100.0 * gbs(secs[1]) / bw2.read_gbs,
            100.0 * gbs(secs[1]) / bw2.copy_gbs,
        );
    }

    depthwise_table(&rt, rounds, [bw1.copy_gbs, bw2.copy_gbs]);
}

/// MobileNet V1's and V2's depthwise convs at widths 1 and 2: GB/s of the bytes each must
/// move (input, output, weights and bias, each once: `depthwise::bytes`), against the copy
/// bandwidth of as many cores measured in this run (`copy`: one core, two at once), best
/// over `rounds` rounds over every layer, as the conv table; and the other algorithm's
/// times (`DepthwiseAlgo::Planes`), taking turns with the default in each round. Each
/// layer's outputs are checked bit-identical across widths and algorithms.
fn depthwise_table(rt: &Runtime, rounds: usize, copy: [f64; 2]) {
    println!("\n## Depthwise convolutions (memory-bound), GB/s of input + output + weights\n");
    println!(
        "MobileNet V2's and V1's 3×3 depthwise convs (padding 1, ReLU6), each shape once; `per frame` is how many a frame runs. GB/s counts the input, the output and the weights and bias once each; % is of the copy bandwidth of as many cores, measured above (STREAM's convention: bytes read + written). Best over {rounds} rounds of at least {ROUND_SECS} s each; `planes` is the plane-by-plane algorithm in the same rounds.\n"
    );
    println!(
        "| layer | in → out | per frame | MB | w1 ms | w1 GB/s | % of 1-core copy | w2 ms | w2 GB/s | % of 2-core copy | w2 speed-up | planes w1 ms | planes w2 ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut runs: Vec<_> = shapes::DEPTHWISE
        .iter()
        .map(|layer| {
            let (dw, x) = depthwise::build(layer);
            let bytes = depthwise::bytes(&dw) as f64;
            let (in_shape, out_shape) = (dw.in_shape(), dw.out_shape());
            let planes: Arc<dyn Kernel> = Arc::new(dw.clone().with_algo(DepthwiseAlgo::Planes));
            let dw: Arc<dyn Kernel> = Arc::new(dw);
            let gangs = [&dw, &planes, &dw, &planes]
                .iter()
                .zip([1, 1, 2, 2])
                .map(|(k, w)| Gang::new((*k).clone(), vec![x.clone()], w))
                .collect::<Vec<_>>();
            (layer, bytes, (in_shape, out_shape), gangs, [f64::MAX; 4])
        })
        .collect();
    for round in 0..rounds {
        eprintln!("depthwise convs: round {} of {rounds}", round + 1);
        for (_, _, _, gangs, best) in &mut runs {
            for (gang, b) in gangs.iter().zip(best.iter_mut()) {
                *b = b.min(best_time(&mut || gang.run(rt), ROUND_SECS));
            }
        }
    }
    // Per net: a frame's depthwise time at each width (shapes times their count).
    let mut frame = [("v2", [0.0; 4]), ("v1", [0.0; 4])];
    for (layer, bytes, (input, output), gangs, best) in &runs {
        let y = gangs[0].output();
        for g in &gangs[1..] {
            assert!(
                y.iter()
                    .zip(&g.output())
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{}: a width or algorithm differs from width 1's",
                layer.name
            );
        }
        let best = [best[0], best[2], best[1], best[3]];
        let gbs = [best[0], best[1]].map(|s| bytes / s / 1e9);
        for (net, total) in &mut frame {
            if layer.name.starts_with(*net) {
                for (t, s) in total.iter_mut().zip(best) {
                    *t += s * layer.per_frame as f64;
                }
            }
        }
        println!(
            "| {} | {input} → {output} | {} | {:.2} | {:.3} | {:.1} | {:.0}% | {:.3} | {:.1} | {:.0}% | {:.2}× | {:.3} | {:.3} |",
            layer.name,
            layer.per_frame,
            bytes / 1e6,
            best[0] * 1e3,
            gbs[0],
            100.0 * gbs[0] / copy[0],
            best[1] * 1e3,
            gbs[1],
            100.0 * gbs[1] / copy[1],
            best[0] / best[1],
            best[2] * 1e3,
            best[3] * 1e3,
        );
    }
    for (net, [w1, w2, p1, p2]) in frame {
        println!(
            "\nMobileNet {}: its depthwise convs take **{:.2} ms** a frame at width 1, {:.2} at width 2 (plane by plane: {:.2} and {:.2}).",
            net.to_uppercase(),
            w1 * 1e3,
            w2 * 1e3,
            p1 * 1e3,
            p2 * 1e3
        );
    }
    println!("Every layer's outputs are bit-identical at both widths, by both algorithms.");
}

/// ResNet50's convs that take the fused residual add, and how many of each a frame runs
/// (`c3` of every bottleneck but a stage's first, whose `ds` takes it instead).
const RESIDUAL_LAYERS: [(&str, usize); 7] = [
    ("rn.l1.c3+ds", 3),
    ("rn.l2.ds.s2", 1),
    ("rn.l2.c3", 3),
    ("rn.l3.ds.s2", 1),
    ("rn.l3.c3", 5),
    ("rn.l4.ds.s2", 1),
    ("rn.l4.c3", 2),
];

/// What the fused residual add costs ResNet50's convs at width 1: each layer without it,
/// with its residual in a buffer of its own, and reading it from its own output (what a
/// frame does where the conv is its shortcut's last reader and the algorithm allows,
/// `Kernel::in_place_input`), in the same rounds.
fn residuals(rt: &Runtime, rounds: usize) {
    println!("\n## Fused residual add, ResNet50, width 1\n");
    println!(
        "Each conv alone and with `relu(conv + bias + residual)` fused into the GEMM's store: the residual in a buffer of its own (apart), or read from the output it overwrites (in place; `—` where the reduction is more than one `kc` block, so the frame keeps it apart). Best over {rounds} rounds of at least {ROUND_SECS} s each.\n"
    );
    println!(
        "| layer | in → out | per frame | alone ms | apart ms | cost | in place ms | cost | cost per frame ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut runs: Vec<_> = RESIDUAL_LAYERS
        .iter()
        .map(|&(name, count)| {
            let layer = shapes::RESNET50
                .iter()
                .find(|l| l.name == name)
                .expect("a residual layer is in the ResNet50 table");
            let (conv, x) = build(layer);
            let residual: Vec<f32> = (0..conv.out_shape().len())
                .map(|i| (i % 9) as f32 * 0.1 - 0.4)
                .collect();
            let out = conv.out_shape();
            let fused: Arc<dyn Kernel> = Arc::new(conv.clone().with_residual(true));
            let mut gangs = vec![
                Gang::new(Arc::new(conv), vec![x.clone()], 1),
                Gang::new(fused.clone(), vec![x.clone(), residual], 1),
            ];
            // In place, the output is the residual of the next run: timing only.
            if fused.in_place_input() {
                gangs.push(Gang::new(fused, vec![x], 1));
            }
            let best = vec![f64::MAX; gangs.len()];
            (layer, out, count, gangs, best)
        })
        .collect();
    for _ in 0..rounds {
        for (_, _, _, gangs, best) in &mut runs {
            for (gang, b) in gangs.iter().zip(best.iter_mut()) {
                *b = b.min(best_time(&mut || gang.run(rt), ROUND_SECS));
            }
        }
    }
    let mut total = 0.0;
    let mut total_apart = 0.0;
    let ms = |t: f64| format!("{:.3}", t * 1e3);
    let cost = |t: f64, alone: f64| format!("{:+.0}%", 100.0 * (t / alone - 1.0));
    for (layer, out, count, _, best) in &runs {
        let (alone, apart, in_place) = (best[0], best[1], best.get(2).copied());
        let frame = in_place.unwrap_or(apart);
        total += (frame - alone) * *count as f64;
        total_apart += (apart - alone) * *count as f64;
        println!(
            "| {} | {} → {} | {count} | {} | {} | {} | {} | {} | {:.2} |",
            layer.name,
            layer.input,
            out,
            ms(alone),
            ms(apart),
            cost(apart, alone),
            in_place.map_or("—".into(), ms),
            in_place.map_or("—".into(), |t| cost(t, alone)),
            (frame - alone) * *count as f64 * 1e3,
        );
    }
    println!(
        "\nThe fused residual adds **{:.2} ms** to a ResNet50 frame's convs at width 1 as a frame runs them (in place where it can), against {:.2} ms with every residual apart.",
        total * 1e3,
        total_apart * 1e3
    );
}

/// GEMM shapes (rows × pixels × reduction) of the conv layers that weigh most: VGG16's
/// 3×3 convs at three resolutions, ResNet50's 1×1 convs, its 7×7 stage.
const TILE_SHAPES: [(usize, usize, usize); 5] = [
    (128, 12544, 576),
    (512, 784, 2304),
    (256, 3136, 64),
    (1024, 196, 256),
    (512, 49, 4608),
];

/// The GEMM alone (packed operands, bias + ReLU store), one core, for every tile shape
/// built for `isa`: the measurement behind the tile each ISA's table uses (its first row).
fn tiles(isa: Isa, peak: f64) {
    println!("\n## GEMM tile shapes, one core, % of the measured peak\n");
    let head: Vec<String> = TILE_SHAPES
        .iter()
        .map(|(m, n, k)| format!("{m}×{n}×{k}"))
        .collect();
    println!("| tile | {} | mean |", head.join(" | "));
    println!("|---|{}---:|", "---:|".repeat(head.len()));
    for kernels in Kernels::variants(isa) {
        let percents: Vec<f64> = TILE_SHAPES
            .iter()
            .map(|&(m, n, k)| 100.0 * gemm_gflops(kernels, m, n, k) / peak)
            .collect();
        let cells: Vec<String> = percents.iter().map(|p| format!("{p:.0}%")).collect();
        let mean = percents.iter().sum::<f64>() / percents.len() as f64;
        println!("| {kernels} | {} | {mean:.0}% |", cells.join(" | "));
    }
}

/// GFLOP/s of `C[m × n] = A · B` with `kernels`, operands packed beforehand.
fn gemm_gflops(kernels: &Kernels, m: usize, n: usize, k: usize) -> f64 {
    let blocking = Blocking::new(kernels, CacheSizes::get());
    let a = PackedA::pack(kernels.mr, blocking.kc, m, k, |r, c| {
        ((r * 7 + c) % 13) as f32 * 0.01
    });
    let b = vec![0.5f32; packed_b_len(k, n.div_ceil(kernels.nr), kernels.nr)];
    let bias = vec![0.1f32; m];
    let mut c = vec![0.0f32; m * n];
    let epilogue = BlockEpilogue {
        bias: &bias,
        residual: Residual::None,
        act: Activation::Relu,
    };
    let secs = best_time(
        &mut || {
            let mut out = MatMut::from_slice(&mut c, n, m, n);
            gemm(kernels, &blocking, &a, 0..m, &b, &mut out, Some(&epilogue));
        },
        0.2,
    );
    2.0 * (m * n * k) as f64 / secs / 1e9
}
