//! The `net!` macro.

/// Declares a net: `name [C, H, W] => layer, layer, …` → `Result<NetSpec, DslError>`.
///
/// Each layer is `name: kind(args) [relu] [from SOURCE]`:
///
/// | kind | arguments | example |
/// |---|---|---|
/// | `conv` | `out, k [, stride s] [, pad p] [, groups g]` | `conv1: conv(64, 3x3, pad 1) relu`, `dw: conv(32, 3x3, pad 1, groups 32)` |
/// | `maxpool` / `avgpool` | `k [, stride s] [, pad p] [, pad_end e]` (stride defaults to `k`, `pad_end` to `pad`); a trailing `ceil` for ceil mode | `pool1: maxpool(3x3, stride 2) ceil` |
/// | `gap` | — (global average pooling) | `avg: gap` |
/// | `fc` | `out` (flattens implicitly) | `fc6: fc(4096) relu` |
/// | `relu`, `relu6`, `batchnorm`, `flatten`, `softmax` | — | `bn1: batchnorm` |
/// | `batchnorm` | optionally its ε (default 1e-5, PyTorch's) | `bn: batchnorm(0.001)` |
/// | `clip` | `min, max` (numbers) | `act: clip(0, 6)` |
/// | `leakyrelu` | the slope of negative inputs | `act: leakyrelu(0.1)` |
/// | `add` | the earlier layer (or `input`) whose output is added | `res1: add(pool1) relu` |
/// | `concat` | the earlier layers (or `input`) joined along the channels, in order | `fire2: concat(e1x1, e3x3)` |
///
/// Sizes are `N` (square) or `NxM` (height × width): `3x3`, `1x7`, `stride 2`, `pad 1`.
/// A trailing `relu` fuses the activation into a `conv`, `fc` or `add` (it is not a layer).
///
/// **Sources.** A layer reads the previous layer's output (the net input for the first);
/// a `concat` reads the layers it lists.
/// A trailing `from SOURCE` (after the kind and the optional `relu`) makes it read the
/// output of the earlier layer `SOURCE` instead, or the net input if `SOURCE` is `input`
/// (so no layer may be named `input`). A layer with a `from` never starts a pipeline
/// [`Unit`](crate::Unit). A ResNet bottleneck with its downsample shortcut:
///
/// ```
/// use taopipe_dsl::{net, Source};
///
/// let net = net! { block [64, 56, 56] =>
///     conv1: conv(64, 1x1),
///     bn1:   batchnorm,
///     relu1: relu,
///     conv2: conv(64, 3x3, pad 1),
///     bn2:   batchnorm,
///     relu2: relu,
///     conv3: conv(256, 1x1),
///     bn3:   batchnorm,
///     down:  conv(256, 1x1) from input,
///     down_bn: batchnorm,
///     add:   add(bn3) relu,
/// }?;
/// assert_eq!(net.layer("down").map(|l| l.source()), Some(Source::Input));
/// assert_eq!(net.units().len(), 3); // conv1.., conv2.., conv3..add
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
///
/// **Compile-time checks.** When the input shape is three integer literals
/// (`[3, 224, 224]`), the macro also expands to an inline `const { … }` block that infers
/// every shape with the crate's `const fn`s; a layer that does not fit (kernel larger than
/// its padded input, residual add of different shapes or of an unknown layer, a `from`
/// naming an unknown or later layer, a zero size, a repeated name, a layer named `input`)
/// is then a compile error (E0080) naming the net, the layer and the
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
///
/// Nor does a `from` naming a layer that is not declared before it:
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [3, 8, 8] =>
///     c1: conv(16, 3x3) relu,
///     c2: conv(16, 3x3) from c3, // c3 comes later
///     c3: conv(16, 1x1),
/// };
/// ```
///
/// Nor a shape mismatch that a `from` causes downstream:
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [3, 8, 8] =>
///     c1: conv(16, 3x3) relu,          // 16x6x6
///     c2: conv(16, 3x3) relu,          // 16x4x4
///     c3: conv(16, 1x1) from c1,       // 16x6x6
///     skip: add(c2),                   // 16x6x6 + 16x4x4
/// };
/// ```
///
/// Nor a concat of planes of different sizes:
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [3, 8, 8] =>
///     c1: conv(16, 3x3) relu,          // 16x6x6
///     c2: conv(16, 1x1) from input,    // 16x8x8
///     cat: concat(c1, c2),
/// };
/// ```
///
/// Nor groups that do not divide the channels:
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [6, 8, 8] =>
///     g: conv(8, 3x3, groups 4),       // 6 input channels
/// };
/// ```
///
/// Nor a layer named `input` (the reserved source name):
///
/// ```compile_fail,E0080
/// let net = taopipe_dsl::net! { bad [3, 8, 8] =>
///     input: conv(16, 3x3) relu,
/// };
/// ```
#[macro_export]
macro_rules! net {
    (
        $net:ident [$c:literal, $h:literal, $w:literal] =>
        $( $name:ident : $kind:ident $( ( $($args:tt)* ) )? $($mods:ident)* ),+ $(,)?
    ) => {{
        const {
            let net = $crate::__private::ConstNet::<
                { <[()]>::len(&[ $( $crate::__net_unit!($name) ),+ ]) }
            >::new(::core::stringify!($net), $c, $h, $w);
            $(
                let net = net.push(
                    ::core::stringify!($name),
                    $crate::__net_kind!($kind $( ( $($args)* ) )? $($mods)*),
                    $crate::__net_from!($($mods)*),
                );
            )+
            let _ = net.output();
        };
        $crate::__net_build!($net, ($c, $h, $w); $( $name : $kind $( ( $($args)* ) )? $($mods)* ),+)
    }};
    (
        $net:ident [$c:expr, $h:expr, $w:expr] =>
        $( $name:ident : $kind:ident $( ( $($args:tt)* ) )? $($mods:ident)* ),+ $(,)?
    ) => {{
        $crate::__net_build!($net, ($c, $h, $w); $( $name : $kind $( ( $($args)* ) )? $($mods)* ),+)
    }};
}

/// Run-time half of `net!`: the builder chain.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_build {
    (
        $net:ident, ($c:expr, $h:expr, $w:expr);
        $( $name:ident : $kind:ident $( ( $($args:tt)* ) )? $($mods:ident)* ),+
    ) => {{
        let builder = $crate::NetSpec::builder(
            ::core::stringify!($net),
            $crate::Shape::new($c, $h, $w),
        );
        $(
            let kind = $crate::__private::ConstKind::to_kind(
                const { $crate::__net_kind!($kind $( ( $($args)* ) )? $($mods)*) },
            );
            let builder = match $crate::__net_from!($($mods)*) {
                ::core::option::Option::Some(from) => {
                    builder.layer_from(::core::stringify!($name), kind, from)
                }
                ::core::option::Option::None => builder.layer(::core::stringify!($name), kind),
            };
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

/// One layer's `kind(args) [relu] [from SOURCE]` → a `ConstKind` expression (usable in
/// `const`; the source is read by `__net_from!`).
#[doc(hidden)]
#[macro_export]
macro_rules! __net_kind {
    (conv ($out:literal, $k:tt $(, stride $s:tt)? $(, pad $p:tt)? $(, groups $g:literal)? $(,)?) $($mods:ident)*) => {
        $crate::__private::ConstKind::Conv {
            out: $out,
            kernel: $crate::__private::dims(::core::stringify!($k)),
            stride: $crate::__net_dims!($($s)?; (1, 1)),
            padding: $crate::__net_dims!($($p)?; (0, 0)),
            groups: $crate::__net_groups!($($g)?),
            relu: $crate::__net_relu!($($mods)*),
        }
    };
    (maxpool ($k:tt $(, stride $s:tt)? $(, pad $p:tt)? $(, pad_end $e:tt)? $(,)?) $($mods:ident)*) => {
        $crate::__private::ConstKind::MaxPool {
            kernel: $crate::__private::dims(::core::stringify!($k)),
            stride: $crate::__net_dims!($($s)?; $crate::__private::dims(::core::stringify!($k))),
            padding: $crate::__net_dims!($($p)?; (0, 0)),
            padding_end: $crate::__net_dims!($($e)?; $crate::__net_dims!($($p)?; (0, 0))),
            ceil: $crate::__net_ceil!($($mods)*),
        }
    };
    (avgpool ($k:tt $(, stride $s:tt)? $(, pad $p:tt)? $(, pad_end $e:tt)? $(,)?) $($mods:ident)*) => {
        $crate::__private::ConstKind::AvgPool {
            kernel: $crate::__private::dims(::core::stringify!($k)),
            stride: $crate::__net_dims!($($s)?; $crate::__private::dims(::core::stringify!($k))),
            padding: $crate::__net_dims!($($p)?; (0, 0)),
            padding_end: $crate::__net_dims!($($e)?; $crate::__net_dims!($($p)?; (0, 0))),
            ceil: $crate::__net_ceil!($($mods)*),
        }
    };
    (gap $(from $src:ident)?) => {
        $crate::__private::ConstKind::GlobalAvgPool
    };
    (fc ($out:literal $(,)?) $($mods:ident)*) => {
        $crate::__private::ConstKind::Fc {
            out: $out,
            relu: $crate::__net_relu!($($mods)*),
        }
    };
    (relu $(from $src:ident)?) => {
        $crate::__private::ConstKind::Relu
    };
    (relu6 $(from $src:ident)?) => {
        $crate::__private::ConstKind::Clip { min: 0.0, max: 6.0 }
    };
    (clip ($min:literal, $max:literal $(,)?) $(from $src:ident)?) => {
        $crate::__private::ConstKind::Clip { min: $min as f32, max: $max as f32 }
    };
    (leakyrelu ($slope:literal $(,)?) $(from $src:ident)?) => {
        $crate::__private::ConstKind::LeakyRelu { slope: $slope as f32 }
    };
    (batchnorm $(from $src:ident)?) => {
        $crate::__private::ConstKind::BatchNorm { eps: $crate::LayerKind::BN_EPS }
    };
    (batchnorm ($eps:literal $(,)?) $(from $src:ident)?) => {
        $crate::__private::ConstKind::BatchNorm { eps: $eps as f32 }
    };
    (flatten $(from $src:ident)?) => {
        $crate::__private::ConstKind::Flatten
    };
    (softmax $(from $src:ident)?) => {
        $crate::__private::ConstKind::Softmax
    };
    (add ($from:ident) $($mods:ident)*) => {
        $crate::__private::ConstKind::Add {
            from: ::core::stringify!($from),
            relu: $crate::__net_relu!($($mods)*),
        }
    };
    (concat ($($from:ident),+ $(,)?)) => {
        $crate::__private::ConstKind::Concat {
            from: &[$(::core::stringify!($from)),+],
        }
    };
}

/// A conv's `groups g` argument: present → `g`, absent → 1.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_groups {
    () => {
        1
    };
    ($g:literal) => {
        $g
    };
}

/// A pool's ceil-mode flag of `[ceil] [from SOURCE]`.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_ceil {
    () => {
        false
    };
    (ceil) => {
        true
    };
    (from $src:ident) => {
        false
    };
    (ceil from $src:ident) => {
        true
    };
    ($($other:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "net!: after a pool, expected `ceil` and/or `from NAME`, found `",
            ::core::stringify!($($other)*),
            "`"
        ))
    };
}

/// The fused-activation flag of `[relu] [from SOURCE]`.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_relu {
    () => {
        false
    };
    (relu) => {
        true
    };
    (from $src:ident) => {
        false
    };
    (relu from $src:ident) => {
        true
    };
    ($($other:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "net!: after a layer's kind, expected `relu` and/or `from NAME`, found `",
            ::core::stringify!($($other)*),
            "`"
        ))
    };
}

/// The source of `[relu] [from SOURCE]`: `None` (the previous layer) or `Some("SOURCE")`.
#[doc(hidden)]
#[macro_export]
macro_rules! __net_from {
    () => {
        ::core::option::Option::<&'static str>::None
    };
    (relu) => {
        ::core::option::Option::<&'static str>::None
    };
    (from $src:ident) => {
        ::core::option::Option::<&'static str>::Some(::core::stringify!($src))
    };
    (relu from $src:ident) => {
        ::core::option::Option::<&'static str>::Some(::core::stringify!($src))
    };
    (ceil) => {
        ::core::option::Option::<&'static str>::None
    };
    (ceil from $src:ident) => {
        ::core::option::Option::<&'static str>::Some(::core::stringify!($src))
    };
    ($($other:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "net!: after a layer's kind, expected `relu` and/or `from NAME`, found `",
            ::core::stringify!($($other)*),
            "`"
        ))
    };
}
