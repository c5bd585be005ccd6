//! Synthetic nets: the weight lists of Table 7 carried by conv layers, and the generator.

use taopipe_dsl::{
    DslError, LayerKind, NetSpec, SEED_TABLE_LIMIT, SYNTH_MEMORY_LIMIT, SYNTH_UNIT, SYNTH1, SYNTH2,
    SYNTH3, SeedIter, Seeds, WeightDistribution, conv_net_with_weights, random_net, random_weights,
    synth_net_bytes, synth1, synth2, synth3,
};

fn units(weights: &[u64]) -> Vec<u64> {
    assert!(weights.iter().all(|w| w % SYNTH_UNIT == 0), "{weights:?}");
    weights.iter().map(|w| w / SYNTH_UNIT).collect()
}

#[test]
fn table7_lists() {
    assert_eq!(SYNTH1.len(), 7);
    assert_eq!(SYNTH2.len(), 15);
    assert_eq!(SYNTH3.len(), 13);
    assert_eq!(SYNTH1.iter().sum::<u64>(), 37);
    assert_eq!(SYNTH2.iter().sum::<u64>(), 88);
    assert_eq!(SYNTH3.iter().sum::<u64>(), 110);
}

#[test]
fn synth_nets_carry_the_weights_exactly() -> Result<(), DslError> {
    for (net, list) in [
        (synth1()?, &SYNTH1[..]),
        (synth2()?, &SYNTH2[..]),
        (synth3()?, &SYNTH3[..]),
    ] {
        assert_eq!(units(&net.weights()), list, "{}", net.name());
        assert!(
            net.layers()
                .iter()
                .all(|l| matches!(l.kind(), LayerKind::Conv2d { .. }))
        );
        // the Eq. 1 product, recomputed from the shapes
        for l in net.layers() {
            if let LayerKind::Conv2d {
                out_channels,
                kernel,
                ..
            } = *l.kind()
            {
                let (o, i) = (l.output(), l.input());
                assert_eq!(
                    l.weight(),
                    (o.h * o.w * i.c * kernel.0 * kernel.1 * out_channels) as u64
                );
                assert_eq!((o.h, i.h), (8, 8));
                assert!(o.w == 8 || o.w == 9);
            }
        }
    }
    Ok(())
}

#[test]
fn any_weights_fit() -> Result<(), DslError> {
    let list = [1, 2, 3, 4, 5, 6, 7, 8, 64, 1, 1, 97, 1000, 2, 2];
    assert_eq!(units(&conv_net_with_weights("x", &list)?.weights()), list);
    assert!(conv_net_with_weights("x", &[]).is_err());
    assert!(conv_net_with_weights("x", &[1, 0]).is_err());
    assert!(conv_net_with_weights("x", &[u64::MAX]).is_err());
    Ok(())
}

#[test]
fn random_nets_are_seeded_and_sized() -> Result<(), DslError> {
    let dists = [
        WeightDistribution::Uniform { min: 1, max: 32 },
        WeightDistribution::LogUniform { min: 1, max: 4096 },
        WeightDistribution::Bimodal {
            light: (1, 4),
            heavy: (40, 64),
            heavy_percent: 25,
        },
    ];
    for d in dists {
        for depth in [1, 7, 52] {
            let a = random_net(11, depth, d)?;
            let b = random_net(11, depth, d)?;
            assert_eq!(a, b);
            assert_eq!(a.len(), depth);
            assert_eq!(units(&a.weights()), random_weights(11, depth, d)?);
        }
        assert_ne!(random_weights(1, 52, d)?, random_weights(2, 52, d)?);
    }
    // log-uniform is heavy-tailed: many small and a few very large weights
    let w = random_weights(3, 2000, dists[1])?;
    let small = w.iter().filter(|&&x| x < 64).count();
    let large = w.iter().filter(|&&x| x >= 1024).count();
    assert!(small > 800 && large > 200, "small {small}, large {large}");
    // bimodal: nothing between the two clusters, about a quarter heavy
    let w = random_weights(4, 2000, dists[2])?;
    assert!(w.iter().all(|&x| x <= 4 || x >= 40));
    let heavy = w.iter().filter(|&&x| x >= 40).count();
    assert!((400..600).contains(&heavy), "{heavy}");
    Ok(())
}

/// f32 bytes of a conv net's weights, biases and activations, from its layers' shapes.
fn declared_bytes(net: &NetSpec) -> u64 {
    let input = net.input();
    let mut floats = input.c * input.h * input.w;
    for l in net.layers() {
        if let LayerKind::Conv2d {
            out_channels,
            kernel,
            ..
        } = *l.kind()
        {
            let (i, o) = (l.input(), l.output());
            floats += i.c * kernel.0 * kernel.1 * out_channels + out_channels + o.c * o.h * o.w;
        }
    }
    4 * floats as u64
}

#[test]
fn synth_net_bytes_counts_what_the_net_declares() -> Result<(), DslError> {
    let d = WeightDistribution::LogUniform { min: 1, max: 64 };
    for net in [synth1()?, synth2()?, synth3()?, random_net(5, 40, d)?] {
        assert_eq!(
            synth_net_bytes(&units(&net.weights())),
            Some(declared_bytes(&net)),
            "{}",
            net.name()
        );
    }
    Ok(())
}

/// `--net random --depth 100000` aborted on a 320 GB allocation: such a net is now refused
/// up front, with an error naming its depth and size, and so is any net over the limit;
/// one just under it is built (as a spec: nothing is allocated for its weights here).
#[test]
fn oversized_synthetic_nets_are_errors_naming_depth_and_size() -> Result<(), DslError> {
    let d = WeightDistribution::LogUniform { min: 1, max: 64 };
    let err = random_net(1, 100_000, d).expect_err("depth 100000");
    let DslError::SynthTooLarge {
        depth,
        bytes: Some(bytes),
        at_least: false,
        limit,
        ..
    } = err
    else {
        panic!("{err:?}");
    };
    assert_eq!((depth, limit), (100_000, SYNTH_MEMORY_LIMIT));
    assert_eq!(
        Some(bytes),
        synth_net_bytes(&random_weights(1, 100_000, d)?)
    );
    assert!(bytes > 2 * SYNTH_MEMORY_LIMIT, "{bytes}");
    let text = err.to_string();
    for want in [
        "`random-1`",
        "depth 100000",
        &format!("{bytes} bytes"),
        "4.0 GiB",
    ] {
        assert!(text.contains(want), "`{want}` not in: {text}");
    }
    // Depths too large to draw: refused on a lower bound, or on overflow.
    let err = random_net(1, 1 << 40, d).expect_err("depth 2^40");
    assert!(
        matches!(
            err,
            DslError::SynthTooLarge {
                at_least: true,
                bytes: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("at least"), "{err}");
    let err = random_net(1, usize::MAX, d).expect_err("depth usize::MAX");
    assert!(
        matches!(err, DslError::SynthTooLarge { bytes: None, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 2^64 bytes"), "{err}");
    // One layer: the largest weight under the limit builds, one more does not.
    let bytes_of = |w: u64| synth_net_bytes(&[w]).expect("no overflow");
    let per_unit = bytes_of(2) - bytes_of(1);
    let w = (SYNTH_MEMORY_LIMIT - (bytes_of(1) - per_unit)) / per_unit;
    assert!(bytes_of(w) <= SYNTH_MEMORY_LIMIT && bytes_of(w + 1) > SYNTH_MEMORY_LIMIT);
    let net = conv_net_with_weights("edge", &[w])?;
    assert_eq!(synth_net_bytes(&[w]), Some(declared_bytes(&net)));
    let err = conv_net_with_weights("edge", &[w + 1]).expect_err("over the limit");
    assert!(
        matches!(
            err,
            DslError::SynthTooLarge {
                depth: 1,
                at_least: false,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(matches!(
        conv_net_with_weights("x", &[u64::MAX / 4]),
        Err(DslError::SynthTooLarge { bytes: None, .. })
    ));
    Ok(())
}

/// The seed search's `O(stages · layers²)` table (320 GB for 100000 layers in 2 stages) is
/// refused before it is allocated, naming the layers, stages and size.
#[test]
fn oversized_seed_tables_are_errors() -> Result<(), DslError> {
    let w = vec![1u64; 100_000];
    let err = SeedIter::new(&w, 2).expect_err("100000 layers");
    assert_eq!(
        err,
        DslError::SeedTableTooLarge {
            layers: 100_000,
            stages: 2,
            bytes: Some(320_011_200_080),
            limit: SEED_TABLE_LIMIT,
        }
    );
    let text = err.to_string();
    for want in ["100000 layers in 2 stages", "320011200080 bytes", "1.0 GiB"] {
        assert!(text.contains(want), "`{want}` not in: {text}");
    }
    let seeds = Seeds::new(&w, 16)?;
    assert!(matches!(
        seeds.top_k(16, 1),
        Err(DslError::SeedTableTooLarge { stages: 16, .. })
    ));
    // A net of a few hundred units is still ranked.
    assert_eq!(SeedIter::new(&w[..300], 4)?.take(2).count(), 2);
    Ok(())
}
