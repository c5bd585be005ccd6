//! The `net!` tensor DSL of taopipe: layer descriptors with checked shapes, the paper's
//! compile-time hints (layer weights, Eq. 1–2) and the CV-sorted pipeline seeds (Eq. 3,
//! Alg. 1) that Pipe-search starts from.
//!
//! # Example
//!
//! Declare a net, look at its layers, and print the best seeds for 2 and 3 stages:
//!
//! ```
//! use taopipe_dsl::{net, Seeds};
//!
//! let net = net! { small [3, 32, 32] =>
//!     conv1: conv(32, 3x3, pad 1) relu,
//!     pool1: maxpool(2x2, stride 2),
//!     conv2: conv(64, 3x3, pad 1) relu,
//!     pool2: maxpool(2x2, stride 2),
//!     conv3: conv(64, 3x3, pad 1) relu,
//!     fc1:   fc(256) relu,
//!     fc2:   fc(10),
//! }?;
//! println!("{net}");
//! let seeds = Seeds::from_net(&net, 4)?; // 4 cores: stage counts 2..=4
//! for p in 2..=3 {
//!     for seed in seeds.top_k(p, 3)? {
//!         println!("{p} stages: {seed}");
//!     }
//! }
//! assert_eq!(seeds.top_k(2, 1)?[0].composition, vec![3, 4]);
//! # Ok::<(), taopipe_dsl::DslError>(())
//! ```
//!
//! # Layers, sources and pipeline units
//!
//! A net is a list of named layers. Each layer reads the previous layer's output (the net
//! input for the first), unless it is declared with a source: `from NAME` in [`net!`], or
//! [`NetSpecBuilder::layer_from`], makes it read the output of the earlier layer `NAME`, or
//! the net input when `NAME` is `input` ([`INPUT`], a reserved name: no layer may be
//! called `input`). That is how a branch such as ResNet's downsample shortcut is declared;
//! [`Layer::source`] gives the resolved [`Source`]. `add(NAME)` adds the output of an
//! earlier layer (or of `input`) to the layer's input.
//!
//! ReLU is a flag fused into `conv`/`fc`/`add` (`conv(64, 3x3, pad 1) relu`), so it adds
//! no layer; `fc` flattens its input implicitly, so no `flatten` is needed before it.
//!
//! A pipeline is cut only between **units** ([`Unit`], [`NetSpec::units`]), and a
//! *composition* (units per stage) counts units. **The unit rule:** a new unit starts at
//! every `Conv2d`, `Fc`, `MaxPool`, `AvgPool` and `GlobalAvgPool` layer whose source is the
//! previous layer ([`Source::Previous`]); every other layer — `Relu`, `Clip`,
//! `LeakyRelu`, `BatchNorm`, `ResidualAdd`, `Concat`, `Flatten`, `Softmax`, and any layer
//! declared with a `from` (a branch) — joins the current unit. The first layer always starts a unit. A unit's weight is the sum
//! of its layers' weights.
//!
//! This gives the paper's counts: VGG16 is 21 units (13 conv +ReLU, 5 max-pool, 3 FC),
//! AlexNet 11 (5 conv, 3 max-pool, 3 FC), ResNet50 52 (conv1 with its bn and relu,
//! max-pool, 16 bottleneck blocks × 3 convs, global average pooling, FC). In a ResNet
//! block, declare the downsample conv after `bn3` with `from` the block input:
//!
//! ```text
//! layer1_0_conv3:        conv(256, 1x1),
//! layer1_0_bn3:          batchnorm,
//! layer1_0_downsample_0: conv(256, 1x1) from maxpool,
//! layer1_0_downsample_1: batchnorm,
//! layer1_0_add:          add(layer1_0_bn3) relu,
//! ```
//!
//! so that the block's third unit holds conv3, bn3, the downsample conv and bn, and the
//! add.
//!
//! **Modules.** A module of parallel branches joined by `concat` (SqueezeNet's fire,
//! GoogLeNet's inception) is one unit when every layer after its first is declared with a
//! `from`, even where it reads the previous layer:
//!
//! ```text
//! fire2_squeeze:   conv(16, 1x1) relu,
//! fire2_expand1x1: conv(64, 1x1) relu from fire2_squeeze,
//! fire2_expand3x3: conv(64, 3x3, pad 1) relu from fire2_squeeze,
//! fire2:           concat(fire2_expand1x1, fire2_expand3x3),
//! ```
//!
//! A concat never opens a unit. Declared without those `from`s, a branch's convolutions
//! open units of their own, and a pipeline may then cut inside the module: the stage
//! boundary forwards the module's input and the branches already finished
//! ([`NetSpec::live_across`]). Edges may cross unit boundaries (the shortcut spans the block's 3 units);
//! [`NetSpec::live_across`] lists the tensors a stage boundary must forward. A trailing
//! softmax joins the last unit; the zoo ends VGG16 with `fc8` (logits) anyway, since
//! softmax does not change the arg-max.
//!
//! # Compile-time hints (layer weights)
//!
//! | kind | weight |
//! |---|---|
//! | `Conv2d` | Eq. 1, `Ho·Wo·C·R·S·K`: **output** height and width, input channels `C`, kernel `R×S`, output channels `K`; with `g` groups, `C/g` input channels per output channel (a depthwise conv: `Ho·Wo·R·S·K`) |
//! | `Fc` | Eq. 2, `H·W·C·F`: the (implicitly flattened) input times the output features |
//! | `MaxPool`, `AvgPool`, `GlobalAvgPool` | the input size `H·W·C` (paper §2.1) |
//! | `Relu`, `Clip`, `LeakyRelu`, `BatchNorm`, `ResidualAdd`, `Softmax` | the element count `H·W·C` (one operation per element; a fused ReLU adds nothing) |
//! | `Concat` | its output's element count (a copy of every element) |
//! | `Flatten` | 0 (a reshape, no arithmetic) |
//!
//! The paper reads Eq. 1 with the *input* `H, W`. We use the *output* `Ho, Wo`, because
//! `Ho·Wo·C·R·S·K` is exactly the number of multiply-accumulates, which is what the weight
//! stands for. For the stride-1 "same" convolutions of VGG the two readings coincide;
//! they differ for strided convolutions (ResNet's 7×7/2 stem and its stride-2 3×3/1×1
//! layers would weigh 4× too much with the input reading). The checks of the paper's
//! Synth nets and Table 7 work on weight lists and do not depend on this choice.
//!
//! # Seeds (Alg. 1)
//!
//! [`Seeds`] yields, for each stage count `2..=C`, every distribution of the units
//! ([`Seeds::from_net`] uses [`NetSpec::unit_weights`]) sorted by the
//! CV of its stage weights ([`cv`], population σ/μ), ties broken by the lexicographic
//! order of the composition; see [`SeedIter`] for how this is done lazily (best-first
//! search with an exact cost-to-go) so that nets too big to enumerate, such as ResNet50 on
//! 16 cores, still give their first seeds at once. [`exhaustive_sorted`] is the reference.
//!
//! # Compile-time shape checks
//!
//! With literal sizes, [`net!`] also expands to an inline `const` block that infers the
//! shapes with the same `const fn`s as [`NetSpecBuilder::build`]; a mismatch is a compile
//! error naming the layer and the shapes (see the `compile_fail` examples of [`net!`]).
//! Everything else is checked at run time and reported as a [`DslError`]; nothing in this
//! crate panics on user input.
#![deny(missing_docs)]

mod check;
mod cv;
mod error;
mod infer;
mod layer;
mod macros;
mod seeds;
mod shape;
mod spec;
mod synth;

pub use cv::{cv, stage_weights};
pub use error::DslError;
pub use layer::{INPUT, Layer, LayerKind, Source};
pub use seeds::{
    EXHAUSTIVE_LIMIT, SEED_TABLE_LIMIT, Seed, SeedIter, Seeds, SpeedScaled, SquaredWeight,
    StageKey, composition_count, exhaustive_sorted,
};
pub use shape::Shape;
pub use spec::{NetSpec, NetSpecBuilder, Unit};
pub use synth::{
    SYNTH_MEMORY_LIMIT, SYNTH_UNIT, SYNTH1, SYNTH2, SYNTH3, SplitMix64, WeightDistribution,
    conv_net_with_weights, random_net, random_weights, synth_net_bytes, synth1, synth2, synth3,
};

/// Items the `net!` macro expands to. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::check::{ConstKind, ConstNet, dims};
}
