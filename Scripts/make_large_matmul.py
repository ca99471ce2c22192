#!/usr/bin/env python3
"""Writes the large-model benchmark: 8 chained MatMuls X[1,4096] · W_i[4096,4096]
with a Relu between them, seeded random float32 weights (8 × 64 MiB = 512 MiB of
raw_data in one ONNX file, under protobuf's 2 GiB limit).

Usage: make_large_matmul.py OUT.onnx [--layers 8] [--size 4096] [--seed 1] [--check]
--check runs the written file in onnxruntime once and compares with NumPy.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers, size, seed):
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    current = "x"
    for i in range(layers):
        w = (rng.standard_normal((size, size), dtype=np.float32) / np.float32(np.sqrt(size))).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name=f"w{i}"))
        out = f"mm{i}"
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [out], name=f"matmul{i}"))
        current = out
        if i < layers - 1:
            nodes.append(helper.make_node("Relu", [current], [f"relu{i}"], name=f"relu{i}"))
            current = f"relu{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output"))
    graph = helper.make_graph(nodes, "matmul_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])],
                              initializer=inits)
    model = helper.make_model(graph, producer_name="shrinkwrap-bench", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def check(path, layers, size, seed):
    import onnxruntime as ort
    model = onnx.load(path)
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    x = np.random.default_rng(seed + 1).standard_normal((1, size), dtype=np.float32)
    ref = x
    for i in range(layers):
        ref = ref @ weights[f"w{i}"]
        if i < layers - 1:
            ref = np.maximum(ref, 0)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": x})
    err = float(np.max(np.abs(got - ref)))
    scale = float(np.max(np.abs(ref))) or 1.0
    print(f"onnxruntime: output {got.shape}, max |ort - numpy| = {err:.3g} (max |y| = {scale:.3g})")
    return err <= 1e-3 * scale


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true", help="run it in onnxruntime once")
    a = p.parse_args()
    model = build(a.layers, a.size, a.seed)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, a.out)
    print(f"wrote {a.out}: {os.path.getsize(a.out)} bytes ({a.layers} × MatMul [{a.size},{a.size}])")
    if a.check and not check(a.out, a.layers, a.size, a.seed):
        print("onnxruntime disagrees with NumPy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
