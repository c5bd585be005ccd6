"""Tests of the per-layer pairing (`layers.py`); no onnxruntime needed:
`python3 -m unittest discover -s bench/peers -p 'test_*.py'`."""

import unittest

import layers


def tao(name, kernel, flops, ms=1.0):
    return {"name": name, "kernel": kernel, "flops": flops, "ms": ms}


def ort_node(name, op, inputs, outputs, ms=1.0):
    return {"name": name, "op": op, "inputs": inputs, "outputs": outputs, "ms": ms}


# ResNet50's layer2.0 tail as each engine runs it: ORT runs the downsample before conv3.
CONV3 = tao("layer2_0_conv3", "conv 1x1/1 direct", 2 * 512 * 28 * 28 * 128)
DOWN = tao("layer2_0_downsample_0", "conv 1x1/2 direct", 2 * 512 * 28 * 28 * 256)
ORT_DOWN = ort_node("bn_46", "Conv", [[1, 256, 56, 56], [512, 256, 1, 1], [512]],
                    [[1, 512, 28, 28]])
ORT_CONV3 = ort_node("bn_44", "Conv", [[1, 128, 28, 28], [512, 128, 1, 1], [512]],
                     [[1, 512, 28, 28]])


class Keys(unittest.TestCase):
    def test_conv_keys_agree(self):
        self.assertEqual(layers.tao_key(CONV3),
                         layers.ort_key("Conv", ORT_CONV3["inputs"], ORT_CONV3["outputs"]))
        self.assertNotEqual(layers.tao_key(DOWN), layers.tao_key(CONV3))

    def test_grouped_conv_counts_channels_per_group(self):
        # A depthwise 3x3 over 32 channels: 1 input channel per group.
        key = layers.ort_key("Conv", [[1, 32, 112, 112], [32, 1, 3, 3]], [[1, 32, 112, 112]])
        self.assertEqual(key, ("conv", 3, 3, 2 * 32 * 112 * 112 * 9))

    def test_other_ops_pair_by_kind(self):
        self.assertEqual(layers.tao_key(tao("pool", "maxpool", 9)), ("maxpool",))
        self.assertEqual(layers.ort_key("MaxPool", [], []), ("maxpool",))
        self.assertEqual(layers.ort_key("FusedGemm", [], []), ("fc",))
        self.assertEqual(layers.ort_key("ReorderOutput", [], []), ("ReorderOutput",))


class Pairing(unittest.TestCase):
    def keyed(self, rows, key):
        return [{**r, "key": key(r)} for r in rows]

    def test_pairs_by_what_layers_compute_not_position(self):
        t = self.keyed([CONV3, DOWN], layers.tao_key)
        o = self.keyed([ORT_DOWN, ORT_CONV3],
                       lambda n: layers.ort_key(n["op"], n["inputs"], n["outputs"]))
        pairs, tao_only, ort_only = layers.pair(t, o)
        self.assertEqual([(a["name"], b["name"]) for a, b in pairs],
                         [("layer2_0_conv3", "bn_44"), ("layer2_0_downsample_0", "bn_46")])
        self.assertEqual((tao_only, ort_only), ([], []))

    def test_unpaired_layers_are_kept_in_order(self):
        t = self.keyed([tao("p1", "maxpool", 1), tao("fc", "fc", 2), tao("p2", "maxpool", 1)],
                       layers.tao_key)
        o = self.keyed([ort_node("r", "ReorderInput", [], []),
                        ort_node("m1", "MaxPool", [], []), ort_node("m2", "MaxPool", [], [])],
                       lambda n: layers.ort_key(n["op"], n["inputs"], n["outputs"]))
        pairs, tao_only, ort_only = layers.pair(t, o)
        self.assertEqual([(a["name"], b["name"]) for a, b in pairs], [("p1", "m1"), ("p2", "m2")])
        self.assertEqual([r["name"] for r in tao_only], ["fc"])
        self.assertEqual([r["name"] for r in ort_only], ["r"])


class Compare(unittest.TestCase):
    def test_medians_sums_and_table(self):
        rounds_tao = [[{**CONV3, "ms": ms}, {**DOWN, "ms": 2 * ms}] for ms in (1.0, 3.0, 2.0)]
        rounds_ort = [{"bn_46": {**ORT_DOWN, "ms": 2.0}, "bn_44": {**ORT_CONV3, "ms": ms},
                       "r": ort_node("r", "ReorderOutput", [], [], 0.5)}
                      for ms in (1.0, 1.0, 4.0)]
        result = layers.compare("resnet50", 2, rounds_tao, rounds_ort)
        self.assertEqual(result["rounds"], 3)
        first = result["pairs"][0]
        self.assertEqual((first["taopipe"]["ms"], first["ort"]["ms"]), (2.0, 1.0))
        self.assertEqual([r["name"] for r in result["ort_only"]], ["r"])
        self.assertAlmostEqual(result["taopipe_ms"], 6.0)
        self.assertAlmostEqual(result["ort_ms"], 3.5)
        text = layers.table(result)
        self.assertIn("| layer2_0_conv3 | conv 1x1/1 direct | bn_44 | 2.000 | 1.000 | 0.50× |",
                      text)
        self.assertIn("Only in ORT: r (ReorderOutput) 0.500 ms.", text)


if __name__ == "__main__":
    unittest.main()
