//! Runs one layer as a gang on the taopipe runtime (bench only): every rank computes its own
//! run of chunks into its own preallocated output buffer (behind a `Mutex` only its rank
//! locks), with its own scratch.

use std::sync::{Arc, Mutex};

use taopipe_nets::{Kernel, Scratch};
use taopipe_runtime::{Place, Runtime};

/// Each rank's output part and scratch; only that rank locks its entry.
type Parts = Vec<Mutex<(Vec<f32>, Scratch)>>;

pub(crate) struct Gang {
    layer: Arc<dyn Kernel>,
    inputs: Arc<Vec<Vec<f32>>>,
    parts: Arc<Parts>,
    width: usize,
}

impl Gang {
    pub(crate) fn new(layer: Arc<dyn Kernel>, inputs: Vec<Vec<f32>>, width: usize) -> Gang {
        let parts = (0..width)
            .map(|rank| {
                let len = layer.output_range(layer.rank_chunks(rank, width)).len();
                Mutex::new((vec![0.0; len], Scratch::new()))
            })
            .collect();
        Gang {
            layer,
            inputs: Arc::new(inputs),
            parts: Arc::new(parts),
            width,
        }
    }

    /// One forward pass on workers `0..width` of `rt`.
    pub(crate) fn run(&self, rt: &Runtime) {
        let (layer, inputs, parts) = (self.layer.clone(), self.inputs.clone(), self.parts.clone());
        let width = self.width;
        rt.run_on(Place::new(0, width), move |ctx| {
            let rank = ctx.rank();
            let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
            let mut guard = parts[rank].lock().expect("only this rank locks its part");
            let (out, scratch) = &mut *guard;
            layer.compute_chunks(&ins, layer.rank_chunks(rank, width), out, scratch);
        })
        .expect("bench layer runs");
    }

    /// The stitched output (to check it against width 1).
    pub(crate) fn output(&self) -> Vec<f32> {
        self.parts
            .iter()
            .flat_map(|p| p.lock().expect("not poisoned").0.clone())
            .collect()
    }
}
