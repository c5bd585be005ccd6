use taopipe_dsl::{SYNTH1, Seeds};

use super::*;
use crate::{Exhaustive, PipeSearch, PlacePolicy, SearchSpace, SimulatedPlatform};

fn result() -> SearchResult {
    let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    let mut sim = SimulatedPlatform::symmetric(costs, 4);
    let seeds = Seeds::new(&SYNTH1, 4).expect("seeds");
    PipeSearch::new(2, 4).run(&seeds, &mut sim).expect("runs")
}

#[test]
fn json_field_names() {
    let r = result();
    let report = Report::new("pipe-search", Some(2), &r);
    let v: serde_json::Value =
        serde_json::from_str(&report.to_json().expect("json")).expect("parses");
    assert_eq!(v["algorithm"], "pipe-search");
    assert_eq!(v["alpha"], 2);
    assert!(v["tuning_s"].as_f64().is_some_and(|t| t >= 0.0));
    assert_eq!(v["stopped"], "confidence");
    let trials = v["trials"].as_array().expect("trials[]");
    assert_eq!(trials.len(), r.trials.len());
    let t0 = &trials[0];
    assert_eq!(t0["phase"], "seed");
    assert_eq!(t0["rank"], 1);
    let stages = t0["configuration"]["stages"].as_array().expect("stages[]");
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[0]["units"], 4);
    assert_eq!(stages[0]["leader"], 0);
    assert_eq!(stages[0]["width"], 2);
    assert_eq!(t0["stage_ms"].as_array().map(Vec::len), Some(2));
    assert_eq!(t0["slowest_ms"].as_f64(), Some(r.trials[0].slowest_ms));
    assert_eq!(v["best"]["slowest_ms"].as_f64(), Some(r.best_ms()));
    assert_eq!(
        v["best"]["configuration"]["stages"]
            .as_array()
            .map(Vec::len),
        Some(r.best.stage_count())
    );
    // round trip
    assert_eq!(
        Report::from_json(&report.to_json().expect("json")).expect("reads"),
        report
    );
}

#[test]
fn baselines_have_no_alpha_or_rank() {
    let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    let mut sim = SimulatedPlatform::symmetric(costs, 4);
    let space = SearchSpace::new(7, 4, 4, PlacePolicy::Contiguous);
    let r = Exhaustive::new(space).run(&mut sim).expect("runs");
    let report = Report::new("exhaustive", None, &r);
    let v: serde_json::Value =
        serde_json::from_str(&report.to_json().expect("json")).expect("parses");
    assert!(v["alpha"].is_null());
    assert!(v["trials"][0]["rank"].is_null());
    assert_eq!(v["trials"][0]["phase"], "exhaustive");
    assert_eq!(v["stopped"], "complete");
}

#[test]
fn human_table_marks_the_best() {
    let r = result();
    let text = Report::new("pipe-search", Some(2), &r).to_string();
    assert_eq!(text.lines().count(), r.trials.len() + 2);
    let marked: Vec<&str> = text.lines().filter(|l| l.ends_with('*')).collect();
    assert_eq!(marked.len(), 1);
    assert!(marked[0].contains(&r.best.to_string()), "{text}");
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("pipe-search (α = 2): best"))
    );
}
