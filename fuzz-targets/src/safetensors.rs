//! The safetensors loader, checked against the tensors nets ask for.

use std::path::Path;

use taopipe_dsl::{NetSpec, Shape};
use taopipe_nets::{Init, Model, SafetensorsFile, Weights, zoo};

use crate::check::message;

/// The parameter names a layer reads (torchvision's).
const PARAMS: [&str; 4] = ["weight", "bias", "running_mean", "running_var"];

/// The file's name in errors.
const FILE: &str = "fuzz.safetensors";

/// A net small enough that a complete weights file for it is a seed of a few hundred
/// bytes, with every kind of tensor the loader hands out: a convolution without bias
/// (a batchnorm follows it) and with one, a batchnorm's four vectors, a linear layer's
/// weight and bias. Names are torchvision's (`features_0` reads `features.0.weight`).
/// `fuzz/seeds.py` writes a valid file for it.
///
/// ```
/// let net = taopipe_fuzz_targets::tiny_net();
/// assert_eq!(net.output(), taopipe_dsl::Shape::new(2, 1, 1));
/// ```
pub fn tiny_net() -> NetSpec {
    NetSpec::builder("tiny", Shape::new(3, 4, 4))
        .conv("features_0", 4, 3, 1, 1)
        .batch_norm("features_1")
        .relu("features_2")
        .conv_relu("features_3", 2, 1, 1, 0)
        .max_pool("features_5", 2, 2)
        .fc("classifier", 2)
        .build()
        .expect("the tiny net is valid")
}

/// Parses the bytes as a safetensors file ([`SafetensorsFile::from_bytes`]), then builds
/// [`tiny_net`] and AlexNet from it ([`Model::build`]). A parsed file lists its tensor
/// names sorted and once each; asking for any of them by a shape no tensor has is an error;
/// a model built from it is the net asked for; what the builds read is a parameter of a
/// layer of those nets, and nothing else. Every error has a short message.
pub fn safetensors(data: &[u8]) {
    let file = match SafetensorsFile::from_bytes(Path::new(FILE), data.to_vec()) {
        Ok(file) => file,
        Err(error) => {
            message("SafetensorsFile::from_bytes", &error);
            return;
        }
    };
    let names = file.names();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "names not sorted once: {names:?}"
    );
    let nets = [tiny_net(), zoo::alexnet().expect("AlexNet is valid")];
    for net in &nets {
        match Model::build(net.clone(), &file) {
            Ok(model) => assert_eq!(model.spec(), net),
            Err(error) => {
                message("Model::build", &error);
            }
        }
    }
    // What was read belongs to a layer of one of the nets: `LAYER.PARAM`, torchvision's.
    let unused = file.unused();
    for used in names.iter().filter(|n| !unused.contains(n)) {
        let (layer, param) = used.rsplit_once('.').unwrap_or_default();
        assert!(
            PARAMS.contains(&param),
            "`{used}` read, not a parameter name"
        );
        assert!(
            nets.iter()
                .flat_map(|net| net.layers())
                .any(|l| l.name().replace('_', ".") == layer),
            "`{used}` read, no layer of the nets has that name"
        );
    }
    for name in names {
        let no_shape = [usize::MAX, 0];
        let error = file
            .tensor(name, &no_shape, Init::Constant { value: 0.0 })
            .expect_err("no tensor has this shape");
        message("SafetensorsFile::tensor", &error);
    }
}
