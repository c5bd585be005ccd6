//! An idle runtime parks its workers: it uses about 0% CPU.
//!
//! This is a resource check, not a speed check: it reads the process's CPU time from
//! `/proc/self/stat` (Linux) over a second in which the runtime has nothing to do. A
//! spinning worker would burn ~1 s of CPU in that second; the bound is 5% of that.

use std::time::Duration;

use taopipe_runtime::{Place, Runtime};

/// utime + stime of this process, in seconds.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the `(comm)`; utime and stime are fields 14 and 15 (1-based) overall.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on every Linux ABI
}

#[test]
fn idle_workers_use_almost_no_cpu() {
    let Some(_) = process_cpu_seconds() else {
        eprintln!("no /proc/self/stat: skipping the idle CPU check on this OS");
        return;
    };
    let rt = Runtime::builder().workers(4).build().expect("runtime");
    for _ in 0..100 {
        rt.run_on(Place::new(0, 4), |_| {}).expect("runs");
    }
    std::thread::sleep(Duration::from_millis(100)); // past the spin phase
    rt.reset_stats();
    let before = process_cpu_seconds().expect("cpu time");
    std::thread::sleep(Duration::from_secs(1));
    let used = process_cpu_seconds().expect("cpu time") - before;
    assert!(used < 0.05, "4 idle workers used {used:.3} s of CPU in 1 s");
    // A park is counted when the worker wakes: wake all four with one gang, then every
    // one of them must have parked during the idle second.
    rt.run_on(Place::new(0, 4), |_| {}).expect("runs");
    let parked: Vec<u64> = rt.stats().workers.iter().map(|w| w.parks).collect();
    assert!(
        parked.iter().all(|&p| p >= 1),
        "every worker should have parked while idle, parks per worker = {parked:?}"
    );
}
