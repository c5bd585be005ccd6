//! The one error type of the crate.

use crate::Shape;

/// Everything that can go wrong while declaring a net or asking for its seeds.
///
/// Every variant names what it is about: the layer (and, for shape errors, both shapes
/// involved), or the weights and stage count. Nothing in this crate panics on user input;
/// it returns one of these instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DslError {
    /// The net's input shape has a zero dimension.
    #[error("net `{net}`: input shape {shape} has a zero dimension")]
    EmptyInput {
        /// The net.
        net: String,
        /// Its declared input shape.
        shape: Shape,
    },
    /// The net declares no layers.
    #[error("net `{net}` declares no layers")]
    NoLayers {
        /// The net.
        net: String,
    },
    /// A layer has an empty name (layer names are how residual adds and weights files refer to layers).
    #[error("net `{net}`: layer #{index} has an empty name")]
    EmptyName {
        /// The net.
        net: String,
        /// The layer's index (0-based).
        index: usize,
    },
    /// Two layers share a name.
    #[error("layer `{layer}`: the name is already used by layer #{first}")]
    DuplicateName {
        /// The repeated name.
        layer: String,
        /// Index of the first layer with that name.
        first: usize,
    },
    /// A size parameter (channels, features, kernel, stride) is zero.
    #[error("layer `{layer}`: {what} must be at least 1 (input {input})")]
    ZeroParameter {
        /// The layer.
        layer: String,
        /// Which parameter.
        what: &'static str,
        /// The layer's input shape.
        input: Shape,
    },
    /// A window (conv or pooling kernel) is larger than its padded input.
    #[error(
        "layer `{layer}`: kernel {}x{} with padding {}x{} does not fit input {input} (padded {}x{})",
        kernel.0, kernel.1, padding.0, padding.1,
        input.h.saturating_add(padding.0.saturating_mul(2)),
        input.w.saturating_add(padding.1.saturating_mul(2))
    )]
    KernelTooLarge {
        /// The layer.
        layer: String,
        /// The layer's input shape.
        input: Shape,
        /// Kernel `(R, S)`.
        kernel: (usize, usize),
        /// Padding `(ph, pw)`.
        padding: (usize, usize),
    },
    /// Pooling padding larger than half the kernel before the input, or not below the
    /// kernel after it (windows made only of padding; refused like PyTorch does).
    #[error(
        "layer `{layer}`: pooling padding {}x{} before and {}x{} after does not suit kernel {}x{} \
         (before: at most half the kernel; after: below it)",
        padding.0, padding.1, padding_end.0, padding_end.1, kernel.0, kernel.1
    )]
    PoolPaddingTooLarge {
        /// The layer.
        layer: String,
        /// Kernel `(R, S)`.
        kernel: (usize, usize),
        /// Padding `(ph, pw)` before.
        padding: (usize, usize),
        /// Padding `(ph, pw)` after.
        padding_end: (usize, usize),
    },
    /// A grouped convolution whose input or output channels are not a multiple of its groups.
    #[error(
        "layer `{layer}`: {groups} groups do not divide the {} input channels and {out_channels} output channels (input {input})",
        input.c
    )]
    Groups {
        /// The layer.
        layer: String,
        /// The layer's input shape.
        input: Shape,
        /// Its groups.
        groups: usize,
        /// Its output channels.
        out_channels: usize,
    },
    /// An activation's parameter out of its domain: a clip's bounds NaN or in the wrong
    /// order, a leaky ReLU's slope not finite.
    #[error("layer `{layer}`: {kind}: {reason}")]
    BadParameter {
        /// The layer.
        layer: String,
        /// The layer's kind as declared (`clip 6..0`).
        kind: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A concat whose inputs differ in height or width.
    #[error(
        "layer `{layer}`: concat input `{from}` ({from_shape}) has another plane than the first input's {}x{}",
        plane.0, plane.1
    )]
    ConcatMismatch {
        /// The concat layer.
        layer: String,
        /// The input that does not match.
        from: String,
        /// Its shape.
        from_shape: Shape,
        /// The first input's height and width.
        plane: (usize, usize),
    },
    /// A residual add whose two operands differ in shape.
    #[error(
        "layer `{layer}`: residual add of input {input} and output {from_shape} of `{from}`: shapes differ"
    )]
    ResidualMismatch {
        /// The residual-add layer.
        layer: String,
        /// Its input (the running tensor).
        input: Shape,
        /// The layer whose output is added.
        from: String,
        /// That layer's output shape.
        from_shape: Shape,
    },
    /// A residual add naming a layer that is not declared before it (nor `input`).
    #[error("layer `{layer}`: residual source `{from}` is not an earlier layer (nor `input`)")]
    UnknownResidualSource {
        /// The residual-add layer.
        layer: String,
        /// The name it refers to.
        from: String,
    },
    /// A layer whose input source (`from`) is not an earlier layer (nor `input`, the net
    /// input).
    #[error("layer `{layer}`: input source `{from}` is not an earlier layer (nor `input`)")]
    UnknownSource {
        /// The layer declared with `from`.
        layer: String,
        /// The name it reads from.
        from: String,
    },
    /// A layer named `input`, the name reserved for the net input as a source.
    #[error("net `{net}`: layer #{index} is named `input`, which is reserved for the net input")]
    ReservedName {
        /// The net.
        net: String,
        /// The layer's index (0-based).
        index: usize,
    },
    /// A shape or weight does not fit in `usize`/`u64`.
    #[error("layer `{layer}`: output shape or weight overflows (input {input})")]
    Overflow {
        /// The layer.
        layer: String,
        /// The layer's input shape.
        input: Shape,
    },
    /// A stage count that cannot split the layers (0, or more stages than layers).
    #[error("cannot split {layers} layers into {stages} stages (need 1 <= stages <= layers)")]
    InvalidStageCount {
        /// Requested stage count.
        stages: usize,
        /// Number of layers.
        layers: usize,
    },
    /// A composition (layers per stage) that does not cover the layers exactly.
    #[error(
        "composition {composition:?} does not split {layers} layers (each stage needs >= 1 layer, sum must be {layers})"
    )]
    BadComposition {
        /// The composition given.
        composition: Vec<usize>,
        /// Number of layers.
        layers: usize,
    },
    /// The sum of all layer weights overflows `u64`.
    #[error("the total of {layers} layer weights overflows u64")]
    TotalWeightOverflow {
        /// Number of layers.
        layers: usize,
    },
    /// Exhaustive enumeration refused: too many compositions (use `SeedIter`).
    #[error("{layers} layers in {stages} stages have {} compositions, more than the exhaustive limit {limit}; use SeedIter",
        count.map_or_else(|| "more than 2^128".to_string(), |c| c.to_string()))]
    TooManyCompositions {
        /// Number of layers.
        layers: usize,
        /// Stage count.
        stages: usize,
        /// The count, `None` if it overflows `u128`.
        count: Option<u128>,
        /// The limit.
        limit: u128,
    },
    /// A synthetic-net request that cannot be met (bad range, zero depth).
    #[error("synthetic net: {reason}")]
    InvalidSynth {
        /// What is wrong.
        reason: String,
    },
    /// A synthetic net whose f32 weights and activations would take more memory than
    /// [`SYNTH_MEMORY_LIMIT`](crate::SYNTH_MEMORY_LIMIT): refused before anything is
    /// allocated.
    #[error(
        "synthetic net `{net}` of depth {depth}: its f32 weights and activations take {}, \
         more than the limit of {} (SYNTH_MEMORY_LIMIT); use a smaller depth",
        size_text(*bytes, *at_least), size_text(Some(*limit), false)
    )]
    SynthTooLarge {
        /// The net.
        net: String,
        /// Its depth (layers).
        depth: usize,
        /// The bytes it needs; `None` if they overflow `u64`.
        bytes: Option<u64>,
        /// Whether `bytes` is only a lower bound (a depth refused before its weights were
        /// drawn).
        at_least: bool,
        /// The limit.
        limit: u64,
    },
    /// The seed search's cost table ([`SeedIter`](crate::SeedIter), `O(stages · layers²)`)
    /// would take more memory than [`SEED_TABLE_LIMIT`](crate::SEED_TABLE_LIMIT).
    #[error(
        "{layers} layers in {stages} stages: the seed search's cost table takes {}, more \
         than the limit of {} (SEED_TABLE_LIMIT); use fewer layers or stages",
        size_text(*bytes, false), size_text(Some(*limit), false)
    )]
    SeedTableTooLarge {
        /// Number of layers.
        layers: usize,
        /// Stage count.
        stages: usize,
        /// The bytes it needs; `None` if they overflow `u64`.
        bytes: Option<u64>,
        /// The limit.
        limit: u64,
    },
}

/// `9.1 GiB (9771311104 bytes)`, or that it overflows.
fn size_text(bytes: Option<u64>, at_least: bool) -> String {
    let prefix = if at_least { "at least " } else { "" };
    match bytes {
        Some(b) => format!(
            "{prefix}{:.1} GiB ({b} bytes)",
            b as f64 / (1u64 << 30) as f64
        ),
        None => "more than 2^64 bytes".to_string(),
    }
}
