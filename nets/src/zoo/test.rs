//! The zoo at the `NetSpec` level: shapes, units, multiply-adds and parameter counts
//! against the published figures, the modules as single units, torchvision's names.

use taopipe_dsl::{DslError, LayerKind, NetSpec, Seeds, Shape, Source};

use super::*;
use crate::model::torch_name;

/// The nets of issue 11.
const NEW: [&str; 5] = [
    "mobilenet_v2",
    "mobilenet_v1",
    "squeezenet1_1",
    "googlenet",
    "yolov2_tiny",
];

fn net(name: &str) -> NetSpec {
    by_name(name)
        .unwrap_or_else(|| panic!("{name}: not in the zoo"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Multiply-adds: the weights of the convolutions and FC layers (Eq. 1 and 2 are their
/// MAC counts; grouped convolutions count `C/g` input channels).
fn macs(net: &NetSpec) -> u64 {
    net.layers()
        .iter()
        .filter(|l| matches!(l.kind(), LayerKind::Conv2d { .. } | LayerKind::Fc { .. }))
        .map(|l| l.weight())
        .sum()
}

/// `(parameters, state_dict floats)`: a convolution has `K·C/g·R·S` weights and a bias
/// of `K` unless a batchnorm follows it; an FC layer `in·out + out`; a batchnorm `γ, β`
/// (2 per channel: PyTorch's `parameters()`, which torchvision's counts sum), and its
/// running mean and variance besides in the `state_dict` (4 per channel).
fn parameters(net: &NetSpec) -> (u64, u64) {
    let layers = net.layers();
    let (mut params, mut buffers) = (0, 0);
    for (i, l) in layers.iter().enumerate() {
        let input = l.input();
        match *l.kind() {
            LayerKind::Conv2d {
                out_channels: k,
                kernel: (r, s),
                groups,
                ..
            } => {
                let bn_follows = layers.get(i + 1).is_some_and(|n| {
                    n.source() == Source::Previous
                        && matches!(n.kind(), LayerKind::BatchNorm { .. })
                });
                params += k * input.c / groups * r * s + if bn_follows { 0 } else { k };
            }
            LayerKind::Fc { out_features, .. } => {
                params += input.c * input.h * input.w * out_features + out_features;
            }
            LayerKind::BatchNorm { .. } => {
                params += 2 * input.c;
                buffers += 2 * input.c;
            }
            _ => {}
        }
    }
    (params as u64, (params + buffers) as u64)
}

/// The name of each unit's first layer.
fn unit_heads(net: &NetSpec) -> Vec<&str> {
    net.units()
        .iter()
        .map(|u| net.layers()[u.layers().start].name())
        .collect()
}

#[test]
fn every_name_builds_the_net_of_that_name() {
    for name in NAMES {
        assert_eq!(net(name).name(), name);
    }
    assert!(by_name("resnet18").is_none());
}

#[test]
fn new_nets_have_their_input_and_output_shapes() {
    let expect = [
        ("mobilenet_v2", 224, Shape::new(1000, 1, 1)),
        ("mobilenet_v1", 224, Shape::new(1000, 1, 1)),
        ("squeezenet1_1", 224, Shape::new(1000, 1, 1)),
        ("googlenet", 224, Shape::new(1000, 1, 1)),
        ("yolov2_tiny", 416, Shape::new(125, 13, 13)),
    ];
    for (name, side, output) in expect {
        let n = net(name);
        assert_eq!(n.input(), Shape::new(3, side, side), "{name}");
        assert_eq!(n.output(), output, "{name}");
    }
}

#[test]
fn unit_counts_relate_to_pipe_its_major_layers() {
    // (net, units, "major layers" as Pipe-it's Table I counts them: convs and FC one by
    // one; the table lists MobileNet (V1) 28, SqueezeNet 26, GoogLeNet 58)
    let expect = [
        ("mobilenet_v2", 54, 53),
        ("mobilenet_v1", 29, 28),
        ("squeezenet1_1", 14, 26),
        ("googlenet", 18, 58),
        ("yolov2_tiny", 15, 9),
    ];
    for (name, units, major) in expect {
        let n = net(name);
        assert_eq!(n.units().len(), units, "{name}");
        let weighted = n
            .layers()
            .iter()
            .filter(|l| matches!(l.kind(), LayerKind::Conv2d { .. } | LayerKind::Fc { .. }))
            .count();
        assert_eq!(weighted, major, "{name}");
    }
    // MobileNets: every major layer is a unit, and so is the global pool (29 = 28 + 1).
    // Tiny YOLOv2: every conv is a unit, and so is every pool (15 = 9 + 6).
    // SqueezeNet: a fire's 3 convs are 1 unit (26 − 8·2), plus 3 pools and the global
    // pool (10 + 4). GoogLeNet: a module's 6 convs are 1 unit (58 − 9·5), plus 4 pools
    // and the global pool (13 + 5).
}

#[test]
fn multiply_adds_match_the_published_figures() {
    // MobileNetV2 (torchvision, paper: 300 M). Stem 112²·27·32 = 10,838,016. Blocks
    // (expand Hi²·C·6C + depthwise Ho²·9·6C + project Ho²·6C·K): 1: 0 + 3,612,672 +
    // 6,422,528; 2: 19,267,584 + 2,709,504 + 7,225,344; 3: 10,838,016 + 4,064,256 +
    // 10,838,016; 4: 10,838,016 + 1,016,064 + 3,612,672; 5, 6: 4,816,896 + 1,354,752 +
    // 4,816,896 each; 7: 4,816,896 + 338,688 + 2,408,448; 8–10: 4,816,896 + 677,376 +
    // 4,816,896 each; 11: 4,816,896 + 677,376 + 7,225,344; 12, 13: 10,838,016 +
    // 1,016,064 + 10,838,016 each; 14: 10,838,016 + 254,016 + 4,515,840; 15, 16:
    // 7,526,400 + 423,360 + 7,526,400 each; 17: 7,526,400 + 423,360 + 15,052,800; head
    // 7²·320·1280 = 20,070,400; fc 1280·1000. Sum 300,774,272.
    assert_eq!(macs(&mobilenet_v2().unwrap()), 300_774_272);
    // MobileNet V1 (paper: 569 M). Stem 10,838,016; depthwise 9·Σ Ho²·C = 9·(112²·32 +
    // 56²·64 + 56²·128 + 28²·128 + 28²·256 + 14²·256 + 5·14²·512 + 7²·512 + 7²·1024) =
    // 9·1,931,776 = 17,385,984; pointwise: 5 blocks of 25,690,112 (112²·32·64, 56²·64·128,
    // 28²·128·256, 14²·256·512, 7²·512·1024) and 8 of 51,380,224 (twice that) =
    // 539,492,352; fc 1,024,000. Sum 568,740,352.
    assert_eq!(macs(&mobilenet_v1().unwrap()), 568_740_352);
    // SqueezeNet 1.1 (0.35 G). Stem 111²·27·64 = 21,290,688. A fire at H×H with input C,
    // squeeze S and two expands of E: H²·(C·S + S·E + 9·S·E). At 55: 34,073,600 and
    // 37,171,200; at 27: 32,845,824 and 35,831,808; at 13: 17,651,712, 18,690,048,
    // 31,842,304 and 33,226,752; classifier 13²·512·1000 = 86,528,000. Sum 349,151,936.
    let fire = |h: u64, c: u64, s: u64, e: u64| h * h * (c * s + s * e + 9 * s * e);
    let fires = fire(55, 64, 16, 64)
        + fire(55, 128, 16, 64)
        + fire(27, 128, 32, 128)
        + fire(27, 256, 32, 128)
        + fire(13, 256, 48, 192)
        + fire(13, 384, 48, 192)
        + fire(13, 384, 64, 256)
        + fire(13, 512, 64, 256);
    let squeeze = macs(&squeezenet1_1().unwrap());
    assert_eq!(squeeze, 111 * 111 * 27 * 64 + fires + 13 * 13 * 512 * 1000);
    assert_eq!(squeeze, 349_151_936);
    // GoogLeNet (paper: 1.5 G). Stem 112²·147·64 + 56²·64·64 + 56²·576·192 = 118,013,952
    // + 12,845,056 + 346,816,512. An Inception(C, a, br, b, cr, c, p) at H×H:
    // H²·(C·(a + br + cr + p) + 9·(br·b + cr·c)): 3a 121,626,624, 3b 265,732,096, 4a
    // 71,199,744, 4b 83,091,456, 4c 95,033,344, 4d 112,093,184, 4e 157,151,232, 5a
    // 47,867,904, 5b 65,881,088 (1,019,676,672 in all); fc 1,024,000. Sum 1,498,376,192.
    let goog = macs(&googlenet().unwrap());
    #[allow(clippy::too_many_arguments)]
    fn inception(h: u64, c: u64, a: u64, br: u64, b: u64, cr: u64, cc: u64, p: u64) -> u64 {
        h * h * (c * (a + br + cr + p) + 9 * (br * b + cr * cc))
    }
    let modules = inception(28, 192, 64, 96, 128, 16, 32, 32)
        + inception(28, 256, 128, 128, 192, 32, 96, 64)
        + inception(14, 480, 192, 96, 208, 16, 48, 64)
        + inception(14, 512, 160, 112, 224, 24, 64, 64)
        + inception(14, 512, 128, 128, 256, 24, 64, 64)
        + inception(14, 512, 112, 144, 288, 32, 64, 64)
        + inception(14, 528, 256, 160, 320, 32, 128, 128)
        + inception(7, 832, 256, 160, 320, 32, 128, 128)
        + inception(7, 832, 384, 192, 384, 48, 128, 128);
    assert_eq!(modules, 1_019_676_672);
    assert_eq!(
        goog,
        118_013_952 + 12_845_056 + 346_816_512 + modules + 1_024_000
    );
    assert_eq!(goog, 1_498_376_192);
    // Tiny YOLOv2 (Darknet: 6.97 BFLOPs). 3×3 convs H²·9·C·K: 416²·27·16 = 74,760,192;
    // 208²·9·16·32 = 199,360,512; the next four the same (H halves, C and K double);
    // 13²·9·512·1024 = 797,442,048; 13²·9·1024·1024 = 1,594,884,096; 13²·1024·125 =
    // 21,632,000. Sum 74,760,192 + 5·199,360,512 + 797,442,048 + 1,594,884,096 +
    // 21,632,000 = 3,485,520,896.
    assert_eq!(macs(&yolov2_tiny().unwrap()), 3_485_520_896);
}

#[test]
fn parameter_counts_match_torchvision() {
    // torchvision's `sum(p.numel() for p in model.parameters())`; the state_dict adds the
    // batchnorms' running statistics (what bench/peers/models.py writes, besides
    // `num_batches_tracked`).
    let expect = [
        ("mobilenet_v2", 3_504_872, 3_538_984),
        ("mobilenet_v1", 4_231_976, 4_253_864),
        ("squeezenet1_1", 1_235_496, 1_235_496),
        ("googlenet", 6_624_904, 6_639_464),
        ("yolov2_tiny", 15_861_773, 15_867_885),
    ];
    for (name, params, floats) in expect {
        assert_eq!(parameters(&net(name)), (params, floats), "{name}");
    }
}

#[test]
fn seeds_exist_for_every_stage_count() -> Result<(), DslError> {
    for name in NEW {
        let n = net(name);
        let seeds = Seeds::from_net(&n, 4)?;
        assert_eq!(seeds.stage_counts(), 2..=4, "{name}");
        for p in seeds.stage_counts() {
            let best = seeds.top_k(p, 1)?;
            assert_eq!(best.len(), 1, "{name} {p}");
            assert_eq!(best[0].composition.iter().sum::<usize>(), n.units().len());
        }
    }
    Ok(())
}

#[test]
fn a_fire_module_is_one_unit_that_forwards_one_tensor() {
    let n = squeezenet1_1().unwrap();
    let mut expect = vec!["features_0".to_string(), "features_2".into()];
    for i in 3..=12 {
        expect.push(match i {
            5 | 8 => format!("features_{i}"),
            _ => format!("features_{i}_squeeze"),
        });
    }
    expect.extend(["classifier_1".into(), "classifier_3".into()]);
    assert_eq!(unit_heads(&n), expect);
    // each fire ends its unit with its concat; a boundary forwards one tensor
    for u in 0..=n.units().len() {
        assert_eq!(n.live_across(u).len(), 1, "boundary {u}");
    }
    let fire = n.layer("features_3").unwrap();
    assert_eq!(fire.output(), Shape::new(128, 55, 55));
    assert_eq!(
        n.layer("features_12").unwrap().output(),
        Shape::new(512, 13, 13)
    );
}

#[test]
fn an_inception_module_is_one_unit_that_forwards_one_tensor() {
    let n = googlenet().unwrap();
    let modules = ["3a", "3b", "4a", "4b", "4c", "4d", "4e", "5a", "5b"];
    let mut expect = vec![
        "conv1_conv".to_string(),
        "maxpool1".into(),
        "conv2_conv".into(),
        "conv3_conv".into(),
        "maxpool2".into(),
    ];
    for (i, m) in modules.iter().enumerate() {
        expect.push(format!("inception{m}_branch1_conv"));
        if i == 1 {
            expect.push("maxpool3".into());
        }
        if i == 6 {
            expect.push("maxpool4".into());
        }
    }
    expect.extend(["avgpool".into(), "fc".into()]);
    assert_eq!(unit_heads(&n), expect);
    for u in 0..=n.units().len() {
        assert_eq!(n.live_across(u).len(), 1, "boundary {u}");
    }
    // each module's unit ends with its concat, of the channels torchvision gives
    let channels = [256, 480, 512, 512, 512, 528, 832, 832, 1024];
    for (m, c) in modules.iter().zip(channels) {
        let name = format!("inception{m}");
        let at = n.layers().iter().position(|l| l.name() == name).unwrap();
        let unit = &n.units()[n.unit_of(at).unwrap()];
        assert_eq!(unit.layers().end, at + 1, "{name}");
        assert_eq!(n.layers()[at].output().c, c, "{name}");
    }
    // torchvision's BasicConv2d: batchnorm ε = 0.001 everywhere
    assert!(
        n.layers()
            .iter()
            .filter(|l| matches!(l.kind(), LayerKind::BatchNorm { .. }))
            .all(|l| *l.kind() == LayerKind::BatchNorm { eps: 0.001 })
    );
}

#[test]
fn mobilenet_v2_adds_where_stride_is_1_and_channels_agree() {
    let n = mobilenet_v2().unwrap();
    let adds: Vec<&str> = n
        .layers()
        .iter()
        .filter(|l| matches!(l.kind(), LayerKind::ResidualAdd { .. }))
        .map(|l| l.name())
        .collect();
    let blocks = [3, 5, 6, 8, 9, 10, 12, 13, 15, 16];
    let expect: Vec<String> = blocks.iter().map(|b| format!("features_{b}_add")).collect();
    assert_eq!(adds, expect);
    // each adds its block's input: the previous block's last layer
    for l in n.layers() {
        if let LayerKind::ResidualAdd { from, .. } = l.kind() {
            let from = n.layer(from).unwrap();
            assert!(from.name().starts_with("features_"), "{}", l.name());
            assert_eq!(from.output(), l.input(), "{}", l.name());
        }
    }
    // depthwise convs: as many groups as channels
    let dw = n.layer("features_4_conv_1_0").unwrap();
    assert_eq!(dw.kind().to_string(), "conv 144 3x3 s2 p1 g144");
    assert_eq!(dw.output(), Shape::new(144, 28, 28));
    assert_eq!(n.layer("features_18_2").unwrap().kind(), &LayerKind::RELU6);
}

#[test]
fn mobilenet_v1_strides_follow_the_papers_table() {
    let n = mobilenet_v1().unwrap();
    let outputs: Vec<Shape> = (1..=13)
        .map(|i| n.layer(&format!("features_{i}_5")).unwrap().output())
        .collect();
    let expect = [
        (64, 112),
        (128, 56),
        (128, 56),
        (256, 28),
        (256, 28),
        (512, 14),
        (512, 14),
        (512, 14),
        (512, 14),
        (512, 14),
        (512, 14),
        (1024, 7),
        (1024, 7),
    ]
    .map(|(c, s)| Shape::new(c, s, s));
    assert_eq!(outputs, expect);
}

#[test]
fn yolo_pools_keep_13_by_13_at_the_end() {
    let n = yolov2_tiny().unwrap();
    assert_eq!(n.layer("pool5").unwrap().output(), Shape::new(256, 13, 13));
    assert_eq!(n.layer("pool6").unwrap().output(), Shape::new(512, 13, 13));
    assert_eq!(
        n.layer("leaky8").unwrap().kind(),
        &LayerKind::LeakyRelu { slope: 0.1 }
    );
    let heads = unit_heads(&n);
    assert_eq!(heads.first(), Some(&"conv1"));
    assert_eq!(heads.last(), Some(&"conv9"));
}

#[test]
fn parameterised_layers_take_torchvisions_names() {
    let cases = [
        (
            "mobilenet_v2",
            "features_1_conv_0_0",
            "features.1.conv.0.0.weight",
        ),
        (
            "mobilenet_v2",
            "features_2_conv_3",
            "features.2.conv.3.weight",
        ),
        ("mobilenet_v2", "classifier_1", "classifier.1.weight"),
        (
            "squeezenet1_1",
            "features_12_expand3x3",
            "features.12.expand3x3.weight",
        ),
        (
            "googlenet",
            "inception4e_branch3_1_bn",
            "inception4e.branch3.1.bn.weight",
        ),
        (
            "googlenet",
            "inception5b_branch4_1_conv",
            "inception5b.branch4.1.conv.weight",
        ),
        ("mobilenet_v1", "features_13_3", "features.13.3.weight"),
        ("yolov2_tiny", "bn8", "bn8.weight"),
    ];
    for (name, layer, param) in cases {
        assert!(net(name).layer(layer).is_some(), "{name}: {layer}");
        assert_eq!(torch_name(layer, "weight"), param);
    }
}
