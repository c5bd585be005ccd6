//! Tiny YOLOv2 for VOC (Redmon & Farhadi 2017), as Darknet's `yolov2-tiny-voc.cfg`
//! declares it, at 416×416×3: six 3×3 convolutions (16, 32, … 512 channels), each
//! followed by batchnorm, a leaky ReLU of slope 0.1 and a 2×2 max pool — of stride 2 for
//! the first five, of stride 1 for the sixth, which Darknet pads by one row and column at
//! the end so the map stays 13×13 (`maxpool(2x2, stride 1, pad_end 1)`, ONNX's pads
//! `[0, 0, 1, 1]`) — then two 3×3 convolutions to 1024 channels with batchnorm and leaky
//! ReLU, and a 1×1 convolution to 125 channels with a bias and no activation: the
//! region layer's input, 5 anchors × (20 classes + 5) at each of the 13×13 cells. The
//! region layer itself (the box decoding) is not a layer here; the net ends at its input,
//! 125×13×13. Convolutions followed by batchnorm have no bias, as in Darknet.
//!
//! # Names
//! There is no torchvision version, so the layers are numbered in the order of the
//! `.cfg` file: `conv1`, `bn1`, `leaky1`, `pool1`, …, `conv6`, `bn6`, `leaky6`, `pool6`,
//! `conv7`, `bn7`, `leaky7`, `conv8`, `bn8`, `leaky8`, `conv9`; the parameters load as
//! `conv1.weight`, `bn1.weight`, `bn1.bias`, `bn1.running_mean`, `bn1.running_var`, …,
//! `conv9.weight`, `conv9.bias` (the peer benchmark's `bench/peers/models.py` writes them
//! so). Darknet's batchnorm adds its ε (1e-6) to the standard deviation, not to the
//! variance; these layers use the usual `sqrt(var + ε)` with PyTorch's ε = 1e-5, as
//! converted models do.
//!
//! # Units
//! 15 pipeline units: the 9 convolutions (each with its batchnorm and leaky ReLU) and the
//! 6 pools. Pipe-it does not run this net; counted its way (convolutions only) it has 9
//! major layers.
//!
//! # Cost
//! 3,485,520,896 multiply-adds, so 6.97 GFLOP a frame (Darknet prints 6.97 BFLOPs for
//! this `.cfg`); 15,861,773 parameters (batchnorm's scale and shift counted, its running
//! statistics not).

use taopipe_dsl::{DslError, NetSpec, net};

/// Tiny YOLOv2 (VOC) at 416×416×3.
pub fn yolov2_tiny() -> Result<NetSpec, DslError> {
    net! { yolov2_tiny [3, 416, 416] =>
        conv1:  conv(16, 3x3, pad 1),
        bn1:    batchnorm,
        leaky1: leakyrelu(0.1),
        pool1:  maxpool(2x2, stride 2),
        conv2:  conv(32, 3x3, pad 1),
        bn2:    batchnorm,
        leaky2: leakyrelu(0.1),
        pool2:  maxpool(2x2, stride 2),
        conv3:  conv(64, 3x3, pad 1),
        bn3:    batchnorm,
        leaky3: leakyrelu(0.1),
        pool3:  maxpool(2x2, stride 2),
        conv4:  conv(128, 3x3, pad 1),
        bn4:    batchnorm,
        leaky4: leakyrelu(0.1),
        pool4:  maxpool(2x2, stride 2),
        conv5:  conv(256, 3x3, pad 1),
        bn5:    batchnorm,
        leaky5: leakyrelu(0.1),
        pool5:  maxpool(2x2, stride 2),
        conv6:  conv(512, 3x3, pad 1),
        bn6:    batchnorm,
        leaky6: leakyrelu(0.1),
        pool6:  maxpool(2x2, stride 1, pad_end 1),
        conv7:  conv(1024, 3x3, pad 1),
        bn7:    batchnorm,
        leaky7: leakyrelu(0.1),
        conv8:  conv(1024, 3x3, pad 1),
        bn8:    batchnorm,
        leaky8: leakyrelu(0.1),
        conv9:  conv(125, 1x1),
    }
}
