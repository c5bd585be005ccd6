//! The CPU-list parser (`--cpus`, sysfs) and the XiTAO layout parser (`TAOPIPE_LAYOUT`).

use std::collections::HashSet;
use std::path::Path;

use taopipe_runtime::{Place, Topology, format_cpu_list, parse_cpu_list};

use crate::check::message;

/// The largest CPU id a CPU list may name (the parser's own limit, `MAX_CPU_ID`).
const MAX_CPU_ID: usize = 65_535;

/// The layout's name in errors: every layout error starts with it, like a compiler's.
const ORIGIN: &str = "fuzz.layout";

/// A sysfs root with no files: clusters and speeds are unknown, as in a bare VM, so the
/// target depends on the text alone, not on the machine it runs on.
const NO_SYSFS: &str = "/nonexistent-sysfs-for-fuzzing";

/// The CPUs a layout may use (the affinity mask): enough for every width rule to matter,
/// few enough that one input stays fast (each CPU of an accepted layout costs a few failed
/// sysfs reads).
const LAYOUT_CPUS: usize = 16;

/// Parses the bytes (lossily as UTF-8, as a file or flag would arrive) as a CPU list. An
/// accepted list has no repeat and no id above the limit, and its canonical form
/// ([`format_cpu_list`]) parses back to the same list, in the same order; a rejected one
/// quotes the offending entry in backticks.
pub fn cpu_list(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match parse_cpu_list(&text) {
        Ok(cpus) => {
            let mut sorted = cpus.clone();
            sorted.sort_unstable();
            assert!(
                sorted.last().is_none_or(|&cpu| cpu <= MAX_CPU_ID),
                "{sorted:?}"
            );
            if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
                panic!("cpu {} accepted twice", pair[0]);
            }
            let canonical = format_cpu_list(&cpus);
            assert_eq!(
                parse_cpu_list(&canonical).as_deref(),
                Ok(&cpus[..]),
                "the canonical form `{canonical}` parses to another list"
            );
        }
        Err(error) => {
            let text = message("parse_cpu_list", &error);
            assert!(text.contains('`'), "no entry quoted: {text}");
        }
    }
}

/// Parses the bytes as a layout file over CPUs `0..16` with no sysfs. An accepted layout
/// gives a topology whose workers are distinct allowed CPUs, whose allowed widths per leader
/// are ascending and fit, whose places are all allowed, whose clusters partition the
/// workers, and which writes back as a layout (its CPUs in worker order, then each
/// leader's widths) that parses to the same CPUs and widths; a rejected one names the layout and line first.
pub fn layout(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let allowed: Vec<usize> = (0..LAYOUT_CPUS).collect();
    match Topology::from_layout(&text, ORIGIN, Path::new(NO_SYSFS), &allowed) {
        Ok(topology) => {
            check_topology(&topology);
            let canonical = canonical_layout(&topology);
            let again = Topology::from_layout(&canonical, ORIGIN, Path::new(NO_SYSFS), &allowed)
                .unwrap_or_else(|e| panic!("canonical layout {canonical:?} refused: {e}"));
            assert_eq!(
                canonical_layout(&again),
                canonical,
                "the canonical layout parses to another topology"
            );
        }
        Err(error) => {
            let text = message("Topology::from_layout", &error);
            assert!(text.starts_with(ORIGIN), "layout not named: {text}");
        }
    }
}

/// The invariants of a topology built from a layout (see [`layout`]).
fn check_topology(topology: &Topology) {
    let n = topology.num_workers();
    assert!((1..=LAYOUT_CPUS).contains(&n), "{n} workers");
    let mut ids = HashSet::new();
    for cpu in topology.cpus() {
        assert!(cpu.id < LAYOUT_CPUS, "cpu {} is not allowed", cpu.id);
        assert!(ids.insert(cpu.id), "cpu {} is two workers", cpu.id);
    }
    for leader in 0..n {
        let widths = topology.allowed_widths(leader);
        assert!(!widths.is_empty(), "leader {leader} has no width");
        assert!(
            widths.windows(2).all(|w| w[0] < w[1]),
            "{widths:?} not ascending"
        );
        for &width in widths {
            assert!(
                width >= 1 && width <= n - leader,
                "width {width} at {leader}"
            );
            assert!(topology.is_allowed(Place::new(leader, width)));
        }
    }
    let places = topology.places();
    assert_eq!(
        places.len(),
        (0..n)
            .map(|l| topology.allowed_widths(l).len())
            .sum::<usize>()
    );
    assert!(places.iter().all(|&p| topology.is_allowed(p)));
    let mut workers: Vec<usize> = topology
        .clusters()
        .iter()
        .flat_map(|c| c.workers.iter().copied())
        .collect();
    workers.sort_unstable();
    assert_eq!(
        workers,
        (0..n).collect::<Vec<_>>(),
        "clusters do not partition the workers"
    );
    assert!(!topology.to_string().is_empty());
}

/// The topology written as a layout: its CPUs in worker order, then each leader's widths.
fn canonical_layout(topology: &Topology) -> String {
    let ids: Vec<String> = topology.cpus().iter().map(|c| c.id.to_string()).collect();
    let mut text = ids.join(" ") + "\n";
    for leader in 0..topology.num_workers() {
        let widths: Vec<String> = topology
            .allowed_widths(leader)
            .iter()
            .map(usize::to_string)
            .collect();
        text += &(widths.join(" ") + "\n");
    }
    text
}
