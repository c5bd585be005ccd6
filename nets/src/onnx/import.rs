//! An ONNX graph becomes a [`NetSpec`] plus its weights: one layer per node (a `MatMul`
//! and the `Add` of its bias make one), in the file's order, each reading the previous
//! layer or, with a `from`, the layer that produced its input. The parameters go under
//! the names the model builder asks for ([`torch_name`] of the layer and `weight`, `bias`,
//! `running_mean`, …).

use std::collections::{BTreeMap, HashMap, HashSet};

use taopipe_dsl::{INPUT, LayerKind, NetSpec, Shape};

use super::OnnxError;
use super::graph::{Attr, Data, Dim, Graph, Node, Tensor};
use crate::model::torch_name;

/// `(rows, columns)` of a 2-D window's sizes.
type Pair = (usize, usize);

/// A parameter: its shape and values, by the name the model builder asks for.
pub(crate) type Params = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

/// The net and its parameters.
pub(crate) struct Imported {
    pub(crate) spec: NetSpec,
    pub(crate) params: Params,
    /// The graph input's name.
    pub(crate) input: String,
    /// The graph output's name.
    pub(crate) output: String,
}

/// Who computes a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Producer {
    Input,
    /// The layer with this index.
    Layer(usize),
}

/// A layer being declared.
struct Pending {
    name: String,
    kind: LayerKind,
    from: Option<String>,
}

struct Importer {
    net: String,
    input: Shape,
    layers: Vec<Pending>,
    names: HashSet<String>,
    producer: HashMap<String, Producer>,
    /// Initializers and `Constant` outputs, by tensor name.
    constants: HashMap<String, Tensor>,
    readers: HashMap<String, usize>,
    params: Params,
    /// Nodes already merged into an earlier layer (the `Add` of a `MatMul`'s bias).
    merged: HashSet<usize>,
    /// Tensors of rank 2 (`[1, N]`: a flatten's, a `Gemm`'s); the others are `[1, C, H, W]`.
    flat: HashSet<String>,
}

/// Imports `graph`, a model called `net`.
pub(crate) fn import(graph: Graph, net: &str) -> Result<Imported, OnnxError> {
    let readers: HashMap<String, usize> = graph
        .readers()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let Graph {
        nodes,
        initializers,
        inputs,
        outputs,
    } = graph;
    let real: Vec<_> = inputs
        .iter()
        .filter(|i| !initializers.contains_key(&i.name))
        .collect();
    let [input] = real.as_slice() else {
        return Err(OnnxError::Graph {
            reason: format!(
                "the graph has {} inputs ({}); taopipe runs nets of one input",
                real.len(),
                real.iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    };
    let [output] = outputs.as_slice() else {
        return Err(OnnxError::Graph {
            reason: format!(
                "the graph has {} outputs ({}); taopipe runs nets of one output",
                outputs.len(),
                outputs.join(", ")
            ),
        });
    };
    let shape = input_shape(&input.name, input.dims.as_deref())?;
    let mut im = Importer {
        net: net.to_string(),
        input: shape,
        layers: Vec::new(),
        names: HashSet::new(),
        producer: HashMap::from([(input.name.clone(), Producer::Input)]),
        constants: initializers,
        readers,
        params: Params::new(),
        merged: HashSet::new(),
        flat: HashSet::new(),
    };
    for (i, node) in nodes.iter().enumerate() {
        if !im.merged.contains(&i) {
            im.node(&nodes, i, node)?;
        }
    }
    let last = im.layers.len().checked_sub(1).map(Producer::Layer);
    match im.producer.get(output.as_str()) {
        Some(p) if Some(*p) == last => {}
        Some(_) => {
            return Err(OnnxError::Graph {
                reason: format!(
                    "output `{output}` is not computed by the last node; taopipe's net ends with its output"
                ),
            });
        }
        None => {
            return Err(OnnxError::Graph {
                reason: format!("no node computes the output `{output}`"),
            });
        }
    }
    let spec = im.spec(im.layers.len())?;
    Ok(Imported {
        spec,
        params: im.params,
        input: input.name.clone(),
        output: output.clone(),
    })
}

/// The input's `C×H×W` from its declared `[N, C, H, W]`: `N` 1 or named (batch 1 is what
/// taopipe runs), the others fixed.
fn input_shape(name: &str, dims: Option<&[Dim]>) -> Result<Shape, OnnxError> {
    let dynamic = |dims: &str| OnnxError::DynamicShape {
        input: name.to_string(),
        dims: dims.to_string(),
    };
    let Some(dims) = dims else {
        return Err(dynamic("no shape"));
    };
    let text = dims
        .iter()
        .map(|d| match d {
            Dim::Fixed(v) => v.to_string(),
            Dim::Symbol(s) => s.clone(),
            Dim::Unknown => "?".into(),
        })
        .collect::<Vec<_>>()
        .join("x");
    let fixed = |d: &Dim| match d {
        Dim::Fixed(v) if *v > 0 => usize::try_from(*v).ok(),
        _ => None,
    };
    match dims {
        [Dim::Fixed(1) | Dim::Symbol(_), c, h, w] => match (fixed(c), fixed(h), fixed(w)) {
            (Some(c), Some(h), Some(w)) => Ok(Shape::new(c, h, w)),
            _ => Err(dynamic(&text)),
        },
        [_, _, _, _] => Err(dynamic(&text)),
        _ => Err(OnnxError::Graph {
            reason: format!("input `{name}` is {text}; taopipe takes an image batch [1, C, H, W]"),
        }),
    }
}

/// A layer name from a node's: letters and digits kept, the rest `_`; the op and index if
/// nothing is left.
fn layer_name(node: &Node, index: usize) -> String {
    let mut name = String::new();
    for c in node.name.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    let name = name.trim_end_matches('_');
    if name.is_empty() {
        format!("{}_{index}", node.op.to_ascii_lowercase())
    } else {
        name.to_string()
    }
}

impl Importer {
    fn unsupported(node: &Node, reason: impl Into<String>) -> OnnxError {
        OnnxError::Unsupported {
            node: node.name.clone(),
            op: node.op.clone(),
            reason: reason.into(),
        }
    }

    /// The net of the first `n` layers.
    fn spec(&self, n: usize) -> Result<NetSpec, OnnxError> {
        let mut b = NetSpec::builder(self.net.clone(), self.input);
        for l in &self.layers[..n] {
            b = match &l.from {
                Some(f) => b.layer_from(l.name.clone(), l.kind.clone(), f.clone()),
                None => b.layer(l.name.clone(), l.kind.clone()),
            };
        }
        b.build().map_err(OnnxError::Net)
    }

    /// The shape of the computed tensor `name`.
    fn shape(&self, node: &Node, name: &str) -> Result<Shape, OnnxError> {
        match self.producer(node, name)? {
            Producer::Input => Ok(self.input),
            Producer::Layer(i) => Ok(self.spec(i + 1)?.layers()[i].output()),
        }
    }

    fn producer(&self, node: &Node, name: &str) -> Result<Producer, OnnxError> {
        self.producer.get(name).copied().ok_or_else(|| {
            let what = if self.constants.contains_key(name) {
                "a constant, where taopipe needs a computed tensor"
            } else {
                "computed by no earlier node"
            };
            Self::unsupported(node, format!("input `{name}` is {what}"))
        })
    }

    /// The constant `name` (an initializer or a `Constant` node's output).
    fn constant(&self, node: &Node, name: &str) -> Result<&Tensor, OnnxError> {
        self.constants.get(name).ok_or_else(|| {
            Self::unsupported(
                node,
                format!("input `{name}` must be a constant (an initializer), not computed"),
            )
        })
    }

    /// The f32 values of the constant `name`.
    fn floats(&self, node: &Node, name: &str) -> Result<(Vec<usize>, Vec<f32>), OnnxError> {
        let t = self.constant(node, name)?;
        match &t.data {
            Data::F32(v) => Ok((t.dims.clone(), v.clone())),
            Data::I64(_) => Err(Self::unsupported(
                node,
                format!("constant `{name}` is INT64; taopipe reads FLOAT weights"),
            )),
            Data::Other(ty) => Err(Self::unsupported(
                node,
                format!("constant `{name}` is {ty}; taopipe reads FLOAT weights"),
            )),
        }
    }

    /// Appends a layer computing `node`'s first output from its tensor `input`.
    fn push(
        &mut self,
        node: &Node,
        index: usize,
        input: &str,
        kind: LayerKind,
    ) -> Result<String, OnnxError> {
        let from = match self.producer(node, input)? {
            Producer::Layer(i) if i + 1 == self.layers.len() => None,
            Producer::Input if self.layers.is_empty() => None,
            Producer::Input => Some(INPUT.to_string()),
            Producer::Layer(i) => Some(self.layers[i].name.clone()),
        };
        self.push_from(node, index, from, kind)
    }

    fn push_from(
        &mut self,
        node: &Node,
        index: usize,
        from: Option<String>,
        kind: LayerKind,
    ) -> Result<String, OnnxError> {
        let base = layer_name(node, index);
        let mut name = base.clone();
        let mut n = 1;
        while name == INPUT || self.names.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.names.insert(name.clone());
        let out = node.outputs.first().cloned().unwrap_or_default();
        self.producer
            .insert(out, Producer::Layer(self.layers.len()));
        self.layers.push(Pending {
            name: name.clone(),
            kind,
            from,
        });
        Ok(name)
    }

    fn param(&mut self, layer: &str, param: &str, dims: Vec<usize>, values: Vec<f32>) {
        self.params.insert(torch_name(layer, param), (dims, values));
    }

    /// Whether tensor `name` is read once, by the next node, which is an `op`: then the
    /// two become one layer, or the model builder folds the second into the first.
    fn read_once_by<'n>(
        &self,
        nodes: &'n [Node],
        index: usize,
        name: &str,
        op: &str,
    ) -> Option<&'n Node> {
        let next = nodes.get(index + 1)?;
        (self.readers.get(name) == Some(&1) && next.op == op && next.input(0) == Some(name))
            .then_some(next)
    }

    fn node(&mut self, nodes: &[Node], index: usize, node: &Node) -> Result<(), OnnxError> {
        let first = || {
            node.input(0)
                .map(str::to_string)
                .ok_or_else(|| Self::unsupported(node, "it has no input"))
        };
        match node.op.as_str() {
            "Constant" => {
                let value = match node.attr("value") {
                    Some(Attr::Tensor(t)) => t.clone(),
                    Some(Attr::Float(v)) => Tensor {
                        dims: vec![],
                        data: Data::F32(vec![*v]),
                    },
                    Some(Attr::Floats(v)) => Tensor {
                        dims: vec![v.len()],
                        data: Data::F32(v.clone()),
                    },
                    Some(Attr::Int(v)) => Tensor {
                        dims: vec![],
                        data: Data::I64(vec![*v]),
                    },
                    Some(Attr::Ints(v)) => Tensor {
                        dims: vec![v.len()],
                        data: Data::I64(v.clone()),
                    },
                    _ => {
                        return Err(Self::unsupported(
                            node,
                            "a constant without a tensor, float or int value",
                        ));
                    }
                };
                if let Some(out) = node.outputs.first() {
                    self.constants.insert(out.clone(), value);
                }
            }
            "Identity" | "Dropout" => {
                // torch.onnx.export writes `Identity` nodes that alias one initializer
                // under another name where two parameters hold the same values (zero
                // biases of an untrained net): the output is then that constant.
                let input = first()?;
                if let Some(value) = self.constants.get(&input).cloned() {
                    if let Some(out) = node.outputs.first() {
                        self.constants.insert(out.clone(), value);
                    }
                    return Ok(());
                }
                let p = self.producer(node, &input)?;
                if node
                    .outputs
                    .get(1)
                    .is_some_and(|m| self.readers.contains_key(m))
                {
                    return Err(Self::unsupported(node, "its mask output is read"));
                }
                if let Some(out) = node.outputs.first() {
                    self.producer.insert(out.clone(), p);
                }
            }
            "Conv" => self.conv(index, node)?,
            "BatchNormalization" => self.batch_norm(index, node)?,
            "Relu" => {
                self.push(node, index, &first()?, LayerKind::Relu)?;
            }
            "Clip" => {
                let bound = |i: usize, attr: &str, default: f32| -> Result<f32, OnnxError> {
                    if let Some(name) = node.input(i) {
                        let (_, v) = self.floats(node, name)?;
                        return v.first().copied().filter(|_| v.len() == 1).ok_or_else(|| {
                            Self::unsupported(node, format!("bound `{name}` is not one value"))
                        });
                    }
                    Ok(float(node, attr)?.unwrap_or(default))
                };
                let (min, max) = (
                    bound(1, "min", f32::NEG_INFINITY)?,
                    bound(2, "max", f32::INFINITY)?,
                );
                self.push(node, index, &first()?, LayerKind::Clip { min, max })?;
            }
            "LeakyRelu" => {
                let slope = float(node, "alpha")?.unwrap_or(0.01);
                self.push(node, index, &first()?, LayerKind::LeakyRelu { slope })?;
            }
            "MaxPool" | "AveragePool" => self.pool(index, node)?,
            "GlobalAveragePool" => {
                self.push(node, index, &first()?, LayerKind::GlobalAvgPool)?;
            }
            "Gemm" => self.gemm(index, node)?,
            "MatMul" => self.matmul(nodes, index, node)?,
            "Add" => self.add(index, node)?,
            "Concat" => self.concat(index, node)?,
            "Flatten" => {
                let axis = int(node, "axis")?.unwrap_or(1);
                if axis != 1 {
                    return Err(Self::unsupported(
                        node,
                        format!(
                            "axis {axis}: taopipe flattens [1, C, H, W] to [1, C·H·W] (axis 1)"
                        ),
                    ));
                }
                self.push(node, index, &first()?, LayerKind::Flatten)?;
                self.flat.extend(node.outputs.first().cloned());
            }
            "Reshape" => self.reshape(index, node)?,
            "Softmax" => {
                let input = first()?;
                let shape = self.shape(node, &input)?;
                let axis = int(node, "axis")?.unwrap_or(-1);
                // [1, N] (axis 1 or -1), or [1, C, 1, 1] (axis 1 or -3): one softmax over all.
                let rank2 = self.flat.contains(&input);
                let ok = shape.h * shape.w == 1
                    && (matches!(axis, 1) || axis == if rank2 { -1 } else { -3 });
                if !ok {
                    return Err(Self::unsupported(
                        node,
                        format!(
                            "axis {axis} of a {shape} tensor: taopipe's softmax runs over a flat [1, N] tensor"
                        ),
                    ));
                }
                self.push(node, index, &input, LayerKind::Softmax)?;
                if rank2 {
                    self.flat.extend(node.outputs.first().cloned());
                }
            }
            other => {
                return Err(Self::unsupported(
                    node,
                    format!(
                        "taopipe does not run the op `{other}` (it runs Conv, Gemm, MatMul, Relu, Clip, LeakyRelu, MaxPool, AveragePool, GlobalAveragePool, Add, Concat, BatchNormalization, Flatten, Reshape to [1, N], Softmax, Dropout and Identity)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Attribute `name` of `node`, if present, through `get`: an attribute of another type is
/// an error naming it (a model that means something else than taopipe would read).
fn typed<'a, T>(
    node: &'a Node,
    name: &str,
    want: &str,
    get: impl Fn(&'a Attr) -> Option<T>,
) -> Result<Option<T>, OnnxError> {
    let Some(a) = node.attr(name) else {
        return Ok(None);
    };
    get(a).map(Some).ok_or_else(|| {
        Importer::unsupported(
            node,
            format!("attribute `{name}` is {}, not {want}", a.type_name()),
        )
    })
}

/// An INT attribute.
fn int(node: &Node, name: &str) -> Result<Option<i64>, OnnxError> {
    typed(node, name, "INT", |a| match a {
        Attr::Int(v) => Some(*v),
        _ => None,
    })
}

/// An INTS attribute.
fn ints<'a>(node: &'a Node, name: &str) -> Result<Option<&'a [i64]>, OnnxError> {
    typed(node, name, "INTS", |a| match a {
        Attr::Ints(v) => Some(v.as_slice()),
        _ => None,
    })
}

/// A FLOAT attribute.
fn float(node: &Node, name: &str) -> Result<Option<f32>, OnnxError> {
    typed(node, name, "FLOAT", |a| match a {
        Attr::Float(v) => Some(*v),
        _ => None,
    })
}

/// A STRING attribute.
fn string<'a>(node: &'a Node, name: &str) -> Result<Option<&'a str>, OnnxError> {
    typed(node, name, "STRING", |a| match a {
        Attr::Str(v) => Some(v.as_str()),
        _ => None,
    })
}

/// The layers of the weighted and shaped ops.
impl Importer {
    /// `pads` ([top, left, bottom, right]) of a 2-D window, from the attribute or `auto_pad`.
    fn pads(
        &self,
        node: &Node,
        input: &str,
        kernel: (usize, usize),
        stride: (usize, usize),
    ) -> Result<[usize; 4], OnnxError> {
        let auto = string(node, "auto_pad")?.unwrap_or("NOTSET");
        match auto {
            "NOTSET" => match ints(node, "pads")? {
                None => Ok([0; 4]),
                Some(&[t, l, b, r]) if [t, l, b, r].iter().all(|&p| p >= 0) => {
                    Ok([t, l, b, r].map(|p| p as usize))
                }
                Some(p) => Err(Self::unsupported(
                    node,
                    format!("pads {p:?}: a 2-D window takes four pads of at least 0"),
                )),
            },
            "VALID" => Ok([0; 4]),
            "SAME_UPPER" | "SAME_LOWER" => {
                // Output ceil(n / s); the padding the window then needs, the odd one at the
                // end (upper) or the start (lower).
                let shape = self.shape(node, input)?;
                let total = |n: usize, k: usize, s: usize| (n.div_ceil(s) - 1) * s + k;
                let (th, tw) = (
                    total(shape.h, kernel.0, stride.0).saturating_sub(shape.h),
                    total(shape.w, kernel.1, stride.1).saturating_sub(shape.w),
                );
                let split = |t: usize| {
                    if auto == "SAME_UPPER" {
                        (t / 2, t - t / 2)
                    } else {
                        (t - t / 2, t / 2)
                    }
                };
                let ((t, b), (l, r)) = (split(th), split(tw));
                Ok([t, l, b, r])
            }
            other => Err(Self::unsupported(node, format!("auto_pad {other}"))),
        }
    }

    /// `(strides, kernel)` of a 2-D window, and checks its dilations are 1.
    fn window(
        &self,
        node: &Node,
        kernel: Option<(usize, usize)>,
    ) -> Result<(Pair, Pair), OnnxError> {
        let pair = |what: &str, v: Option<&[i64]>, default: (usize, usize)| match v {
            None => Ok(default),
            Some(&[a, b]) if a > 0 && b > 0 => Ok((a as usize, b as usize)),
            Some(v) => Err(Self::unsupported(
                node,
                format!("{what} {v:?}: taopipe runs 2-D windows"),
            )),
        };
        if let Some(d) = ints(node, "dilations")?
            && d.iter().any(|&d| d != 1)
        {
            return Err(Self::unsupported(
                node,
                format!("dilations {d:?}: taopipe runs undilated windows"),
            ));
        }
        let kernel = match kernel {
            Some(k) => pair("kernel_shape", ints(node, "kernel_shape")?, k)?,
            None => pair("kernel_shape", ints(node, "kernel_shape")?, (0, 0)).and_then(|k| {
                if k.0 == 0 {
                    Err(Self::unsupported(node, "no kernel_shape"))
                } else {
                    Ok(k)
                }
            })?,
        };
        Ok((pair("strides", ints(node, "strides")?, (1, 1))?, kernel))
    }

    fn conv(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let input = node.input(0).unwrap_or_default().to_string();
        let w_name = node
            .input(1)
            .ok_or_else(|| Self::unsupported(node, "no weights"))?
            .to_string();
        let (dims, w) = self.floats(node, &w_name)?;
        let [k, cg, kh, kw] = dims[..] else {
            return Err(Self::unsupported(
                node,
                format!("weights {dims:?}: taopipe runs 2-D convolutions ([K, C/g, kh, kw])"),
            ));
        };
        let (stride, kernel) = self.window(node, Some((kh, kw)))?;
        if kernel != (kh, kw) {
            return Err(Self::unsupported(
                node,
                format!("kernel_shape {kernel:?} against weights {dims:?}"),
            ));
        }
        let [t, l, b, r] = self.pads(node, &input, kernel, stride)?;
        if (t, l) != (b, r) {
            return Err(Self::unsupported(
                node,
                format!("pads [{t}, {l}, {b}, {r}]: taopipe's convolutions pad both sides alike"),
            ));
        }
        let groups = int(node, "group")?.unwrap_or(1);
        let groups = usize::try_from(groups)
            .ok()
            .filter(|&g| g > 0)
            .ok_or_else(|| Self::unsupported(node, format!("group {groups}")))?;
        let c = self.shape(node, &input)?.c;
        if c != cg * groups {
            return Err(Self::unsupported(
                node,
                format!("weights {dims:?} with {groups} groups on {c} input channels"),
            ));
        }
        let kind = LayerKind::Conv2d {
            out_channels: k,
            kernel,
            stride,
            padding: (t, l),
            groups,
            relu: false,
        };
        let name = self.push(node, index, &input, kind)?;
        let bias = match node.input(2) {
            Some(b) => self.floats(node, b)?.1,
            None => vec![0.0; k],
        };
        self.param(&name, "weight", dims, w);
        self.param(&name, "bias", vec![k], bias);
        Ok(())
    }

    fn batch_norm(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        if int(node, "training_mode")?.unwrap_or(0) != 0 {
            return Err(Self::unsupported(
                node,
                "training mode: taopipe runs inference",
            ));
        }
        let input = node.input(0).unwrap_or_default().to_string();
        let mut stats = Vec::with_capacity(4);
        for i in 1..5 {
            let name = node
                .input(i)
                .ok_or_else(|| Self::unsupported(node, format!("input {i} missing")))?;
            stats.push(self.floats(node, name)?.1);
        }
        let c = self.shape(node, &input)?.c;
        if stats.iter().any(|v| v.len() != c) {
            return Err(Self::unsupported(
                node,
                format!("statistics of another length than the {c} channels"),
            ));
        }
        let eps = float(node, "epsilon")?.unwrap_or(LayerKind::BN_EPS);
        // A batchnorm right after the convolution it alone reads is folded into that
        // convolution's weights, without its bias: the bias moves into the mean instead,
        // `(x + b − mean) = (x − (mean − b))`.
        let conv_bias = match self.producer(node, &input)? {
            Producer::Layer(i)
                if i + 1 == self.layers.len()
                    && matches!(self.layers[i].kind, LayerKind::Conv2d { .. })
                    && self.readers.get(&input) == Some(&1) =>
            {
                self.params
                    .get(&torch_name(&self.layers[i].name, "bias"))
                    .map(|(_, b)| b.clone())
            }
            _ => None,
        };
        let mut stats = stats.into_iter();
        let (gamma, beta, mut mean, var) = (stats.next(), stats.next(), stats.next(), stats.next());
        if let (Some(mean), Some(bias)) = (mean.as_mut(), conv_bias) {
            mean.iter_mut().zip(&bias).for_each(|(m, b)| *m -= b);
        }
        let name = self.push(node, index, &input, LayerKind::BatchNorm { eps })?;
        for (param, values) in [
            ("weight", gamma),
            ("bias", beta),
            ("running_mean", mean),
            ("running_var", var),
        ] {
            self.param(&name, param, vec![c], values.unwrap_or_default());
        }
        Ok(())
    }

    fn pool(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let input = node.input(0).unwrap_or_default().to_string();
        if node
            .outputs
            .get(1)
            .is_some_and(|m| self.readers.contains_key(m))
        {
            return Err(Self::unsupported(node, "its indices output is read"));
        }
        let (stride, kernel) = self.window(node, None)?;
        let [t, l, b, r] = self.pads(node, &input, kernel, stride)?;
        let ceil = int(node, "ceil_mode")?.unwrap_or(0) != 0;
        let max = node.op == "MaxPool";
        if !max && int(node, "count_include_pad")?.unwrap_or(0) != 0 && [t, l, b, r] != [0; 4] {
            return Err(Self::unsupported(
                node,
                "count_include_pad 1 with padding: taopipe averages the in-bounds values only",
            ));
        }
        let (padding, padding_end) = ((t, l), (b, r));
        let kind = if max {
            LayerKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            }
        } else {
            LayerKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            }
        };
        self.push(node, index, &input, kind)?;
        Ok(())
    }

    /// A fully connected layer of weights `[out, in]` (PyTorch's layout) and a bias.
    fn fc(
        &mut self,
        node: &Node,
        index: usize,
        input: &str,
        w: (usize, usize, Vec<f32>),
        bias: Vec<f32>,
    ) -> Result<(), OnnxError> {
        let (out, n, w) = w;
        let shape = self.shape(node, input)?;
        if shape.c * shape.h * shape.w != n {
            return Err(Self::unsupported(
                node,
                format!("weights of {n} inputs on a {shape} tensor"),
            ));
        }
        if bias.len() != out {
            return Err(Self::unsupported(
                node,
                format!("a bias of {} values for {out} outputs", bias.len()),
            ));
        }
        let name = self.push(
            node,
            index,
            input,
            LayerKind::Fc {
                out_features: out,
                relu: false,
            },
        )?;
        self.flat.extend(node.outputs.first().cloned());
        self.param(&name, "weight", vec![out, n], w);
        self.param(&name, "bias", vec![out], bias);
        Ok(())
    }

    fn gemm(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let input = node.input(0).unwrap_or_default().to_string();
        let (alpha, beta) = (
            float(node, "alpha")?.unwrap_or(1.0),
            float(node, "beta")?.unwrap_or(1.0),
        );
        if int(node, "transA")?.unwrap_or(0) != 0 || alpha != 1.0 || beta != 1.0 {
            return Err(Self::unsupported(
                node,
                "transA, alpha or beta: taopipe runs y = x·Bᵀ + c or x·B + c",
            ));
        }
        let b = node
            .input(1)
            .ok_or_else(|| Self::unsupported(node, "no weights"))?;
        let (dims, w) = self.floats(node, b)?;
        let [rows, cols] = dims[..] else {
            return Err(Self::unsupported(
                node,
                format!("weights {dims:?}: a matrix"),
            ));
        };
        let w = if int(node, "transB")?.unwrap_or(0) != 0 {
            (rows, cols, w)
        } else {
            (cols, rows, transpose(&w, rows, cols))
        };
        let bias = match node.input(2) {
            Some(c) => self.floats(node, c)?.1,
            None => vec![0.0; w.0],
        };
        self.fc(node, index, &input, w, bias)
    }

    fn matmul(&mut self, nodes: &[Node], index: usize, node: &Node) -> Result<(), OnnxError> {
        let input = node.input(0).unwrap_or_default().to_string();
        let b = node
            .input(1)
            .ok_or_else(|| Self::unsupported(node, "no weights"))?;
        let (dims, w) = self.floats(node, b)?;
        let [n, out] = dims[..] else {
            return Err(Self::unsupported(
                node,
                format!("weights {dims:?}: a matrix"),
            ));
        };
        // `MatMul` then `Add` of a constant bias (PyTorch's export of a `Linear` without
        // `Gemm`): one layer, computing the `Add`'s output.
        let product = node.outputs.first().cloned().unwrap_or_default();
        let add = self
            .read_once_by(nodes, index, &product, "Add")
            .filter(|a| a.input(1).is_some_and(|c| self.constants.contains_key(c)));
        let (bias, node) = match add {
            Some(a) => {
                self.merged.insert(index + 1);
                (self.floats(a, a.input(1).unwrap_or_default())?.1, a)
            }
            None => (vec![0.0; out], node),
        };
        self.fc(node, index, &input, (out, n, transpose(&w, n, out)), bias)
    }

    fn add(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let (Some(a), Some(b)) = (node.input(0), node.input(1)) else {
            return Err(Self::unsupported(node, "it needs two inputs"));
        };
        let (pa, pb) = (self.producer(node, a)?, self.producer(node, b)?);
        // The operand the previous layer computed is the input (so the model can fuse the
        // add into that layer's store); the other is added to it.
        let last = self.layers.len().checked_sub(1).map(Producer::Layer);
        let (main, other) = if Some(pb) == last { (b, pa) } else { (a, pb) };
        let from = match other {
            Producer::Input => INPUT.to_string(),
            Producer::Layer(i) => self.layers[i].name.clone(),
        };
        if self.shape(node, a)? != self.shape(node, b)? {
            return Err(Self::unsupported(
                node,
                "operands of other shapes: taopipe adds tensors of one shape",
            ));
        }
        let main = main.to_string();
        self.push(
            node,
            index,
            &main,
            LayerKind::ResidualAdd { from, relu: false },
        )?;
        Ok(())
    }

    fn concat(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let axis = int(node, "axis")?.unwrap_or(1);
        if !matches!(axis, 1 | -3) {
            return Err(Self::unsupported(
                node,
                format!("axis {axis}: taopipe joins along the channels (axis 1)"),
            ));
        }
        let mut from = Vec::new();
        for name in node.inputs.iter().filter(|n| !n.is_empty()) {
            from.push(match self.producer(node, name)? {
                Producer::Input => INPUT.to_string(),
                Producer::Layer(i) => self.layers[i].name.clone(),
            });
        }
        self.push_from(node, index, None, LayerKind::Concat { from })?;
        Ok(())
    }

    /// A `Reshape` to `[1, N]` (or `[-1, N]`, `[1, -1]`, `[0, -1]`) of a `[1, C, H, W]`
    /// tensor is a flatten; any other reshape is refused.
    fn reshape(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let input = node.input(0).unwrap_or_default().to_string();
        let shape = self.shape(node, &input)?;
        let target = node
            .input(1)
            .ok_or_else(|| Self::unsupported(node, "no shape"))?;
        let dims = match &self.constant(node, target)?.data {
            Data::I64(v) => v.clone(),
            _ => return Err(Self::unsupported(node, "a shape that is not INT64")),
        };
        let n = (shape.c * shape.h * shape.w) as i64;
        let flat = matches!(dims[..], [-1..=1, m] if m == n || m == -1);
        if !flat {
            return Err(Self::unsupported(
                node,
                format!(
                    "shape {dims:?} of a {shape} tensor: taopipe reshapes only to [1, {n}] (a flatten)"
                ),
            ));
        }
        self.push(node, index, &input, LayerKind::Flatten)?;
        self.flat.extend(node.outputs.first().cloned());
        Ok(())
    }
}

/// The transpose of a row-major `rows × cols` matrix.
fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; w.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = w[r * cols + c];
        }
    }
    t
}
