//! Where a frame's time goes: each layer's time at one place, read from the runtime's
//! trace table. Every layer task carries its layer index as its hint (see
//! [`Model::graph`]), so the table already keeps one row per layer; this module only
//! joins those rows with the layers' names, kinds and FLOPs.

use taopipe_runtime::{Place, TraceSnapshot};

use crate::model::Model;

/// One layer's measured time at a place.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerTime {
    /// Index of the layer in the net.
    pub index: usize,
    /// The layer's name in the net.
    pub name: String,
    /// Its kernel, as [`Kernel::describe`](crate::Kernel::describe) puts it.
    pub kernel: String,
    /// Floating-point operations of one run (multiply-add = 2).
    pub flops: u64,
    /// Moving average of its time at the place, in seconds (the trace table's estimate).
    pub seconds: f64,
    /// How many runs the estimate has seen.
    pub samples: u64,
}

impl LayerTime {
    /// GFLOP/s of the layer at its measured time.
    pub fn gflops(&self) -> f64 {
        self.flops as f64 / self.seconds / 1e9
    }
}

impl Model {
    /// The time of every layer that ran as a task at `place`, in layer order, from a
    /// snapshot of the trace table of the runtime that ran the frames. Layers that never
    /// ran there (folded, fused, or run elsewhere) are left out.
    ///
    /// ```
    /// use taopipe_nets::{Model, RandomWeights, zoo};
    /// use taopipe_runtime::{Place, Runtime};
    /// let model = Model::build(zoo::by_name("synth1").expect("zoo net")?, &RandomWeights { seed: 1 })?;
    /// let rt = Runtime::builder().workers(1).build()?;
    /// model.forward(&rt, vec![0.5; model.input_len()], Place::new(0, 1))?;
    /// let times = model.layer_times(&rt.trace_table(), Place::new(0, 1));
    /// assert!(!times.is_empty());
    /// assert!(times.iter().all(|t| t.seconds > 0.0 && t.samples == 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layer_times(&self, trace: &TraceSnapshot, place: Place) -> Vec<LayerTime> {
        let layers = self.spec().layers();
        (0..layers.len())
            .filter_map(|index| {
                let (kernel, _) = self.run_step(index)?;
                let entry = trace.row(kernel.kind(), index as u64)?.entry(place)?;
                Some(LayerTime {
                    index,
                    name: layers[index].name().to_string(),
                    kernel: kernel.describe(),
                    flops: kernel.flops(),
                    seconds: entry.seconds,
                    samples: entry.samples,
                })
            })
            .collect()
    }
}
