//! MOSAIC's dynamic program against brute force: every way to cut a small random chain
//! into slices and to give each slice any device (neighbours on one device included),
//! priced from the raw random data, not through the solver's own code.

use std::ops::Range;

use proptest::prelude::*;
use taopipe_live::planners::mosaic::{MosaicError, Problem, TransferModel, UNLIMITED, UnitCosts};

/// The raw random data of one problem.
#[derive(Debug, Clone)]
struct Raw {
    /// `exec[u][d]`; `None`: the unit cannot run on `d`.
    exec: Vec<Vec<Option<f64>>>,
    /// `cut[k]`: bytes across the cut before unit `k` (`cut[n]`: the net output).
    cut: Vec<u64>,
    memory: Vec<u64>,
    budget: Vec<u64>,
    /// `(intercept, slope)` per ordered pair.
    transfer: Vec<Vec<(f64, f64)>>,
    host: Option<usize>,
}

impl Raw {
    fn problem(&self) -> Problem {
        let devices = self.budget.len();
        let units = self
            .exec
            .iter()
            .enumerate()
            .map(|(u, times)| UnitCosts {
                name: format!("layer{u}"),
                exec_ms: times.iter().map(|t| t.unwrap_or(f64::INFINITY)).collect(),
                in_bytes: self.cut[u],
                out_bytes: self.cut[u + 1],
                memory_bytes: self.memory[u],
            })
            .collect();
        let mut p = Problem::new(units, devices);
        p.device_memory = self.budget.clone();
        p.host = self.host;
        for (from, row) in self.transfer.iter().enumerate() {
            for (to, &(a, b)) in row.iter().enumerate() {
                p.transfer[from][to] = TransferModel::new(a, b).expect("finite");
            }
        }
        p
    }

    fn move_ms(&self, from: usize, to: usize, bytes: u64) -> f64 {
        if from == to {
            return 0.0;
        }
        let (a, b) = self.transfer[from][to];
        a + b * bytes as f64
    }

    /// The latency of a slicing, `None` if a unit does not fit its device.
    fn cost(&self, slices: &[(Range<usize>, usize)]) -> Option<f64> {
        let mut total = 0.0;
        let mut previous = self.host;
        for (units, dev) in slices {
            for u in units.clone() {
                if self.memory[u] > self.budget[*dev] {
                    return None;
                }
                total += self.exec[u][*dev]?;
            }
            if let Some(p) = previous {
                total += self.move_ms(p, *dev, self.cut[units.start]);
            }
            previous = Some(*dev);
        }
        let last = slices.last()?.1;
        if let Some(h) = self.host {
            total += self.move_ms(last, h, self.cut[self.exec.len()]);
        }
        Some(total)
    }

    /// The least cost over every slicing and device assignment.
    fn brute_force(&self) -> Option<f64> {
        let (n, d) = (self.exec.len(), self.budget.len());
        let mut best: Option<f64> = None;
        for cuts in 0u32..(1 << (n - 1)) {
            let mut bounds = vec![0];
            bounds.extend((1..n).filter(|k| cuts & (1 << (k - 1)) != 0));
            bounds.push(n);
            let s = bounds.len() - 1;
            for assignment in 0..d.pow(s as u32) {
                let slices: Vec<(Range<usize>, usize)> = (0..s)
                    .map(|i| (bounds[i]..bounds[i + 1], assignment / d.pow(i as u32) % d))
                    .collect();
                if let Some(c) = self.cost(&slices) {
                    best = Some(best.map_or(c, |b: f64| b.min(c)));
                }
            }
        }
        best
    }
}

fn raw() -> impl Strategy<Value = Raw> {
    (1usize..=8, 2usize..=3).prop_flat_map(|(n, d)| {
        let time = prop_oneof![9 => (0.1f64..50.0).prop_map(Some), 1 => Just(None)];
        let budget = prop_oneof![3 => Just(UNLIMITED), 2 => 0u64..120];
        (
            prop::collection::vec(prop::collection::vec(time, d), n),
            prop::collection::vec(0u64..1_000_000, n + 1),
            prop::collection::vec(0u64..100, n),
            prop::collection::vec(budget, d),
            prop::collection::vec(prop::collection::vec((0.0f64..5.0, 0.0f64..2e-5), d), d),
            prop_oneof![Just(None), (0..d).prop_map(Some)],
        )
            .prop_map(|(exec, cut, memory, budget, transfer, host)| Raw {
                exec,
                cut,
                memory,
                budget,
                transfer,
                host,
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn dynamic_program_equals_brute_force(raw in raw()) {
        let problem = raw.problem();
        let n = raw.exec.len();
        match (problem.solve(), raw.brute_force()) {
            (Ok(plan), Some(best)) => {
                let tol = 1e-9 * best.max(1.0);
                prop_assert!((plan.latency_ms - best).abs() <= tol,
                    "DP {:?} = {} ms vs brute force {best} ms", plan.ranges(), plan.latency_ms);
                let priced = raw.cost(&plan.ranges()).expect("the plan fits");
                prop_assert!((priced - plan.latency_ms).abs() <= tol,
                    "plan {} priced at {priced}", plan);
                prop_assert!((plan.exec_ms + plan.transfer_ms - plan.latency_ms).abs() <= tol);
                prop_assert_eq!(plan.slices.first().map(|s| s.units.start), Some(0));
                prop_assert_eq!(plan.slices.last().map(|s| s.units.end), Some(n));
                for pair in plan.slices.windows(2) {
                    prop_assert_eq!(pair[0].units.end, pair[1].units.start);
                    prop_assert_ne!(pair[0].device, pair[1].device, "{}", plan);
                }
            }
            (Err(MosaicError::Infeasible { unit, index, .. }), None) => {
                let first_stuck = (0..n).find(|&u| {
                    (0..raw.budget.len())
                        .all(|d| raw.exec[u][d].is_none() || raw.memory[u] > raw.budget[d])
                });
                prop_assert_eq!(Some(index), first_stuck);
                prop_assert_eq!(unit, format!("layer{index}"));
            }
            (got, best) => prop_assert!(false, "DP {got:?}, brute force {best:?}"),
        }
    }
}
