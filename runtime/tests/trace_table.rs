//! The trace table reacts to emulated asymmetry: tasks that leave their place to the
//! runtime learn to avoid a slowed worker, and learn again when its speed comes back.

use taopipe_runtime::{EmulationSpec, Objective, Place, PlacePolicy, Runtime, Task, TaskGraph};

mod common;

fn run_auto_tasks(rt: &Runtime, n: usize) {
    let mut g = TaskGraph::new();
    let mut prev = None;
    for _ in 0..n {
        // Width-aware work: each rank does its share, so a wider place is faster.
        let t = g.add(Task::new("work", |ctx| common::spin_for(2000 / ctx.width() as u64)).auto());
        if let Some(p) = prev {
            g.make_edge(p, t); // one at a time, so measurements do not overlap
        }
        prev = Some(t);
    }
    rt.run(g).expect("runs");
}

#[test]
fn auto_placement_avoids_a_slowed_worker() {
    let rt = Runtime::builder()
        .workers(2)
        .place_policy(PlacePolicy {
            objective: Objective::WidthTime,
            explore: 0.0,
        })
        .build()
        .expect("rt");
    rt.emulate(&"w1=0.25".parse::<EmulationSpec>().expect("spec"))
        .expect("fits");
    run_auto_tasks(&rt, 30);
    let table = rt.trace_table();
    let row = table.row("work", 0).expect("row");
    let fast = row.entry(Place::new(0, 1)).expect("measured").seconds;
    let slow = row.entry(Place::new(1, 1)).expect("measured").seconds;
    assert!(
        slow > 2.0 * fast,
        "worker 1 at quarter speed should measure far slower: {fast} vs {slow}\n{table}"
    );
    // Greedy after the first samples: nearly all runs went to the fast worker.
    let fast_runs = row.entry(Place::new(0, 1)).expect("measured").samples;
    assert!(
        fast_runs >= 25,
        "only {fast_runs} of 30 runs on the fast place\n{table}"
    );
}

#[test]
fn speeds_can_change_while_tasks_run() {
    let rt = Runtime::builder().workers(2).build().expect("rt");
    let spec = "c0=powersave".parse::<EmulationSpec>().expect("spec");
    rt.emulate(&spec).expect("fits");
    assert_eq!(rt.speeds(), vec![0.5, 0.5]);
    rt.set_cluster_speed(0, 1.0).expect("valid");
    assert_eq!(rt.speeds(), vec![1.0, 1.0]);
    assert!(rt.set_cluster_speed(0, 0.0).is_err());
    assert!(
        rt.set_cluster_speed(3, 0.5)
            .expect_err("no cluster 3")
            .to_string()
            .contains("cluster 3")
    );
}
