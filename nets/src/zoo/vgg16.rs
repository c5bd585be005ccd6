//! VGG16 (Simonyan & Zisserman), as torchvision builds it: 13 convolutions with ReLU,
//! 5 max pools, 3 fully connected layers — the paper's 21 layers. Layer names are
//! torchvision's module paths with `_` for `.` (`features_0` is `features.0`), so its
//! `state_dict` loads by name.

use taopipe_dsl::{DslError, NetSpec, net};

/// VGG16 at 224×224×3.
pub fn vgg16() -> Result<NetSpec, DslError> {
    net! { vgg16 [3, 224, 224] =>
        features_0:   conv(64, 3x3, pad 1) relu,
        features_2:   conv(64, 3x3, pad 1) relu,
        features_4:   maxpool(2x2, stride 2),
        features_5:   conv(128, 3x3, pad 1) relu,
        features_7:   conv(128, 3x3, pad 1) relu,
        features_9:   maxpool(2x2, stride 2),
        features_10:  conv(256, 3x3, pad 1) relu,
        features_12:  conv(256, 3x3, pad 1) relu,
        features_14:  conv(256, 3x3, pad 1) relu,
        features_16:  maxpool(2x2, stride 2),
        features_17:  conv(512, 3x3, pad 1) relu,
        features_19:  conv(512, 3x3, pad 1) relu,
        features_21:  conv(512, 3x3, pad 1) relu,
        features_23:  maxpool(2x2, stride 2),
        features_24:  conv(512, 3x3, pad 1) relu,
        features_26:  conv(512, 3x3, pad 1) relu,
        features_28:  conv(512, 3x3, pad 1) relu,
        features_30:  maxpool(2x2, stride 2),
        classifier_0: fc(4096) relu,
        classifier_3: fc(4096) relu,
        classifier_6: fc(1000),
    }
}
