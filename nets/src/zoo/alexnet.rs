//! AlexNet, as torchvision builds it: 5 convolutions, 3 max pools, 3 fully connected
//! layers — the paper's 11 layers. At 224×224 the adaptive average pool before the
//! classifier sees 6×6 already and is the identity, so it is not declared. Names are
//! torchvision's module paths with `_` for `.`.

use taopipe_dsl::{DslError, NetSpec, net};

/// AlexNet at 224×224×3.
pub fn alexnet() -> Result<NetSpec, DslError> {
    net! { alexnet [3, 224, 224] =>
        features_0:   conv(64, 11x11, stride 4, pad 2) relu,
        features_2:   maxpool(3x3, stride 2),
        features_3:   conv(192, 5x5, pad 2) relu,
        features_5:   maxpool(3x3, stride 2),
        features_6:   conv(384, 3x3, pad 1) relu,
        features_8:   conv(256, 3x3, pad 1) relu,
        features_10:  conv(256, 3x3, pad 1) relu,
        features_12:  maxpool(3x3, stride 2),
        classifier_1: fc(4096) relu,
        classifier_4: fc(4096) relu,
        classifier_6: fc(1000),
    }
}
