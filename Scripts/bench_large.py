#!/usr/bin/env python3
"""Large-model benchmark (issue 25): a 512 MiB float32 ONNX model (8 chained
MatMuls of [4096, 4096], Scripts/make_large_matmul.py) is

  (a) imported: the wall time of `shrinkwrap inspect MODEL` (process start,
      mapping the file, protobuf parse, tensor decode, graph validation, the
      printed summary); import MB/s = file bytes / 10^6 / those seconds;
  (b) converted: the wall time of `shrinkwrap convert MODEL -o X.mlmodel
      --mode linear --bits 8` (import, compression, Core ML export, atomic write);

each RUNS times (the median counts), with the peak RSS of each process (wait4).
The written .mlmodel is loaded by coremltools (spec only: Core ML cannot run
on Linux) and its 8-bit weights counted. Writes a Markdown table and JSON with
pass / fail against: convert <= 5 s, import >= 300 MB/s, peak RSS <= 2x the file.
Exit status 1 when a target is missed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TARGETS = {"convert_seconds": 5.0, "import_mb_per_s": 300.0, "peak_rss_over_file": 2.0}


def timed(cmd):
    """Wall seconds, peak RSS (bytes) and CPU seconds (user + system) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed ({code}): {err.strip()}")
    return seconds, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss is in KiB on Linux


def check_mlmodel(path):
    """Loads the spec in coremltools; counts layers whose weights are 8-bit linear codes."""
    import coremltools as ct
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    nn = spec.neuralNetwork if spec.WhichOneof("Type") == "neuralNetwork" else spec.neuralNetworkClassifier
    quantized, raw_bytes = 0, 0
    for layer in nn.layers:
        if layer.WhichOneof("layer") != "innerProduct":
            continue
        w = layer.innerProduct.weights
        if w.quantization.numberOfBits == 8 and w.quantization.WhichOneof("QuantizationType") == "linearQuantization":
            quantized += 1
            raw_bytes += len(w.rawValue)
    return {"spec_version": spec.specificationVersion, "layers": len(nn.layers),
            "int8_inner_products": quantized, "int8_weight_bytes": raw_bytes}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shrinkwrap", required=True)
    p.add_argument("--model", default="out/bench/large/matmul8x4096.onnx")
    p.add_argument("--output", default="out/bench/large/matmul8x4096.linear8.mlmodel")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--markdown", default="out/bench/large.md")
    p.add_argument("--json", default="out/bench/large.json")
    a = p.parse_args()

    if not os.path.exists(a.model):
        gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_large_matmul.py")
        subprocess.run([sys.executable, gen, a.model], check=True)
    size = os.path.getsize(a.model)

    imports, converts = [], []
    for _ in range(a.runs):
        imports.append(timed([a.shrinkwrap, "inspect", a.model]))
        converts.append(timed([a.shrinkwrap, "convert", a.model, "-o", a.output, "--mode", "linear", "--bits", "8"]))
    import_s = statistics.median(s for s, _, _ in imports)
    convert_s = statistics.median(s for s, _, _ in converts)
    import_rss = max(r for _, r, _ in imports)
    convert_rss = max(r for _, r, _ in converts)
    import_cpu = statistics.median(c for _, _, c in imports)
    convert_cpu = statistics.median(c for _, _, c in converts)
    mlmodel = check_mlmodel(a.output)
    mlmodel["bytes"] = os.path.getsize(a.output)

    result = {
        "model": a.model, "file_bytes": size, "runs": a.runs,
        "import": {"command": f"shrinkwrap inspect {a.model}", "seconds": [round(s, 3) for s, _, _ in imports], "median_cpu_seconds": round(import_cpu, 3),
                   "median_seconds": round(import_s, 3), "mb_per_s": round(size / 1e6 / import_s, 1),
                   "peak_rss_bytes": import_rss, "peak_rss_over_file": round(import_rss / size, 2)},
        "convert": {"command": f"shrinkwrap convert {a.model} -o {a.output} --mode linear --bits 8",
                    "seconds": [round(s, 3) for s, _, _ in converts], "median_seconds": round(convert_s, 3),
                    "median_cpu_seconds": round(convert_cpu, 3),
                    "peak_rss_bytes": convert_rss, "peak_rss_over_file": round(convert_rss / size, 2)},
        "mlmodel": mlmodel, "targets": TARGETS,
    }
    checks = {
        "convert_seconds": convert_s <= TARGETS["convert_seconds"],
        "import_mb_per_s": size / 1e6 / import_s >= TARGETS["import_mb_per_s"],
        "import_peak_rss": import_rss <= TARGETS["peak_rss_over_file"] * size,
        "convert_peak_rss": convert_rss <= TARGETS["peak_rss_over_file"] * size,
        "mlmodel_loads": mlmodel["int8_inner_products"] == 8,
    }
    result["pass"] = checks
    ok = all(checks.values())

    def mark(b):
        return "pass" if b else "FAIL"

    mib = 1 << 20
    lines = [
        f"# Large model: {os.path.basename(a.model)} ({size / mib:.1f} MiB, 8 × MatMul [4096, 4096] float32)",
        "",
        f"Median of {a.runs} runs; peak RSS is the largest of the runs (wait4 on each process); "
        f"CPU is user + system seconds (all threads). Load average when run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.",
        "",
        "| step | what is timed | seconds | CPU s | rate | peak RSS | RSS / file | target | result |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| import | `shrinkwrap inspect` (map, parse, decode, validate, print) | {import_s:.2f} | {import_cpu:.2f} | "
        f"{size / 1e6 / import_s:.0f} MB/s | {import_rss / mib:.0f} MiB | {import_rss / size:.2f}× | ≥ 300 MB/s, ≤ 2× | "
        f"{mark(checks['import_mb_per_s'] and checks['import_peak_rss'])} |",
        f"| convert | `shrinkwrap convert -o .mlmodel --mode linear --bits 8` (whole command) | {convert_s:.2f} | {convert_cpu:.2f} | "
        f"{size / 1e6 / convert_s:.0f} MB/s | {convert_rss / mib:.0f} MiB | {convert_rss / size:.2f}× | ≤ 5 s, ≤ 2× | "
        f"{mark(checks['convert_seconds'] and checks['convert_peak_rss'])} |",
        "",
        f"Written: {mlmodel['bytes'] / mib:.1f} MiB .mlmodel, specification {mlmodel['spec_version']}; coremltools loads it: "
        f"{mlmodel['int8_inner_products']} of {mlmodel['layers']} layers are innerProducts with 8-bit linear weights "
        f"({mlmodel['int8_weight_bytes'] / mib:.1f} MiB of codes) — {mark(checks['mlmodel_loads'])}.",
        "",
        "Runs (s): import " + ", ".join(f"{s:.2f}" for s, _, _ in imports) + "; convert " + ", ".join(f"{s:.2f}" for s, _, _ in converts),
    ]
    md = "\n".join(lines) + "\n"
    for path, text in ((a.markdown, md), (a.json, json.dumps(result, indent=2, sort_keys=True) + "\n")):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    print(md, end="")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
