//! The engine: the one object a library user holds. It is built from a model, a runtime
//! and tuning options; [`Engine::tune`] finds the best configuration by measuring, and
//! [`Engine::run`] streams frames through it, in order, and returns a [`Report`].
//!
//! Until it is tuned (or told what to serve with [`Engine::serve`]) an engine serves the
//! one-stage configuration: every unit on all workers, layer-parallel. Tuning keeps that
//! candidate (see [`crate::tune`]), so an engine never serves a configuration slower than
//! one it has measured.
//!
//! ```
//! use std::sync::Arc;
//! use taopipe_live::{Engine, TuneOptions, frames};
//! use taopipe_nets::{Model, RandomWeights, zoo};
//! use taopipe_runtime::{Runtime, Topology};
//!
//! let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
//! let spec = zoo::by_name("synth1").expect("a zoo net")?;
//! let model = Arc::new(Model::build(spec, &RandomWeights { seed: 1 })?);
//! let options = TuneOptions { alpha: 2, reps: 1, ..TuneOptions::default() };
//! let mut engine = Engine::new(&rt, model.clone(), options)?;
//! let search = engine.tune(|_config, _times| {})?;
//! assert!(search.trials.len() >= 2); // the one-stage candidate, then the search
//! let mut seqs = Vec::new();
//! let report = engine.run(frames(&model, 6, 1), |seq, _frame| seqs.push(seq))?;
//! assert_eq!(seqs, (0..6).collect::<Vec<u64>>()); // every frame, in order
//! assert_eq!(report.run.frames, 6);
//! println!("{}", serde_json::to_string(&report)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use taopipe_nets::{Frame, Isa, Model};
use taopipe_runtime::Runtime;
use taopipe_tuner::{Configuration, SearchResult, StageTimes};

use crate::LiveError;
use crate::report::{Report, StreamReport, TuningReport};
use crate::stream::{layer_parallel, stream};
use crate::tune::{TuneOptions, tune};

/// Tunes a net on a runtime and serves frames through the best configuration measured
/// (module docs).
#[derive(Debug)]
pub struct Engine<'rt> {
    rt: &'rt Runtime,
    model: Arc<Model>,
    options: TuneOptions,
    emulation: Option<String>,
    tuned: Option<SearchResult>,
    config: Configuration,
}

impl<'rt> Engine<'rt> {
    /// An engine for `model` on `rt`, serving the one-stage configuration until tuned.
    ///
    /// # Errors
    /// A net with no units.
    pub fn new(
        rt: &'rt Runtime,
        model: Arc<Model>,
        options: TuneOptions,
    ) -> Result<Self, LiveError> {
        let config = Configuration::contiguous(&[model.spec().units().len()], rt.num_workers())?;
        Ok(Engine {
            rt,
            model,
            options,
            emulation: None,
            tuned: None,
            config,
        })
    }

    /// Records the emulation the runtime was given (as the user wrote it) in reports.
    pub fn with_emulation(mut self, spec: impl Into<String>) -> Self {
        self.emulation = Some(spec.into());
        self
    }

    /// Tunes by measuring ([`crate::tune::tune`]) and serves the best configuration
    /// measured; `on_trial` sees each trial as it is measured.
    ///
    /// # Errors
    /// A failing measurement or layer; the configuration served is then unchanged.
    pub fn tune(
        &mut self,
        mut on_trial: impl FnMut(&Configuration, &StageTimes),
    ) -> Result<&SearchResult, LiveError> {
        let found = tune(self.rt, &self.model, &self.options, &mut on_trial)?;
        self.config = found.best.clone();
        Ok(self.tuned.insert(found))
    }

    /// Serves `config` instead (no tuning).
    ///
    /// # Errors
    /// A configuration that does not fit the net's units or the runtime's workers.
    pub fn serve(&mut self, config: Configuration) -> Result<(), LiveError> {
        config.validate(self.model.spec().units().len(), self.rt.num_workers())?;
        self.config = config;
        Ok(())
    }

    /// The configuration served now.
    pub fn configuration(&self) -> &Configuration {
        &self.config
    }

    /// The last tuning, if any.
    pub fn tuning(&self) -> Option<&SearchResult> {
        self.tuned.as_ref()
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The tuning options.
    pub fn options(&self) -> &TuneOptions {
        &self.options
    }

    /// Streams `source` through the configuration served and calls `sink(seq, frame)` for
    /// each frame, in order, on the calling thread; then reports the run.
    ///
    /// # Errors
    /// The first failing stage, after the frames ahead of it were delivered.
    pub fn run(
        &self,
        source: impl Iterator<Item = Frame> + Send,
        sink: impl FnMut(u64, Arc<Frame>),
    ) -> Result<Report, LiveError> {
        let stats = stream(self.rt, &self.model, &self.config, source, sink)?;
        let cpus = self.rt.topology().cpus();
        Ok(Report {
            version: env!("CARGO_PKG_VERSION"),
            net: self.model.spec().name().to_string(),
            isa: Isa::current().map_or("unknown", Isa::name).to_string(),
            cpus: (0..self.rt.num_workers()).map(|w| cpus[w].id).collect(),
            speeds: self.rt.speeds(),
            emulation: self.emulation.clone(),
            tuning: self.tuned.as_ref().map(|found| TuningReport {
                options: self.options.clone(),
                search: taopipe_tuner::Report::new(
                    &self.options.search.to_string(),
                    Some(self.options.alpha),
                    found,
                ),
            }),
            pipeline: Report::stages(self.rt, &self.config, &stats),
            run: StreamReport::from_pipeline(&stats),
            baseline: None,
        })
    }

    /// Streams `source` through the layer-parallel baseline (one frame at a time, every
    /// layer on all workers, as ONNX Runtime runs a net) under the same conditions.
    ///
    /// # Errors
    /// A failing layer.
    pub fn baseline(
        &self,
        source: impl Iterator<Item = Frame>,
        sink: impl FnMut(u64, Frame),
    ) -> Result<StreamReport, LiveError> {
        let stats = layer_parallel(self.rt, &self.model, source, sink)?;
        Ok(StreamReport::from_switch(&stats))
    }
}
