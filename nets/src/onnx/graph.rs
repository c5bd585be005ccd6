//! The parts of an ONNX model the importer reads, apart from the file format: the parser
//! (`parse.rs`) fills these, and `import.rs` turns them into a net.

use std::collections::HashMap;

/// A graph: its nodes in the file's (topological) order, its constant tensors, its inputs
/// and outputs.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
    /// Initializers by name (weights, and constants such as a `Reshape`'s shape).
    pub(crate) initializers: HashMap<String, Tensor>,
    /// The graph's declared inputs (older exports also list the initializers here).
    pub(crate) inputs: Vec<ValueInfo>,
    /// The names of its outputs.
    pub(crate) outputs: Vec<String>,
}

/// One node.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub(crate) op: String,
    pub(crate) name: String,
    /// Input tensor names; an empty name is an absent optional input.
    pub(crate) inputs: Vec<String>,
    pub(crate) outputs: Vec<String>,
    pub(crate) attrs: Vec<(String, Attr)>,
}

/// An attribute value.
#[derive(Debug, Clone)]
pub(crate) enum Attr {
    Int(i64),
    Float(f32),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    Str(String),
    Tensor(Tensor),
    /// A kind the importer never reads (a graph, a sparse tensor, …), by name.
    Other(&'static str),
}

/// A constant tensor.
#[derive(Debug, Clone)]
pub(crate) struct Tensor {
    pub(crate) dims: Vec<usize>,
    pub(crate) data: Data,
}

/// A tensor's values.
#[derive(Debug, Clone)]
pub(crate) enum Data {
    F32(Vec<f32>),
    I64(Vec<i64>),
    /// Another element type, by its ONNX name (`FLOAT16`, `INT8`, …).
    Other(String),
}

/// A graph input: its name and its dimensions, where the file gives them.
#[derive(Debug, Clone)]
pub(crate) struct ValueInfo {
    pub(crate) name: String,
    /// `None` when the file gives no shape at all.
    pub(crate) dims: Option<Vec<Dim>>,
}

/// One dimension of a declared shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dim {
    Fixed(i64),
    /// A named dimension (`batch_size`): fixed only when the model runs.
    Symbol(String),
    Unknown,
}

impl Attr {
    /// ONNX's name of its type, for errors.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Attr::Int(_) => "INT",
            Attr::Float(_) => "FLOAT",
            Attr::Ints(_) => "INTS",
            Attr::Floats(_) => "FLOATS",
            Attr::Str(_) => "STRING",
            Attr::Tensor(_) => "TENSOR",
            Attr::Other(name) => name,
        }
    }
}

impl Node {
    /// The attribute `name`, if the node has it.
    pub(crate) fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// Input `i`, if present and not empty (an optional input left out).
    pub(crate) fn input(&self, i: usize) -> Option<&str> {
        self.inputs
            .get(i)
            .map(String::as_str)
            .filter(|n| !n.is_empty())
    }
}

impl Graph {
    /// Which node consumes each tensor, and how many times: what decides whether two
    /// nodes can be merged into one layer (a `MatMul` and the `Add` of its bias).
    pub(crate) fn readers(&self) -> HashMap<&str, usize> {
        let mut readers = HashMap::new();
        for node in &self.nodes {
            for input in node.inputs.iter().filter(|n| !n.is_empty()) {
                *readers.entry(input.as_str()).or_insert(0) += 1;
            }
        }
        for output in &self.outputs {
            *readers.entry(output.as_str()).or_insert(0) += 1;
        }
        readers
    }
}
