//! MobileNetV2 (Sandler et al. 2018), as torchvision's `mobilenet_v2()` builds it (width
//! 1.0), at 224×224×3: a 3×3/2 stem, 17 inverted residual blocks from the table of
//! settings (expansion t, channels c, repeats n, stride s) = (1, 16, 1, 1), (6, 24, 2, 2),
//! (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1), a 1×1
//! convolution to 1280 channels, global average pooling and the classifier. Every
//! convolution has no bias and is followed by batchnorm; ReLU6 is `relu6` (a clip to
//! [0, 6]).
//!
//! # Names
//! torchvision's module paths with `_` for `.`, so its `state_dict` loads by name:
//! `features_0_0` is `features.0.0` (the stem conv), `features_0_1` its batchnorm,
//! `features_0_2` its ReLU6. Block N ≥ 2 is `features_N_conv_0_*` (1×1 expand, bn,
//! ReLU6), `features_N_conv_1_*` (3×3 depthwise, `groups` = its channels, bn, ReLU6),
//! `features_N_conv_2` (1×1 project) and `features_N_conv_3` (bn). Block 1 expands by 1,
//! so it has no expand conv: its depthwise is `features_1_conv_0_*`, its projection
//! `features_1_conv_1`, its bn `features_1_conv_2`. A block of stride 1 whose input and
//! output channels agree ends with the residual `features_N_add` (no module, no
//! parameters in torchvision: `x + self.conv(x)`). The head is `features_18_0/1/2`, then
//! `gap` (torchvision calls `adaptive_avg_pool2d` as a function, so it has no module
//! name) and `classifier_1` (`classifier.0` is the dropout, the identity at inference).
//!
//! # Units
//! 54 pipeline units: the stem, 2 for block 1 (depthwise, project), 3 for each of
//! blocks 2–17 (expand, depthwise, project; the add joins the project's unit), the 1×1
//! head conv, `gap` and `classifier_1`. Counted as Pipe-it's Table I counts "major
//! layers" (convolutions and FC one by one) it has 53: the units less `gap`.
//!
//! # Cost
//! 300,774,272 multiply-adds (torchvision and the paper: 300 M), so 0.60 GFLOP a frame;
//! 3,504,872 parameters (torchvision's count).

use taopipe_dsl::{DslError, NetSpec, net};

/// MobileNetV2 at 224×224×3.
pub fn mobilenet_v2() -> Result<NetSpec, DslError> {
    net! { mobilenet_v2 [3, 224, 224] =>
        // features.0: conv 3→32 3x3/2, bn, ReLU6 (112×112)
        features_0_0:         conv(32, 3x3, stride 2, pad 1),
        features_0_1:         batchnorm,
        features_0_2:         relu6,
        // features.1: 32→16, expand 1, stride 1 (112×112)
        features_1_conv_0_0:  conv(32, 3x3, pad 1, groups 32),
        features_1_conv_0_1:  batchnorm,
        features_1_conv_0_2:  relu6,
        features_1_conv_1:    conv(16, 1x1),
        features_1_conv_2:    batchnorm,
        // features.2: 16→24, expand 6, stride 2 (56×56)
        features_2_conv_0_0:  conv(96, 1x1),
        features_2_conv_0_1:  batchnorm,
        features_2_conv_0_2:  relu6,
        features_2_conv_1_0:  conv(96, 3x3, stride 2, pad 1, groups 96),
        features_2_conv_1_1:  batchnorm,
        features_2_conv_1_2:  relu6,
        features_2_conv_2:    conv(24, 1x1),
        features_2_conv_3:    batchnorm,
        // features.3: 24→24, expand 6, stride 1 (56×56), residual
        features_3_conv_0_0:  conv(144, 1x1),
        features_3_conv_0_1:  batchnorm,
        features_3_conv_0_2:  relu6,
        features_3_conv_1_0:  conv(144, 3x3, pad 1, groups 144),
        features_3_conv_1_1:  batchnorm,
        features_3_conv_1_2:  relu6,
        features_3_conv_2:    conv(24, 1x1),
        features_3_conv_3:    batchnorm,
        features_3_add:       add(features_2_conv_3),
        // features.4: 24→32, expand 6, stride 2 (28×28)
        features_4_conv_0_0:  conv(144, 1x1),
        features_4_conv_0_1:  batchnorm,
        features_4_conv_0_2:  relu6,
        features_4_conv_1_0:  conv(144, 3x3, stride 2, pad 1, groups 144),
        features_4_conv_1_1:  batchnorm,
        features_4_conv_1_2:  relu6,
        features_4_conv_2:    conv(32, 1x1),
        features_4_conv_3:    batchnorm,
        // features.5: 32→32, expand 6, stride 1 (28×28), residual
        features_5_conv_0_0:  conv(192, 1x1),
        features_5_conv_0_1:  batchnorm,
        features_5_conv_0_2:  relu6,
        features_5_conv_1_0:  conv(192, 3x3, pad 1, groups 192),
        features_5_conv_1_1:  batchnorm,
        features_5_conv_1_2:  relu6,
        features_5_conv_2:    conv(32, 1x1),
        features_5_conv_3:    batchnorm,
        features_5_add:       add(features_4_conv_3),
        // features.6: 32→32, expand 6, stride 1 (28×28), residual
        features_6_conv_0_0:  conv(192, 1x1),
        features_6_conv_0_1:  batchnorm,
        features_6_conv_0_2:  relu6,
        features_6_conv_1_0:  conv(192, 3x3, pad 1, groups 192),
        features_6_conv_1_1:  batchnorm,
        features_6_conv_1_2:  relu6,
        features_6_conv_2:    conv(32, 1x1),
        features_6_conv_3:    batchnorm,
        features_6_add:       add(features_5_add),
        // features.7: 32→64, expand 6, stride 2 (14×14)
        features_7_conv_0_0:  conv(192, 1x1),
        features_7_conv_0_1:  batchnorm,
        features_7_conv_0_2:  relu6,
        features_7_conv_1_0:  conv(192, 3x3, stride 2, pad 1, groups 192),
        features_7_conv_1_1:  batchnorm,
        features_7_conv_1_2:  relu6,
        features_7_conv_2:    conv(64, 1x1),
        features_7_conv_3:    batchnorm,
        // features.8: 64→64, expand 6, stride 1 (14×14), residual
        features_8_conv_0_0:  conv(384, 1x1),
        features_8_conv_0_1:  batchnorm,
        features_8_conv_0_2:  relu6,
        features_8_conv_1_0:  conv(384, 3x3, pad 1, groups 384),
        features_8_conv_1_1:  batchnorm,
        features_8_conv_1_2:  relu6,
        features_8_conv_2:    conv(64, 1x1),
        features_8_conv_3:    batchnorm,
        features_8_add:       add(features_7_conv_3),
        // features.9: 64→64, expand 6, stride 1 (14×14), residual
        features_9_conv_0_0:  conv(384, 1x1),
        features_9_conv_0_1:  batchnorm,
        features_9_conv_0_2:  relu6,
        features_9_conv_1_0:  conv(384, 3x3, pad 1, groups 384),
        features_9_conv_1_1:  batchnorm,
        features_9_conv_1_2:  relu6,
        features_9_conv_2:    conv(64, 1x1),
        features_9_conv_3:    batchnorm,
        features_9_add:       add(features_8_add),
        // features.10: 64→64, expand 6, stride 1 (14×14), residual
        features_10_conv_0_0: conv(384, 1x1),
        features_10_conv_0_1: batchnorm,
        features_10_conv_0_2: relu6,
        features_10_conv_1_0: conv(384, 3x3, pad 1, groups 384),
        features_10_conv_1_1: batchnorm,
        features_10_conv_1_2: relu6,
        features_10_conv_2:   conv(64, 1x1),
        features_10_conv_3:   batchnorm,
        features_10_add:      add(features_9_add),
        // features.11: 64→96, expand 6, stride 1 (14×14)
        features_11_conv_0_0: conv(384, 1x1),
        features_11_conv_0_1: batchnorm,
        features_11_conv_0_2: relu6,
        features_11_conv_1_0: conv(384, 3x3, pad 1, groups 384),
        features_11_conv_1_1: batchnorm,
        features_11_conv_1_2: relu6,
        features_11_conv_2:   conv(96, 1x1),
        features_11_conv_3:   batchnorm,
        // features.12: 96→96, expand 6, stride 1 (14×14), residual
        features_12_conv_0_0: conv(576, 1x1),
        features_12_conv_0_1: batchnorm,
        features_12_conv_0_2: relu6,
        features_12_conv_1_0: conv(576, 3x3, pad 1, groups 576),
        features_12_conv_1_1: batchnorm,
        features_12_conv_1_2: relu6,
        features_12_conv_2:   conv(96, 1x1),
        features_12_conv_3:   batchnorm,
        features_12_add:      add(features_11_conv_3),
        // features.13: 96→96, expand 6, stride 1 (14×14), residual
        features_13_conv_0_0: conv(576, 1x1),
        features_13_conv_0_1: batchnorm,
        features_13_conv_0_2: relu6,
        features_13_conv_1_0: conv(576, 3x3, pad 1, groups 576),
        features_13_conv_1_1: batchnorm,
        features_13_conv_1_2: relu6,
        features_13_conv_2:   conv(96, 1x1),
        features_13_conv_3:   batchnorm,
        features_13_add:      add(features_12_add),
        // features.14: 96→160, expand 6, stride 2 (7×7)
        features_14_conv_0_0: conv(576, 1x1),
        features_14_conv_0_1: batchnorm,
        features_14_conv_0_2: relu6,
        features_14_conv_1_0: conv(576, 3x3, stride 2, pad 1, groups 576),
        features_14_conv_1_1: batchnorm,
        features_14_conv_1_2: relu6,
        features_14_conv_2:   conv(160, 1x1),
        features_14_conv_3:   batchnorm,
        // features.15: 160→160, expand 6, stride 1 (7×7), residual
        features_15_conv_0_0: conv(960, 1x1),
        features_15_conv_0_1: batchnorm,
        features_15_conv_0_2: relu6,
        features_15_conv_1_0: conv(960, 3x3, pad 1, groups 960),
        features_15_conv_1_1: batchnorm,
        features_15_conv_1_2: relu6,
        features_15_conv_2:   conv(160, 1x1),
        features_15_conv_3:   batchnorm,
        features_15_add:      add(features_14_conv_3),
        // features.16: 160→160, expand 6, stride 1 (7×7), residual
        features_16_conv_0_0: conv(960, 1x1),
        features_16_conv_0_1: batchnorm,
        features_16_conv_0_2: relu6,
        features_16_conv_1_0: conv(960, 3x3, pad 1, groups 960),
        features_16_conv_1_1: batchnorm,
        features_16_conv_1_2: relu6,
        features_16_conv_2:   conv(160, 1x1),
        features_16_conv_3:   batchnorm,
        features_16_add:      add(features_15_add),
        // features.17: 160→320, expand 6, stride 1 (7×7)
        features_17_conv_0_0: conv(960, 1x1),
        features_17_conv_0_1: batchnorm,
        features_17_conv_0_2: relu6,
        features_17_conv_1_0: conv(960, 3x3, pad 1, groups 960),
        features_17_conv_1_1: batchnorm,
        features_17_conv_1_2: relu6,
        features_17_conv_2:   conv(320, 1x1),
        features_17_conv_3:   batchnorm,
        // features.18: conv 320→1280 1x1, bn, ReLU6
        features_18_0:        conv(1280, 1x1),
        features_18_1:        batchnorm,
        features_18_2:        relu6,
        // adaptive_avg_pool2d (functional in torchvision); classifier.0 is Dropout
        gap:                  gap,
        classifier_1:         fc(1000),
    }
}
