//! Counters per worker and duration histograms per task type.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// One worker's counters; padded so workers never share a cache line.
#[derive(Default)]
pub(crate) struct Counters {
    busy_ns: AtomicU64,
    parts: AtomicU64,
    steals: AtomicU64,
    parks: AtomicU64,
}

type Histograms = HashMap<&'static str, Histogram<u64>>;

/// Live statistics. Each worker writes only its own slot, so recording never contends.
pub(crate) struct StatsCollector {
    since: Mutex<Instant>,
    counters: Box<[CachePadded<Counters>]>,
    histograms: Box<[CachePadded<Mutex<Histograms>>]>,
    pinned: Box<[AtomicBool]>,
}

/// Durations from 1 ns to one hour at 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("constant histogram bounds are valid")
}

impl StatsCollector {
    pub(crate) fn new(workers: usize) -> StatsCollector {
        StatsCollector {
            since: Mutex::new(Instant::now()),
            counters: (0..workers)
                .map(|_| CachePadded::new(Counters::default()))
                .collect(),
            histograms: (0..workers)
                .map(|_| CachePadded::new(Mutex::new(HashMap::new())))
                .collect(),
            pinned: (0..workers).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// A worker ran its rank of a task for `took` (emulated stall included).
    pub(crate) fn record_part(&self, worker: usize, took: Duration) {
        let c = &self.counters[worker];
        c.busy_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        c.parts.fetch_add(1, Ordering::Relaxed);
    }

    /// A task of type `kind` finished; `took` is its slowest rank.
    pub(crate) fn record_task(&self, worker: usize, kind: &'static str, took: Duration) {
        let mut h = self.histograms[worker].lock();
        h.entry(kind)
            .or_insert_with(new_histogram)
            .saturating_record(took.as_nanos().max(1) as u64);
    }

    pub(crate) fn record_steal(&self, worker: usize) {
        self.counters[worker].steals.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_park(&self, worker: usize) {
        self.counters[worker].parks.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_pinned(&self, worker: usize, pinned: bool) {
        self.pinned[worker].store(pinned, Ordering::Relaxed);
    }

    pub(crate) fn reset(&self) {
        for c in self.counters.iter() {
            for a in [&c.busy_ns, &c.parts, &c.steals, &c.parks] {
                a.store(0, Ordering::Relaxed);
            }
        }
        for h in self.histograms.iter() {
            h.lock().clear();
        }
        *self.since.lock() = Instant::now();
    }

    pub(crate) fn snapshot(&self, cpus: &[Option<usize>], clusters: &[usize]) -> Stats {
        let elapsed = self.since.lock().elapsed();
        let workers = self
            .counters
            .iter()
            .enumerate()
            .map(|(w, c)| {
                let busy = Duration::from_nanos(c.busy_ns.load(Ordering::Relaxed)).min(elapsed);
                WorkerStats {
                    worker: w,
                    cpu: cpus.get(w).copied().flatten(),
                    cluster: clusters.get(w).copied().unwrap_or(0),
                    pinned: self.pinned[w].load(Ordering::Relaxed),
                    busy,
                    idle: elapsed - busy,
                    parts_run: c.parts.load(Ordering::Relaxed),
                    steals: c.steals.load(Ordering::Relaxed),
                    parks: c.parks.load(Ordering::Relaxed),
                }
            })
            .collect();
        let mut merged: HashMap<&'static str, Histogram<u64>> = HashMap::new();
        for h in self.histograms.iter() {
            for (kind, hist) in h.lock().iter() {
                let into = merged.entry(kind).or_insert_with(new_histogram);
                // Same bounds on both sides, so adding cannot fail.
                let _ = into.add(hist);
            }
        }
        let mut tasks: Vec<TaskTypeStats> = merged
            .into_iter()
            .map(|(kind, h)| TaskTypeStats {
                kind,
                count: h.len(),
                mean: Duration::from_nanos(h.mean() as u64),
                p50: Duration::from_nanos(h.value_at_quantile(0.5)),
                p99: Duration::from_nanos(h.value_at_quantile(0.99)),
                max: Duration::from_nanos(h.max()),
            })
            .collect();
        tasks.sort_by_key(|t| t.kind);
        Stats {
            elapsed,
            workers,
            tasks,
        }
    }
}

/// Runtime statistics since start (or the last reset).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Wall time covered.
    pub elapsed: Duration,
    /// One entry per worker.
    pub workers: Vec<WorkerStats>,
    /// One entry per task type, sorted by name.
    pub tasks: Vec<TaskTypeStats>,
}

/// One worker's share of the work.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerStats {
    /// Worker index.
    pub worker: usize,
    /// OS CPU it is pinned to, for pinned topologies.
    pub cpu: Option<usize>,
    /// Its cluster.
    pub cluster: usize,
    /// Whether pinning took effect.
    pub pinned: bool,
    /// Time spent running task ranks (emulated stalls included).
    pub busy: Duration,
    /// `elapsed - busy`.
    pub idle: Duration,
    /// Task ranks run (a width-w task counts once on each of its w workers).
    pub parts_run: u64,
    /// Ready tasks stolen from other workers.
    pub steals: u64,
    /// Times the worker parked for lack of work.
    pub parks: u64,
}

/// Durations of one task type (slowest rank of each run).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTypeStats {
    /// Task type.
    pub kind: &'static str,
    /// Runs recorded.
    pub count: u64,
    /// Mean duration.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Longest.
    pub max: Duration,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "over {:.3} s", self.elapsed.as_secs_f64())?;
        writeln!(
            f,
            "{:>6} {:>5} {:>7} {:>6} {:>10} {:>10} {:>8} {:>7} {:>7}",
            "worker", "cpu", "cluster", "pinned", "busy ms", "idle ms", "parts", "steals", "parks"
        )?;
        for w in &self.workers {
            let cpu = w.cpu.map_or("-".to_string(), |c| c.to_string());
            writeln!(
                f,
                "{:>6} {:>5} {:>7} {:>6} {:>10.1} {:>10.1} {:>8} {:>7} {:>7}",
                w.worker,
                cpu,
                w.cluster,
                w.pinned,
                w.busy.as_secs_f64() * 1e3,
                w.idle.as_secs_f64() * 1e3,
                w.parts_run,
                w.steals,
                w.parks
            )?;
        }
        writeln!(
            f,
            "{:>20} {:>9} {:>10} {:>10} {:>10} {:>10}",
            "task type", "count", "mean us", "p50 us", "p99 us", "max us"
        )?;
        for t in &self.tasks {
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            writeln!(
                f,
                "{:>20} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                t.kind,
                t.count,
                us(t.mean),
                us(t.p50),
                us(t.p99),
                us(t.max)
            )?;
        }
        Ok(())
    }
}
