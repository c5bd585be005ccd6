use proptest::prelude::*;

use super::*;
use crate::test_util::{assert_bit_identical, bits, proptest_config, random_vec, run_as_gang};

proptest! {
    #![proptest_config(proptest_config(64))]

    /// The output is the inputs one after another, bit for bit, whichever ranks copy it.
    #[test]
    fn concat_joins_the_inputs_in_order(
        channels in prop::collection::vec(1usize..=40, 1..=5),
        h in 1usize..=9, w in 1usize..=9, seed in 0u64..10_000,
    ) {
        let shapes: Vec<Shape> = channels.iter().map(|&c| Shape::new(c, h, w)).collect();
        let xs: Vec<Vec<f32>> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| random_vec(s.len(), seed + i as u64))
            .collect();
        let views: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
        let cat = Concat::new(&shapes).unwrap();
        prop_assert_eq!(cat.out_shape(), Shape::new(channels.iter().sum(), h, w));
        let want = xs.concat();
        prop_assert_eq!(bits(&cat.forward(&views, &mut Scratch::new())), bits(&want));
        for width in [2, 3, 7] {
            prop_assert_eq!(bits(&run_as_gang(&cat, &views, width)), bits(&want));
        }
        assert_bit_identical(&cat, &views);
    }
}

#[test]
fn bad_concats_are_errors_naming_the_shapes() {
    let err = Concat::new(&[]).unwrap_err().to_string();
    assert!(err.contains("no inputs"), "{err}");
    let err = Concat::new(&[Shape::new(2, 4, 4), Shape::new(3, 4, 5)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("3×4×5") && err.contains("2×4×4"), "{err}");
    let many = vec![Shape::new(1, 2, 2); MAX_CONCAT_INPUTS + 1];
    let err = Concat::new(&many).unwrap_err().to_string();
    assert!(err.contains("17 inputs"), "{err}");
}
