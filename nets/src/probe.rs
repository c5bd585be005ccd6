//! The machine's limits, measured where they are used: the FMA peak of one core and the
//! memory bandwidth of one core. Benchmarks and reports divide by these, never by a number
//! copied from an earlier run or a datasheet.
//!
//! Both run on the calling thread; run them on every worker of a gang (through the
//! runtime) to measure several cores at once.
//!
//! ```
//! use taopipe_nets::{Isa, probe};
//! let peak = probe::fma_peak(Isa::detect(), 0.02);
//! assert!(peak > 0.1, "{peak} GFLOP/s");
//! ```

use std::time::Instant;

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
    let kernels = isa.kernels();
    let n = (bytes / 4).max(READ_COLUMNS) / READ_COLUMNS * READ_COLUMNS;
    let ones = vec![1.0f32; READ_COLUMNS];
    let mut rows = vec![0.0f32; n / READ_COLUMNS];
    let src: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut dst = vec![0.0f32; n];
    let mut copy = f64::MAX;
    let mut read = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
        copy = copy.min(t.elapsed().as_secs_f64());
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
}
