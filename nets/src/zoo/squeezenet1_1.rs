//! SqueezeNet 1.1 (Iandola et al.; the 1.1 variant of the SqueezeNet repository), as
//! torchvision's `squeezenet1_1()` builds it, at 224×224×3: a 3×3/2 convolution to 64
//! channels, three 3×3/2 max pools in ceil mode, 8 fire modules and a 1×1 convolution to
//! the 1000 classes followed by global average pooling. Every convolution has a bias and
//! a ReLU (fused: `conv(...) relu`), no batchnorm.
//!
//! # Names
//! torchvision's module paths with `_` for `.`: `features_0` (conv; its ReLU is
//! torchvision's `features.1`), `features_2` (pool), the fire modules `features_3`,
//! `features_4`, `features_6`, `features_7`, `features_9` … `features_12` with their
//! `features_N_squeeze`, `features_N_expand1x1` and `features_N_expand3x3` convolutions,
//! pools `features_5` and `features_8`, then `classifier_1` (conv; `classifier.0` is the
//! dropout) and `classifier_3` (the adaptive average pool). The concat that joins a fire
//! module's two expands is named after the module, `features_N`: torchvision has it as
//! `torch.cat` in `Fire.forward`, so that name has no parameters.
//!
//! # Units
//! A fire module is one pipeline unit: its squeeze opens it, and its two expands are
//! declared `from` the squeeze (the 1×1 one reads the previous layer too, but a layer with
//! a `from` never opens a unit), so a pipeline never cuts inside a module. That gives 14
//! units: `features_0`, the three pools, the 8 fires, `classifier_1` and `classifier_3`.
//! Pipe-it's Table I counts SqueezeNet as 26 "major layers" (2 conv + 8 fire modules of
//! 3 conv each): convolutions one by one, no pools. Here each fire's 3 convolutions are
//! one unit (26 − 8·2 = 10 units), and the 3 pools and the global pool add 4.
//!
//! # Cost
//! 349,151,936 multiply-adds, so 0.70 GFLOP a frame (the often quoted 0.35 G MACs of
//! SqueezeNet 1.1); 1,235,496 parameters (torchvision's count).

use taopipe_dsl::{DslError, NetSpec, net};

/// SqueezeNet 1.1 at 224×224×3.
pub fn squeezenet1_1() -> Result<NetSpec, DslError> {
    net! { squeezenet1_1 [3, 224, 224] =>
        features_0:            conv(64, 3x3, stride 2) relu,
        features_2:            maxpool(3x3, stride 2) ceil,
        // features.3: Fire(squeeze 16, expand 64 + 64) (55×55)
        features_3_squeeze:    conv(16, 1x1) relu,
        features_3_expand1x1:  conv(64, 1x1) relu from features_3_squeeze,
        features_3_expand3x3:  conv(64, 3x3, pad 1) relu from features_3_squeeze,
        features_3:            concat(features_3_expand1x1, features_3_expand3x3),
        // features.4: Fire(squeeze 16, expand 64 + 64) (55×55)
        features_4_squeeze:    conv(16, 1x1) relu,
        features_4_expand1x1:  conv(64, 1x1) relu from features_4_squeeze,
        features_4_expand3x3:  conv(64, 3x3, pad 1) relu from features_4_squeeze,
        features_4:            concat(features_4_expand1x1, features_4_expand3x3),
        features_5:            maxpool(3x3, stride 2) ceil,
        // features.6: Fire(squeeze 32, expand 128 + 128) (27×27)
        features_6_squeeze:    conv(32, 1x1) relu,
        features_6_expand1x1:  conv(128, 1x1) relu from features_6_squeeze,
        features_6_expand3x3:  conv(128, 3x3, pad 1) relu from features_6_squeeze,
        features_6:            concat(features_6_expand1x1, features_6_expand3x3),
        // features.7: Fire(squeeze 32, expand 128 + 128) (27×27)
        features_7_squeeze:    conv(32, 1x1) relu,
        features_7_expand1x1:  conv(128, 1x1) relu from features_7_squeeze,
        features_7_expand3x3:  conv(128, 3x3, pad 1) relu from features_7_squeeze,
        features_7:            concat(features_7_expand1x1, features_7_expand3x3),
        features_8:            maxpool(3x3, stride 2) ceil,
        // features.9: Fire(squeeze 48, expand 192 + 192) (13×13)
        features_9_squeeze:    conv(48, 1x1) relu,
        features_9_expand1x1:  conv(192, 1x1) relu from features_9_squeeze,
        features_9_expand3x3:  conv(192, 3x3, pad 1) relu from features_9_squeeze,
        features_9:            concat(features_9_expand1x1, features_9_expand3x3),
        // features.10: Fire(squeeze 48, expand 192 + 192) (13×13)
        features_10_squeeze:   conv(48, 1x1) relu,
        features_10_expand1x1: conv(192, 1x1) relu from features_10_squeeze,
        features_10_expand3x3: conv(192, 3x3, pad 1) relu from features_10_squeeze,
        features_10:           concat(features_10_expand1x1, features_10_expand3x3),
        // features.11: Fire(squeeze 64, expand 256 + 256) (13×13)
        features_11_squeeze:   conv(64, 1x1) relu,
        features_11_expand1x1: conv(256, 1x1) relu from features_11_squeeze,
        features_11_expand3x3: conv(256, 3x3, pad 1) relu from features_11_squeeze,
        features_11:           concat(features_11_expand1x1, features_11_expand3x3),
        // features.12: Fire(squeeze 64, expand 256 + 256) (13×13)
        features_12_squeeze:   conv(64, 1x1) relu,
        features_12_expand1x1: conv(256, 1x1) relu from features_12_squeeze,
        features_12_expand3x3: conv(256, 3x3, pad 1) relu from features_12_squeeze,
        features_12:           concat(features_12_expand1x1, features_12_expand3x3),
        // classifier.0 is Dropout; classifier.3 the adaptive average pool
        classifier_1:          conv(1000, 1x1) relu,
        classifier_3:          gap,
    }
}
