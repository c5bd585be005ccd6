//! The model zoo, declared with `net!`: VGG16, AlexNet and ResNet50 at 224×224×3 with
//! torchvision's layer names, and the paper's synthetic nets (re-exported from the DSL).

mod alexnet;
mod resnet50;
mod vgg16;

pub use alexnet::alexnet;
pub use resnet50::resnet50;
pub use taopipe_dsl::{random_net, synth1, synth2, synth3};
pub use vgg16::vgg16;

use taopipe_dsl::{DslError, NetSpec};

/// Nets by name, for command-line tools.
pub const NAMES: [&str; 6] = ["vgg16", "alexnet", "resnet50", "synth1", "synth2", "synth3"];

/// The zoo net called `name` (one of [`NAMES`]), `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Result<NetSpec, DslError>> {
    Some(match name {
        "vgg16" => vgg16(),
        "alexnet" => alexnet(),
        "resnet50" => resnet50(),
        "synth1" => synth1(),
        "synth2" => synth2(),
        "synth3" => synth3(),
        _ => return None,
    })
}
