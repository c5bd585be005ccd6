"""VGG16, ResNet50 and AlexNet as torchvision defines them, with torchvision-like random
weights, written both as a safetensors file (torchvision's ``state_dict`` names and
shapes, which taopipe's ``frame --weights`` loads) and as an ONNX model (opset 17, the
graph torchvision's export gives: NCHW input ``[1, 3, 224, 224]``, Conv, inference-mode
BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool, Flatten, Gemm with transB=1).

No torch: the architectures are written out from torchvision's ``vgg.py`` (config "D",
no batchnorm), ``resnet.py`` (ResNet50 v1.5: the stride of a down-sampling bottleneck is
on its 3x3 convolution) and ``alexnet.py``. Their adaptive average pools are the identity
at 224x224 (VGG's 7x7, AlexNet's 6x6) and dropout is the identity at inference, so neither
appears in the graph.

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

NETS = ("vgg16", "resnet50", "alexnet")
INPUT_SHAPE = (1, 3, 224, 224)
CLASSES = 1000
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
        self.params: OrderedDict[str, np.ndarray] = OrderedDict()
        self.buffers: OrderedDict[str, np.ndarray] = OrderedDict()  # num_batches_tracked
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

    def conv(self, name, x, cin, cout, k, stride=1, pad=0, bias=True,
             weight_init=kaiming_normal_fan_out, bias_init=zeros):
        w = self._param(f"{name}.weight", (cout, cin, k, k), weight_init)
        inputs = [x, w]
        if bias:
            inputs.append(self._param(f"{name}.bias", (cout,), bias_init))
        return self._node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                          pads=[pad] * 4, dilations=[1, 1], group=1)

    def bn(self, name, x, c):
        """Inference-mode batchnorm with random running statistics and affine parameters
        near torchvision's init (weight 1, bias 0, mean 0, var 1), so that folding it into
        the convolution is actually exercised."""
        inputs = [
            x,
            self._param(f"{name}.weight", (c,), uniform(0.5, 1.5)),
            self._param(f"{name}.bias", (c,), normal(0.1)),
            self._param(f"{name}.running_mean", (c,), normal(0.1)),
            self._param(f"{name}.running_var", (c,), uniform(0.5, 1.5)),
        ]
        self.buffers[f"{name}.num_batches_tracked"] = np.zeros((), dtype=np.int64)
        return self._node("BatchNormalization", inputs, epsilon=BN_EPS, momentum=0.9)

    def relu(self, x):
        return self._node("Relu", [x])

    def maxpool(self, x, k, stride, pad=0):
        return self._node("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride],
                          pads=[pad] * 4, ceil_mode=0)

    def add(self, a, b):
        return self._node("Add", [a, b])

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


BUILDERS = {"vgg16": vgg16, "resnet50": resnet50, "alexnet": alexnet}


# --- files ----------------------------------------------------------------------------------

def to_onnx(net: Net, output: str):
    """The ONNX model of ``net``: input ``input`` [1, 3, 224, 224], output ``logits`` [1, 1000]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = []
    for op, inputs, out, attrs in net.nodes:
        nodes.append(helper.make_node(op, inputs, ["logits" if out == output else out],
                                      name=out, **attrs))
    graph = helper.make_graph(
        nodes,
        net.name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES])],
        initializer=[numpy_helper.from_array(v, name=k) for k, v in net.params.items()],
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


def input_file(cache: Path, seed: int) -> Path:
    return cache / f"input-seed{seed}-v{FORMAT}.f32"


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


def make_input(seed: int) -> np.ndarray:
    """A random image in [0, 1), ImageNet-normalised like torchvision's transforms:
    [1, 3, 224, 224] float32."""
    rng = np.random.default_rng([seed, 0x1A9E])
    image = rng.random(INPUT_SHAPE, dtype=np.float32)
    mean = np.array(IMAGENET_MEAN, dtype=np.float32).reshape(1, 3, 1, 1)
    std = np.array(IMAGENET_STD, dtype=np.float32).reshape(1, 3, 1, 1)
    return np.ascontiguousarray((image - mean) / std, dtype=np.float32)


def ensure_input(cache: Path, seed: int, log=print) -> tuple[Path, np.ndarray]:
    """The input tensor as raw little-endian f32 (cached) and as an array."""
    path = input_file(cache, seed)
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        log(f"input: writing {path.name}")
        tmp = path.with_suffix(".tmp")
        make_input(seed).astype("<f4").tofile(tmp)
        _publish(tmp, path)
    x = np.fromfile(path, dtype="<f4")
    if x.size != int(np.prod(INPUT_SHAPE)):
        raise SystemExit(f"{path}: expected {int(np.prod(INPUT_SHAPE))} f32 values, found "
                         f"{x.size}; delete it to make it again")
    return path, x.astype(np.float32).reshape(INPUT_SHAPE)
