"""Tests of the net lists of `peers.py` and `models.py`; no numpy needed (models.py is
read, not imported): `python3 -m unittest discover -s bench/peers -p 'test_*.py'`."""

import ast
import contextlib
import io
import unittest
from pathlib import Path

import peers

MODELS = ast.parse((Path(__file__).resolve().parent / "models.py").read_text())


def models_constant(name):
    """The value of models.py's module-level `name = <literal>`."""
    for node in MODELS.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    raise AssertionError(f"models.py has no {name}")


class Nets(unittest.TestCase):
    def test_peers_accepts_every_net_models_builds(self):
        nets = ast.literal_eval(models_constant("NETS"))
        self.assertEqual(peers.NETS, nets)
        builders = models_constant("BUILDERS")
        self.assertEqual(tuple(ast.literal_eval(k) for k in builders.keys), nets)

    def test_old_nets_keep_their_index(self):
        # The per-tensor RNG key holds NETS.index(net): new nets go after these, so the
        # cached files of the first three stay byte-identical.
        nets = ast.literal_eval(models_constant("NETS"))
        self.assertEqual(nets[:3], ("vgg16", "resnet50", "alexnet"))

    def test_only_yolo_has_other_shapes(self):
        self.assertEqual(ast.literal_eval(models_constant("INPUT_SHAPES")),
                         {"yolov2_tiny": (1, 3, 416, 416)})
        self.assertEqual(ast.literal_eval(models_constant("OUTPUT_SHAPES")),
                         {"yolov2_tiny": (1, 125, 13, 13)})

    def test_default_run_and_new_nets(self):
        self.assertEqual(peers.parse_args([]).nets, list(peers.DEFAULT_NETS))
        self.assertEqual(peers.parse_args(["--nets", "mobilenet_v2,yolov2_tiny"]).nets,
                         ["mobilenet_v2", "yolov2_tiny"])
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            peers.parse_args(["--nets", "resnet18"])


if __name__ == "__main__":
    unittest.main()
