#!/usr/bin/env python3
"""Generate the ONNX backend node-test data from the onnx wheel's generators.

The onnx wheel no longer ships onnx/backend/test/data/node, but the cases in
onnx/backend/test/case/node/*.py still produce it. This writes, for every
case, DIR/<test name>/model.onnx and DIR/<test name>/test_data_set_N/
{input,output}_M.pb, the layout of the original suite. Tensor inputs only:
cases with sequence, map or optional inputs are written with a SKIP file
naming the reason, so the Swift runner can count them.

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
    print("onnx node tests: %d written, %d with non-tensor values (marked SKIP) -> %s" % (written, skipped, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
