#!/usr/bin/env python3
"""A float64 evaluation of an ONNX model, the arbiter when our interpreter and onnxruntime differ.

Two float32 implementations of an ill-conditioned graph can differ by more than the source tolerance
while both are close to the exact result, or one of them is the outlier: on one real sample of
ppocr-v4-rec, onnxruntime is 2.2e-4 away from the float64 value (and differs from itself by 8e-4
between its optimisation levels). The coverage report then asks which side the exact value is on.

The model is rewritten to float64 (float initializers, Constant tensors, Cast targets, declared
types) and run by onnx's reference evaluator, which computes in numpy with the values' own type.
Its BatchNormalization for opsets 9-13 takes the presence of a `momentum` attribute for training
mode (it then normalizes with the batch's own statistics); opset 9-13 BatchNormalization has no
training mode, so the inference formula replaces it here.

    python Scripts/corpus_float64.py MODEL.onnx SAMPLES.json --out DIR
writes DIR/<k>/out_<i>.npy per sample k (SAMPLES.json as corpus_coverage's peer mode takes it).
Runs in the .venv (onnx, numpy).
"""
import argparse
import json
import os
import sys


def as_float64(model):
    """The model with every float32 tensor, type and Cast target made float64 (subgraphs included)."""
    import numpy as np
    from onnx import AttributeProto, TensorProto, numpy_helper

    def tensor(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    def graph(g):
        for t in g.initializer:
            tensor(t)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
                vi.type.tensor_type.elem_type = TensorProto.DOUBLE
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.TENSOR:
                    tensor(a.t)
                elif a.type == AttributeProto.GRAPH:
                    graph(a.g)
                elif n.op_type in ("Cast", "RandomNormalLike", "EyeLike") and a.name in ("to", "dtype") and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.DOUBLE
    graph(model.graph)
    return model


def evaluator(path):
    import numpy as np
    import onnx
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class BatchNormalization(OpRun):
        op_domain = ""

        def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None, training_mode=None, spatial=None):
            if training_mode:
                raise ValueError("BatchNormalization in training mode is not an inference graph")
            eps = 1e-5 if epsilon is None else epsilon
            shape = [1, -1] + [1] * (x.ndim - 2)
            y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)
            return (y.astype(x.dtype),)

    return ReferenceEvaluator(as_float64(onnx.load(path)), new_ops=[BatchNormalization])


def main():
    import numpy as np
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("samples")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    ev = evaluator(a.model)
    names = list(ev.input_names)
    for k, sample in enumerate(json.load(open(a.samples))):
        given = {n: np.load(path) for n, path in sample}
        if not set(names) <= set(given):  # inputs given by position
            given = {n: np.load(path) for n, (_, path) in zip(names, sample)}
        feed = {n: (v.astype(np.float64) if v.dtype == np.float32 else v) for n, v in given.items() if n in names}
        outs = ev.run(None, feed)
        folder = os.path.join(a.out, str(k))
        os.makedirs(folder, exist_ok=True)
        for i, o in enumerate(outs):
            np.save(os.path.join(folder, f"out_{i}.npy"), np.asarray(o))
    return 0


if __name__ == "__main__":
    sys.exit(main())
