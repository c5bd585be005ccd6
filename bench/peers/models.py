"""VGG16, ResNet50, AlexNet, MobileNetV2, SqueezeNet 1.1 and GoogLeNet as torchvision
defines them, MobileNet (V1) and Tiny YOLOv2 (VOC) as their papers and Darknet do, with
torchvision-like random weights, written both as a safetensors file (torchvision's
``state_dict`` names and shapes, which taopipe's ``frame --weights`` loads) and as an ONNX
model (opset 17, the graph torchvision's export gives: NCHW input ``[1, 3, 224, 224]``
(YOLO: 416), Conv (grouped for depthwise), inference-mode BatchNormalization, Relu, Clip
(ReLU6), LeakyRelu, MaxPool (ceil mode, end padding), Add, Concat, GlobalAveragePool,
Flatten, Gemm with transB=1).

No torch: the architectures are written out from torchvision's ``vgg.py`` (config "D",
no batchnorm), ``resnet.py`` (ResNet50 v1.5: the stride of a down-sampling bottleneck is
on its 3x3 convolution), ``alexnet.py``, ``mobilenetv2.py``, ``squeezenet.py`` and
``googlenet.py`` (``aux_logits=False``, ``transform_input=False``), from Howard et al.'s
Table 1 (MobileNet V1) and from Darknet's ``yolov2-tiny-voc.cfg``. Each net's names are
those of taopipe's zoo (``nets/src/zoo/``) with ``.`` for ``_``. Adaptive average pools
that are the identity at 224x224 (VGG's 7x7, AlexNet's 6x6) and dropout (the identity at
inference) are not in the graphs.

Every tensor has its own generator, seeded from (seed, net, tensor name) with numpy's
``default_rng``, so the files are the same on every run and one tensor does not depend on
the others. Both files hold the very same float32 arrays.

Only numpy is imported at module level: ``onnx`` is needed to build a model, and
``safetensors`` is used when installed (otherwise a plain writer of the same format is).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import zlib
from collections import OrderedDict
from pathlib import Path

import numpy as np

# The per-tensor RNG key holds a net's index here: append new nets, never reorder.
NETS = ("vgg16", "resnet50", "alexnet", "mobilenet_v2", "mobilenet_v1", "squeezenet1_1",
        "googlenet", "yolov2_tiny")
INPUT_SHAPE = (1, 3, 224, 224)
CLASSES = 1000
# Nets whose input is not INPUT_SHAPE, or whose output is not [1, CLASSES]: Tiny YOLOv2
# ends at its region layer's input, 5 anchors x (20 VOC classes + 5) per cell of 13x13.
INPUT_SHAPES = {"yolov2_tiny": (1, 3, 416, 416)}
OUTPUT_SHAPES = {"yolov2_tiny": (1, 125, 13, 13)}
OPSET = 17
BN_EPS = 1e-5
# Bump when the weights, the input or a graph change: the cache file names carry it, so
# stale files are never reused.
FORMAT = 1

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# --- initialisers (torch.nn.init, in float32) -------------------------------------------

def _fans(shape):
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive  # fan_in, fan_out


def kaiming_normal_fan_out(rng, shape):
    """``kaiming_normal_(w, mode="fan_out", nonlinearity="relu")``: N(0, 2 / fan_out)."""
    std = math.sqrt(2.0 / _fans(shape)[1])
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)


def normal(std):
    return lambda rng, shape: rng.standard_normal(shape, dtype=np.float32) * np.float32(std)


def uniform(low, high):
    return lambda rng, shape: (
        rng.random(shape, dtype=np.float32) * np.float32(high - low) + np.float32(low)
    )


def zeros(rng, shape):
    return np.zeros(shape, dtype=np.float32)


def kaiming_uniform(rng, shape):
    """``kaiming_uniform_(w)`` (a = 0, fan_in, leaky_relu's gain √2): U(±√(6 / fan_in))."""
    bound = math.sqrt(6.0 / _fans(shape)[0])
    return uniform(-bound, bound)(rng, shape)


def kaiming_normal_fan_in(rng, shape):
    """N(0, 2 / fan_in): Darknet's ``scale * rand_normal()`` with ``scale = √(2 / fan_in)``,
    and ``kaiming_normal_(w, mode="fan_in")``."""
    std = math.sqrt(2.0 / _fans(shape)[0])
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)


def torch_default_weight(rng, shape):
    """PyTorch's Conv2d / Linear default: ``kaiming_uniform_(w, a=sqrt(5))`` = U(±1/√fan_in)."""
    bound = 1.0 / math.sqrt(_fans(shape)[0])
    return uniform(-bound, bound)(rng, shape)


def torch_default_bias(fan_in):
    """PyTorch's Conv2d / Linear default bias: U(±1/√fan_in) of the layer's weight."""
    bound = 1.0 / math.sqrt(fan_in)
    return uniform(-bound, bound)


# --- a graph builder that records parameters and ONNX nodes together ---------------------

class Net:
    """Layers in torchvision's order: parameters by ``state_dict`` name, ONNX nodes."""

    def __init__(self, name: str, seed: int):
        self.name = name
        self.seed = seed
        self.input_shape = input_shape(name)
        self.output_shape = output_shape(name)
        self.params: OrderedDict[str, np.ndarray] = OrderedDict()
        self.buffers: OrderedDict[str, np.ndarray] = OrderedDict()  # num_batches_tracked
        # ONNX initialisers that are no parameter (Clip's bounds): not in the safetensors
        self.constants: OrderedDict[str, np.ndarray] = OrderedDict()
        self.nodes = []  # (op, inputs, output, attributes)
        self._count = 0

    def _param(self, name, shape, init):
        key = [self.seed, NETS.index(self.name), zlib.crc32(name.encode())]
        rng = np.random.default_rng(key)
        value = np.ascontiguousarray(init(rng, tuple(shape)), dtype=np.float32)
        assert value.shape == tuple(shape), (name, value.shape, shape)
        self.params[name] = value
        return name

    def _node(self, op, inputs, **attrs):
        self._count += 1
        out = f"{op.lower()}_{self._count}"
        self.nodes.append((op, list(inputs), out, attrs))
        return out

    def _constant(self, name, value):
        if name not in self.constants:
            self.constants[name] = np.array(value, dtype=np.float32)
        return name

    def conv(self, name, x, cin, cout, k, stride=1, pad=0, bias=True,
             weight_init=kaiming_normal_fan_out, bias_init=zeros, groups=1):
        """A convolution of ``groups`` groups (PyTorch's weight ``[cout, cin / groups, k,
        k]``; depthwise: ``groups = cin = cout``)."""
        assert cin % groups == 0 and cout % groups == 0, (name, cin, cout, groups)
        w = self._param(f"{name}.weight", (cout, cin // groups, k, k), weight_init)
        inputs = [x, w]
        if bias:
            inputs.append(self._param(f"{name}.bias", (cout,), bias_init))
        return self._node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                          pads=[pad] * 4, dilations=[1, 1], group=groups)

    def bn(self, name, x, c, eps=BN_EPS):
        """Inference-mode batchnorm with random running statistics and affine parameters
        near torchvision's init (weight 1, bias 0, mean 0, var 1), so that folding it into
        the convolution is actually exercised. ``eps``: GoogLeNet's is 1e-3."""
        inputs = [
            x,
            self._param(f"{name}.weight", (c,), uniform(0.5, 1.5)),
            self._param(f"{name}.bias", (c,), normal(0.1)),
            self._param(f"{name}.running_mean", (c,), normal(0.1)),
            self._param(f"{name}.running_var", (c,), uniform(0.5, 1.5)),
        ]
        self.buffers[f"{name}.num_batches_tracked"] = np.zeros((), dtype=np.int64)
        return self._node("BatchNormalization", inputs, epsilon=eps, momentum=0.9)

    def relu(self, x):
        return self._node("Relu", [x])

    def clip(self, x, low, high):
        """``min(max(x, low), high)`` (ReLU6: 0, 6): opset 11+ takes the bounds as inputs,
        here scalar initialisers shared by every Clip of the same bounds."""
        return self._node("Clip", [x, self._constant(f"clip_min_{low:g}", low),
                                   self._constant(f"clip_max_{high:g}", high)])

    def leaky_relu(self, x, slope):
        return self._node("LeakyRelu", [x], alpha=slope)

    def maxpool(self, x, k, stride, pad=0, pads=None, ceil=False):
        """Max pooling; ``pads`` (ONNX's [top, left, bottom, right]) overrides ``pad`` on
        every side (YOLO's last pool: [0, 0, 1, 1]); ``ceil``: PyTorch's ceil_mode."""
        return self._node("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride],
                          pads=list(pads) if pads is not None else [pad] * 4,
                          ceil_mode=1 if ceil else 0)

    def add(self, a, b):
        return self._node("Add", [a, b])

    def concat(self, xs):
        """Joins ``xs`` along the channels, in order (a fire or inception module's end)."""
        return self._node("Concat", list(xs), axis=1)

    def global_avg_pool(self, x):
        return self._node("GlobalAveragePool", [x])

    def flatten(self, x):
        return self._node("Flatten", [x], axis=1)

    def linear(self, name, x, fin, fout, weight_init, bias_init):
        w = self._param(f"{name}.weight", (fout, fin), weight_init)
        b = self._param(f"{name}.bias", (fout,), bias_init)
        return self._node("Gemm", [x, w, b], alpha=1.0, beta=1.0, transB=1)


# --- the nets -----------------------------------------------------------------------------

VGG16_CFG = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
             512, 512, 512, "M", 512, 512, 512, "M"]


def vgg16(seed: int) -> tuple[Net, str]:
    """torchvision ``vgg16()``: conv kaiming_normal_(fan_out, relu), bias 0; Linear N(0, 0.01), bias 0."""
    net = Net("vgg16", seed)
    x, cin, i = "input", 3, 0
    for v in VGG16_CFG:
        if v == "M":
            x = net.maxpool(x, 2, 2)
            i += 1
        else:
            x = net.relu(net.conv(f"features.{i}", x, cin, v, 3, pad=1))
            cin, i = v, i + 2
    x = net.flatten(x)  # avgpool: AdaptiveAvgPool2d(7, 7) of a 7x7 map, the identity
    fc = dict(weight_init=normal(0.01), bias_init=zeros)
    x = net.relu(net.linear("classifier.0", x, 512 * 7 * 7, 4096, **fc))
    x = net.relu(net.linear("classifier.3", x, 4096, 4096, **fc))
    return net, net.linear("classifier.6", x, 4096, CLASSES, **fc)


def resnet50(seed: int) -> tuple[Net, str]:
    """torchvision ``resnet50()``: conv kaiming_normal_(fan_out, relu), no conv bias;
    batchnorm random near (1, 0) (see ``Net.bn``); fc PyTorch's Linear default."""
    net = Net("resnet50", seed)
    x = net.conv("conv1", "input", 3, 64, 7, stride=2, pad=3, bias=False)
    x = net.relu(net.bn("bn1", x, 64))
    x = net.maxpool(x, 3, 2, 1)
    inplanes = 64
    for stage, (blocks, width, stride) in enumerate(
            [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)], start=1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = f"layer{stage}.{b}"
            out = net.relu(net.bn(f"{p}.bn1", net.conv(f"{p}.conv1", x, inplanes, width, 1,
                                                       bias=False), width))
            out = net.relu(net.bn(f"{p}.bn2", net.conv(f"{p}.conv2", out, width, width, 3,
                                                       stride=s, pad=1, bias=False), width))
            out = net.bn(f"{p}.bn3", net.conv(f"{p}.conv3", out, width, width * 4, 1,
                                              bias=False), width * 4)
            identity = x
            if s != 1 or inplanes != width * 4:
                identity = net.bn(f"{p}.downsample.1",
                                  net.conv(f"{p}.downsample.0", x, inplanes, width * 4, 1,
                                           stride=s, bias=False), width * 4)
            x = net.relu(net.add(out, identity))
            inplanes = width * 4
    x = net.flatten(net.global_avg_pool(x))
    return net, net.linear("fc", x, 2048, CLASSES, torch_default_weight,
                           torch_default_bias(2048))


def alexnet(seed: int) -> tuple[Net, str]:
    """torchvision ``alexnet()``: no init of its own, so PyTorch's defaults for every
    Conv2d and Linear (kaiming_uniform_(a=√5) weights, U(±1/√fan_in) biases)."""
    net = Net("alexnet", seed)

    def conv(name, x, cin, cout, k, stride=1, pad=0):
        return net.relu(net.conv(name, x, cin, cout, k, stride, pad,
                                 weight_init=torch_default_weight,
                                 bias_init=torch_default_bias(cin * k * k)))

    def linear(name, x, fin, fout):
        return net.linear(name, x, fin, fout, torch_default_weight, torch_default_bias(fin))

    x = conv("features.0", "input", 3, 64, 11, stride=4, pad=2)
    x = net.maxpool(x, 3, 2)
    x = conv("features.3", x, 64, 192, 5, pad=2)
    x = net.maxpool(x, 3, 2)
    x = conv("features.6", x, 192, 384, 3, pad=1)
    x = conv("features.8", x, 384, 256, 3, pad=1)
    x = conv("features.10", x, 256, 256, 3, pad=1)
    x = net.maxpool(x, 3, 2)
    x = net.flatten(x)  # avgpool: AdaptiveAvgPool2d(6, 6) of a 6x6 map, the identity
    x = net.relu(linear("classifier.1", x, 256 * 6 * 6, 4096))
    x = net.relu(linear("classifier.4", x, 4096, 4096))
    return net, linear("classifier.6", x, 4096, CLASSES)


MOBILENET_V2_SETTINGS = [  # (expansion t, channels c, blocks n, stride s)
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
    (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(seed: int) -> tuple[Net, str]:
    """torchvision ``mobilenet_v2()``: conv N(0, 2 / fan_in), no conv bias; batchnorm
    random near (1, 0) (see ``Net.bn``); ReLU6 as Clip(0, 6); Linear N(0, 0.01), bias 0.
    A block of stride 1 whose channels do not change adds its input.

    torchvision initialises the convs ``kaiming_normal_(fan_out)``; with batchnorm
    statistics that are random rather than measured, that shrinks the signal block after
    block until the logits no longer depend on the input (they changed by 1e-7 of their
    size from one image to another), and a wrong layer could not show in a comparison.
    ``fan_in`` keeps the scale (README, "How the models are built")."""
    net = Net("mobilenet_v2", seed)

    def conv_bn_relu6(name, x, cin, cout, k, stride=1, groups=1):  # Conv2dNormActivation
        x = net.conv(f"{name}.0", x, cin, cout, k, stride, (k - 1) // 2, bias=False,
                     weight_init=kaiming_normal_fan_in, groups=groups)
        return net.clip(net.bn(f"{name}.1", x, cout), 0.0, 6.0)

    x = conv_bn_relu6("features.0", "input", 3, 32, 3, stride=2)
    cin, i = 32, 1
    for t, c, n, s in MOBILENET_V2_SETTINGS:
        for b in range(n):
            stride = s if b == 0 else 1
            hidden, p, at = cin * t, f"features.{i}.conv", 0
            out = x
            if t != 1:
                out, at = conv_bn_relu6(f"{p}.0", out, cin, hidden, 1), 1
            out = conv_bn_relu6(f"{p}.{at}", out, hidden, hidden, 3, stride, groups=hidden)
            out = net.bn(f"{p}.{at + 2}", net.conv(f"{p}.{at + 1}", out, hidden, c, 1,
                                                   bias=False,
                                                   weight_init=kaiming_normal_fan_in), c)
            x = net.add(x, out) if stride == 1 and cin == c else out
            cin, i = c, i + 1
    x = conv_bn_relu6("features.18", x, cin, 1280, 1)
    x = net.flatten(net.global_avg_pool(x))  # classifier.0: Dropout, the identity
    return net, net.linear("classifier.1", x, 1280, CLASSES, normal(0.01), zeros)


# MobileNet V1's 13 depthwise separable blocks: (pointwise output channels, stride).
MOBILENET_V1_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                       (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


def mobilenet_v1(seed: int) -> tuple[Net, str]:
    """MobileNet V1 (Howard et al. 2017, Table 1; not in torchvision), named as taopipe's
    zoo names it (``features.i.0`` depthwise, ``.1`` bn, ``.3`` pointwise, ``.4`` bn; the
    ReLUs ``.2``, ``.5`` have no parameters): initialised as ``mobilenet_v2`` is."""
    net = Net("mobilenet_v1", seed)

    def conv_bn_relu(prefix, at, x, cin, cout, k, stride=1, groups=1):
        """Conv ``prefix.at``, batchnorm ``prefix.at+1``, ReLU (``prefix.at+2``)."""
        x = net.conv(f"{prefix}.{at}", x, cin, cout, k, stride, (k - 1) // 2, bias=False,
                     weight_init=kaiming_normal_fan_in, groups=groups)
        return net.relu(net.bn(f"{prefix}.{at + 1}", x, cout))

    x = conv_bn_relu("features.0", 0, "input", 3, 32, 3, stride=2)
    cin = 32
    for i, (cout, s) in enumerate(MOBILENET_V1_BLOCKS, start=1):
        x = conv_bn_relu(f"features.{i}", 0, x, cin, cin, 3, s, groups=cin)
        x = conv_bn_relu(f"features.{i}", 3, x, cin, cout, 1)
        cin = cout
    x = net.flatten(net.global_avg_pool(x))
    return net, net.linear("fc", x, 1024, CLASSES, normal(0.01), zeros)


def squeezenet1_1(seed: int) -> tuple[Net, str]:
    """torchvision ``squeezenet1_1()``: conv kaiming_uniform_, bias 0, except the final
    conv N(0, 0.01); no batchnorm; max pools in ceil mode; each fire module's two expands
    joined by Concat."""
    net = Net("squeezenet1_1", seed)

    def conv(name, x, cin, cout, k, stride=1, pad=0, init=kaiming_uniform):
        return net.relu(net.conv(name, x, cin, cout, k, stride, pad, weight_init=init,
                                 bias_init=zeros))

    def fire(i, x, cin, squeeze, expand):
        s = conv(f"features.{i}.squeeze", x, cin, squeeze, 1)
        return net.concat([conv(f"features.{i}.expand1x1", s, squeeze, expand, 1),
                           conv(f"features.{i}.expand3x3", s, squeeze, expand, 3, pad=1)])

    x = conv("features.0", "input", 3, 64, 3, stride=2)
    x = net.maxpool(x, 3, 2, ceil=True)
    x = fire(4, fire(3, x, 64, 16, 64), 128, 16, 64)
    x = net.maxpool(x, 3, 2, ceil=True)
    x = fire(7, fire(6, x, 128, 32, 128), 256, 32, 128)
    x = net.maxpool(x, 3, 2, ceil=True)
    x = fire(10, fire(9, x, 256, 48, 192), 384, 48, 192)
    x = fire(12, fire(11, x, 384, 64, 256), 512, 64, 256)
    x = conv("classifier.1", x, 512, CLASSES, 1, init=normal(0.01))  # classifier.0: Dropout
    return net, net.flatten(net.global_avg_pool(x))


GOOGLENET_INCEPTIONS = [  # (name, in, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj)
    ("inception3a", 192, 64, 96, 128, 16, 32, 32),
    ("inception3b", 256, 128, 128, 192, 32, 96, 64),
    ("maxpool3",),
    ("inception4a", 480, 192, 96, 208, 16, 48, 64),
    ("inception4b", 512, 160, 112, 224, 24, 64, 64),
    ("inception4c", 512, 128, 128, 256, 24, 64, 64),
    ("inception4d", 512, 112, 144, 288, 32, 64, 64),
    ("inception4e", 528, 256, 160, 320, 32, 128, 128),
    ("maxpool4",),
    ("inception5a", 832, 256, 160, 320, 32, 128, 128),
    ("inception5b", 832, 384, 192, 384, 48, 128, 128),
]


def googlenet(seed: int) -> tuple[Net, str]:
    """torchvision ``googlenet(aux_logits=False, transform_input=False)``: BasicConv2d =
    conv without bias, batchnorm ε = 1e-3 (random near (1, 0), see ``Net.bn``), ReLU.
    Branch 3 is a 3x3 conv, as in torchvision (not the paper's 5x5); max pools in ceil
    mode. Linear weights as torchvision's trunc_normal_(std 0.01, ±2) (at 200 σ the bound
    never acts: N(0, 0.01)), bias PyTorch's default; conv weights N(0, 2 / fan_in), not
    torchvision's N(0, 0.01), for the reason ``mobilenet_v2`` gives."""
    net = Net("googlenet", seed)

    def basic(name, x, cin, cout, k, stride=1, pad=0):
        x = net.conv(f"{name}.conv", x, cin, cout, k, stride, pad, bias=False,
                     weight_init=kaiming_normal_fan_in)
        return net.relu(net.bn(f"{name}.bn", x, cout, eps=1e-3))

    def inception(name, x, cin, ch1, ch3red, ch3, ch5red, ch5, proj):
        b1 = basic(f"{name}.branch1", x, cin, ch1, 1)
        b2 = basic(f"{name}.branch2.1", basic(f"{name}.branch2.0", x, cin, ch3red, 1),
                   ch3red, ch3, 3, pad=1)
        b3 = basic(f"{name}.branch3.1", basic(f"{name}.branch3.0", x, cin, ch5red, 1),
                   ch5red, ch5, 3, pad=1)
        b4 = basic(f"{name}.branch4.1", net.maxpool(x, 3, 1, 1, ceil=True), cin, proj, 1)
        return net.concat([b1, b2, b3, b4])

    x = basic("conv1", "input", 3, 64, 7, stride=2, pad=3)
    x = net.maxpool(x, 3, 2, ceil=True)
    x = basic("conv2", x, 64, 64, 1)
    x = basic("conv3", x, 64, 192, 3, pad=1)
    x = net.maxpool(x, 3, 2, ceil=True)
    for name, *dims in GOOGLENET_INCEPTIONS:
        if name == "maxpool3":
            x = net.maxpool(x, 3, 2, ceil=True)
        elif name == "maxpool4":
            x = net.maxpool(x, 2, 2, ceil=True)
        else:
            x = inception(name, x, *dims)
    x = net.flatten(net.global_avg_pool(x))  # dropout: the identity
    return net, net.linear("fc", x, 1024, CLASSES, normal(0.01), torch_default_bias(1024))


def yolov2_tiny(seed: int) -> tuple[Net, str]:
    """Darknet's ``yolov2-tiny-voc.cfg`` at 416x416, up to the region layer's input
    ``[1, 125, 13, 13]``: 8 conv 3x3 pad 1 (no bias) + batchnorm (ε 1e-5, random near
    (1, 0)) + LeakyRelu(0.1), a MaxPool 2x2/2 after each of the first five, 2x2/1 with
    pads [0, 0, 1, 1] after the sixth; then conv 1x1 to 125 with bias. Weights as
    Darknet's ``make_convolutional_layer``: N(0, 2 / fan_in); biases 0."""
    net = Net("yolov2_tiny", seed)
    x, cin = "input", 3
    for i, c in enumerate((16, 32, 64, 128, 256, 512, 1024, 1024), start=1):
        x = net.conv(f"conv{i}", x, cin, c, 3, pad=1, bias=False,
                     weight_init=kaiming_normal_fan_in)
        x = net.leaky_relu(net.bn(f"bn{i}", x, c), 0.1)
        if i <= 5:
            x = net.maxpool(x, 2, 2)
        elif i == 6:
            x = net.maxpool(x, 2, 1, pads=[0, 0, 1, 1])
        cin = c
    return net, net.conv("conv9", x, cin, net.output_shape[1], 1,
                         weight_init=kaiming_normal_fan_in, bias_init=zeros)


BUILDERS = {"vgg16": vgg16, "resnet50": resnet50, "alexnet": alexnet,
            "mobilenet_v2": mobilenet_v2, "mobilenet_v1": mobilenet_v1,
            "squeezenet1_1": squeezenet1_1, "googlenet": googlenet,
            "yolov2_tiny": yolov2_tiny}
assert tuple(BUILDERS) == NETS


def input_shape(net: str) -> tuple:
    """The input ``[1, 3, H, W]`` of ``net``."""
    return INPUT_SHAPES.get(net, INPUT_SHAPE)


def output_shape(net: str) -> tuple:
    """The output of ``net``: ``[1, CLASSES]`` but for YOLO."""
    return OUTPUT_SHAPES.get(net, (1, CLASSES))


# --- files ----------------------------------------------------------------------------------

def to_onnx(net: Net, output: str):
    """The ONNX model of ``net``: input ``input`` (``net.input_shape``: [1, 3, 224, 224]
    but for YOLO), output ``logits`` (``net.output_shape``: [1, 1000], YOLO's
    [1, 125, 13, 13])."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = []
    for op, inputs, out, attrs in net.nodes:
        nodes.append(helper.make_node(op, inputs, ["logits" if out == output else out],
                                      name=out, **attrs))
    graph = helper.make_graph(
        nodes,
        net.name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(net.input_shape))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, list(net.output_shape))],
        initializer=[numpy_helper.from_array(v, name=k)
                     for k, v in (*net.params.items(), *net.constants.items())],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="taopipe bench/peers")
    model.ir_version = 8  # the IR of opset 17, readable by every onnxruntime since 1.13
    onnx.checker.check_model(model)
    return model


def save_safetensors(tensors: dict, path: Path, metadata: dict):
    """Writes ``tensors`` (numpy arrays) as safetensors: with the ``safetensors`` package
    when installed, else with the same format written here (8-byte header length, JSON
    header, little-endian data)."""
    try:
        from safetensors.numpy import save_file
    except ImportError:
        save_file = None
    if save_file is not None:
        save_file(tensors, str(path), metadata=metadata)
        return
    dtypes = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name in sorted(tensors):
        a = np.asarray(tensors[name])  # (ascontiguousarray would make a 0-d array 1-d)
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        header[name] = {"dtype": dtypes[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def _publish(tmp: Path, path: Path):
    """Moves a finished file into place and records its SHA-256 beside it."""
    digest = sha256(tmp)
    os.replace(tmp, path)
    Path(f"{path}.sha256").write_text(f"{digest}  {path.name}\n")


def recorded_sha256(path: Path) -> str | None:
    try:
        return Path(f"{path}.sha256").read_text().split()[0]
    except (OSError, IndexError):
        return None


def model_files(cache: Path, net: str, seed: int) -> tuple[Path, Path]:
    stem = cache / f"{net}-seed{seed}-v{FORMAT}"
    return Path(f"{stem}.safetensors"), Path(f"{stem}.onnx")


def input_file(cache: Path, seed: int, shape=INPUT_SHAPE) -> Path:
    """``input-seedS-vF.f32`` for 224x224, ``input-HxW-seedS-vF.f32`` for another size."""
    size = "" if tuple(shape) == INPUT_SHAPE else f"{shape[2]}x{shape[3]}-"
    return cache / f"input-{size}seed{seed}-v{FORMAT}.f32"


def ensure_model(cache: Path, net: str, seed: int, log=print) -> tuple[Path, Path]:
    """The safetensors and ONNX files of ``net``, built unless both are cached."""
    st_path, onnx_path = model_files(cache, net, seed)
    if st_path.exists() and onnx_path.exists():
        log(f"{net}: using cached {st_path.name}, {onnx_path.name}")
        return st_path, onnx_path
    import onnx  # before the long work: without it no ONNX model can be written

    cache.mkdir(parents=True, exist_ok=True)
    log(f"{net}: generating weights (seed {seed})")
    model, output = BUILDERS[net](seed)
    n = sum(v.size for v in model.params.values())
    log(f"{net}: {len(model.params)} tensors, {n / 1e6:.1f} M parameters; writing "
        f"{st_path.name}")
    tmp = st_path.with_suffix(".tmp")
    # One metadata entry: the safetensors package writes a map's entries in a random order,
    # which would change the file's bytes from run to run.
    save_safetensors({**model.params, **model.buffers}, tmp,
                     {"made_by": f"taopipe bench/peers/models.py {net} seed {seed} format "
                                 f"{FORMAT}"})
    _publish(tmp, st_path)
    log(f"{net}: writing {onnx_path.name}")
    proto = to_onnx(model, output)
    tmp = onnx_path.with_suffix(".tmp")
    onnx.save_model(proto, str(tmp))
    _publish(tmp, onnx_path)
    return st_path, onnx_path


def make_input(seed: int, shape=INPUT_SHAPE) -> np.ndarray:
    """A random image in [0, 1), ImageNet-normalised like torchvision's transforms:
    ``shape`` ([1, 3, 224, 224]) float32."""
    rng = np.random.default_rng([seed, 0x1A9E])
    image = rng.random(tuple(shape), dtype=np.float32)
    mean = np.array(IMAGENET_MEAN, dtype=np.float32).reshape(1, 3, 1, 1)
    std = np.array(IMAGENET_STD, dtype=np.float32).reshape(1, 3, 1, 1)
    return np.ascontiguousarray((image - mean) / std, dtype=np.float32)


def ensure_input(cache: Path, seed: int, log=print,
                 shape=INPUT_SHAPE) -> tuple[Path, np.ndarray]:
    """The input tensor of ``shape`` (a net's ``input_shape``) as raw little-endian f32
    (cached) and as an array."""
    shape = tuple(shape)
    path = input_file(cache, seed, shape)
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        log(f"input: writing {path.name}")
        tmp = path.with_suffix(".tmp")
        make_input(seed, shape).astype("<f4").tofile(tmp)
        _publish(tmp, path)
    x = np.fromfile(path, dtype="<f4")
    if x.size != int(np.prod(shape)):
        raise SystemExit(f"{path}: expected {int(np.prod(shape))} f32 values, found "
                         f"{x.size}; delete it to make it again")
    return path, x.astype(np.float32).reshape(shape)


def check_with_ort(cache: Path, net: str, seed: int, log=print) -> bool:
    """Runs ``net``'s ONNX model (made unless cached) once through ONNX Runtime on its
    input and on another (seed + 1): the output must have ``output_shape(net)``, be finite
    and not constant, and change with the input (else the weights would hide a wrong layer
    from a comparison of outputs)."""
    import onnxruntime as ort

    _, onnx_path = ensure_model(cache, net, seed, log=log)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    session = ort.InferenceSession(str(onnx_path), sess_options=so,
                                   providers=["CPUExecutionProvider"])
    shape = input_shape(net)
    _, x = ensure_input(cache, seed, log=log, shape=shape)
    out = session.run(None, {"input": x})[0]
    other = session.run(None, {"input": make_input(seed + 1, shape)})[0]
    finite = bool(np.isfinite(out).all())
    spread = float(out.std())
    change = float(np.abs(other - out).max() / max(float(np.abs(out).max()), 1e-30))
    ok = (tuple(out.shape) == output_shape(net) and finite and spread > 0
          and change > 1e-2)
    log(f"{net}: ORT output {list(out.shape)}, finite {finite}, min {out.min():.4g}, max "
        f"{out.max():.4g}, std {spread:.4g}; another input changes it by "
        f"{change:.3g} of max|out|: {'ok' if ok else 'FAILED'}")
    return ok


def main(argv=None) -> int:
    """``python3 bench/peers/models.py [--cache DIR] [--seed S] [NET ...]``: makes the
    files of each net (all by default) and checks its ONNX model with ONNX Runtime."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("nets", nargs="*", default=list(NETS), metavar="NET",
                   help=f"nets to make and check (default: all of {', '.join(NETS)})")
    p.add_argument("--cache", default=str(Path(__file__).resolve().parent / ".cache"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    failed = []
    for net in args.nets:
        if net not in NETS:
            p.error(f"{net}: choose from {', '.join(NETS)}")
        if not check_with_ort(Path(args.cache), net, args.seed):
            failed.append(net)
    if failed:
        print(f"models.py: FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
