//! Branch inputs (`from`), fused-ReLU residual adds, pipeline units and the tensors live
//! across unit boundaries: a ResNet bottleneck stage by hand, ResNet50, AlexNet, errors.

use taopipe_dsl::{DslError, INPUT, LayerKind, NetSpec, Seeds, Shape, Source, net};

/// ResNet stem + `layer1` with two bottleneck blocks (the first with a downsample
/// shortcut declared with `from`) + head, on a 64x64 input.
fn resnet_stage() -> Result<NetSpec, DslError> {
    net! { stage [3, 64, 64] =>
        conv1:     conv(64, 7x7, stride 2, pad 3),      //  0  unit 0
        bn1:       batchnorm,                            //  1
        relu:      relu,                                 //  2
        maxpool:   maxpool(3x3, stride 2, pad 1),        //  3  unit 1
        l0_conv1:  conv(64, 1x1),                        //  4  unit 2
        l0_bn1:    batchnorm,                            //  5
        l0_relu1:  relu,                                 //  6
        l0_conv2:  conv(64, 3x3, pad 1),                 //  7  unit 3
        l0_bn2:    batchnorm,                            //  8
        l0_relu2:  relu,                                 //  9
        l0_conv3:  conv(256, 1x1),                       // 10  unit 4
        l0_bn3:    batchnorm,                            // 11
        l0_down_0: conv(256, 1x1) from maxpool,          // 12
        l0_down_1: batchnorm,                            // 13
        l0_add:    add(l0_bn3) relu,                     // 14
        l1_conv1:  conv(64, 1x1),                        // 15  unit 5
        l1_bn1:    batchnorm,                            // 16
        l1_relu1:  relu,                                 // 17
        l1_conv2:  conv(64, 3x3, pad 1),                 // 18  unit 6
        l1_bn2:    batchnorm,                            // 19
        l1_relu2:  relu,                                 // 20
        l1_conv3:  conv(256, 1x1),                       // 21  unit 7
        l1_bn3:    batchnorm,                            // 22
        l1_add:    add(l0_add) relu,                     // 23
        avgpool:   gap,                                  // 24  unit 8
        fc:        fc(10),                               // 25  unit 9
    }
}

#[test]
fn bottleneck_shapes_and_sources() -> Result<(), DslError> {
    let net = resnet_stage()?;
    assert_eq!(net.len(), 26);
    let layer = |n: &str| net.layer(n).ok_or_else(|| format!("no layer {n}"));
    let shape = |n: &str| layer(n).map(|l| (l.input(), l.output()));
    // stem: (64+6-7)/2+1 = 32, maxpool (32+2-3)/2+1 = 16
    assert_eq!(
        shape("conv1"),
        Ok((Shape::new(3, 64, 64), Shape::new(64, 32, 32)))
    );
    assert_eq!(
        shape("maxpool"),
        Ok((Shape::new(64, 32, 32), Shape::new(64, 16, 16)))
    );
    // the downsample conv reads maxpool (64x16x16), not l0_bn3 (256x16x16)
    assert_eq!(
        shape("l0_down_0"),
        Ok((Shape::new(64, 16, 16), Shape::new(256, 16, 16)))
    );
    assert_eq!(
        shape("l0_add"),
        Ok((Shape::new(256, 16, 16), Shape::new(256, 16, 16)))
    );
    assert_eq!(
        shape("l1_conv1"),
        Ok((Shape::new(256, 16, 16), Shape::new(64, 16, 16)))
    );
    assert_eq!(net.output(), Shape::new(10, 1, 1));

    let down = &net.layers()[12];
    assert_eq!(down.name(), "l0_down_0");
    assert_eq!(down.input_from(), Some("maxpool"));
    assert_eq!(down.source(), Source::Layer(3));
    assert_eq!(down.residual_source(), None);
    assert_eq!(down.weight(), 16 * 16 * 64 * 256); // Eq. 1 on its own input
    for (i, l) in net.layers().iter().enumerate() {
        if i != 12 {
            assert_eq!(
                (l.source(), l.input_from()),
                (Source::Previous, None),
                "{i}"
            );
        }
    }
    let add0 = &net.layers()[14];
    assert_eq!(
        add0.kind(),
        &LayerKind::ResidualAdd {
            from: "l0_bn3".into(),
            relu: true
        }
    );
    assert!(add0.kind().fused_relu());
    assert_eq!(add0.kind().to_string(), "add(l0_bn3) +relu");
    assert_eq!(add0.residual_source(), Some(Source::Layer(11)));
    assert_eq!(add0.weight(), 256 * 16 * 16); // element count, the ReLU adds nothing
    assert_eq!(net.layers()[23].residual_source(), Some(Source::Layer(14)));
    Ok(())
}

#[test]
fn bottleneck_units() -> Result<(), DslError> {
    let net = resnet_stage()?;
    let units = net.units();
    let ranges: Vec<_> = units.iter().map(|u| u.layers()).collect();
    assert_eq!(
        ranges,
        vec![
            0..3,
            3..4,
            4..7,
            7..10,
            10..15,
            15..18,
            18..21,
            21..24,
            24..25,
            25..26
        ]
    );
    let names: Vec<&str> = units.iter().map(|u| u.name()).collect();
    assert_eq!(
        names,
        [
            "conv1", "maxpool", "l0_conv1", "l0_conv2", "l0_conv3", "l1_conv1", "l1_conv2",
            "l1_conv3", "avgpool", "fc"
        ]
    );
    // each block is 3 units; the third holds conv3, bn3, downsample conv + bn, add
    assert_eq!(units[4].len(), 5);
    let e = 256 * 16 * 16; // elements of a 256x16x16 tensor
    let conv3 = 16 * 16 * 64 * 256; // 1x1, 64 -> 256
    assert_eq!(units[4].weight(), conv3 + e + conv3 + e + e);
    // unit 3: conv2 3x3 64->64, bn, relu on 64x16x16
    assert_eq!(units[3].weight(), 16 * 16 * 64 * 9 * 64 + 2 * 64 * 16 * 16);
    // every unit weight is the sum of its layers', and they add up to the total
    let weights = net.weights();
    for u in units {
        assert_eq!(u.weight(), weights[u.layers()].iter().sum::<u64>());
    }
    assert_eq!(
        net.unit_weights().iter().sum::<u64>(),
        net.total_weight().unwrap_or_default()
    );
    assert_eq!(net.unit_of(12), Some(4));
    assert_eq!(net.unit_of(15), Some(5));
    assert_eq!(net.unit_of(26), None);
    // seeds split units, not layers
    let seeds = Seeds::from_net(&net, 4)?;
    assert_eq!(seeds.weights(), net.unit_weights().as_slice());
    assert_eq!(seeds.stage_counts(), 2..=4);
    let best = &seeds.top_k(2, 1)?[0];
    assert_eq!(best.composition.iter().sum::<usize>(), 10);
    Ok(())
}

#[test]
fn bottleneck_live_across_by_hand() -> Result<(), DslError> {
    let net = resnet_stage()?;
    let l = Source::Layer;
    let expected: Vec<Vec<Source>> = vec![
        vec![Source::Input], // 0: the net input
        vec![l(2)],          // 1: stem relu -> maxpool
        vec![l(3)],          // 2: maxpool -> l0_conv1 (and l0_down_0, same tensor)
        vec![l(3), l(6)],    // 3: the downsample input crosses l0's first boundary
        vec![l(3), l(9)],    // 4: ... and its second
        vec![l(14)],         // 5: l0_add -> l1_conv1 and the l1 shortcut
        vec![l(14), l(17)],  // 6: the identity shortcut crosses l1's boundaries
        vec![l(14), l(20)],  // 7
        vec![l(23)],         // 8: l1_add -> gap
        vec![l(24)],         // 9: gap -> fc
        vec![l(25)],         // 10 = units().len(): the net output
        vec![],              // 11: past the end
    ];
    for (b, want) in expected.iter().enumerate() {
        assert_eq!(&net.live_across(b), want, "boundary {b}");
    }
    assert!(net.live_across(usize::MAX).is_empty());
    Ok(())
}

#[test]
fn macro_and_builder_agree_on_branches() -> Result<(), DslError> {
    let by_macro = net! { b [8, 6, 6] =>
        c1:  conv(8, 3x3, pad 1) relu,
        c2:  conv(16, 1x1),
        sc:  conv(16, 1x1) from c1,
        add: add(c2) relu,
        raw: gap from input,
        c3:  conv(8, 1x1) from add,
        res: add(input),
    }?;
    let by_builder = NetSpec::builder("b", Shape::new(8, 6, 6))
        .conv_relu("c1", 8, 3, 1, 1)
        .conv("c2", 16, 1, 1, 0)
        .layer_from(
            "sc",
            LayerKind::Conv2d {
                out_channels: 16,
                kernel: (1, 1),
                stride: (1, 1),
                padding: (0, 0),
                groups: 1,
                relu: false,
            },
            "c1",
        )
        .residual_add_relu("add", "c2")
        .layer_from("raw", LayerKind::GlobalAvgPool, INPUT)
        .layer_from(
            "c3",
            LayerKind::Conv2d {
                out_channels: 8,
                kernel: (1, 1),
                stride: (1, 1),
                padding: (0, 0),
                groups: 1,
                relu: false,
            },
            "add",
        )
        .residual_add("res", "input")
        .build()?;
    assert_eq!(by_macro, by_builder);
    let sources: Vec<Source> = by_macro.layers().iter().map(|l| l.source()).collect();
    use Source::{Input, Layer, Previous};
    assert_eq!(
        sources,
        [
            Previous,
            Previous,
            Layer(0),
            Previous,
            Input,
            Layer(3),
            Previous
        ]
    );
    assert_eq!(by_macro.layers()[4].output(), Shape::new(8, 1, 1));
    assert_eq!(by_macro.layers()[6].residual_source(), Some(Input));
    // c1 | c2, sc (branch), add, raw (branch), c3 (branch), res
    let ranges: Vec<_> = by_macro.units().iter().map(|u| u.layers()).collect();
    assert_eq!(ranges, vec![0..1, 1..7]);
    assert_eq!(by_macro.live_across(1), vec![Input, Layer(0)]);
    let text = by_macro.to_string();
    assert!(
        text.starts_with("net `b`: input 8x6x6, 7 layers, 2 units"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|r| r.contains(" sc "))
        .unwrap_or_default();
    assert!(row.contains("conv 16 1x1 s1 p0 from c1"), "{row}");
    assert!(row.contains("8x6x6 -> 16x6x6"), "{row}");
    assert!(
        row.split_whitespace().nth(1) == Some("1"),
        "unit column: {row}"
    );
    Ok(())
}

/// torchvision's ResNet50, layer by layer, through the builder: 52 units.
fn resnet50() -> Result<NetSpec, DslError> {
    let mut b = NetSpec::builder("resnet50", Shape::new(3, 224, 224))
        .conv("conv1", 64, 7, 2, 3)
        .batch_norm("bn1")
        .relu("relu")
        .layer("maxpool", LayerKind::max_pool((3, 3), (2, 2), (1, 1)));
    let mut block_input = "maxpool".to_string();
    for (stage, (blocks, width)) in [(3, 64), (4, 128), (6, 256), (3, 512)]
        .into_iter()
        .enumerate()
    {
        for block in 0..blocks {
            let p = format!("layer{}_{block}", stage + 1);
            let stride = if block == 0 && stage > 0 { 2 } else { 1 };
            b = b
                .conv(format!("{p}_conv1"), width, 1, 1, 0)
                .batch_norm(format!("{p}_bn1"))
                .relu(format!("{p}_relu1"))
                .conv(format!("{p}_conv2"), width, 3, stride, 1)
                .batch_norm(format!("{p}_bn2"))
                .relu(format!("{p}_relu2"))
                .conv(format!("{p}_conv3"), width * 4, 1, 1, 0)
                .batch_norm(format!("{p}_bn3"));
            let shortcut = if block == 0 {
                b = b
                    .layer_from(
                        format!("{p}_downsample_0"),
                        LayerKind::Conv2d {
                            out_channels: width * 4,
                            kernel: (1, 1),
                            stride: (stride, stride),
                            padding: (0, 0),
                            groups: 1,
                            relu: false,
                        },
                        block_input.clone(),
                    )
                    .batch_norm(format!("{p}_downsample_1"));
                format!("{p}_bn3")
            } else {
                block_input.clone()
            };
            b = b.residual_add_relu(format!("{p}_add"), shortcut);
            block_input = format!("{p}_add");
        }
    }
    b.global_avg_pool("avgpool").fc("fc", 1000).build()
}

#[test]
fn resnet50_has_52_units() -> Result<(), DslError> {
    let net = resnet50()?;
    // stem 3 + maxpool, 16 blocks of 9 (3 × conv, bn; 2 relu; add), 4 downsamples of 2, head 2
    assert_eq!(net.len(), 4 + 16 * 9 + 4 * 2 + 2);
    assert_eq!(net.units().len(), 52);
    assert_eq!(net.output(), Shape::new(1000, 1, 1));
    assert_eq!(
        net.layer("layer4_2_add").map(|l| l.output()),
        Some(Shape::new(2048, 7, 7))
    );
    assert_eq!(
        net.layer("layer2_0_downsample_0")
            .map(|l| (l.input(), l.output())),
        Some((Shape::new(256, 56, 56), Shape::new(512, 28, 28)))
    );
    // the block's third unit: conv3, bn3, downsample conv + bn, add
    let u = net.units().iter().find(|u| u.name() == "layer3_0_conv3");
    assert_eq!(u.map(|u| u.len()), Some(5));
    // an identity block's shortcut crosses its 3 units
    let first = net
        .units()
        .iter()
        .position(|u| u.name() == "layer1_1_conv1")
        .unwrap_or_default();
    let shortcut = net
        .layers()
        .iter()
        .position(|l| l.name() == "layer1_0_add")
        .map(Source::Layer);
    for b in first + 1..first + 3 {
        assert!(
            net.live_across(b).first() == shortcut.as_ref(),
            "boundary {b}: {:?}",
            net.live_across(b)
        );
        assert_eq!(net.live_across(b).len(), 2);
    }
    // conv + fc weights are the multiply-accumulates: ResNet50's well-known 4.09 GMACs
    let macs: u64 = net
        .layers()
        .iter()
        .filter(|l| matches!(l.kind().short_name(), "conv" | "fc"))
        .map(|l| l.weight())
        .sum();
    assert_eq!(macs, 4_089_184_256);
    let seeds = Seeds::from_net(&net, 16)?;
    assert_eq!(seeds.count(16), Some(3_188_675_231_420));
    Ok(())
}

#[test]
fn alexnet_has_11_units() -> Result<(), DslError> {
    let net = net! { alexnet [3, 224, 224] =>
        conv1: conv(64, 11x11, stride 4, pad 2),
        relu1: relu,
        pool1: maxpool(3x3, stride 2),
        conv2: conv(192, 5x5, pad 2) relu,
        pool2: maxpool(3x3, stride 2),
        conv3: conv(384, 3x3, pad 1) relu,
        conv4: conv(256, 3x3, pad 1),
        relu4: relu,
        conv5: conv(256, 3x3, pad 1) relu,
        pool5: maxpool(3x3, stride 2),
        flat:  flatten,
        fc6:   fc(4096) relu,
        fc7:   fc(4096) relu,
        fc8:   fc(1000),
        prob:  softmax,
    }?;
    assert_eq!(net.len(), 15);
    assert_eq!(
        net.layer("pool5").map(|l| l.output()),
        Some(Shape::new(256, 6, 6))
    );
    let names: Vec<&str> = net.units().iter().map(|u| u.name()).collect();
    assert_eq!(
        names,
        [
            "conv1", "pool1", "conv2", "pool2", "conv3", "conv4", "conv5", "pool5", "fc6", "fc7",
            "fc8"
        ]
    );
    let lens: Vec<usize> = net.units().iter().map(|u| u.len()).collect();
    assert_eq!(lens, [2, 1, 1, 1, 1, 2, 1, 2, 1, 1, 2]);
    // pool5 + flatten (weight 0); fc8 + softmax
    assert_eq!(net.unit_weights()[7], 13 * 13 * 256);
    assert_eq!(net.unit_weights()[10], 4096 * 1000 + 1000);
    assert!((0..=11).all(|b| net.live_across(b).len() == 1));
    Ok(())
}

#[test]
fn source_errors_name_the_layer() {
    let b = || NetSpec::builder("n", Shape::new(3, 8, 8));
    let err = b()
        .relu("r")
        .layer_from("x", LayerKind::Relu, "nowhere")
        .build()
        .expect_err("unknown source");
    assert_eq!(
        err,
        DslError::UnknownSource {
            layer: "x".into(),
            from: "nowhere".into()
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("`x`") && msg.contains("`nowhere`"), "{msg}");

    // a later layer, and the layer itself, are not sources
    for from in ["later", "x"] {
        let err = b()
            .layer_from("x", LayerKind::Relu, from)
            .relu("later")
            .build();
        assert!(
            matches!(err, Err(DslError::UnknownSource { ref layer, .. }) if layer == "x"),
            "{err:?}"
        );
    }

    // a layer may not be named `input`
    let err = b().relu("input").build().expect_err("reserved");
    assert_eq!(
        err,
        DslError::ReservedName {
            net: "n".into(),
            index: 0
        }
    );
    assert!(err.to_string().contains("`input`"), "{err}");
    let err = b().relu("a").conv("input", 4, 1, 1, 0).build();
    assert!(matches!(err, Err(DslError::ReservedName { index: 1, .. })));

    // a `from` changes the shapes downstream: a mismatch names the layer
    let err = b()
        .conv("c1", 8, 3, 1, 0) // 8x6x6
        .conv("c2", 8, 3, 1, 0) // 8x4x4
        .layer_from("c3", LayerKind::BATCH_NORM, "c1") // 8x6x6
        .residual_add("skip", "c2")
        .build();
    assert_eq!(
        err,
        Err(DslError::ResidualMismatch {
            layer: "skip".into(),
            input: Shape::new(8, 6, 6),
            from: "c2".into(),
            from_shape: Shape::new(8, 4, 4),
        })
    );
    let err = b()
        .max_pool("p", 4, 4) // 3x2x2
        .layer_from("c", LayerKind::GlobalAvgPool, "input")
        .layer_from(
            "k",
            LayerKind::Conv2d {
                out_channels: 4,
                kernel: (3, 3),
                stride: (1, 1),
                padding: (0, 0),
                groups: 1,
                relu: false,
            },
            "p",
        )
        .build();
    assert!(
        matches!(err, Err(DslError::KernelTooLarge { ref layer, input, .. }) if layer == "k" && input == Shape::new(3, 2, 2)),
        "{err:?}"
    );

    // the run-time form of `net!` reports the same errors
    let side = 8;
    let err = net! { rt [3, side, side] =>
        c1: conv(4, 3x3) relu,
        c2: conv(4, 3x3) from c9,
    };
    assert_eq!(
        err,
        Err(DslError::UnknownSource {
            layer: "c2".into(),
            from: "c9".into()
        })
    );
    let err = net! { rt [3, side, side] => input: relu };
    assert!(matches!(err, Err(DslError::ReservedName { index: 0, .. })));
    let err = net! { rt [3, side, side] => r: relu, a: add(nowhere) relu };
    assert!(matches!(err, Err(DslError::UnknownResidualSource { ref layer, .. }) if layer == "a"));
}
