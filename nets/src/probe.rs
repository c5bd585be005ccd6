//! The machine's limits, measured where they are used: the FMA peak of one core and the
//! memory bandwidth of one core. Benchmarks and reports divide by these, never by a number
//! copied from an earlier run or a datasheet.
//!
//! Both run on the calling thread. [`limits_on`] runs them on every worker of a place at
//! once, through the runtime: what that many cores reach together (shared memory
//! bandwidth, shared cores under SMT, a lower clock with more cores busy).
//!
//! ```
//! use taopipe_nets::{Isa, probe};
//! let peak = probe::fma_peak(Isa::detect(), 0.02);
//! assert!(peak > 0.1, "{peak} GFLOP/s");
//! ```

use std::sync::{Arc, Mutex};
use std::time::Instant;

use taopipe_runtime::{Place, Runtime, RuntimeError};

use crate::simd::Isa;

/// Best GFLOP/s of `isa`'s FMA-chain probe over runs of about `secs` seconds in total:
/// independent chains of vector FMAs, enough to cover latency × ports, no memory traffic.
pub fn fma_peak(isa: Isa, secs: f64) -> f64 {
    let kernels = isa.kernels();
    let mut iters = 1u64 << 12;
    let start = Instant::now();
    let mut best = 0.0f64;
    loop {
        let t = Instant::now();
        let flops = kernels.fma_probe(iters);
        let dt = t.elapsed().as_secs_f64();
        if dt > 1e-3 {
            best = best.max(flops as f64 / dt / 1e9);
        } else {
            iters *= 4;
        }
        if start.elapsed().as_secs_f64() >= secs && best > 0.0 {
            return best;
        }
    }
}

/// Memory bandwidth of one core, in GB/s (10⁹ bytes), over `bytes`-sized buffers (pass
/// several times the last-level cache).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth {
    /// `copy_from_slice` of one buffer into another, counting the bytes read and the
    /// bytes written (STREAM's convention for Copy).
    pub copy_gbs: f64,
    /// Streaming one buffer through the ISA's row-dot kernel ([`Kernels::dot_rows`](crate::Kernels::dot_rows), the
    /// fully connected layers' GEMV) as the weights of a matrix-vector product: bytes read.
    pub read_gbs: f64,
}

/// Columns of the matrix the read probe streams (VGG16's fc7 has 4096).
const READ_COLUMNS: usize = 4096;

/// Best of three passes of each measurement in [`Bandwidth`], the read with `isa`'s
/// kernel. (A plain scalar sum was latency-bound on a generic x86-64 build and read less
/// than the GEMV it was meant to bound.)
pub fn bandwidth(isa: Isa, bytes: usize) -> Bandwidth {
    bandwidth_passes(isa, bytes, &|| {})
}

/// [`bandwidth`], calling `before` ahead of each timed pass (a gang's barrier, so that
/// its workers' passes run together).
fn bandwidth_passes(isa: Isa, bytes: usize, before: &dyn Fn()) -> Bandwidth {
    let kernels = isa.kernels();
    let n = (bytes / 4).max(READ_COLUMNS) / READ_COLUMNS * READ_COLUMNS;
    let ones = vec![1.0f32; READ_COLUMNS];
    let mut rows = vec![0.0f32; n / READ_COLUMNS];
    let src: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut dst = vec![0.0f32; n];
    let mut copy = f64::MAX;
    let mut read = f64::MAX;
    for _ in 0..3 {
        before();
        let t = Instant::now();
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
        copy = copy.min(t.elapsed().as_secs_f64());
        before();
        let t = Instant::now();
        kernels.dot_rows(std::hint::black_box(&src), &ones, &mut rows);
        std::hint::black_box(&mut rows);
        read = read.min(t.elapsed().as_secs_f64());
    }
    let b = (n * 4) as f64;
    Bandwidth {
        copy_gbs: 2.0 * b / copy / 1e9,
        read_gbs: b / read / 1e9,
    }
}

/// What the workers of a place reach together ([`limits_on`]): each worker's figure,
/// summed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Workers measured at once.
    pub workers: usize,
    /// FMA peak, GFLOP/s ([`fma_peak`] on every worker at once).
    pub fma_gflops: f64,
    /// Memory bandwidth ([`bandwidth`] on every worker at once, each pass started
    /// together).
    pub bandwidth: Bandwidth,
}

/// Bytes of the buffers [`limits_on`] should stream, shared out between the workers:
/// several times the last-level cache of the machines measured so far.
pub const LIMITS_BYTES: usize = 512 << 20;

/// Measures `place`'s workers at once: the FMA probe for about `secs` seconds on each, then
/// the bandwidth probes over `bytes / width` bytes each (each pass after a barrier), summed
/// over the workers. Against
/// [`limits_on`] of one worker this is how far the machine itself scales: a compute-bound
/// layer cannot gain more than the FMA ratio from one worker to the place, a memory-bound
/// one more than the bandwidth ratio.
///
/// # Errors
/// A place the runtime does not have.
///
/// ```
/// use taopipe_nets::{Isa, probe};
/// use taopipe_runtime::{Place, Runtime};
/// let rt = Runtime::builder().workers(2).build()?;
/// let two = probe::limits_on(&rt, Place::new(0, 2), Isa::detect(), 0.01, 8 << 20)?;
/// assert_eq!(two.workers, 2);
/// assert!(two.fma_gflops > 0.0 && two.bandwidth.read_gbs > 0.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn limits_on(
    rt: &Runtime,
    place: Place,
    isa: Isa,
    secs: f64,
    bytes: usize,
) -> Result<Limits, RuntimeError> {
    let width = place.width();
    let bytes = bytes / width;
    let parts = Arc::new(Mutex::new(Vec::with_capacity(width)));
    let sink = parts.clone();
    rt.run_on(place, move |ctx| {
        ctx.barrier();
        let fma = fma_peak(isa, secs);
        let bw = bandwidth_passes(isa, bytes, &|| ctx.barrier());
        sink.lock()
            .expect("no rank panicked holding it")
            .push((fma, bw));
    })?;
    let parts = parts.lock().expect("no rank panicked holding it");
    Ok(Limits {
        workers: width,
        fma_gflops: parts.iter().map(|p| p.0).sum(),
        bandwidth: Bandwidth {
            copy_gbs: parts.iter().map(|p| p.1.copy_gbs).sum(),
            read_gbs: parts.iter().map(|p| p.1.read_gbs).sum(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_return_positive_figures() {
        for isa in Isa::available() {
            assert!(fma_peak(isa, 0.005) > 0.0);
        }
        for isa in Isa::available() {
            let bw = bandwidth(isa, 1 << 20);
            assert!(bw.copy_gbs > 0.0 && bw.read_gbs > 0.0, "{isa}: {bw:?}");
        }
    }

    #[test]
    fn limits_sum_every_worker_of_the_place() {
        let rt = Runtime::builder().workers(2).build().unwrap();
        for width in [1, 2] {
            let l = limits_on(&rt, Place::new(0, width), Isa::Portable, 0.002, 4 << 20).unwrap();
            assert_eq!(l.workers, width);
            assert!(l.fma_gflops > 0.0, "{l:?}");
            assert!(
                l.bandwidth.copy_gbs > 0.0 && l.bandwidth.read_gbs > 0.0,
                "{l:?}"
            );
        }
        assert!(limits_on(&rt, Place::new(1, 2), Isa::Portable, 0.002, 4 << 20).is_err());
    }
}
