//! MobileNet (V1, Howard et al. 2017, width 1.0, 224×224×3), which torchvision does not
//! have: the paper's Table 1 — a 3×3/2 convolution to 32 channels, 13 depthwise separable
//! blocks (a 3×3 depthwise convolution, then a 1×1 pointwise one), global average pooling
//! and the fully connected classifier. Every convolution has no bias and is followed by
//! batchnorm and ReLU. The depthwise convolutions of stride 2 are those of blocks 2, 4, 6
//! and 12, which produce 128×56×56, 256×28×28, 512×14×14 and 1024×7×7 (the paper's table
//! also lists the 13th as "s2", but its output stays 7×7, so it is stride 1, as in every
//! implementation).
//!
//! # Names
//! With no torchvision module to copy, the names are those a `torch.nn.Sequential` of
//! `Sequential`s in the style of torchvision's `mobilenet_v2` would have, with `_` for
//! `.`: `features_0_0` (the stem conv), `features_0_1` (bn), `features_0_2` (ReLU); for
//! block i = 1..=13, `features_i_0` (depthwise conv), `features_i_1` (bn), `features_i_2`
//! (ReLU), `features_i_3` (pointwise conv), `features_i_4` (bn), `features_i_5` (ReLU);
//! then `gap` and `fc`. A `state_dict` saved from such a module (`features.3.0.weight`,
//! …, `fc.weight`) loads by name.
//!
//! # Units
//! 29 pipeline units: the stem, 2 for each block (depthwise, pointwise), `gap` and `fc`.
//! Pipe-it's Table I counts MobileNet as 28 "major layers" (14 conv + 13 depthwise + 1
//! FC): the same layers without `gap`, which is a unit of its own here.
//!
//! # Cost
//! 568,740,352 multiply-adds (the paper: 569 M), so 1.14 GFLOP a frame; 4,231,976
//! parameters (the paper: 4.2 M).

use taopipe_dsl::{DslError, NetSpec, net};

/// MobileNet (V1) at 224×224×3.
pub fn mobilenet_v1() -> Result<NetSpec, DslError> {
    net! { mobilenet_v1 [3, 224, 224] =>
        // features.0: conv 3→32 3x3/2, bn, ReLU (112×112)
        features_0_0:  conv(32, 3x3, stride 2, pad 1),
        features_0_1:  batchnorm,
        features_0_2:  relu,
        // features.1: depthwise 32 3x3/1, pointwise 32→64 (112×112)
        features_1_0:  conv(32, 3x3, pad 1, groups 32),
        features_1_1:  batchnorm,
        features_1_2:  relu,
        features_1_3:  conv(64, 1x1),
        features_1_4:  batchnorm,
        features_1_5:  relu,
        // features.2: depthwise 64 3x3/2, pointwise 64→128 (56×56)
        features_2_0:  conv(64, 3x3, stride 2, pad 1, groups 64),
        features_2_1:  batchnorm,
        features_2_2:  relu,
        features_2_3:  conv(128, 1x1),
        features_2_4:  batchnorm,
        features_2_5:  relu,
        // features.3: depthwise 128 3x3/1, pointwise 128→128 (56×56)
        features_3_0:  conv(128, 3x3, pad 1, groups 128),
        features_3_1:  batchnorm,
        features_3_2:  relu,
        features_3_3:  conv(128, 1x1),
        features_3_4:  batchnorm,
        features_3_5:  relu,
        // features.4: depthwise 128 3x3/2, pointwise 128→256 (28×28)
        features_4_0:  conv(128, 3x3, stride 2, pad 1, groups 128),
        features_4_1:  batchnorm,
        features_4_2:  relu,
        features_4_3:  conv(256, 1x1),
        features_4_4:  batchnorm,
        features_4_5:  relu,
        // features.5: depthwise 256 3x3/1, pointwise 256→256 (28×28)
        features_5_0:  conv(256, 3x3, pad 1, groups 256),
        features_5_1:  batchnorm,
        features_5_2:  relu,
        features_5_3:  conv(256, 1x1),
        features_5_4:  batchnorm,
        features_5_5:  relu,
        // features.6: depthwise 256 3x3/2, pointwise 256→512 (14×14)
        features_6_0:  conv(256, 3x3, stride 2, pad 1, groups 256),
        features_6_1:  batchnorm,
        features_6_2:  relu,
        features_6_3:  conv(512, 1x1),
        features_6_4:  batchnorm,
        features_6_5:  relu,
        // features.7: depthwise 512 3x3/1, pointwise 512→512 (14×14)
        features_7_0:  conv(512, 3x3, pad 1, groups 512),
        features_7_1:  batchnorm,
        features_7_2:  relu,
        features_7_3:  conv(512, 1x1),
        features_7_4:  batchnorm,
        features_7_5:  relu,
        // features.8: depthwise 512 3x3/1, pointwise 512→512 (14×14)
        features_8_0:  conv(512, 3x3, pad 1, groups 512),
        features_8_1:  batchnorm,
        features_8_2:  relu,
        features_8_3:  conv(512, 1x1),
        features_8_4:  batchnorm,
        features_8_5:  relu,
        // features.9: depthwise 512 3x3/1, pointwise 512→512 (14×14)
        features_9_0:  conv(512, 3x3, pad 1, groups 512),
        features_9_1:  batchnorm,
        features_9_2:  relu,
        features_9_3:  conv(512, 1x1),
        features_9_4:  batchnorm,
        features_9_5:  relu,
        // features.10: depthwise 512 3x3/1, pointwise 512→512 (14×14)
        features_10_0: conv(512, 3x3, pad 1, groups 512),
        features_10_1: batchnorm,
        features_10_2: relu,
        features_10_3: conv(512, 1x1),
        features_10_4: batchnorm,
        features_10_5: relu,
        // features.11: depthwise 512 3x3/1, pointwise 512→512 (14×14)
        features_11_0: conv(512, 3x3, pad 1, groups 512),
        features_11_1: batchnorm,
        features_11_2: relu,
        features_11_3: conv(512, 1x1),
        features_11_4: batchnorm,
        features_11_5: relu,
        // features.12: depthwise 512 3x3/2, pointwise 512→1024 (7×7)
        features_12_0: conv(512, 3x3, stride 2, pad 1, groups 512),
        features_12_1: batchnorm,
        features_12_2: relu,
        features_12_3: conv(1024, 1x1),
        features_12_4: batchnorm,
        features_12_5: relu,
        // features.13: depthwise 1024 3x3/1, pointwise 1024→1024 (7×7)
        features_13_0: conv(1024, 3x3, pad 1, groups 1024),
        features_13_1: batchnorm,
        features_13_2: relu,
        features_13_3: conv(1024, 1x1),
        features_13_4: batchnorm,
        features_13_5: relu,
        gap:           gap,
        fc:            fc(1000),
    }
}
