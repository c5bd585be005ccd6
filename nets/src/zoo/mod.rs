//! The model zoo, declared with `net!`: VGG16, AlexNet, ResNet50, MobileNetV2, SqueezeNet
//! 1.1 and GoogLeNet at 224×224×3 with torchvision's layer names, MobileNet (V1) at
//! 224×224×3 and Tiny YOLOv2 (VOC) at 416×416×3 with names in the same style, and the
//! paper's synthetic nets (re-exported from the DSL).
//!
//! Each net's module doc gives its source, its naming rule, its pipeline units against
//! the "major layers" Pipe-it's Table I counts, and its multiply-adds.

mod alexnet;
mod googlenet;
mod mobilenet_v1;
mod mobilenet_v2;
mod resnet50;
mod squeezenet1_1;
mod vgg16;
mod yolov2_tiny;

#[cfg(test)]
mod test;

pub use alexnet::alexnet;
pub use googlenet::googlenet;
pub use mobilenet_v1::mobilenet_v1;
pub use mobilenet_v2::mobilenet_v2;
pub use resnet50::resnet50;
pub use squeezenet1_1::squeezenet1_1;
pub use taopipe_dsl::{random_net, synth1, synth2, synth3};
pub use vgg16::vgg16;
pub use yolov2_tiny::yolov2_tiny;

use taopipe_dsl::{DslError, NetSpec};

/// Nets by name, for command-line tools.
pub const NAMES: [&str; 11] = [
    "vgg16",
    "alexnet",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v1",
    "squeezenet1_1",
    "googlenet",
    "yolov2_tiny",
    "synth1",
    "synth2",
    "synth3",
];

/// The zoo net called `name` (one of [`NAMES`]), `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Result<NetSpec, DslError>> {
    Some(match name {
        "vgg16" => vgg16(),
        "alexnet" => alexnet(),
        "resnet50" => resnet50(),
        "mobilenet_v2" => mobilenet_v2(),
        "mobilenet_v1" => mobilenet_v1(),
        "squeezenet1_1" => squeezenet1_1(),
        "googlenet" => googlenet(),
        "yolov2_tiny" => yolov2_tiny(),
        "synth1" => synth1(),
        "synth2" => synth2(),
        "synth3" => synth3(),
        _ => return None,
    })
}
