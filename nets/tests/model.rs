//! Whole nets through the runtime: the zoo runs, results are bit-identical for every
//! width, the load-time folding and fusing match a plain layer-by-layer evaluation, and
//! weights load from a safetensors file by torchvision name.

use std::collections::BTreeMap;
use std::path::Path;

use taopipe_dsl::{LayerKind, NetSpec, Source, net};
use taopipe_nets::{
    Activate, Activation, Add, Affine, BatchNorm, BuildOptions, Conv2d, Conv2dParams, ConvAlgo,
    GlobalAvgPool, GroupedConv2d, Init, Kernel, Linear, Model, RandomWeights, SafetensorsFile,
    Scratch, Shape, Weights, torch_name, zoo,
};
use taopipe_runtime::{Place, Runtime};

fn input(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// One frame at widths 1, 2 and 3: the outputs must be equal to the bit.
fn assert_width_identical(spec: NetSpec) {
    let name = spec.name().to_string();
    let keep = BuildOptions {
        keep_outputs: true,
        ..BuildOptions::default()
    };
    // Every layer in a buffer of its own: the memory plan's shared buffers must not change a bit.
    let kept =
        Model::build_with(spec.clone(), &RandomWeights { seed: 11 }, &keep).expect("model builds");
    let model = Model::build(spec, &RandomWeights { seed: 11 }).expect("model builds");
    assert!(
        model.frame_floats() < kept.frame_floats(),
        "{name}: the plan shares no buffer"
    );
    assert_eq!(
        kept.in_place_layers(),
        0,
        "{name}: kept outputs overwritten"
    );
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let x = input(model.input_len(), 5);
    let one = model
        .forward(&rt, x.clone(), Place::new(0, 1))
        .expect("width 1");
    let out = model.spec().output();
    assert_eq!(one.len(), out.c * out.h * out.w);
    assert!(
        one.iter().all(|v| v.is_finite()),
        "{name}: non-finite output"
    );
    assert!(one.iter().any(|v| *v != 0.0), "{name}: all-zero output");
    let unshared = kept
        .forward(&rt, x.clone(), Place::new(0, 2))
        .expect("own buffers");
    assert!(
        bits(&one) == bits(&unshared),
        "{name}: shared buffers change the output"
    );
    for width in [2, 3] {
        let wide = model
            .forward(&rt, x.clone(), Place::new(0, width))
            .expect("wider");
        assert!(
            bits(&one) == bits(&wide),
            "{name}: width {width} differs from width 1"
        );
    }
}

#[test]
fn vgg16_is_bit_identical_at_every_width() {
    let spec = zoo::vgg16().expect("vgg16");
    assert_eq!((spec.len(), spec.units().len()), (21, 21));
    assert_width_identical(spec);
}

#[test]
fn alexnet_is_bit_identical_at_every_width() {
    let spec = zoo::alexnet().expect("alexnet");
    assert_eq!(spec.units().len(), 11);
    assert_width_identical(spec);
}

#[test]
fn resnet50_is_bit_identical_at_every_width() {
    let spec = zoo::resnet50().expect("resnet50");
    assert_eq!(spec.units().len(), 52);
    // Of the 16 residual convs (1×1, reductions of 64 to 512), those whose reduction is one
    // `kc` block read their shortcut in place: layer1's at least, on every machine.
    let model = Model::build(spec.clone(), &RandomWeights { seed: 1 }).expect("model builds");
    let in_place = model.in_place_layers();
    assert!(
        (3..=16).contains(&in_place),
        "{in_place} residuals in place"
    );
    assert_width_identical(spec);
}

/// The nets of issue 11: depthwise and grouped convolutions, ReLU6 and leaky ReLU fused
/// into their stores, inverted residuals, fire and inception modules joined by concats,
/// ceil-mode and end-padded pools.
#[test]
fn mobile_and_modular_nets_are_bit_identical_at_every_width() {
    for name in [
        "mobilenet_v2",
        "mobilenet_v1",
        "squeezenet1_1",
        "googlenet",
        "yolov2_tiny",
    ] {
        let spec = zoo::by_name(name).expect("a zoo net").expect("it checks");
        // Every fire and inception module's branches write their concat's parts in place
        // (the kept model's concats copy: `assert_width_identical` compares the two).
        let model = Model::build(spec.clone(), &RandomWeights { seed: 11 }).expect("builds");
        let concats = match name {
            "squeezenet1_1" => 8,
            "googlenet" => 9,
            _ => 0,
        };
        assert_eq!(model.joined_concats(), concats, "{name}");
        assert_width_identical(spec);
    }
}

#[test]
fn synthetic_nets_run_bit_identical_at_every_width() {
    for spec in [zoo::synth1(), zoo::synth2(), zoo::synth3()] {
        assert_width_identical(spec.expect("synth"));
    }
    let dist = taopipe_dsl::WeightDistribution::LogUniform { min: 1, max: 64 };
    for seed in 0..3 {
        assert_width_identical(zoo::random_net(seed, 12, dist).expect("random net"));
    }
}

/// An all-NaN frame gives an all-NaN output, as in PyTorch and ONNX Runtime, on every ISA
/// this CPU runs, with and without Winograd, at widths 1 and 2: through conv+ReLU (the GEMM
/// epilogue and Winograd's output), batch norm, the stand-alone ReLU, add+ReLU, max pool,
/// global average pool and FC. ReLU and max pool used to drop NaN, so the output was finite.
#[test]
fn an_all_nan_frame_gives_an_all_nan_output() {
    use taopipe_nets::Isa;
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    for spec in [zoo::synth1().expect("synth1"), small_resnet()] {
        for isa in Isa::available() {
            for conv in [None, Some(ConvAlgo::Direct), Some(ConvAlgo::Lanes)] {
                let options = BuildOptions {
                    isa: Some(isa),
                    conv,
                    ..BuildOptions::default()
                };
                let model = Model::build_with(spec.clone(), &RandomWeights { seed: 3 }, &options)
                    .expect("model builds");
                for width in [1, 2] {
                    let out = model
                        .forward(&rt, vec![f32::NAN; model.input_len()], Place::new(0, width))
                        .expect("runs");
                    assert!(
                        !out.is_empty() && out.iter().all(|v| v.is_nan()),
                        "{} {isa} conv {conv:?} width {width}: {:?}",
                        spec.name(),
                        &out[..out.len().min(8)]
                    );
                }
            }
        }
    }
}

/// A small residual net in the ResNet style: conv+bn+relu, a down-sampling branch, an add
/// with relu, a pool, a stand-alone relu, gap and fc.
fn small_resnet() -> NetSpec {
    net! { small [3, 12, 12] =>
        stem: conv(8, 3x3, pad 1),
        stemnorm: batchnorm,
        stemrelu: relu,
        b_conv1: conv(8, 3x3, stride 2, pad 1),
        b_bn1: batchnorm,
        b_relu1: relu,
        b_conv2: conv(16, 1x1),
        b_bn2: batchnorm,
        b_down: conv(16, 1x1, stride 2) from stemrelu,
        b_downnorm: batchnorm,
        b_add: add(b_bn2) relu,
        pool: maxpool(2x2, stride 2),
        post: relu,
        avg: gap,
        head: fc(10),
    }
    .expect("small net")
}

/// Evaluates a spec layer by layer with the public kernels and nothing folded or fused.
fn reference(spec: &NetSpec, weights: &dyn Weights, x: &[f32]) -> Vec<f32> {
    let mut outs: Vec<Vec<f32>> = Vec::new();
    let mut scratch = Scratch::new();
    let get = |outs: &Vec<Vec<f32>>, s: Source| -> Vec<f32> {
        match s {
            Source::Layer(j) => outs[j].clone(),
            _ => x.to_vec(),
        }
    };
    for (i, layer) in spec.layers().iter().enumerate() {
        let inp = get(&outs, layer.source().resolve(i));
        let sh = Shape::new(layer.input().c, layer.input().h, layer.input().w);
        let t = |p: &str, s: &[usize], init: Init| {
            weights
                .tensor(&torch_name(layer.name(), p), s, init)
                .expect("weight")
        };
        let followed_by_bn = spec
            .layers()
            .get(i + 1)
            .is_some_and(|n| matches!(n.kind(), LayerKind::BatchNorm { .. }));
        let y = match layer.kind() {
            LayerKind::Conv2d {
                out_channels: k,
                kernel,
                stride,
                padding,
                groups,
                relu,
            } => {
                let c = sh.c;
                let fan_in = c / groups * kernel.0 * kernel.1;
                let w = t(
                    "weight",
                    &[*k, c / groups, kernel.0, kernel.1],
                    Init::He { fan_in },
                );
                let b = if followed_by_bn {
                    None
                } else {
                    Some(t(
                        "bias",
                        &[*k],
                        Init::Uniform {
                            bound: 1.0 / (fan_in as f32).sqrt(),
                        },
                    ))
                };
                let p = Conv2dParams {
                    in_channels: c,
                    out_channels: *k,
                    kernel: *kernel,
                    stride: *stride,
                    padding: *padding,
                    act: Activation::relu_if(*relu),
                };
                if *groups == 1 {
                    Conv2d::new(p, sh, w, b)
                        .expect("conv")
                        .forward(&[&inp], &mut scratch)
                } else {
                    GroupedConv2d::new(p, *groups, sh, w, b, None)
                        .expect("grouped conv")
                        .forward(&[&inp], &mut scratch)
                }
            }
            LayerKind::Clip { min, max } => Activate::new(
                sh,
                Activation::Clip {
                    min: *min,
                    max: *max,
                },
            )
            .forward(&[&inp], &mut scratch),
            LayerKind::LeakyRelu { slope } => {
                Activate::new(sh, Activation::LeakyRelu { slope: *slope })
                    .forward(&[&inp], &mut scratch)
            }
            LayerKind::BatchNorm { eps } => {
                let c = [sh.c];
                let bn = BatchNorm {
                    gamma: t(
                        "weight",
                        &c,
                        Init::Between {
                            low: 0.5,
                            high: 1.5,
                        },
                    ),
                    beta: t("bias", &c, Init::Uniform { bound: 0.1 }),
                    mean: t("running_mean", &c, Init::Uniform { bound: 0.1 }),
                    var: t(
                        "running_var",
                        &c,
                        Init::Between {
                            low: 0.5,
                            high: 1.5,
                        },
                    ),
                    eps: *eps,
                };
                Affine::from_batchnorm(sh, &bn, false)
                    .expect("bn")
                    .forward(&[&inp], &mut scratch)
            }
            LayerKind::Relu => Activate::relu(sh).forward(&[&inp], &mut scratch),
            LayerKind::ResidualAdd { relu, .. } => {
                let other = get(
                    &outs,
                    layer.residual_source().expect("add source").resolve(i),
                );
                Add::new(sh, *relu).forward(&[&inp, &other], &mut scratch)
            }
            LayerKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            }
            | LayerKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            } => {
                let p = if matches!(layer.kind(), LayerKind::MaxPool { .. }) {
                    taopipe_nets::PoolParams::max(kernel.0, stride.0, padding.0)
                } else {
                    taopipe_nets::PoolParams::avg(kernel.0, stride.0, padding.0)
                };
                let p = p.with_padding_end(padding_end.0).with_ceil(*ceil);
                taopipe_nets::Pool2d::new(p, sh)
                    .expect("pool")
                    .forward(&[&inp], &mut scratch)
            }
            LayerKind::Concat { .. } => {
                let parts: Vec<Vec<f32>> = layer.reads(i).map(|s| get(&outs, s)).collect();
                parts.concat()
            }
            LayerKind::GlobalAvgPool => GlobalAvgPool::new(sh).forward(&[&inp], &mut scratch),
            LayerKind::Fc {
                out_features: f,
                relu,
            } => {
                let n = sh.len();
                let w = t("weight", &[*f, n], Init::He { fan_in: n });
                let b = t(
                    "bias",
                    &[*f],
                    Init::Uniform {
                        bound: 1.0 / (n as f32).sqrt(),
                    },
                );
                Linear::new(sh, *f, w, Some(b), *relu)
                    .expect("fc")
                    .forward(&[&inp], &mut scratch)
            }
            other => panic!("reference has no {other}"),
        };
        outs.push(y);
    }
    outs.pop().expect("a layer")
}

/// Branches joined by concats (a fire module and an inception-like one with a ceil-mode
/// pool branch), pools in ceil mode and with padding after.
fn small_modules() -> NetSpec {
    net! { modules [3, 15, 15] =>
        stem:      conv(8, 3x3, stride 2, pad 1) relu,
        pool:      maxpool(3x3, stride 2) ceil,
        squeeze:   conv(4, 1x1) relu,
        expand1:   conv(8, 1x1) relu from squeeze,
        expand3:   conv(8, 3x3, pad 1) relu from squeeze,
        fire:      concat(expand1, expand3),
        b1:        conv(6, 1x1) relu,
        b2_0:      conv(4, 1x1) from fire,
        b2_0_bn:   batchnorm(0.001),
        b2_0_relu: relu,
        b2_1:      conv(6, 3x3, pad 1) relu from b2_0_relu,
        b3_0:      maxpool(3x3, stride 1, pad 1) ceil from fire,
        b3_1:      conv(4, 1x1) relu from b3_0,
        inception: concat(b1, b2_1, b3_1, fire),
        last:      maxpool(2x2, stride 1, pad_end 1),
        avg:       gap,
        head:      fc(10),
    }
    .expect("small modules")
}

/// MobileNet's blocks: a depthwise conv and a grouped one with batchnorms and ReLU6, an
/// inverted residual, and YOLO's leaky ReLU, fused or on their own.
fn small_mobile() -> NetSpec {
    net! { mobile [3, 14, 14] =>
        stem:    conv(8, 3x3, stride 2, pad 1),
        stem_bn: batchnorm,
        stem_r6: relu6,
        exp:     conv(16, 1x1),
        exp_bn:  batchnorm,
        exp_r6:  relu6,
        dw:      conv(16, 3x3, pad 1, groups 16),
        dw_bn:   batchnorm,
        dw_r6:   relu6,
        proj:    conv(8, 1x1),
        proj_bn: batchnorm,
        res:     add(stem_r6),
        grp:     conv(8, 3x3, pad 1, groups 2),
        leaky:   leakyrelu(0.1),
        solo:    clip(-0.5, 0.5),
        avg:     gap,
        head:    fc(10),
    }
    .expect("small mobile net")
}

#[test]
fn mobile_blocks_match_a_plain_layer_by_layer_evaluation() {
    let spec = small_mobile();
    let weights = RandomWeights { seed: 7 };
    let model = Model::build(spec.clone(), &weights).expect("model");
    // The batchnorms fold, the ReLU6s and the leaky ReLU fuse, the add goes into `proj`'s
    // store; the clip after a fused activation runs on its own.
    let runs: Vec<&str> = spec
        .layers()
        .iter()
        .enumerate()
        .filter(|(i, _)| model.runs_task(*i))
        .map(|(_, l)| l.name())
        .collect();
    assert_eq!(
        runs,
        ["stem", "exp", "dw", "proj", "grp", "solo", "avg", "head"]
    );
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(model.input_len(), 2);
    let got = model
        .forward(&rt, x.clone(), Place::new(0, 2))
        .expect("runs");
    let want = reference(&spec, &weights, &x);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let tol = 1e-4 * g.abs().max(w.abs()).max(0.1);
        assert!(
            (g - w).abs() <= tol,
            "output {i}: model {g} vs reference {w}"
        );
    }
    assert_width_identical(spec);
}

#[test]
fn modules_match_a_plain_layer_by_layer_evaluation_at_every_width() {
    let spec = small_modules();
    assert_eq!(
        spec.units().len(),
        7,
        "stem, pool, fire, inception, last, avg, head"
    );
    let weights = RandomWeights { seed: 5 };
    let model = Model::build(spec.clone(), &weights).expect("model");
    // The fire's; the inception's copies (one of its inputs is the fire's concat, which
    // other layers read too).
    assert_eq!(model.joined_concats(), 1);
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(model.input_len(), 3);
    let got = model
        .forward(&rt, x.clone(), Place::new(0, 2))
        .expect("runs");
    let want = reference(&spec, &weights, &x);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let tol = 1e-4 * g.abs().max(w.abs()).max(0.1);
        assert!(
            (g - w).abs() <= tol,
            "output {i}: model {g} vs reference {w}"
        );
    }
    assert_width_identical(spec);
}

#[test]
fn folding_and_fusing_match_a_plain_layer_by_layer_evaluation() {
    let spec = small_resnet();
    let weights = RandomWeights { seed: 3 };
    let model = Model::build(spec.clone(), &weights).expect("model");
    // Folded and fused layers run no task of their own: the batchnorms fold into their
    // convolutions, the ReLUs fuse, and the residual add goes into `b_down`'s store.
    let runs: Vec<&str> = spec
        .layers()
        .iter()
        .enumerate()
        .filter(|(i, _)| model.runs_task(*i))
        .map(|(_, l)| l.name())
        .collect();
    assert_eq!(
        runs,
        [
            "stem", "b_conv1", "b_conv2", "b_down", "pool", "post", "avg", "head"
        ]
    );
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(model.input_len(), 9);
    let got = model
        .forward(&rt, x.clone(), Place::new(0, 2))
        .expect("runs");
    let want = reference(&spec, &weights, &x);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // Folding changes rounding: relative 1e-4 of the larger magnitude, or 1e-5 absolute.
        let tol = 1e-4 * g.abs().max(w.abs()).max(0.1);
        assert!(
            (g - w).abs() <= tol,
            "output {i}: model {g} vs reference {w}"
        );
    }
}

/// Exports random weights under torchvision names into a safetensors file and loads them
/// back: the model from the file computes exactly what the model from the seed computes.
#[test]
fn weights_load_from_safetensors_by_torchvision_name() {
    let spec = small_resnet();
    let random = RandomWeights { seed: 21 };
    // Record every tensor the model asks for, with its shape.
    type Seen = std::cell::RefCell<BTreeMap<String, (Vec<usize>, Vec<f32>)>>;
    struct Recorder<'a>(&'a RandomWeights, Seen);
    impl Weights for Recorder<'_> {
        fn tensor(
            &self,
            name: &str,
            shape: &[usize],
            init: Init,
        ) -> Result<Vec<f32>, taopipe_nets::WeightError> {
            let v = self.0.tensor(name, shape, init)?;
            self.1
                .borrow_mut()
                .insert(name.to_string(), (shape.to_vec(), v.clone()));
            Ok(v)
        }
    }
    let recorder = Recorder(&random, Default::default());
    let from_seed = Model::build(spec.clone(), &recorder).expect("model");
    let tensors = recorder.1.into_inner();
    assert!(
        tensors.contains_key("b_down.weight") || tensors.contains_key("b.down.weight"),
        "{:?}",
        tensors.keys()
    );
    assert!(tensors.contains_key("stemnorm.running_var"));
    let raw: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(n, (s, v))| {
            (
                n.clone(),
                s.clone(),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            )
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = raw
        .iter()
        .map(|(n, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b)
                    .expect("view"),
            )
        })
        .collect();
    let bytes = safetensors::serialize(views, None).expect("serialize");
    let file =
        SafetensorsFile::from_bytes(Path::new("small.safetensors"), bytes.clone()).expect("parse");
    let from_file = Model::build(spec, &file).expect("model from file");
    assert!(file.unused().is_empty(), "unused: {:?}", file.unused());
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(from_seed.input_len(), 4);
    let a = from_seed
        .forward(&rt, x.clone(), Place::new(0, 1))
        .expect("seed");
    let b = from_file
        .forward(&rt, x.clone(), Place::new(0, 2))
        .expect("file");
    assert!(bits(&a) == bits(&b));
    // The same bytes as a file on disk, memory-mapped by `open`.
    let path =
        std::env::temp_dir().join(format!("taopipe-small-{}.safetensors", std::process::id()));
    std::fs::write(&path, &bytes).expect("write weights file");
    let mapped = SafetensorsFile::open(&path).expect("open mapped");
    let from_disk = Model::build(small_resnet(), &mapped).expect("model from disk");
    let _ = std::fs::remove_file(&path);
    let c = from_disk.forward(&rt, x, Place::new(0, 2)).expect("disk");
    assert!(bits(&a) == bits(&c));
}

#[test]
fn missing_tensors_and_bad_inputs_are_errors_naming_them() {
    let spec = small_resnet();
    let empty = safetensors::serialize(
        Vec::<(String, safetensors::tensor::TensorView<'_>)>::new(),
        None,
    )
    .expect("serialize");
    let file = SafetensorsFile::from_bytes(Path::new("empty.safetensors"), empty).expect("parse");
    let err = Model::build(spec.clone(), &file)
        .expect_err("no tensors")
        .to_string();
    assert!(
        err.contains("`stem`") && err.contains("stem.weight"),
        "{err}"
    );
    let model = Model::build(spec, &RandomWeights { seed: 1 }).expect("model");
    let rt = Runtime::builder().workers(1).build().expect("runtime");
    let err = model
        .forward(&rt, vec![0.0; 5], Place::new(0, 1))
        .expect_err("short input")
        .to_string();
    assert!(err.contains("432") && err.contains("got 5"), "{err}");
}

/// A model run as a pipeline — stages on disjoint places, frames in flight at once — gives
/// the same bits as the whole net on one place. ResNet50 is cut inside blocks, so residual
/// tensors cross stage boundaries; the issue-11 nets are cut between their modules
/// (inverted residuals, fire and inception modules), some stages 2 wide.
#[test]
fn a_pipelined_model_gives_the_same_bits_as_one_place() {
    use std::sync::Arc;
    use taopipe_runtime::{Pipeline, Stage, StopSignal};
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    for (spec, split, places) in [
        (
            zoo::resnet50(),
            vec![21, 17, 14],
            vec![Place::new(0, 1), Place::new(1, 1), Place::new(2, 1)],
        ),
        (
            zoo::vgg16(),
            vec![8, 13],
            vec![Place::new(0, 2), Place::new(2, 1)],
        ),
        (
            zoo::alexnet(),
            vec![5, 6],
            vec![Place::new(0, 1), Place::new(1, 2)],
        ),
        (
            zoo::mobilenet_v2(),
            vec![20, 18, 16],
            vec![Place::new(0, 1), Place::new(1, 1), Place::new(2, 1)],
        ),
        (
            zoo::mobilenet_v1(),
            vec![12, 17],
            vec![Place::new(0, 2), Place::new(2, 1)],
        ),
        (
            zoo::squeezenet1_1(),
            vec![5, 5, 4],
            vec![Place::new(0, 1), Place::new(1, 1), Place::new(2, 1)],
        ),
        (
            zoo::googlenet(),
            vec![7, 11],
            vec![Place::new(0, 1), Place::new(1, 2)],
        ),
        (
            zoo::yolov2_tiny(),
            vec![6, 5, 4],
            vec![Place::new(0, 1), Place::new(1, 1), Place::new(2, 1)],
        ),
    ] {
        let model =
            Arc::new(Model::build(spec.expect("net"), &RandomWeights { seed: 17 }).expect("model"));
        let inputs: Vec<Vec<f32>> = (0..4).map(|i| input(model.input_len(), 100 + i)).collect();
        let want: Vec<Vec<u32>> = inputs
            .iter()
            .map(|x| {
                bits(
                    &model
                        .forward(&rt, x.clone(), Place::new(0, 1))
                        .expect("one place"),
                )
            })
            .collect();
        let mut start = 0;
        let stages: Vec<Stage<Arc<taopipe_nets::Frame>>> = split
            .iter()
            .zip(&places)
            .enumerate()
            .map(|(i, (&units, &place))| {
                let (m, range) = (model.clone(), start..start + units);
                start += units;
                Stage::new(
                    format!("stage{i}"),
                    place,
                    move |f: &Arc<taopipe_nets::Frame>| m.stage_graph(f, range.clone(), place),
                )
            })
            .collect();
        assert_eq!(
            start,
            model.spec().units().len(),
            "the split covers every unit"
        );
        let pipeline = Pipeline::new(stages).expect("pipeline");
        let mut frames = inputs
            .into_iter()
            .map(|x| Arc::new(model.frame(x).expect("frame")));
        let mut got = Vec::new();
        let stats = pipeline
            .run(
                &rt,
                &mut frames,
                |_, f| got.push(bits(&f.output())),
                &StopSignal::new(),
            )
            .expect("runs");
        assert_eq!(stats.delivered, 4);
        assert!(
            got == want,
            "{}: pipelined output differs from one place",
            model.spec().name()
        );
    }
}

/// Dropped frames give their buffers back to the model's pool, and the next frame takes
/// them: its input is the new one, its outputs those of a fresh run.
#[test]
fn frames_reuse_pooled_buffers() {
    let model = Model::build(small_resnet(), &RandomWeights { seed: 4 }).expect("model");
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let (a, b) = (input(model.input_len(), 1), input(model.input_len(), 2));
    assert_eq!(model.pooled_frames(), 0);
    let want_b = model.forward(&rt, b.clone(), Place::new(0, 2)).expect("b");
    assert_eq!(model.pooled_frames(), 1);
    let frames: Vec<_> = [&a, &b, &a]
        .iter()
        .map(|x| model.frame_from(x).expect("frame"))
        .collect();
    assert_eq!(
        model.pooled_frames(),
        0,
        "the first frame took the pooled set"
    );
    for f in &frames {
        rt.run(model.graph(f, |_| Place::new(0, 2))).expect("run");
    }
    assert_eq!(frames[1].output(), want_b);
    assert_eq!(frames[0].output(), frames[2].output());
    drop(frames);
    assert_eq!(model.pooled_frames(), 3);
    assert!(matches!(
        model.frame_from(&a[1..]),
        Err(taopipe_nets::ModelError::Input { .. })
    ));
}
