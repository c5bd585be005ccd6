//! Synthetic nets: the weight lists of Table 7 carried by conv layers, and the generator.

use taopipe_dsl::{
    DslError, LayerKind, SYNTH_UNIT, SYNTH1, SYNTH2, SYNTH3, WeightDistribution,
    conv_net_with_weights, random_net, random_weights, synth1, synth2, synth3,
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
