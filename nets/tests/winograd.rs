//! Winograd against the direct path on whole nets: VGG16, ResNet50 and AlexNet with
//! He-initialised random weights (torchvision's scheme) give the same top-5 classes, and
//! outputs within the documented error bound, with every 3×3 (and AlexNet's 5×5)
//! convolution on Winograd or on the direct path.

use taopipe_nets::{BuildOptions, ConvAlgo, Model, RandomWeights, zoo};
use taopipe_runtime::{Place, Runtime};

fn top5(v: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
    idx.truncate(5);
    idx
}

/// A deterministic input in [-1, 1).
fn input(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 2_654_435_761) % 2000) as f32 / 1000.0 - 1.0)
        .collect()
}

fn compare(net: &str) {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let weights = RandomWeights { seed: 7 };
    let spec = zoo::by_name(net).expect("a zoo net").expect("builds");
    let direct = BuildOptions {
        conv: Some(ConvAlgo::Direct),
        ..BuildOptions::default()
    };
    let fast = Model::build(spec.clone(), &weights).expect("model");
    let slow = Model::build_with(spec, &weights, &direct).expect("direct model");
    let x = input(fast.input_len());
    let a = fast
        .forward(&rt, x.clone(), Place::new(0, 2))
        .expect("winograd run");
    let b = slow.forward(&rt, x, Place::new(0, 2)).expect("direct run");
    assert_eq!(top5(&a), top5(&b), "{net}: top-5 classes differ");
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    println!(
        "{net}: max |winograd − direct| = {:.2e} of max |output| {scale:.3e}",
        worst
    );
    assert!(worst <= 1e-3 * scale, "{net}: {worst} against {scale}");
}

#[test]
fn vgg16_top5_is_the_direct_paths() {
    compare("vgg16");
}

#[test]
fn resnet50_top5_is_the_direct_paths() {
    compare("resnet50");
}

#[test]
fn alexnet_top5_is_the_direct_paths() {
    compare("alexnet");
}
