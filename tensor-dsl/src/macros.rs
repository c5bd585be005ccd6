//! The `net!` macro.

/// Declares a net: `name [C, H, W] => layer, layer, …` → `Result<NetSpec, DslError>`.
///
/// Each layer is `name: kind(args) [relu]`:
///
/// | kind | arguments | example |
/// |---|---|---|
/// | `conv` | `out, k [, stride s] [, pad p]` | `conv1: conv(64, 3x3, pad 1) relu` |
/// | `maxpool` / `avgpool` | `k [, stride s] [, pad p]` (stride defaults to `k`) | `pool1: maxpool(2x2, stride 2)` |
/// | `gap` | — (global average pooling) | `avg: gap` |
/// | `fc` | `out` (flattens implicitly) | `fc6: fc(4096) relu` |
/// | `relu`, `batchnorm`, `flatten`, `softmax` | — | `bn1: batchnorm` |
/// | `add` | `from` (an earlier layer) | `res1: add(pool1)` |
///
/// Sizes are `N` (square) or `NxM` (height × width): `3x3`, `1x7`, `stride 2`, `pad 1`.
/// A trailing `relu` fuses the activation into a `conv` or `fc` (it is not a layer).
///
/// **Compile-time checks.** When the input shape is three integer literals
/// (`[3, 224, 224]`), the macro also expands to an inline `const { … }` block that infers
/// every shape with the crate's `const fn`s; a layer that does not fit (kernel larger than
/// its padded input, residual add of different shapes or of an unknown layer, a zero size,
/// a repeated name) is then a compile error (E0080) naming the net, the layer and the
/// shapes. Like every post-monomorphisation const error it is reported by `cargo build` /
/// `cargo test`, not always by `cargo check`. With an input given as expressions
/// (`name [c, h, w] =>` where any of them is not a literal) the shapes are checked at run
/// time by [`NetSpecBuilder::build`](crate::NetSpecBuilder::build); sizes inside layers
/// are literals in both forms.
///
/// # Examples
///
/// ```
/// use taopipe_dsl::net;
///
/// let net = net! { tiny [3, 32, 32] =>
///     conv1: conv(16, 3x3, pad 1) relu,
///     pool1: maxpool(2x2),
///     conv2: conv(16, 3x3, pad 1) relu,
///     res:   add(pool1),
///     avg:   gap,
///     fc:    fc(10),
/// }?;
/// assert_eq!(net.len(), 6);
/// assert_eq!(net.output().c, 10);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
///
/// With a run-time input size the same declaration is checked by the builder:
///
/// ```
/// use taopipe_dsl::{net, DslError};
///
/// let side = 2; // too small for a 3x3 kernel without padding
/// let err = net! { tiny [3, side, side] =>
///     conv1: conv(16, 3x3) relu,
/// }.unwrap_err();
/// assert!(matches!(err, DslError::KernelTooLarge { ref layer, .. } if layer == "conv1"));
/// ```
///
/// A residual add of mismatched shapes does not compile:
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [3, 8, 8] =>
///     c1: conv(16, 3x3) relu,   // 16x6x6
///     c2: conv(16, 3x3) relu,   // 16x4x4
///     skip: add(c1),            // 16x4x4 + 16x6x6
/// };
/// ```
///
/// Nor does a kernel larger than its input:
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [3, 8, 8] =>
///     pool: maxpool(4x4),        // 3x2x2
///     c1: conv(16, 3x3) relu,    // 3x3 on 2x2
/// };
/// ```
#[macro_export]
macro_rules! net {
    (
        $net:ident [$c:literal, $h:literal, $w:literal] =>
        $( $name:ident : $kind:ident $( ( $($args:tt)* ) )? $($act:ident)? ),+ $(,)?
    ) => {{
        const {
            let net = $crate::__private::ConstNet::<
                { <[()]>::len(&[ $( $crate::__net_unit!($name) ),+ ]) }
            >::new(::core::stringify!($net), $c, $h, $w);
            $(
                let net = net.push(
                    ::core::stringify!($name),
                    $crate::__net_kind!($kind $( ( $($args)* ) )? $($act)?),
                );
            )+
            let _ = net.output();
        };
        $crate::__net_build!($net, ($c, $h, $w); $( $name : $kind $( ( $($args)* ) )? $($act)? ),+)
    }};
    (
        $net:ident [$c:expr, $h:expr, $w:expr] =>
        $( $name:ident : $kind:ident $( ( $($args:tt)* ) )? $($act:ident)? ),+ $(,)?
    ) => {{
        $crate::__net_build!($net, ($c, $h, $w); $( $name : $kind $( ( $($args)* ) )? $($act)? ),+)
    }};
}

/// Run-time half of `net!`: the builder chain.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_build {
    (
        $net:ident, ($c:expr, $h:expr, $w:expr);
        $( $name:ident : $kind:ident $( ( $($args:tt)* ) )? $($act:ident)? ),+
    ) => {{
        let builder = $crate::NetSpec::builder(
            ::core::stringify!($net),
            $crate::Shape::new($c, $h, $w),
        );
        $(
            let builder = builder.layer(
                ::core::stringify!($name),
                $crate::__private::ConstKind::to_kind(
                    const { $crate::__net_kind!($kind $( ( $($args)* ) )? $($act)?) },
                ),
            );
        )+
        builder.build()
    }};
}

/// `()` for each layer, to count them in a `const` expression.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_unit {
    ($x:ident) => {
        ()
    };
}

/// A size argument: present → parsed (`3`, `3x3`), absent → the default.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_dims {
    (; $default:expr) => {
        $default
    };
    ($t:tt; $default:expr) => {
        $crate::__private::dims(::core::stringify!($t))
    };
}

/// One layer's `kind(args) [relu]` → a `ConstKind` expression (usable in `const`).
#[doc(hidden)]
#[macro_export]
macro_rules! __net_kind {
    (conv ($out:literal, $k:tt $(, stride $s:tt)? $(, pad $p:tt)? $(,)?) $($relu:ident)?) => {
        $crate::__private::ConstKind::Conv {
            out: $out,
            kernel: $crate::__private::dims(::core::stringify!($k)),
            stride: $crate::__net_dims!($($s)?; (1, 1)),
            padding: $crate::__net_dims!($($p)?; (0, 0)),
            relu: $crate::__net_relu!($($relu)?),
        }
    };
    (maxpool ($k:tt $(, stride $s:tt)? $(, pad $p:tt)? $(,)?)) => {
        $crate::__private::ConstKind::MaxPool {
            kernel: $crate::__private::dims(::core::stringify!($k)),
            stride: $crate::__net_dims!($($s)?; $crate::__private::dims(::core::stringify!($k))),
            padding: $crate::__net_dims!($($p)?; (0, 0)),
        }
    };
    (avgpool ($k:tt $(, stride $s:tt)? $(, pad $p:tt)? $(,)?)) => {
        $crate::__private::ConstKind::AvgPool {
            kernel: $crate::__private::dims(::core::stringify!($k)),
            stride: $crate::__net_dims!($($s)?; $crate::__private::dims(::core::stringify!($k))),
            padding: $crate::__net_dims!($($p)?; (0, 0)),
        }
    };
    (gap) => {
        $crate::__private::ConstKind::GlobalAvgPool
    };
    (fc ($out:literal $(,)?) $($relu:ident)?) => {
        $crate::__private::ConstKind::Fc {
            out: $out,
            relu: $crate::__net_relu!($($relu)?),
        }
    };
    (relu) => {
        $crate::__private::ConstKind::Relu
    };
    (batchnorm) => {
        $crate::__private::ConstKind::BatchNorm
    };
    (flatten) => {
        $crate::__private::ConstKind::Flatten
    };
    (softmax) => {
        $crate::__private::ConstKind::Softmax
    };
    (add ($from:ident)) => {
        $crate::__private::ConstKind::Add(::core::stringify!($from))
    };
}

/// The fused-activation flag: only `relu` is accepted.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_relu {
    () => {
        false
    };
    (relu) => {
        true
    };
}
