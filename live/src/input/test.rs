use super::*;

fn temp(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    (dir, path)
}

#[test]
fn a_tensor_file_must_hold_exactly_the_input() {
    let shape = Shape::new(2, 2, 3);
    let (_dir, path) = temp("x.f32");
    let values: Vec<f32> = (0..12).map(|i| i as f32 - 5.5).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, &bytes).expect("write");
    assert_eq!(read_frame(&path, shape).expect("read"), values);
    std::fs::write(&path, &bytes[..40]).expect("write");
    let err = read_tensor(&path, shape).expect_err("short").to_string();
    assert!(err.contains("48 bytes") && err.contains("has 40"), "{err}");
    std::fs::write(&path, [bytes.as_slice(), &[0; 4]].concat()).expect("write");
    let err = read_tensor(&path, shape).expect_err("long").to_string();
    assert!(err.contains("has more"), "{err}");
    // An endless file is refused without being read whole.
    let err = read_tensor(Path::new("/dev/zero"), shape)
        .expect_err("endless")
        .to_string();
    assert!(err.contains("has more"), "{err}");
}

#[test]
fn an_image_is_resized_cropped_and_normalised_as_torchvision_does() {
    // 448 × 224: black on the left half, white on the right. Resized to 512 × 256, its
    // centre 224 × 224 crop is columns 144..368: black up to 112, white from there.
    let img = image::RgbImage::from_fn(448, 224, |x, _| {
        if x < 224 {
            image::Rgb([0, 0, 0])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    let (_dir, path) = temp("half.png");
    img.save(&path).expect("save png");
    let x = read_frame(&path, Shape::new(3, 224, 224)).expect("read image");
    assert_eq!(x.len(), 3 * 224 * 224);
    for c in 0..3 {
        let at = |y: usize, xx: usize| x[c * 224 * 224 + y * 224 + xx];
        let black = -IMAGENET_MEAN[c] / IMAGENET_STD[c];
        let white = (1.0 - IMAGENET_MEAN[c]) / IMAGENET_STD[c];
        for y in [0, 100, 223] {
            assert!(
                (at(y, 10) - black).abs() < 1e-6,
                "channel {c} row {y}: {}",
                at(y, 10)
            );
            assert!((at(y, 100) - black).abs() < 1e-6);
            assert!((at(y, 124) - white).abs() < 1e-6);
            assert!((at(y, 223) - white).abs() < 1e-6);
        }
    }
}

#[test]
fn bad_frames_are_errors_naming_the_file() {
    let (_dir, path) = temp("broken.jpg");
    std::fs::write(&path, b"not a jpeg").expect("write");
    let err = read_frame(&path, Shape::new(3, 8, 8)).expect_err("broken");
    assert!(matches!(err, InputError::Image { .. }), "{err}");
    assert!(err.to_string().contains("broken.jpg"));
    let err = read_image(&path, Shape::new(1, 8, 8)).expect_err("one channel");
    assert!(err.to_string().contains("takes 1x8x8"), "{err}");
    assert_eq!(Frame::of(Path::new("a/b.JPG")), Frame::Image);
    assert_eq!(Frame::of(Path::new("x.f32")), Frame::Tensor);
    assert_eq!(Frame::of(Path::new("frame")), Frame::Tensor);
    let err = read_frame(Path::new("/no/such/file.f32"), Shape::new(3, 8, 8)).expect_err("io");
    assert!(matches!(err, InputError::Io { .. }), "{err}");
}
