#!/usr/bin/env python3
"""Turn the onnx wheel's light_* models into ordinary models with weights.

The light models carry no weights: every weight is a ConstantOfShape node
filling a stored shape with 0.02. This rewrites each such node into an
initializer of the same name and shape filled with seeded random values of a
realistic distribution (He-normal for conv / gemm weights, BatchNorm scale
near 1 and variance near 1, small biases and means), so that numerics, speed
and compression are exercised on weights that look like trained ones.
Deterministic: the same onnx version gives byte-identical files.

usage: materialize_light.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def role(name: str, consumers) -> str:
    for op, idx in consumers:
        if op in ("Conv", "ConvTranspose", "Gemm", "MatMul") and idx == 1:
            return "weight"
        if op == "BatchNormalization":
            return {1: "scale", 2: "bias", 3: "mean", 4: "var"}.get(idx, "bias")
        if op == "PRelu" and idx == 1:
            return "slope"
    return "bias"


def materialize(src: str, dst: str, seed: int) -> None:
    model = onnx.load(src)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for n in g.node:
        for i, x in enumerate(n.input):
            consumers.setdefault(x, []).append((n.op_type, i))
    rng = np.random.default_rng(seed)
    keep_nodes = []
    new_inits = []
    used_shapes = set()
    for n in g.node:
        if n.op_type == "ConstantOfShape" and n.input and n.input[0] in inits:
            shape = tuple(int(d) for d in numpy_helper.to_array(inits[n.input[0]]))
            out = n.output[0]
            r = role(out, consumers.get(out, []))
            if r == "weight":
                fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
                # Gemm weights in these models are [out, in] (transB=1); conv [out, in/g, kh, kw].
                v = rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))
            elif r == "scale":
                v = 1.0 + 0.1 * rng.standard_normal(shape)
            elif r == "var":
                v = 1.0 + 0.1 * np.abs(rng.standard_normal(shape))
            elif r == "slope":
                v = 0.25 + 0.01 * rng.standard_normal(shape)
            else:
                v = 0.05 * rng.standard_normal(shape)
            new_inits.append(numpy_helper.from_array(v.astype(np.float32), out))
            used_shapes.add(n.input[0])
        else:
            keep_nodes.append(n)
    del g.node[:]
    g.node.extend(keep_nodes)
    remaining = [t for t in g.initializer if t.name not in used_shapes or any(t.name in n.input for n in keep_nodes)]
    del g.initializer[:]
    g.initializer.extend(remaining + new_inits)
    kept = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in used_shapes or i.name in kept]
    del g.input[:]
    g.input.extend(inputs)
    # IR 3 wants every initializer listed as a graph input; IR 4+ does not.
    model.ir_version = max(model.ir_version, 7)
    onnx.checker.check_model(model)
    with open(dst, "wb") as f:
        f.write(model.SerializeToString())


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for i, fn in enumerate(sorted(f for f in os.listdir(light) if f.endswith(".onnx"))):
        materialize(os.path.join(light, fn), os.path.join(out, fn), seed=1000 + i)
        print("materialized", fn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
