use super::*;
use crate::conv::{Conv2d, Conv2dParams};
use crate::elementwise::Affine;
use crate::kernel::{Kernel, Scratch};
use crate::tensor::Shape;
use crate::test_util::{TOL, assert_close, random_vec};

fn random_bn(k: usize, seed: u64) -> BatchNorm {
    BatchNorm {
        gamma: random_vec(k, seed),
        beta: random_vec(k, seed + 1),
        mean: random_vec(k, seed + 2),
        var: random_vec(k, seed + 3)
            .iter()
            .map(|v| v.abs() + 0.1)
            .collect(),
        eps: 1e-5,
    }
}

#[test]
fn folded_conv_equals_conv_then_bn() {
    for (p, input, with_bias) in [
        (
            Conv2dParams::new(16, 24, 3, 1, 1),
            Shape::new(16, 12, 12),
            false,
        ),
        (
            Conv2dParams::new(3, 8, 7, 2, 3),
            Shape::new(3, 20, 20),
            true,
        ),
        (
            Conv2dParams::new(32, 64, 1, 1, 0),
            Shape::new(32, 7, 7),
            true,
        ),
    ] {
        let k = p.out_channels;
        let w = random_vec(p.weight_len(), 1);
        let b = with_bias.then(|| random_vec(k, 2));
        let bn = random_bn(k, 3);
        let x = random_vec(input.len(), 4);
        let mut scratch = Scratch::new();
        // Unfolded: conv, then BN as an affine layer, then ReLU.
        let conv = Conv2d::new(p, input, w.clone(), b.clone()).unwrap();
        let y = conv.forward(&[&x], &mut scratch);
        let affine = Affine::from_batchnorm(conv.out_shape(), &bn, true).unwrap();
        let want = affine.forward(&[&y], &mut scratch);
        // Folded: one conv with fused ReLU.
        let (wf, bf) = fold_batchnorm(&w, b.as_deref(), &bn).unwrap();
        let folded = Conv2d::new(p.with_relu(true), input, wf, Some(bf)).unwrap();
        let got = folded.forward(&[&x], &mut scratch);
        // Scale: the conv's Σ|terms| is at most the reduction length for values in [-1, 1],
        // times the BN scale.
        let (s, _) = bn.affine().unwrap();
        let r = (p.in_channels * p.kernel.0 * p.kernel.1) as f32;
        let plane = conv.out_shape().plane();
        let scale: Vec<f32> = (0..want.len()).map(|i| r * s[i / plane].abs()).collect();
        assert_close(&got, &want, &scale, TOL, "folded conv");
    }
}

#[test]
fn mismatched_lengths_are_errors() {
    let mut bn = random_bn(4, 1);
    assert!(fold_batchnorm(&[0.0; 10], None, &bn).is_err());
    assert!(fold_batchnorm(&[0.0; 8], Some(&[0.0; 3]), &bn).is_err());
    bn.var.pop();
    assert!(bn.affine().is_err());
}
