//! The CoDL planner: ratios from measured speeds move toward the faster device, base ratios
//! are the predictor's optimum on the chunk grid (brute force), chains form where exchanges
//! cost more than sharing one ratio, plans run bit-identical to a single place, and bad
//! inputs are refused by name.

use std::time::Duration;

use taopipe::dsl::net;
use taopipe::live::planners::codl::{self, CodlError, CodlOptions, FrameStats, Profile};
use taopipe::nets::{Model, RandomWeights, zoo};
use taopipe::runtime::{EmulationSpec, Latencies, Place, Runtime, Topology};

fn runtime() -> Runtime {
    Runtime::builder()
        .topology(Topology::symmetric(2).expect("topology"))
        .build()
        .expect("runtime")
}

fn emulate(rt: &Runtime, spec: &str) {
    rt.emulate(&spec.parse::<EmulationSpec>().expect("spec"))
        .expect("emulate");
}

#[test]
fn the_ratio_moves_toward_the_faster_device() {
    let rt = runtime();
    let model =
        Model::build(zoo::alexnet().expect("alexnet"), &RandomWeights { seed: 4 }).expect("model");
    let input = vec![0.25; model.input_len()];
    let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    let options = CodlOptions::default();
    let mut shares = Vec::new();
    for (spec, pair) in [
        ("w1=powersave", (a, b)),
        ("w0=powersave,w1=performance", (b, a)),
    ] {
        emulate(&rt, spec);
        assert_eq!(codl::device_pair(&rt).expect("two devices"), pair, "{spec}");
        // The same a and b both times: only the speeds change.
        let profile = Profile::measure(&rt, &model, &input, a, b, &options).expect("profile");
        let (on_a, on_b): (f64, f64) = (
            profile.unit_ms_a.iter().sum(),
            profile.unit_ms_b.iter().sum(),
        );
        let plan = codl::plan(&model, &profile, &options).expect("plan");
        println!(
            "{spec}: a {on_a:.1} ms, b {on_b:.1} ms, sync {:.3} ms\n{plan}",
            profile.sync_ms
        );
        shares.push(plan.share_a());
        let want = model.forward(&rt, input.clone(), a).expect("single place");
        assert_eq!(plan.forward(&rt, &model, &input).expect("split"), want);
        let stats = plan.run(&rt, &model, &input, 3).expect("run");
        assert_eq!(stats.latency.len(), 3);
        assert!(stats.p50_ms() <= stats.p99_ms() && stats.throughput_fps() > 0.0);
    }
    assert!(
        shares[0] > 0.55 && shares[1] < 0.45,
        "a's share should follow its speed: {shares:?} (a fast, then a slow)"
    );
}

/// One 3×3 convolution with 64 output channels: 16 chunks of 4.
fn one_conv() -> Model {
    let spec = net! { one [3, 8, 8] => conv1: conv(64, 3x3, pad 1) }.expect("net");
    Model::build(spec, &RandomWeights { seed: 1 }).expect("model")
}

fn profile(a_ms: &[f64], b_ms: &[f64], sync_ms: f64) -> Profile {
    Profile {
        a: Place::new(0, 1),
        b: Place::new(1, 1),
        unit_ms_a: a_ms.to_vec(),
        unit_ms_b: b_ms.to_vec(),
        split_factor: vec![1.0; a_ms.len()],
        sync_ms,
    }
}

#[test]
fn a_unit_gets_the_chunk_grid_ratio_of_least_predicted_time() {
    let model = one_conv();
    let options = CodlOptions::default();
    let cases = [
        (1.0, 1.0),
        (1.0, 2.0),
        (3.0, 1.0),
        (1.0, 7.0),
        (1.0, 40.0),
        (5.0, 0.1),
    ];
    for ((ta, tb), factor) in cases
        .into_iter()
        .flat_map(|c| [(c, 1.0), (c, 1.3), (c, 2.5)])
    {
        let mut p = profile(&[ta], &[tb], 0.2);
        p.split_factor = vec![factor];
        let plan = codl::plan(&model, &p, &options).expect("plan");
        // Brute force over a's chunk count: the first k of least predicted time.
        let cost = |k: usize| {
            let split = if k == 0 || k == 16 { 1.0 } else { factor };
            f64::max(ta * k as f64 / 16.0, tb * (16 - k) as f64 / 16.0) * split
        };
        let best = (0..=16)
            .min_by(|&x, &y| cost(x).total_cmp(&cost(y)))
            .expect("k");
        let layer = &plan.split().layers()[0];
        assert_eq!(
            layer.chunks_a.len(),
            best,
            "{ta} / {tb} ms, factor {factor}"
        );
        assert!(
            (plan.predicted_ms() - cost(best)).abs() < 1e-9,
            "{ta} / {tb}"
        );
        // The net's input is shared: a first unit pays no exchange.
        assert_eq!(plan.split().exchanges(), 0);
    }
}

/// conv1 → pool1 → conv2 → fc: pool1 keeps channels apart, so it can join conv1's chain.
fn conv_pool_net() -> Model {
    let spec = net! { cp [3, 16, 16] =>
        conv1: conv(64, 3x3, pad 1) relu,
        pool1: maxpool(2x2, stride 2),
        conv2: conv(32, 3x3, pad 1) relu,
        fc: fc(10),
    }
    .expect("net");
    Model::build(spec, &RandomWeights { seed: 1 }).expect("model")
}

#[test]
fn chains_form_where_an_exchange_costs_more_than_sharing_a_ratio() {
    let model = conv_pool_net();
    let options = CodlOptions::default();
    let (a_ms, b_ms) = ([4.0, 1.0, 3.0, 0.5], [8.0, 2.0, 6.0, 1.0]);
    let units = |plan: &codl::CodlPlan| -> Vec<std::ops::Range<usize>> {
        plan.chains().iter().map(|c| c.units.clone()).collect()
    };
    // Exchanges cost nothing: no chain gains, every unit keeps its own ratio.
    let free = codl::plan(&model, &profile(&a_ms, &b_ms, 0.0), &options).expect("plan");
    assert_eq!(units(&free), vec![0..1, 1..2, 2..3, 3..4]);
    // An exchange costs 0.5 ms: pool1 joins conv1's chain and reads its own side's part.
    let dear = codl::plan(&model, &profile(&a_ms, &b_ms, 0.5), &options).expect("plan");
    assert_eq!(units(&dear)[0], 0..2, "{dear}");
    assert!(dear.split().layer(0).expect("conv1").interior);
    assert!(!dear.split().layer(1).expect("pool1").exchange);
    assert!(dear.predicted_ms() <= free.predicted_ms() + 0.5 * 4.0);
    // Exchanges so dear that one device alone wins: everything on the faster a.
    let alone = codl::plan(&model, &profile(&a_ms, &b_ms, 100.0), &options).expect("plan");
    assert_eq!(units(&alone), vec![0..4]);
    assert_eq!(alone.share_a(), 1.0);
    assert!((alone.predicted_ms() - a_ms.iter().sum::<f64>()).abs() < 1e-9);
}

#[test]
fn the_prediction_adds_runs_between_exchanges() {
    // An independent evaluation of the documented predictor on the four-unit net.
    let model = conv_pool_net();
    let (a_ms, b_ms, sync) = ([4.0, 1.0, 3.0, 0.5], [8.0, 2.0, 6.0, 1.0], 0.3);
    let mut p = profile(&a_ms, &b_ms, sync);
    p.split_factor = vec![1.2, 1.1, 1.5, 3.0];
    let chains = [
        taopipe::nets::Chain::new(0..2, 0.75),
        taopipe::nets::Chain::new(2..3, 0.5),
        taopipe::nets::Chain::new(3..4, 1.0),
    ];
    let split = model.split_plan(p.a, p.b, &chains).expect("plan");
    // conv1 (64 ch, chunks of 4) and pool1 (chunks of 2) share the cut 48: f = 0.75, no
    // exchange between them; conv2 (32 ch, 8 chunks) at 4/8 waits on both; fc (10 features)
    // all on a waits on conv2's b side.
    let shares: Vec<f64> = split.layers().iter().map(|l| l.share_a).collect();
    assert_eq!(shares, vec![0.75, 0.75, 0.5, 1.0]);
    let exchanges: Vec<bool> = split.layers().iter().map(|l| l.exchange).collect();
    assert_eq!(exchanges, vec![false, false, true, true]);
    // Split units take their split factor; fc, on a alone, does not.
    let want = f64::max(
        4.0 * 0.75 * 1.2 + 1.0 * 0.75 * 1.1,
        8.0 * 0.25 * 1.2 + 2.0 * 0.25 * 1.1,
    ) + sync
        + f64::max(3.0 * 0.5, 6.0 * 0.5) * 1.5
        + sync
        + 0.5;
    assert!((codl::predict(&model, &p, &split) - want).abs() < 1e-9);
}

#[test]
fn bad_inputs_are_refused_naming_the_value() {
    let rt = runtime();
    let err = codl::device_pair(&rt).expect_err("one device");
    assert!(matches!(err, CodlError::Devices { found: 1 }), "{err}");
    let model = one_conv();
    let input = vec![0.0; model.input_len()];
    let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    for (options, name) in [
        (
            CodlOptions {
                reps: 0,
                ..CodlOptions::default()
            },
            "reps",
        ),
        (
            CodlOptions {
                sync_probes: 0,
                ..CodlOptions::default()
            },
            "sync_probes",
        ),
        (
            CodlOptions {
                delta: 1.5,
                ..CodlOptions::default()
            },
            "1.5",
        ),
    ] {
        let err = Profile::measure(&rt, &model, &input, a, b, &options).expect_err("option");
        assert!(err.to_string().contains(name), "{err}");
    }
    let err = codl::plan(
        &model,
        &profile(&[1.0, 2.0], &[1.0, 2.0], 0.0),
        &CodlOptions::default(),
    )
    .expect_err("two units for a one-unit net");
    assert!(
        matches!(
            err,
            CodlError::Profile {
                expected: 1,
                got: 2,
                ..
            }
        ),
        "{err}"
    );
    let plan = codl::plan(
        &model,
        &profile(&[1.0], &[1.0], 0.0),
        &CodlOptions::default(),
    )
    .expect("plan");
    let err = plan.run(&rt, &model, &input, 0).expect_err("no frames");
    assert!(err.to_string().contains("frames"), "{err}");
    let err = plan
        .run(&rt, &model, &input[1..], 1)
        .expect_err("short input");
    assert!(
        err.to_string().contains(&(input.len() - 1).to_string()),
        "{err}"
    );
}

#[test]
fn frame_stats_use_the_shared_quantile() {
    let mut latency = Latencies::new();
    for ms in [5, 1, 4, 2, 3] {
        latency.record(Duration::from_millis(ms));
    }
    let stats = FrameStats {
        graph: latency.clone(),
        latency,
        wall_s: 0.5,
    };
    // `Latencies::quantile_ms`: nearest rank, to 3 significant digits.
    assert!((stats.p50_ms() - 3.0).abs() < 3e-3, "{}", stats.p50_ms());
    assert!((stats.p99_ms() - 5.0).abs() < 5e-3, "{}", stats.p99_ms());
    assert_eq!(stats.graph_p50_ms(), stats.p50_ms());
    assert_eq!(stats.throughput_fps(), 10.0);
}
