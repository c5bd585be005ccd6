//! Shape inference, weights (Eq. 1, Eq. 2, pooling) and errors, through `net!` and the builder.

use taopipe_dsl::{DslError, LayerKind, NetSpec, Seeds, Shape, net};

fn vgg16() -> Result<NetSpec, DslError> {
    net! { vgg16 [3, 224, 224] =>
        conv1_1: conv(64, 3x3, pad 1) relu,
        conv1_2: conv(64, 3x3, pad 1) relu,
        pool1:   maxpool(2x2, stride 2),
        conv2_1: conv(128, 3x3, pad 1) relu,
        conv2_2: conv(128, 3x3, pad 1) relu,
        pool2:   maxpool(2x2, stride 2),
        conv3_1: conv(256, 3x3, pad 1) relu,
        conv3_2: conv(256, 3x3, pad 1) relu,
        conv3_3: conv(256, 3x3, pad 1) relu,
        pool3:   maxpool(2x2, stride 2),
        conv4_1: conv(512, 3x3, pad 1) relu,
        conv4_2: conv(512, 3x3, pad 1) relu,
        conv4_3: conv(512, 3x3, pad 1) relu,
        pool4:   maxpool(2x2, stride 2),
        conv5_1: conv(512, 3x3, pad 1) relu,
        conv5_2: conv(512, 3x3, pad 1) relu,
        conv5_3: conv(512, 3x3, pad 1) relu,
        pool5:   maxpool(2x2, stride 2),
        fc6:     fc(4096) relu,
        fc7:     fc(4096) relu,
        fc8:     fc(1000),
    }
}

#[test]
fn vgg16_shapes_and_count() -> Result<(), DslError> {
    let net = vgg16()?;
    assert_eq!(net.name(), "vgg16");
    assert_eq!(net.len(), 21);
    let count = |k: &str| {
        net.layers()
            .iter()
            .filter(|l| l.kind().short_name() == k)
            .count()
    };
    assert_eq!((count("conv"), count("maxpool"), count("fc")), (13, 5, 3));
    assert!(
        net.layers()
            .iter()
            .filter(|l| l.kind().short_name() != "maxpool")
            .take(15)
            .all(|l| l.kind().fused_relu())
    );
    assert!(!net.layers()[20].kind().fused_relu());
    assert_eq!(net.output(), Shape::new(1000, 1, 1));
    // every layer is a unit of its own: 21 units, as the paper counts VGG16
    assert_eq!(net.units().len(), 21);
    assert!(
        net.units()
            .iter()
            .enumerate()
            .all(|(i, u)| u.layers() == (i..i + 1))
    );
    assert_eq!(net.unit_weights(), net.weights());
    let shape = |n: &str| net.layer(n).map(|l| l.output());
    assert_eq!(shape("conv1_2"), Some(Shape::new(64, 224, 224)));
    assert_eq!(shape("pool1"), Some(Shape::new(64, 112, 112)));
    assert_eq!(shape("conv3_3"), Some(Shape::new(256, 56, 56)));
    assert_eq!(shape("pool5"), Some(Shape::new(512, 7, 7)));
    assert_eq!(shape("fc6"), Some(Shape::new(4096, 1, 1)));
    Ok(())
}

#[test]
fn vgg16_weights_by_hand() -> Result<(), DslError> {
    let net = vgg16()?;
    let w = |n: &str| net.layer(n).map(|l| l.weight());
    // Eq. 1, H·W·C·R·S·K (stride 1, pad 1: output H·W = input H·W)
    assert_eq!(w("conv1_1"), Some(224 * 224 * 3 * 3 * 3 * 64)); // 86 704 128
    assert_eq!(w("conv1_1"), Some(86_704_128));
    assert_eq!(w("conv1_2"), Some(224 * 224 * 64 * 9 * 64)); // 1 849 688 064
    assert_eq!(w("conv2_1"), Some(112 * 112 * 64 * 9 * 128));
    assert_eq!(w("conv5_3"), Some(14 * 14 * 512 * 9 * 512));
    // pooling: input size H·W·C
    assert_eq!(w("pool1"), Some(224 * 224 * 64));
    assert_eq!(w("pool5"), Some(14 * 14 * 512));
    // Eq. 2, H·W·C·F
    assert_eq!(w("fc6"), Some(7 * 7 * 512 * 4096)); // 102 760 448
    assert_eq!(w("fc7"), Some(4096 * 4096));
    assert_eq!(w("fc8"), Some(4096 * 1000));
    assert_eq!(net.weights().len(), 21);
    // VGG16's well-known 15.47 GMACs: convs + FCs
    let macs: u64 = net
        .layers()
        .iter()
        .filter(|l| l.kind().short_name() != "maxpool")
        .map(|l| l.weight())
        .sum();
    assert_eq!(macs, 15_470_264_320);
    Ok(())
}

#[test]
fn vgg16_seeds_on_16_cores() -> Result<(), DslError> {
    let net = vgg16()?;
    let seeds = Seeds::from_net(&net, 16)?;
    assert_eq!(seeds.stage_counts(), 2..=16);
    for p in seeds.stage_counts() {
        let top = seeds.top_k(p, 5)?;
        assert_eq!(top.len(), 5);
        assert!(top.windows(2).all(|w| w[0].cv <= w[1].cv));
    }
    Ok(())
}

#[test]
fn macro_and_builder_agree() -> Result<(), DslError> {
    let by_macro = net! { small [3, 32, 32] =>
        c1: conv(8, 5x3, stride 2x1, pad 2x1) relu,
        bn: batchnorm,
        r:  relu,
        p:  avgpool(3x3, stride 2, pad 1),
        c2: conv(8, 3, pad 1),
        add: add(p),
        g:  gap,
        f:  flatten,
        fc: fc(10),
        s:  softmax,
    }?;
    let by_builder = NetSpec::builder("small", Shape::new(3, 32, 32))
        .layer(
            "c1",
            LayerKind::Conv2d {
                out_channels: 8,
                kernel: (5, 3),
                stride: (2, 1),
                padding: (2, 1),
                groups: 1,
                relu: true,
            },
        )
        .batch_norm("bn")
        .relu("r")
        .layer("p", LayerKind::avg_pool((3, 3), (2, 2), (1, 1)))
        .conv("c2", 8, 3, 1, 1)
        .residual_add("add", "p")
        .global_avg_pool("g")
        .flatten("f")
        .fc("fc", 10)
        .softmax("s")
        .build()?;
    assert_eq!(by_macro, by_builder);
    // c1: H (32+4-5)/2+1 = 16, W (32+2-3)/1+1 = 32
    assert_eq!(by_macro.layers()[0].output(), Shape::new(8, 16, 32));
    assert_eq!(by_macro.layers()[0].weight(), 16 * 32 * 3 * 5 * 3 * 8);
    // avgpool 3/2 pad 1: (16+2-3)/2+1 = 8, (32+2-3)/2+1 = 16
    assert_eq!(by_macro.layers()[3].output(), Shape::new(8, 8, 16));
    let weights = by_macro.weights();
    let elems = (8 * 16 * 32) as u64;
    assert_eq!(&weights[1..4], &[elems, elems, elems]); // bn, relu, pool: input size
    assert_eq!(weights[5], 8 * 8 * 16); // residual add: element count
    // units: c1 (+bn, relu) | p | c2 (+add) | g (+flatten) | fc (+softmax)
    let ranges: Vec<_> = by_macro.units().iter().map(|u| u.layers()).collect();
    assert_eq!(ranges, vec![0..3, 3..4, 4..6, 6..8, 8..10]);
    assert_eq!(by_macro.unit_weights()[0], weights[..3].iter().sum::<u64>());
    assert_eq!(weights[7], 0); // flatten
    assert_eq!(weights[8], 8 * 10); // fc after flatten: 8x1x1 · 10
    assert_eq!(weights[9], 10); // softmax
    assert_eq!(by_macro.output(), Shape::new(10, 1, 1));
    Ok(())
}

#[test]
fn maxpool_stride_defaults_to_kernel() -> Result<(), DslError> {
    let net = net! { p [4, 9, 9] => pool: maxpool(3), }?;
    assert_eq!(net.output(), Shape::new(4, 3, 3));
    Ok(())
}

#[test]
fn fc_flattens_implicitly() -> Result<(), DslError> {
    let net = net! { f [2, 3, 4] => fc: fc(5) relu }?;
    assert_eq!(net.output(), Shape::new(5, 1, 1));
    assert_eq!(net.weights(), vec![2 * 3 * 4 * 5]);
    Ok(())
}

#[test]
fn runtime_input_form_reports_errors_with_the_layer() {
    let (h, w) = (6, 6);
    let err = net! { rt [3, h, w] =>
        c1: conv(16, 3x3) relu,
        c2: conv(16, 3x3) relu,
        skip: add(c1),
    }
    .expect_err("c1 and c2 differ");
    assert_eq!(
        err,
        DslError::ResidualMismatch {
            layer: "skip".into(),
            input: Shape::new(16, 2, 2),
            from: "c1".into(),
            from_shape: Shape::new(16, 4, 4),
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("`skip`") && msg.contains("16x2x2") && msg.contains("16x4x4"),
        "{msg}"
    );

    let ok = net! { rt [3, h, w] => c1: conv(16, 3x3, pad 1) relu }.map(|n| n.output());
    assert_eq!(ok, Ok(Shape::new(16, 6, 6)));
}

#[test]
fn builder_errors_name_the_layer() {
    let b = || NetSpec::builder("n", Shape::new(3, 8, 8));
    let cases: Vec<(Result<NetSpec, DslError>, &str, &[&str])> = vec![
        (
            b().conv("big", 4, 9, 1, 0).build(),
            "KernelTooLarge",
            &["`big`", "9x9", "3x8x8"],
        ),
        (b().conv("pad_ok", 4, 9, 1, 1).build(), "ok", &[]),
        (
            b().conv("zero", 0, 3, 1, 1).build(),
            "ZeroParameter",
            &["`zero`", "out_channels"],
        ),
        (
            b().conv("s0", 4, 3, 0, 1).build(),
            "ZeroParameter",
            &["`s0`", "stride"],
        ),
        (
            b().max_pool("k0", 0, 1).build(),
            "ZeroParameter",
            &["`k0`", "kernel"],
        ),
        (
            b().fc("f0", 0).build(),
            "ZeroParameter",
            &["`f0`", "out_features"],
        ),
        (b().relu("a").relu("a").build(), "DuplicateName", &["`a`"]),
        (b().relu("").build(), "EmptyName", &["#0"]),
        (
            b().residual_add("r", "nowhere").build(),
            "UnknownResidualSource",
            &["`r`", "`nowhere`"],
        ),
        (
            b().relu("r").residual_add("r2", "r2").build(),
            "UnknownResidualSource",
            &["`r2`"],
        ),
        (b().build(), "NoLayers", &["`n`"]),
        (
            NetSpec::builder("z", Shape::new(3, 0, 8)).relu("r").build(),
            "EmptyInput",
            &["3x0x8"],
        ),
        (
            b().layer("pp", LayerKind::max_pool((2, 2), (2, 2), (2, 2)))
                .build(),
            "PoolPaddingTooLarge",
            &["`pp`"],
        ),
        (
            NetSpec::builder("huge", Shape::new(usize::MAX, 2, 2))
                .relu("r")
                .build(),
            "Overflow",
            &["`r`"],
        ),
        (
            b().conv("wide", usize::MAX, 1, 1, 0).build(),
            "Overflow",
            &["`wide`"],
        ),
    ];
    for (result, variant, needles) in cases {
        match result {
            Ok(_) => assert_eq!(variant, "ok"),
            Err(e) => {
                let dbg = format!("{e:?}");
                assert!(dbg.starts_with(variant), "{dbg} is not {variant}");
                let msg = e.to_string();
                for n in needles {
                    assert!(msg.contains(n), "{msg:?} lacks {n}");
                }
            }
        }
    }
}

#[test]
fn display_is_a_table() -> Result<(), DslError> {
    let net = vgg16()?;
    let text = net.to_string();
    assert!(text.starts_with("net `vgg16`: input 3x224x224, 21 layers, 21 units"));
    let row = text
        .lines()
        .find(|l| l.contains("conv1_1"))
        .unwrap_or_default();
    assert!(row.contains("conv 64 3x3 s1 p1 +relu"), "{row}");
    assert!(row.contains("3x224x224 -> 64x224x224"), "{row}");
    assert!(row.trim_end().ends_with("86704128"), "{row}");
    let fc8 = text.lines().find(|l| l.contains("fc8")).unwrap_or_default();
    assert_eq!(
        fc8.split_whitespace().take(3).collect::<Vec<_>>(),
        ["20", "20", "fc8"],
        "# and unit columns: {fc8}"
    );
    assert_eq!(text.lines().count(), 23);
    Ok(())
}
