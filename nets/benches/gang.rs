//! Runs one layer as a gang on the taopipe runtime (bench only), the way a model's layer
//! task does: every rank calls `Kernel::run_rank` on the shared output buffer and the
//! layer's workspace, with its own scratch.

use std::cell::RefCell;
use std::sync::Arc;

use taopipe_nets::{Kernel, Scratch, Workspace};
use taopipe_runtime::{Place, Runtime, SharedSlice};

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

pub(crate) struct Gang {
    layer: Arc<dyn Kernel>,
    inputs: Arc<Vec<Vec<f32>>>,
    output: Arc<SharedSlice<f32>>,
    workspace: Arc<Workspace>,
    width: usize,
}

impl Gang {
    pub(crate) fn new(layer: Arc<dyn Kernel>, inputs: Vec<Vec<f32>>, width: usize) -> Gang {
        let output = Arc::new(SharedSlice::zeroed(layer.out_shape().len()));
        Gang {
            layer,
            inputs: Arc::new(inputs),
            output,
            workspace: Arc::new(Workspace::new()),
            width,
        }
    }

    /// One forward pass on workers `0..width` of `rt`.
    pub(crate) fn run(&self, rt: &Runtime) {
        let (layer, inputs) = (self.layer.clone(), self.inputs.clone());
        let (output, workspace) = (self.output.clone(), self.workspace.clone());
        rt.run_on(Place::new(0, self.width), move |ctx| {
            let views: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
            SCRATCH.with(|s| {
                layer.run_rank(ctx, &views, &output, &workspace, &mut s.borrow_mut());
            });
        })
        .expect("bench layer runs");
    }

    /// The output of the last run.
    pub(crate) fn output(&self) -> Vec<f32> {
        self.output.read().expect("no run in flight").to_vec()
    }
}
