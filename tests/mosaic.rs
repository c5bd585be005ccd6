//! MOSAIC on the live runtime: the profiler's table and bytes, and plans run slice after
//! slice giving the same bits as one place.

use std::sync::Arc;
use taopipe::live::devices::devices;
use taopipe::nets::{Model, RandomWeights, zoo};

use taopipe::live::planners::mosaic::Plan;
use taopipe::live::planners::mosaic::UNLIMITED;
use taopipe::live::planners::mosaic::{Profile, ProfileOptions, cut_bytes, profile, unit_memory};
use taopipe::runtime::{EmulationSpec, Place, Runtime, Topology};

fn alexnet() -> Model {
    Model::build(zoo::alexnet().expect("alexnet"), &RandomWeights { seed: 3 }).expect("model")
}

/// Two workers, worker 1 at half speed: two devices, fast first.
fn asymmetric() -> Runtime {
    let rt = Runtime::builder()
        .topology(Topology::symmetric(2).expect("topology"))
        .pin(false)
        .build()
        .expect("runtime");
    rt.emulate(&"w1=powersave".parse::<EmulationSpec>().expect("spec"))
        .expect("emulate");
    rt
}

fn input(len: usize, seed: u64) -> Vec<f32> {
    (0..len)
        .map(|i| ((i as u64 * 2_654_435_761 + seed) % 1000) as f32 / 1000.0 - 0.5)
        .collect()
}

#[test]
fn bytes_and_memory_come_from_the_net() {
    let model = alexnet();
    let cuts = cut_bytes(model.spec());
    assert_eq!(cuts.len(), 12); // 11 units
    assert_eq!(cuts[0], 3 * 224 * 224 * 4);
    assert_eq!(cuts[11], 1000 * 4);
    // after conv1 (64×55×55, relu fused) comes pool1
    assert_eq!(cuts[1], 64 * 55 * 55 * 4);
    let memory = unit_memory(&model);
    // fc6 (`classifier_1`): 4096 × 9216 weights + 4096 biases, and its 4096 outputs
    let fc6 = model
        .spec()
        .units()
        .iter()
        .position(|u| u.name() == "classifier_1")
        .expect("classifier_1");
    assert_eq!(memory[fc6], (4096 * 9216 + 4096 + 4096) * 4);
}

#[test]
fn profiled_plans_run_bit_identical_to_one_place() {
    let rt = asymmetric();
    let model = Arc::new(alexnet());
    let devs = devices(&rt);
    assert_eq!(devs.len(), 2);
    let frame = input(model.input_len(), 1);
    let options = ProfileOptions {
        transfer_sizes: vec![16 << 10, 256 << 10, 1 << 20],
        ..ProfileOptions::default()
    };
    let profiled = profile(&rt, &model, frame.clone(), &devs, &options).expect("profile");
    let table = profiled.exec_ms();
    assert_eq!(table.len(), 11);
    assert!(
        table
            .iter()
            .all(|row| row.len() == 2 && row.iter().all(|t| t.is_finite() && *t > 0.0)),
        "{table:?}"
    );
    let total = |d: usize| table.iter().map(|row| row[d]).sum::<f64>();
    assert!(
        total(1) > 1.3 * total(0),
        "the half-speed device took {} ms, the fast one {} ms",
        total(1),
        total(0)
    );
    // 2 ordered pairs × 3 sizes × 3 repetitions
    assert_eq!(profiled.transfers.len(), 18);
    assert!(
        profiled
            .transfers
            .iter()
            .all(|s| s.cross_ms > 0.0 && s.local_ms > 0.0)
    );

    let reference = model
        .forward(&rt, frame.clone(), Place::new(0, 1))
        .expect("reference");
    let plan = profiled.problem.solve().expect("plan");
    let outputs = run_plan(&rt, &model, &profiled, &plan, &frame, 2);
    assert_eq!(outputs, vec![reference.clone(); 2], "plan {plan}");

    // fc6 too big for the fast device: the plan must cut around it and still give the
    // same bits
    let mut problem = profiled.problem.clone();
    let fc6 = &problem.units[8];
    assert_eq!(fc6.name, "classifier_1");
    problem.device_memory = vec![fc6.memory_bytes - 1, UNLIMITED];
    let plan = problem.solve().expect("plan");
    assert!(plan.slices.len() >= 2, "{plan}");
    assert_eq!(plan.device_of_units()[8], 1, "{plan}");
    let outputs = run_plan(&rt, &model, &profiled, &plan, &frame, 1);
    assert_eq!(outputs, vec![reference], "plan {plan}");
}

#[test]
fn bad_options_and_slices_are_refused() {
    let rt = asymmetric();
    let model = alexnet();
    let devs = devices(&rt);
    let frame = input(model.input_len(), 2);
    let one_size = ProfileOptions {
        transfer_sizes: vec![4096, 4096],
        ..ProfileOptions::default()
    };
    let err = profile(&rt, &model, frame.clone(), &devs, &one_size).expect_err("one size");
    assert!(err.to_string().contains("[4096, 4096]"), "{err}");
    let budgets = ProfileOptions {
        memory_budgets: vec![1],
        ..ProfileOptions::default()
    };
    let err = profile(&rt, &model, frame.clone(), &devs, &budgets).expect_err("budgets");
    assert!(
        err.to_string().contains("1 memory budgets for 2 devices"),
        "{err}"
    );
}

/// Runs `plan` in switch mode for `frames` frames of `input`; the outputs in order.
fn run_plan(
    rt: &Runtime,
    model: &Arc<Model>,
    profiled: &Profile,
    plan: &Plan,
    input: &[f32],
    frames: usize,
) -> Vec<Vec<f32>> {
    let switch = profiled.switch(model.clone(), plan).expect("switch plan");
    let source = (0..frames).map(|_| model.frame(input.to_vec()).expect("input length"));
    let mut outputs = Vec::new();
    let stats = switch
        .run(rt, source, |_, f| outputs.push(f.output()))
        .expect("run");
    assert_eq!(stats.frames as usize, frames);
    assert!(stats.latency_ms(0.5) <= stats.latency_ms(0.99));
    outputs
}
