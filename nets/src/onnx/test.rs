//! The importer on graphs written by hand (the parser's own tests read files).

use std::collections::HashMap;

use taopipe_dsl::{LayerKind, Shape, Source};

use super::graph::{Attr, Data, Dim, Graph, Node, Tensor, ValueInfo};
use super::import::import;
use super::*;

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<(&str, Attr)>) -> Node {
    Node {
        op: op.into(),
        name: name.into(),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        outputs: outputs.iter().map(|s| s.to_string()).collect(),
        attrs: attrs.into_iter().map(|(n, a)| (n.to_string(), a)).collect(),
    }
}

fn floats(dims: &[usize], f: impl Fn(usize) -> f32) -> Tensor {
    let n = dims.iter().product();
    Tensor {
        dims: dims.to_vec(),
        data: Data::F32((0..n).map(f).collect()),
    }
}

fn graph(input: [i64; 4], nodes: Vec<Node>, init: Vec<(&str, Tensor)>, output: &str) -> Graph {
    Graph {
        nodes,
        initializers: init
            .into_iter()
            .map(|(n, t)| (n.to_string(), t))
            .collect::<HashMap<_, _>>(),
        inputs: vec![ValueInfo {
            name: "x".into(),
            dims: Some(input.iter().map(|&d| Dim::Fixed(d)).collect()),
        }],
        outputs: vec![output.into()],
    }
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

/// Conv (with a bias) → BatchNormalization → Relu → MaxPool → Flatten → Gemm, then the
/// parameters under the model builder's names, the conv's bias moved into the mean.
#[test]
fn a_conv_net_imports_with_its_weights() {
    let g = graph(
        [1, 3, 8, 8],
        vec![
            node(
                "Conv",
                "/features/0/Conv",
                &["x", "w", "b"],
                &["c"],
                vec![
                    ("kernel_shape", ints(&[3, 3])),
                    ("pads", ints(&[1, 1, 1, 1])),
                    ("strides", ints(&[1, 1])),
                ],
            ),
            node(
                "BatchNormalization",
                "bn",
                &["c", "g", "be", "m", "v"],
                &["n"],
                vec![("epsilon", Attr::Float(1e-3))],
            ),
            node("Relu", "", &["n"], &["r"], vec![]),
            node(
                "MaxPool",
                "pool",
                &["r"],
                &["p"],
                vec![
                    ("kernel_shape", ints(&[2, 2])),
                    ("strides", ints(&[2, 2])),
                    ("ceil_mode", Attr::Int(1)),
                ],
            ),
            node(
                "Flatten",
                "flat",
                &["p"],
                &["f"],
                vec![("axis", Attr::Int(1))],
            ),
            node(
                "Gemm",
                "fc",
                &["f", "fw", "fb"],
                &["y"],
                vec![("transB", Attr::Int(1))],
            ),
        ],
        vec![
            ("w", floats(&[4, 3, 3, 3], |i| i as f32)),
            ("b", floats(&[4], |i| 10.0 + i as f32)),
            ("g", floats(&[4], |_| 1.0)),
            ("be", floats(&[4], |_| 0.0)),
            ("m", floats(&[4], |i| i as f32)),
            ("v", floats(&[4], |_| 1.0)),
            ("fw", floats(&[10, 64], |i| i as f32)),
            ("fb", floats(&[10], |_| 0.5)),
        ],
        "y",
    );
    let imported = import(g, "tiny").unwrap();
    let spec = &imported.spec;
    let names: Vec<&str> = spec.layers().iter().map(|l| l.name()).collect();
    assert_eq!(
        names,
        ["features_0_Conv", "bn", "relu_2", "pool", "flat", "fc"]
    );
    assert_eq!(spec.output(), Shape::new(10, 1, 1));
    assert_eq!(spec.layers()[1].kind(), &LayerKind::BatchNorm { eps: 1e-3 });
    let p = &imported.params;
    assert_eq!(p["features.0.Conv.weight"].0, vec![4, 3, 3, 3]);
    // the batchnorm right after the conv: mean − conv bias
    assert_eq!(p["bn.running_mean"].1, vec![-10.0, -10.0, -10.0, -10.0]);
    assert_eq!(p["fc.weight"].0, vec![10, 64]);
    assert_eq!(p["fc.bias"].1, vec![0.5; 10]);
    assert_eq!(
        (imported.input.as_str(), imported.output.as_str()),
        ("x", "y")
    );
}

/// A residual block with a shortcut conv and a concat of two branches: `from` layers, and
/// the add reading the layer before it.
#[test]
fn branches_become_from_layers() {
    let conv = |name: &str, input: &str, out: &str, w: &str| {
        node(
            "Conv",
            name,
            &[input, w],
            &[out],
            vec![("kernel_shape", ints(&[1, 1]))],
        )
    };
    let g = graph(
        [1, 4, 5, 5],
        vec![
            conv("a", "x", "ya", "wa"),
            conv("b", "x", "yb", "wb"),
            node("Add", "add", &["ya", "yb"], &["s"], vec![]),
            conv("c", "s", "yc", "wa"),
            node(
                "Concat",
                "cat",
                &["s", "yc"],
                &["y"],
                vec![("axis", Attr::Int(1))],
            ),
        ],
        vec![
            ("wa", floats(&[4, 4, 1, 1], |_| 1.0)),
            ("wb", floats(&[4, 4, 1, 1], |_| 2.0)),
        ],
        "y",
    );
    let spec = import(g, "branches").unwrap().spec;
    let l = spec.layers();
    assert_eq!(l[1].input_from(), Some("input"));
    // the add reads `b` (the layer before it) and adds `a`
    assert_eq!(
        l[2].kind(),
        &LayerKind::ResidualAdd {
            from: "a".into(),
            relu: false
        }
    );
    assert_eq!(l[2].source(), Source::Previous);
    assert_eq!(
        l[4].reads(4).collect::<Vec<_>>(),
        vec![Source::Layer(2), Source::Layer(3)]
    );
    assert_eq!(spec.output(), Shape::new(8, 5, 5));
}

/// `MatMul` + `Add` of a bias is one FC layer, its weights transposed to `[out, in]`;
/// `Clip`'s bounds come from constant inputs; `Dropout` and `Identity` vanish.
#[test]
fn matmul_and_bias_make_one_layer() {
    let g = graph(
        [1, 2, 1, 1],
        vec![
            node("Flatten", "flat", &["x"], &["f"], vec![]),
            node("Dropout", "drop", &["f"], &["d"], vec![]),
            node("MatMul", "mm", &["d", "w"], &["m"], vec![]),
            node("Add", "bias", &["m", "b"], &["a"], vec![]),
            node(
                "Constant",
                "six",
                &[],
                &["hi"],
                vec![("value", Attr::Tensor(floats(&[], |_| 6.0)))],
            ),
            node("Clip", "clip", &["a", "", "hi"], &["c"], vec![]),
            node("Identity", "id", &["c"], &["y"], vec![]),
        ],
        vec![
            ("w", floats(&[2, 3], |i| i as f32)),
            ("b", floats(&[3], |_| 1.0)),
        ],
        "y",
    );
    let imported = import(g, "mm").unwrap();
    let kinds: Vec<&LayerKind> = imported.spec.layers().iter().map(|l| l.kind()).collect();
    assert_eq!(kinds.len(), 3);
    assert_eq!(
        kinds[2],
        &LayerKind::Clip {
            min: f32::NEG_INFINITY,
            max: 6.0
        }
    );
    // [[0, 1, 2], [3, 4, 5]] as [in, out] → [out, in]
    assert_eq!(
        imported.params["bias.weight"].1,
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    assert_eq!(imported.params["bias.bias"].1, vec![1.0; 3]);
}

#[test]
fn what_cannot_run_is_an_error_naming_the_node() {
    let one = |op: &str, attrs: Vec<(&str, Attr)>| {
        graph(
            [1, 3, 4, 4],
            vec![node(op, "the_node", &["x", "w"], &["y"], attrs)],
            vec![("w", floats(&[3, 3, 1, 1], |_| 1.0))],
            "y",
        )
    };
    let cases: Vec<(Graph, &[&str])> = vec![
        (
            one("Sigmoid", vec![]),
            &["`the_node`", "Sigmoid", "does not run the op"],
        ),
        (
            one("Conv", vec![("dilations", ints(&[2, 2]))]),
            &["`the_node`", "(Conv)", "dilations"],
        ),
        (
            one("Conv", vec![("pads", ints(&[0, 0, 1, 1]))]),
            &["`the_node`", "pads [0, 0, 1, 1]"],
        ),
        (
            graph(
                [1, 3, 4, 4],
                vec![node("Reshape", "r", &["x", "s"], &["y"], vec![])],
                vec![(
                    "s",
                    Tensor {
                        dims: vec![2],
                        data: Data::I64(vec![3, 16]),
                    },
                )],
                "y",
            ),
            &["`r`", "reshapes only to [1, 48]"],
        ),
    ];
    for (g, needles) in cases {
        let err = import(g, "bad").map(|_| ()).unwrap_err().to_string();
        for needle in needles {
            assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        }
    }
    let mut dynamic = one("Relu", vec![]);
    dynamic.inputs[0].dims = Some(vec![
        Dim::Symbol("n".into()),
        Dim::Fixed(3),
        Dim::Symbol("h".into()),
        Dim::Fixed(4),
    ]);
    let err = import(dynamic, "d").map(|_| ()).unwrap_err();
    assert!(matches!(err, OnnxError::DynamicShape { .. }), "{err}");
    assert!(err.to_string().contains("nx3xhx4"), "{err}");
    // a named batch dimension is batch 1
    let mut batch = one("Relu", vec![]);
    batch.inputs[0].dims = Some(vec![
        Dim::Symbol("batch".into()),
        Dim::Fixed(3),
        Dim::Fixed(4),
        Dim::Fixed(4),
    ]);
    assert_eq!(
        import(batch, "b").unwrap().spec.input(),
        Shape::new(3, 4, 4)
    );
}

/// torch.onnx.export aliases equal initializers through `Identity` nodes (an untrained
/// net's zero biases): a conv reading the alias gets the aliased values.
#[test]
fn an_identity_of_an_initializer_is_that_constant() {
    let g = graph(
        [1, 2, 4, 4],
        vec![
            node("Identity", "Identity_0", &["b"], &["b_alias"], vec![]),
            node(
                "Conv",
                "conv",
                &["x", "w", "b_alias"],
                &["y"],
                vec![("kernel_shape", ints(&[1, 1]))],
            ),
        ],
        vec![
            ("w", floats(&[3, 2, 1, 1], |i| i as f32)),
            ("b", floats(&[3], |i| 10.0 + i as f32)),
        ],
        "y",
    );
    let imported = import(g, "alias").unwrap();
    assert_eq!(imported.spec.layers().len(), 1);
    let bias = imported
        .params
        .iter()
        .find(|(name, _)| name.ends_with(".bias"))
        .map(|(_, (_, v))| v.clone());
    assert_eq!(bias, Some(vec![10.0, 11.0, 12.0]));
}
