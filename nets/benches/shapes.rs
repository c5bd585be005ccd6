//! Named shape tables, batch 1, 224×224 input: the conv layers of VGG16 and AlexNet and
//! the distinct conv shapes of ResNet50 (torchvision v1.5: the stride sits on the 3×3
//! conv), the FC layers of VGG16 and AlexNet, the max pools of all three, and the
//! depthwise convs of MobileNet V1 and V2; and the benches' pseudo-random values.

use taopipe_nets::{Activation, Conv2dParams, DepthwiseParams, PoolParams, Shape};

/// A deterministic pseudo-random value in `[-1, 1]` for index `i`: the benches' weights
/// and inputs.
pub(crate) fn value(i: usize) -> f32 {
    ((i.wrapping_mul(2_654_435_761) >> 7) % 2001) as f32 / 1000.0 - 1.0
}

/// A named conv layer.
pub(crate) struct ConvLayer {
    pub(crate) name: &'static str,
    pub(crate) params: Conv2dParams,
    pub(crate) input: Shape,
}

const fn layer(
    name: &'static str,
    c: usize,
    k: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
    hw: usize,
) -> ConvLayer {
    ConvLayer {
        name,
        params: Conv2dParams::new(c, k, kernel, stride, pad).with_relu(true),
        input: Shape::new(c, hw, hw),
    }
}

/// The 13 conv layers of VGG16 (3×3, stride 1, padding 1, ReLU).
pub(crate) const VGG16: [ConvLayer; 13] = [
    layer("vgg.conv1_1", 3, 64, 3, 1, 1, 224),
    layer("vgg.conv1_2", 64, 64, 3, 1, 1, 224),
    layer("vgg.conv2_1", 64, 128, 3, 1, 1, 112),
    layer("vgg.conv2_2", 128, 128, 3, 1, 1, 112),
    layer("vgg.conv3_1", 128, 256, 3, 1, 1, 56),
    layer("vgg.conv3_2", 256, 256, 3, 1, 1, 56),
    layer("vgg.conv3_3", 256, 256, 3, 1, 1, 56),
    layer("vgg.conv4_1", 256, 512, 3, 1, 1, 28),
    layer("vgg.conv4_2", 512, 512, 3, 1, 1, 28),
    layer("vgg.conv4_3", 512, 512, 3, 1, 1, 28),
    layer("vgg.conv5_1", 512, 512, 3, 1, 1, 14),
    layer("vgg.conv5_2", 512, 512, 3, 1, 1, 14),
    layer("vgg.conv5_3", 512, 512, 3, 1, 1, 14),
];

/// The 23 distinct conv shapes of ResNet50 (BN folded, so every conv has a bias).
pub(crate) const RESNET50: [ConvLayer; 23] = [
    layer("rn.conv1", 3, 64, 7, 2, 3, 224),
    layer("rn.l1.c1.first", 64, 64, 1, 1, 0, 56),
    layer("rn.l1.c1", 256, 64, 1, 1, 0, 56),
    layer("rn.l1.c2", 64, 64, 3, 1, 1, 56),
    layer("rn.l1.c3+ds", 64, 256, 1, 1, 0, 56),
    layer("rn.l2.c1.first", 256, 128, 1, 1, 0, 56),
    layer("rn.l2.c2.s2", 128, 128, 3, 2, 1, 56),
    layer("rn.l2.ds.s2", 256, 512, 1, 2, 0, 56),
    layer("rn.l2.c1", 512, 128, 1, 1, 0, 28),
    layer("rn.l2.c2", 128, 128, 3, 1, 1, 28),
    layer("rn.l2.c3", 128, 512, 1, 1, 0, 28),
    layer("rn.l3.c1.first", 512, 256, 1, 1, 0, 28),
    layer("rn.l3.c2.s2", 256, 256, 3, 2, 1, 28),
    layer("rn.l3.ds.s2", 512, 1024, 1, 2, 0, 28),
    layer("rn.l3.c1", 1024, 256, 1, 1, 0, 14),
    layer("rn.l3.c2", 256, 256, 3, 1, 1, 14),
    layer("rn.l3.c3", 256, 1024, 1, 1, 0, 14),
    layer("rn.l4.c1.first", 1024, 512, 1, 1, 0, 14),
    layer("rn.l4.c2.s2", 512, 512, 3, 2, 1, 14),
    layer("rn.l4.ds.s2", 1024, 2048, 1, 2, 0, 14),
    layer("rn.l4.c1", 2048, 512, 1, 1, 0, 7),
    layer("rn.l4.c2", 512, 512, 3, 1, 1, 7),
    layer("rn.l4.c3", 512, 2048, 1, 1, 0, 7),
];

/// The 5 conv layers of AlexNet (torchvision's, ReLU after each).
pub(crate) const ALEXNET: [ConvLayer; 5] = [
    layer("ax.conv1", 3, 64, 11, 4, 2, 224),
    layer("ax.conv2", 64, 192, 5, 1, 2, 27),
    layer("ax.conv3", 192, 384, 3, 1, 1, 13),
    layer("ax.conv4", 384, 256, 3, 1, 1, 13),
    layer("ax.conv5", 256, 256, 3, 1, 1, 13),
];

/// SqueezeNet 1.1's conv shapes that differ from the others' (not in the report's table):
/// its first conv, a squeeze, a 1×1 and the 3×3 expands.
pub(crate) const SQUEEZENET: [ConvLayer; 7] = [
    layer("sq.f0", 3, 64, 3, 2, 0, 224),
    layer("sq.f3s", 64, 16, 1, 1, 0, 55),
    layer("sq.f3e3", 16, 64, 3, 1, 1, 55),
    layer("sq.f6e3", 32, 128, 3, 1, 1, 27),
    layer("sq.f9e3", 48, 192, 3, 1, 1, 13),
    layer("sq.f11e3", 64, 256, 3, 1, 1, 13),
    layer("sq.cls", 512, 1000, 1, 1, 0, 13),
];

/// Every conv layer of the VGG16 and ResNet50 tables (the report's layers).
pub(crate) fn all() -> impl Iterator<Item = &'static ConvLayer> {
    VGG16.iter().chain(RESNET50.iter())
}

/// A named fully connected layer: `inputs` features to `outputs`.
pub(crate) struct FcLayer {
    pub(crate) name: &'static str,
    pub(crate) inputs: usize,
    pub(crate) outputs: usize,
}

/// The fully connected layers of VGG16 and AlexNet (batch 1: matrix-vector products).
pub(crate) const FC: [FcLayer; 6] = [
    FcLayer {
        name: "vgg.fc6",
        inputs: 512 * 7 * 7,
        outputs: 4096,
    },
    FcLayer {
        name: "vgg.fc7",
        inputs: 4096,
        outputs: 4096,
    },
    FcLayer {
        name: "vgg.fc8",
        inputs: 4096,
        outputs: 1000,
    },
    FcLayer {
        name: "alexnet.fc6",
        inputs: 256 * 6 * 6,
        outputs: 4096,
    },
    FcLayer {
        name: "alexnet.fc7",
        inputs: 4096,
        outputs: 4096,
    },
    FcLayer {
        name: "alexnet.fc8",
        inputs: 4096,
        outputs: 1000,
    },
];

/// A named pooling layer.
pub(crate) struct PoolLayer {
    pub(crate) name: &'static str,
    pub(crate) params: PoolParams,
    pub(crate) input: Shape,
}

/// A max pool of `k × k` windows at stride `s`, padding `pad`, over `c` planes of `hw × hw`.
const fn pool(
    name: &'static str,
    k: usize,
    s: usize,
    pad: usize,
    c: usize,
    hw: usize,
) -> PoolLayer {
    PoolLayer {
        name,
        params: PoolParams::max(k, s, pad),
        input: Shape::new(c, hw, hw),
    }
}

/// The max pools of ResNet50 (3×3/2, padded), AlexNet (3×3/2) and VGG16 (2×2/2).
pub(crate) const POOLS: [PoolLayer; 6] = [
    pool("rn.maxpool", 3, 2, 1, 64, 112),
    pool("alexnet.pool1", 3, 2, 0, 64, 55),
    pool("alexnet.pool2", 3, 2, 0, 192, 27),
    pool("alexnet.pool5", 3, 2, 0, 256, 13),
    pool("vgg.pool1", 2, 2, 0, 64, 224),
    pool("vgg.pool3", 2, 2, 0, 256, 56),
];

/// A named depthwise conv layer, and how many a frame of its net runs.
pub(crate) struct DepthwiseLayer {
    pub(crate) name: &'static str,
    pub(crate) params: DepthwiseParams,
    pub(crate) input: Shape,
    pub(crate) per_frame: usize,
}

/// A 3×3 depthwise conv, padding 1, ReLU6, over `c` planes of `hw × hw` (before the
/// stride).
const fn dw(
    name: &'static str,
    c: usize,
    hw: usize,
    stride: usize,
    per_frame: usize,
) -> DepthwiseLayer {
    DepthwiseLayer {
        name,
        params: DepthwiseParams::new(c, 3, stride, 1).with_act(Activation::RELU6),
        input: Shape::new(c, hw, hw),
        per_frame,
    }
}

/// The depthwise conv shapes of MobileNet V2 (torchvision's `features.1` to `.17`) and
/// MobileNet V1 (its 13 separable blocks), all 3×3 with padding 1; named
/// `net.channels x side.stride`, the side before the stride.
pub(crate) const DEPTHWISE: [DepthwiseLayer; 19] = [
    dw("v2.32x112.s1", 32, 112, 1, 1),
    dw("v2.96x112.s2", 96, 112, 2, 1),
    dw("v2.144x56.s1", 144, 56, 1, 1),
    dw("v2.144x56.s2", 144, 56, 2, 1),
    dw("v2.192x28.s1", 192, 28, 1, 2),
    dw("v2.192x28.s2", 192, 28, 2, 1),
    dw("v2.384x14.s1", 384, 14, 1, 4),
    dw("v2.576x14.s1", 576, 14, 1, 2),
    dw("v2.576x14.s2", 576, 14, 2, 1),
    dw("v2.960x7.s1", 960, 7, 1, 3),
    dw("v1.32x112.s1", 32, 112, 1, 1),
    dw("v1.64x112.s2", 64, 112, 2, 1),
    dw("v1.128x56.s1", 128, 56, 1, 1),
    dw("v1.128x56.s2", 128, 56, 2, 1),
    dw("v1.256x28.s1", 256, 28, 1, 1),
    dw("v1.256x28.s2", 256, 28, 2, 1),
    dw("v1.512x14.s1", 512, 14, 1, 5),
    dw("v1.512x14.s2", 512, 14, 2, 1),
    dw("v1.1024x7.s1", 1024, 7, 1, 1),
];
