//! Branches joined by `concat` (fire and inception modules), grouped and depthwise convs,
//! ceil-mode and end-padded pools, and the clip and leaky ReLU activations: shapes,
//! weights, units, what a stage boundary forwards, and the errors, through `net!` and the
//! builder.

use taopipe_dsl::{DslError, LayerKind, NetSpec, Shape, Source, net};

/// SqueezeNet 1.1's first fire module after its stem and pool.
fn fire() -> Result<NetSpec, DslError> {
    net! { fire [64, 55, 55] =>
        squeeze:   conv(16, 1x1) relu,
        expand1x1: conv(64, 1x1) relu from squeeze,
        expand3x3: conv(64, 3x3, pad 1) relu from squeeze,
        cat:       concat(expand1x1, expand3x3),
        pool:      maxpool(3x3, stride 2) ceil,
    }
}

#[test]
fn a_fire_module_is_one_unit_with_its_concat() -> Result<(), DslError> {
    let net = fire()?;
    assert_eq!(net.layers()[3].output(), Shape::new(128, 55, 55));
    assert_eq!(net.output(), Shape::new(128, 27, 27));
    // squeeze, both expands and the concat; the pool opens the next unit
    assert_eq!(net.units().len(), 2);
    assert_eq!(net.units()[0].layers(), 0..4);
    let cat = &net.layers()[3];
    assert_eq!(cat.source(), Source::Layer(1));
    assert_eq!(cat.operands(), &[Source::Layer(2)]);
    assert_eq!(cat.weight(), 128 * 55 * 55);
    // the squeeze feeds both expands; each expand feeds the concat
    assert_eq!(net.reader_counts(), vec![2, 1, 1, 1, 0]);
    assert_eq!(net.live_across(1), vec![Source::Layer(3)]);
    Ok(())
}

#[test]
fn a_boundary_inside_a_module_forwards_its_input_and_finished_branches() -> Result<(), DslError> {
    // One conv a unit: the branch convs read the previous layer, so they open units.
    let net = net! { inception [8, 6, 6] =>
        b1:  conv(4, 1x1) relu,
        b2a: conv(2, 1x1) relu from input,
        b2b: conv(4, 3x3, pad 1) relu,
        cat: concat(b1, b2b),
    }?;
    assert_eq!(net.units().len(), 2);
    assert_eq!(net.units()[1].layers(), 2..4);
    // after unit 0 (b1, b2a): b2b reads b2a, the concat reads b1
    assert_eq!(net.live_across(1), vec![Source::Layer(0), Source::Layer(1)]);
    assert_eq!(net.output(), Shape::new(8, 6, 6));
    Ok(())
}

#[test]
fn concat_may_join_the_input_and_repeat_a_layer() -> Result<(), DslError> {
    let net = net! { join [3, 4, 4] =>
        c:   conv(5, 1x1),
        cat: concat(input, c, c),
    }?;
    assert_eq!(net.output(), Shape::new(13, 4, 4));
    assert_eq!(net.layers()[1].source(), Source::Input);
    assert_eq!(
        net.layers()[1].reads(1).collect::<Vec<_>>(),
        vec![Source::Input, Source::Layer(0), Source::Layer(0)]
    );
    assert_eq!(net.reader_counts(), vec![2, 0]);
    Ok(())
}

#[test]
fn grouped_and_depthwise_convs_weigh_their_groups() -> Result<(), DslError> {
    let net = net! { dw [32, 112, 112] =>
        dw:   conv(32, 3x3, pad 1, groups 32),
        bn:   batchnorm,
        act:  relu6,
        pw:   conv(64, 1x1),
        half: conv(64, 3x3, stride 2, pad 1, groups 2),
    }?;
    // Eq. 1 with C/g input channels per output channel
    assert_eq!(net.layers()[0].weight(), 112 * 112 * 9 * 32);
    assert_eq!(net.layers()[4].weight(), 56 * 56 * 32 * 9 * 64);
    assert_eq!(net.output(), Shape::new(64, 56, 56));
    assert_eq!(net.layers()[2].kind(), &LayerKind::RELU6);
    assert_eq!(net.layers()[0].kind().to_string(), "conv 32 3x3 s1 p1 g32");
    Ok(())
}

#[test]
fn ceil_mode_rounds_up_as_pytorch_does() -> Result<(), DslError> {
    let net = |side: usize, ceil: bool| {
        let kind = LayerKind::MaxPool {
            kernel: (3, 3),
            stride: (2, 2),
            padding: (0, 0),
            padding_end: (0, 0),
            ceil,
        };
        NetSpec::builder("p", Shape::new(1, side, side))
            .layer("pool", kind)
            .build()
            .map(|n| n.output().h)
    };
    // GoogLeNet's pools: 112 → 56 (floor: 55), 56 → 28 (27), 28 → 14 (13), 14 → 7 (6)
    for (side, ceiled, floored) in [(112, 56, 55), (56, 28, 27), (28, 14, 13), (14, 7, 6)] {
        assert_eq!(net(side, true)?, ceiled, "{side}");
        assert_eq!(net(side, false)?, floored, "{side}");
    }
    // where the division is exact, both modes agree (SqueezeNet's 111 → 55)
    assert_eq!(net(111, true)?, 55);
    // the last window must start inside: a 2x2/2 pool with padding 1 on 5 gives 3, not 4
    let padded = NetSpec::builder("p", Shape::new(1, 5, 5))
        .layer(
            "pool",
            LayerKind::MaxPool {
                kernel: (2, 2),
                stride: (2, 2),
                padding: (1, 1),
                padding_end: (1, 1),
                ceil: true,
            },
        )
        .build()?;
    assert_eq!(padded.output().h, 3);
    Ok(())
}

#[test]
fn end_padding_keeps_yolos_last_pool_at_13() -> Result<(), DslError> {
    let net = net! { tail [512, 13, 13] =>
        pool: maxpool(2x2, stride 1, pad_end 1),
        act:  leakyrelu(0.1),
        dip:  clip(-1.5, 2),
    }?;
    assert_eq!(net.output(), Shape::new(512, 13, 13));
    assert_eq!(
        net.layers()[0].kind(),
        &LayerKind::MaxPool {
            kernel: (2, 2),
            stride: (1, 1),
            padding: (0, 0),
            padding_end: (1, 1),
            ceil: false,
        }
    );
    assert_eq!(net.layers()[1].kind(), &LayerKind::LeakyRelu { slope: 0.1 });
    assert_eq!(
        net.layers()[2].kind(),
        &LayerKind::Clip {
            min: -1.5,
            max: 2.0
        }
    );
    assert_eq!(net.layers()[0].kind().to_string(), "maxpool 2x2 s1 p0 e1");
    Ok(())
}

#[test]
fn batchnorm_takes_its_eps() -> Result<(), DslError> {
    let net = net! { bn [4, 8, 8] =>
        c:  conv(4, 1x1),
        b1: batchnorm,
        b2: batchnorm(0.001),
    }?;
    assert_eq!(net.layers()[1].kind(), &LayerKind::BATCH_NORM);
    assert_eq!(net.layers()[2].kind(), &LayerKind::BatchNorm { eps: 0.001 });
    assert_eq!(net.layers()[2].kind().to_string(), "batchnorm eps 0.001");
    let err = NetSpec::builder("b", Shape::new(4, 8, 8))
        .layer("bad", LayerKind::BatchNorm { eps: 0.0 })
        .build()
        .expect_err("eps 0");
    assert!(err.to_string().contains("`bad`") && err.to_string().contains("eps"));
    Ok(())
}

#[test]
fn macro_and_builder_agree_on_modules() -> Result<(), DslError> {
    let by_macro = net! { m [16, 28, 28] =>
        s:   conv(8, 1x1) relu,
        a:   conv(8, 1x1) relu from s,
        b:   conv(8, 3x3, pad 1, groups 8) from s,
        bn:  batchnorm,
        r6:  relu6,
        cat: concat(a, r6),
        p:   avgpool(3x3, stride 2, pad 1) ceil,
        l:   leakyrelu(0.125),
    }?;
    let by_builder = NetSpec::builder("m", Shape::new(16, 28, 28))
        .conv_relu("s", 8, 1, 1, 0)
        .layer_from(
            "a",
            LayerKind::Conv2d {
                out_channels: 8,
                kernel: (1, 1),
                stride: (1, 1),
                padding: (0, 0),
                groups: 1,
                relu: true,
            },
            "s",
        )
        .layer_from(
            "b",
            LayerKind::Conv2d {
                out_channels: 8,
                kernel: (3, 3),
                stride: (1, 1),
                padding: (1, 1),
                groups: 8,
                relu: false,
            },
            "s",
        )
        .batch_norm("bn")
        .clip("r6", 0.0, 6.0)
        .concat("cat", &["a", "r6"])
        .layer(
            "p",
            LayerKind::AvgPool {
                kernel: (3, 3),
                stride: (2, 2),
                padding: (1, 1),
                padding_end: (1, 1),
                ceil: true,
            },
        )
        .leaky_relu("l", 0.125)
        .build()?;
    assert_eq!(by_macro, by_builder);
    // 28 padded to 30: ceil(27 / 2) + 1 = 15 windows, the last starting at row 27
    assert_eq!(by_macro.output(), Shape::new(16, 15, 15));
    Ok(())
}

#[test]
fn errors_name_the_layer_and_the_values() {
    let b = || NetSpec::builder("n", Shape::new(6, 8, 8)).conv("c", 4, 1, 1, 0);
    let cases: Vec<(Result<NetSpec, DslError>, &str, &[&str])> = vec![
        (
            b().layer(
                "g",
                LayerKind::Conv2d {
                    out_channels: 6,
                    kernel: (3, 3),
                    stride: (1, 1),
                    padding: (1, 1),
                    groups: 3,
                    relu: false,
                },
            )
            .build(),
            "Groups",
            &["`g`", "3 groups", "4 input channels"],
        ),
        (
            b().layer(
                "z",
                LayerKind::Conv2d {
                    out_channels: 4,
                    kernel: (1, 1),
                    stride: (1, 1),
                    padding: (0, 0),
                    groups: 0,
                    relu: false,
                },
            )
            .build(),
            "ZeroParameter",
            &["`z`", "groups"],
        ),
        (
            b().concat("cat", &["c", "nope"]).build(),
            "UnknownSource",
            &["`cat`", "`nope`"],
        ),
        (b().concat("cat", &[]).build(), "ZeroParameter", &["`cat`"]),
        (
            b().max_pool("p", 2, 2).concat("cat", &["c", "p"]).build(),
            "ConcatMismatch",
            &["`cat`", "`p` (4x4x4)", "first input's 8x8"],
        ),
        (
            b().clip("clip", 6.0, 0.0).build(),
            "BadParameter",
            &["`clip`", "clip 6..0", "min not above max"],
        ),
        (
            b().clip("clip", f32::NAN, 1.0).build(),
            "BadParameter",
            &["`clip`"],
        ),
        (
            b().leaky_relu("lr", f32::INFINITY).build(),
            "BadParameter",
            &["`lr`", "slope"],
        ),
        (
            b().layer(
                "pe",
                LayerKind::MaxPool {
                    kernel: (2, 2),
                    stride: (2, 2),
                    padding: (0, 0),
                    padding_end: (2, 2),
                    ceil: false,
                },
            )
            .build(),
            "PoolPaddingTooLarge",
            &["`pe`", "2x2 after"],
        ),
    ];
    for (result, variant, needles) in cases {
        let err = result.expect_err(variant);
        assert!(
            format!("{err:?}").starts_with(variant),
            "{variant}: got {err:?}"
        );
        let text = err.to_string();
        for needle in needles {
            assert!(
                text.contains(needle),
                "{variant}: {text:?} lacks {needle:?}"
            );
        }
    }
}
