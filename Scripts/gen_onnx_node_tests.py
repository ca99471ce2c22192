#!/usr/bin/env python3
"""Generate the ONNX backend node-test data from the onnx wheel's generators.

The onnx wheel no longer ships onnx/backend/test/data/node, but the cases in
onnx/backend/test/case/node/*.py still produce it. This writes, for every
case, DIR/<test name>/model.onnx and DIR/<test name>/test_data_set_N/
{input,output}_M.pb, the layout of the original suite. Tensor inputs only:
cases with sequence, map or optional inputs are written with a SKIP file
naming the reason, so the Swift runner can count them.

It also lays out the model suites the wheel still ships (light, simple,
pytorch-converted, pytorch-operator) under OUTDIR/../onnx-models/<suite>/ in
the same layout. The light_* models ship without inputs: as the onnx runner
does, input_0 is arange(n)/n in the input's shape and output_0 is the stored
light_<name>_output_0.pb.

usage: gen_onnx_node_tests.py OUTDIR
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def main() -> int:
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cases = node_cases.collect_testcases(None) if node_cases.collect_testcases.__code__.co_argcount else node_cases.collect_testcases()
    written = skipped = 0
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        model = case.model
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        reason = None
        for vi in list(model.graph.input) + list(model.graph.output):
            if not vi.type.HasField("tensor_type"):
                reason = "non-tensor value '%s' (sequence/map/optional)" % vi.name
                break
        if reason:
            with open(os.path.join(d, "SKIP"), "w") as f:
                f.write(reason + "\n")
            skipped += 1
            continue
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds, exist_ok=True)
            for kind, values, infos in (("input", inputs, model.graph.input), ("output", outputs, model.graph.output)):
                for j, v in enumerate(values):
                    if isinstance(v, onnx.TensorProto):
                        t = v
                    else:
                        t = numpy_helper.from_array(np.asarray(v), infos[j].name if j < len(infos) else "")
                    with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(t.SerializeToString())
        written += 1
    models = os.path.join(os.path.dirname(os.path.abspath(out)), "onnx-models")
    write_model_suites(models)
    print("onnx node tests: %d written, %d with non-tensor values (marked SKIP) -> %s" % (written, skipped, out))
    return 0


def write_model_suites(out: str) -> None:
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    if os.path.isdir(out):
        shutil.rmtree(out)
    for suite in ("simple", "pytorch-converted", "pytorch-operator"):
        src = os.path.join(data, suite)
        shutil.copytree(src, os.path.join(out, suite))
    light = os.path.join(data, "light")
    for fn in sorted(os.listdir(light)):
        if not fn.endswith(".onnx"):
            continue
        name = fn[: -len(".onnx")]
        d = os.path.join(out, "light", name)
        ds = os.path.join(d, "test_data_set_0")
        os.makedirs(ds)
        shutil.copy(os.path.join(light, fn), os.path.join(d, "model.onnx"))
        shutil.copy(os.path.join(light, name + "_output_0.pb"), os.path.join(ds, "output_0.pb"))
        model = onnx.load(os.path.join(light, fn))
        inits = {i.name for i in model.graph.initializer}
        k = 0
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim)
            n = int(np.prod(shape))
            x = (np.arange(n).reshape(shape) / n).astype(np.float32)
            with open(os.path.join(ds, "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(x, vi.name).SerializeToString())
            k += 1
    print("onnx model suites -> %s" % out)


if __name__ == "__main__":
    sys.exit(main())
