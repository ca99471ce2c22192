#!/usr/bin/env python3
"""Check Core ML ML Program packages (.mlpackage) with coremltools itself, and against shrinkwrap.

usage: mlprogram_crosscheck.py [--shrinkwrap BIN] [--weights] [--npz FILE] [--run] [--strict]
                               [--only PATTERN] [--export MODEL.onnx ...] [--export-dir DIR]
                               [PATH ...]

PATH: a .mlpackage, a folder (its *.mlpackage, with manifest.json if there is
one: Scripts/make_keras_mlprogram.py writes it) or a manifest.json.
Runs in .venv (coremltools 9.0, numpy); Core ML cannot predict on Linux, so
"runs" means shrinkwrap's interpreter.

Per package, each a line (ok / FAIL / SKIP with the numbers), then a summary:
  1. load    ct.models.MLModel(path, skip_model_load=True) reads the package
             (Manifest.json, the spec, the weights folder); it must be an mlProgram.
  2. program coremltools.converters.mil.frontend.milproto.load.load(spec,
             spec.specificationVersion, weights_dir) rebuilds the MIL program
             from the spec and weight.bin; every op's type inference runs there.
  3. weights (--npz FILE for one package, or --weights: `shrinkwrap inspect
             PKG --weights-npz TMP`, our decoder's value of every constant)
             coremltools.optimize.coreml.decompress_weights(model) turns every
             constexpr op into a const; every const of that program (nested
             blocks too) whose name is in the .npz must equal ours bit for bit
             (float32 views; float16 consts widened exactly; integer consts by
             value); a mismatch reports how many values differ and the largest
             distance in float32 ulps. Every compressed (constexpr_*) weight of
             the package must be in the .npz.
  4. run     (--run; packages with manifest cases) `shrinkwrap run PKG -i
             NAME=FILE --output-dir TMP` on each case; every output must satisfy
             max|ours - ref| <= rtol * max(1, max|ref|) with the entry's
             tolerance (the manifest says what the reference is).
When shrinkwrap refuses to read a package (the importer), steps 3 and 4 say
SKIP "not imported" with its message: loud, but not a failure unless --strict.

--export MODEL ...: first writes every MODEL (e.g. .testdata/models/light_*.onnx)
as packages into --export-dir with `shrinkwrap convert` (float32, float16) and
`shrinkwrap compress -o` (every case of EXPORT_CASES), then checks each package
written as above (steps 1-3; with --weights, our npz comes from reading our own
package back). A case the exporter refuses is reported as "exporter refused"
(a failure only with --strict).

Exit status 1 if any check failed, 2 if there was nothing to check.
"""
import argparse
import fnmatch
import glob
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck_common import finish, last_error, max_diff, ours_run, sanitized  # noqa: E402

# (tag, shrinkwrap arguments after MODEL -o OUT): what --export writes per model.
EXPORT_CASES = [
    ("fp32", ["convert"]),
    ("fp16-compute", ["convert", "--precision", "float16"]),
    ("fp16-compute-ios15", ["convert", "--precision", "float16", "--target", "iOS15"]),
    ("fp16", ["compress", "--mode", "fp16"]),
    ("linear8-tensor", ["compress", "--mode", "linear", "--bits", "8", "--symmetric", "--granularity", "per-tensor"]),
    ("linear8-channel", ["compress", "--mode", "linear", "--bits", "8", "--symmetric", "--granularity", "per-channel"]),
    ("linear8-channel-exact-zero", ["compress", "--mode", "linear", "--bits", "8", "--exact-zero", "--granularity", "per-channel"]),
    ("linear4-block32", ["compress", "--mode", "linear", "--bits", "4", "--symmetric", "--granularity", "per-block:32"]),
    ("linear8-block32", ["compress", "--mode", "linear", "--bits", "8", "--symmetric", "--granularity", "per-block:32"]),
    ("kmeans1", ["compress", "--mode", "kmeans-lut", "--bits", "1"]),
    ("kmeans2", ["compress", "--mode", "kmeans-lut", "--bits", "2"]),
    ("kmeans4", ["compress", "--mode", "kmeans-lut", "--bits", "4"]),
    ("kmeans6", ["compress", "--mode", "kmeans-lut", "--bits", "6"]),
    ("kmeans8", ["compress", "--mode", "kmeans-lut", "--bits", "8"]),
    ("linear-lut4", ["compress", "--mode", "linear-lut", "--bits", "4"]),
    ("kmeans3-g16", ["compress", "--mode", "kmeans-lut", "--bits", "3", "--granularity", "per-grouped-channel:16"]),
    ("kmeans4-g16", ["compress", "--mode", "kmeans-lut", "--bits", "4", "--granularity", "per-grouped-channel:16"]),
]
NOT_IMPORTED_HINTS = ("unsupported", "not read yet", "cannot read", "not a model")


class Skip(Exception):
    """A check that could not run (shrinkwrap refused the package)."""


def coremltools_modules():
    warnings.simplefilter("ignore")
    os.environ.setdefault("TQDM_DISABLE", "1")  # decompress_weights' pass progress bars
    import coremltools as ct
    import coremltools.optimize.coreml as cto
    from coremltools.converters.mil.frontend.milproto import load as milproto_load
    return ct, cto, milproto_load


def iter_ops(block):
    for op in block.operations:
        yield op
        for b in op.blocks:
            yield from iter_ops(b)


def const_values(program):
    """name -> value of every const; an fp16 const read through a cast (our float16 weights: const X_fp16,
    cast -> X) also under the cast's name, widened (exactly) to float32."""
    out = {}
    for op in iter_ops(program.functions["main"]):
        if op.op_type == "const" and op.outputs[0].val is not None:
            out[op.outputs[0].name] = op.outputs[0].val
    for op in iter_ops(program.functions["main"]):
        if op.op_type == "cast" and op.x.op is not None and op.x.op.op_type == "const" and op.x.val is not None:
            if np.asarray(op.x.val).dtype == np.float16:
                out.setdefault(op.outputs[0].name, np.asarray(op.x.val).astype(np.float32))
    return out


def decompressed_consts(mods, ml):
    """The consts after decompress_weights' own pass (WeightDecompressor: every constexpr_* op replaced by a
    const of its decoded value, under the op's output name). decompress_weights then re-converts the program
    through coremltools' default passes, which fuse (conv + batchnorm, …) and rename constants; the values
    compared are the ones its pass made, before that."""
    ct, cto, _ = mods
    from coremltools.models import utils as ct_utils
    from coremltools.optimize.coreml._quantization_passes import WeightDecompressor
    prog = ct_utils._apply_graph_pass(ml, WeightDecompressor(op_selector=lambda op: True), return_pymil_prog=True)  # noqa: SLF001
    return const_values(prog)


def ulp_distance(a, b):
    """Largest distance in float32 ulps (monotone integer mapping of the bit patterns)."""
    def ordered(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return int(np.max(np.abs(ordered(a) - ordered(b)))) if a.size else 0


def compare_weights(theirs, ours_npz, compressed, exact=True):
    """(compared, problems) of coremltools' decompressed consts vs our .npz arrays."""
    problems, compared = [], 0
    missing = sorted(n for n in compressed if n not in ours_npz)
    if missing:
        problems.append(f"{len(missing)} compressed weights not in our npz, e.g. {missing[:3]}")
    for name, value in theirs.items():
        if name not in ours_npz:
            continue
        t, o = np.asarray(value), np.asarray(ours_npz[name])
        compared += 1
        if t.size != o.size or (t.shape != o.shape and t.size > 1):
            problems.append(f"{name}: shape {list(t.shape)} (coremltools) vs {list(o.shape)} (ours)")
            continue
        if np.issubdtype(t.dtype, np.floating):
            t32, o32 = t.astype(np.float32).reshape(-1), o.astype(np.float32).reshape(-1)
            if not np.array_equal(t32.view(np.uint32), o32.view(np.uint32)):
                n = int(np.count_nonzero(t32.view(np.uint32) != o32.view(np.uint32)))
                # coremltools' own packages: our AffineWeights keeps a zero point z as the float bias -scale*z,
                # so scale*(q - z) may come out one float32 rounding away (at most an ulp of the largest value).
                bound = 0.0 if exact else float(np.spacing(np.float32(np.max(np.abs(t32)))))
                if float(np.max(np.abs(t32.astype(np.float64) - o32))) > bound:
                    problems.append(f"{name}: {n} of {t.size} values differ, max {ulp_distance(t32, o32)} ulp")
        elif not np.array_equal(t.reshape(-1).astype(np.int64), o.reshape(-1).astype(np.int64)):
            problems.append(f"{name}: integer values differ")
    return compared, problems


def shrinkwrap_npz(shrinkwrap, path, tmp, timeout):
    out = os.path.join(tmp, "ours.npz")
    r = subprocess.run([shrinkwrap, "inspect", path, "--weights-npz", out], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise Skip("not imported: " + last_error(r.stderr))
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def run_cases(args, path, entry, root, tmp):
    """Worst rel diff over the manifest cases; raises AssertionError on a failure, Skip if not imported."""
    rtol = entry["tolerance"]["rtol"]
    worst = 0.0
    for case in entry["cases"]:
        feeds = {name: np.load(os.path.join(root, f)) for name, f in case["inputs"].items()}
        try:
            outs = ours_run(args.shrinkwrap, path, feeds, tmp, args.timeout)
        except RuntimeError as e:
            if any(h in str(e) for h in NOT_IMPORTED_HINTS):
                raise Skip("not imported: " + str(e)) from e
            raise AssertionError(str(e)) from e
        for name, f in case["outputs"].items():
            ref = np.load(os.path.join(root, f))
            got = outs.get(sanitized(name))
            if got is None:
                raise AssertionError(f"no output {name} (got {sorted(outs)})")
            if got.size != ref.size:
                raise AssertionError(f"{name}: shape {list(got.shape)}, reference {list(ref.shape)}")
            rel = max_diff(got.reshape(ref.shape), ref) / max(1.0, float(np.max(np.abs(ref))))
            worst = max(worst, rel)
            if rel > rtol:
                raise AssertionError(f"{name}: rel diff {rel:.3g} > {rtol:g} ({entry.get('reference', '?')})")
    return worst


def check_package(args, mods, path, entry, root):
    """(failed, skipped, line) for one package."""
    ct, cto, milproto_load = mods
    name = os.path.basename(path)
    try:
        ml = ct.models.MLModel(path, skip_model_load=True)
        spec = ml.get_spec()
    except Exception as e:  # noqa: BLE001 - any load failure is the finding
        return True, False, f"FAIL {name}: coremltools cannot load it: {e}"
    if spec.WhichOneof("Type") != "mlProgram":
        return True, False, f"FAIL {name}: model type {spec.WhichOneof('Type')}, expected mlProgram"
    try:
        prog = milproto_load.load(spec, spec.specificationVersion, ml.weights_dir)
    except Exception as e:  # noqa: BLE001
        return True, False, f"FAIL {name}: milproto.load cannot rebuild the program: {e}"
    ops = list(iter_ops(prog.functions["main"]))
    compressed = {op.outputs[0].name for op in ops if op.op_type.startswith("constexpr_")}
    notes = [f"spec {spec.specificationVersion}, {len(ops)} ops, {len(compressed)} constexpr"]
    skips, failed = [], False
    with tempfile.TemporaryDirectory() as tmp:
        ours = None
        try:
            if args.npz:
                with np.load(args.npz) as z:
                    ours = {k: z[k] for k in z.files}
            elif args.weights:
                ours = shrinkwrap_npz(args.shrinkwrap, path, tmp, args.timeout)
        except Skip as s:
            skips.append(("weights", str(s)))
        if ours is not None:
            theirs = decompressed_consts(mods, ml)
            # Our packages must decode bit for bit; coremltools-made ones (a manifest entry) within one rounding.
            ours_package = entry is None or "roundtrip" in entry
            compared, problems = compare_weights(theirs, ours, compressed, exact=ours_package)
            if compared == 0:
                problems.append(f"no const name in common with our npz ({len(ours)} arrays)")
            failed |= bool(problems)
            what = "bit-identical" if ours_package else "equal (within one float32 rounding)"
            notes.append(f"{compared} weights {what}" if not problems else "; ".join(problems[:4]))
        if entry is not None and "roundtrip" in entry:
            try:
                notes.append(f"round trip rel {roundtrip(args, path, entry['roundtrip'], tmp):.1e}")
            except AssertionError as e:
                failed = True
                notes.append(str(e))
            except RuntimeError as e:
                failed = True
                notes.append(f"round trip: {e}")
        if args.run and entry is not None and "cases" in entry:
            try:
                worst = run_cases(args, path, entry, root, tmp)
                notes.append(f"{len(entry['cases'])} cases within rel {entry['tolerance']['rtol']:g} "
                             f"(worst {worst:.2e})")
            except Skip as s:
                skips.append(("run", str(s)))
            except AssertionError as e:
                failed = True
                notes.append(f"run: {e}")
    if skips:
        reasons = {}
        for what, why in skips:
            why = why.replace("shrinkwrap run: ", "").replace("shrinkwrap: error: ", "").replace(path + ": ", "")
            reasons.setdefault(why, []).append(what)
        notes.append("SKIPPED " + "; ".join(f"{'+'.join(w)} {why}" for why, w in reasons.items()))
        failed |= args.strict
    status = "FAIL" if failed else ("SKIP" if skips else "ok  ")
    return failed, bool(skips), f"{status} {name}: " + "; ".join(notes)


def collect(paths):
    """[(package path, manifest entry or None, root)] for the PATH arguments."""
    out = []
    for p in paths:
        if p.endswith(".json") or os.path.isfile(os.path.join(p, "manifest.json")) and not p.endswith(".mlpackage"):
            manifest = p if p.endswith(".json") else os.path.join(p, "manifest.json")
            root = os.path.dirname(os.path.abspath(manifest))
            with open(manifest) as f:
                entries = json.load(f).get("packages", [])
            out += [(os.path.join(root, e["file"]), e, root) for e in entries]
        elif p.endswith(".mlpackage"):
            out.append((p, None, os.path.dirname(p)))
        elif os.path.isdir(p):
            out += [(q, None, p) for q in sorted(glob.glob(os.path.join(p, "*.mlpackage")))]
        else:
            sys.exit(f"{p}: not a .mlpackage, a folder or a manifest.json")
    return out


def corpus_models(ids):
    """[(path, extra shrinkwrap arguments)] of corpus models with their real inputs' shapes pinned, as
    `make coverage` converts them (--input-shape; an integer scalar given once for every sample, --input-value)."""
    import corpus
    import corpus_coverage as coverage
    out = []
    for entry in corpus.load_manifest()["models"]:
        if ids != ["all"] and entry["id"] not in ids:
            continue
        path = corpus.model_path(entry)
        found = coverage.real_inputs(entry, 1) if os.path.exists(path) else None
        if found is None:
            print(f"SKIP corpus model {entry['id']}: not cached with real inputs (make corpus corpus-inputs)")
            continue
        samples, pins, _ = found
        fixed = coverage.fixed_parameters(samples)
        extra = []
        for name, dims in pins.items():
            if name not in fixed:
                extra += ["--input-shape", f"{name}=" + ",".join(str(d) for d in dims)]
        for name, value in fixed.items():
            extra += ["--input-value", f"{name}={value}"]
        out.append((path, extra))
    return out


def export_all(args, models):
    """Writes every model x EXPORT_CASES; returns ([(package, None, dir)], [refused lines]).
    `models`: paths, or (path, extra arguments) pairs."""
    os.makedirs(args.export_dir, exist_ok=True)
    made, refused = [], []
    for item in models:
        model, extra = item if isinstance(item, tuple) else (item, [])
        stem = os.path.splitext(os.path.basename(model))[0]
        for tag, argv in EXPORT_CASES:
            out = os.path.join(args.export_dir, f"{stem}.{tag}.mlpackage")
            # Round trip: the package read back must run like what it was written from — the source, or the
            # source compressed the same way, written as .onnx by the same `compress` (one compression for both
            # outputs, so the weights the package could not hold compressed stay float32 in both).
            reference, rtol = model, 1e-5
            cmd = [args.shrinkwrap, argv[0], model, "-o", out] + argv[1:] + extra
            if argv[0] == "compress":
                reference = os.path.join(args.export_dir, f"{stem}.{tag}.reference.onnx")
                cmd += ["-o", reference, "--min-elements", "0"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            if r.returncode != 0 or not os.path.isdir(out):
                refused.append(f"{stem}.{tag}: exporter refused: {last_error(r.stderr)}")
                continue
            if argv[0] == "convert" and extra:
                # Pinned shapes or inputs made constants: the reference is the source converted the same way.
                reference = os.path.join(args.export_dir, f"{stem}.{tag}.reference.onnx")
                subprocess.run([args.shrinkwrap, "convert", model, "-o", reference] + extra, capture_output=True, text=True,
                               timeout=args.timeout)
            spec = {"reference": reference, "rtol": rtol}
            if "--precision" in argv and "float16" in argv:
                # Computing in float16 rounds every float constant and op parameter (activation slopes,
                # epsilons) to float16; our interpreter reads the package back and computes in float32. No
                # float32 graph has exactly those values, so the bound is relative to what float16 weights alone
                # do (the source with its weights compressed to fp16): within 3x that, and at least 1e-2.
                fp16 = os.path.join(args.export_dir, f"{stem}.{tag}.fp16-weights.onnx")
                subprocess.run([args.shrinkwrap, "compress", model, "-o", fp16, "--mode", "fp16", "--min-elements", "0"] + extra,
                               capture_output=True, text=True, timeout=args.timeout)
                spec.update(rtol=1e-2, fp16_weights=fp16)
            made.append((out, {"roundtrip": spec}, args.export_dir))
    return made, refused


def roundtrip(args, path, spec, tmp):
    """Worst rel diff of `shrinkwrap run` on the package vs on its reference, seeded inputs; raises AssertionError."""
    ref = spec["reference"]
    if not os.path.exists(ref):
        raise AssertionError(f"no reference model {ref}")
    # The package's inputs: fixed shapes (the source may have free dims), the source's names (restored on reading).
    info = json.loads(subprocess.run([args.shrinkwrap, "inspect", path, "--json"], capture_output=True, text=True,
                                     timeout=args.timeout).stdout)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in info["inputs"]:
        shape = [int(d) if str(d).isdigit() else 1 for d in i["shape"]]
        x = rng.standard_normal(shape)
        feeds[i["name"]] = x.astype(np.float32) if i["dtype"].startswith("float") else np.zeros(shape, dtype=i["dtype"])
    want = ours_run(args.shrinkwrap, ref, feeds, os.path.join(tmp, "reference"), args.timeout)

    def rel(outs):
        worst = 0.0
        for name, r in want.items():
            g = outs.get(name)
            if g is None:
                raise AssertionError(f"round trip: no output {name} (got {sorted(outs)})")
            worst = max(worst, max_diff(g.reshape(r.shape), r) / max(1.0, float(np.max(np.abs(r)))))
        return worst
    worst = rel(ours_run(args.shrinkwrap, path, feeds, os.path.join(tmp, "package"), args.timeout))
    limit, why = spec["rtol"], ""
    if spec.get("fp16_weights") and os.path.exists(spec["fp16_weights"]):
        d16 = rel(ours_run(args.shrinkwrap, spec["fp16_weights"], feeds, os.path.join(tmp, "fp16-weights"), args.timeout))
        limit, why = max(limit, 3 * d16), f" (fp16 weights alone: {d16:.2g})"
    if worst > limit:
        raise AssertionError(f"round trip: rel diff {worst:.3g} > {limit:.3g} vs {os.path.basename(ref)}{why}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--shrinkwrap", help="the shrinkwrap binary (for --weights, --run, --export)")
    ap.add_argument("--weights", action="store_true", help="compare decoded weights with `shrinkwrap inspect --weights-npz`")
    ap.add_argument("--npz", help="our decoded weights for the one package given")
    ap.add_argument("--run", action="store_true", help="run the manifest cases with `shrinkwrap run`")
    ap.add_argument("--strict", action="store_true", help="a skipped check (not imported / exporter refused) fails")
    ap.add_argument("--only", action="append", default=[], help="package names matching this glob or substring")
    ap.add_argument("--export", nargs="+", default=[], metavar="MODEL", help="write these models as packages first")
    ap.add_argument("--corpus", nargs="+", default=[], metavar="ID",
                    help="also write these corpus models (or 'all') in every form, their real inputs' shapes pinned")
    ap.add_argument("--export-dir", default=os.path.join(tempfile.gettempdir(), "shrinkwrap-mlprogram-export"))
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    if (args.weights or args.run or args.export or args.corpus) and not args.shrinkwrap:
        ap.error("--weights, --run and --export need --shrinkwrap")
    mods = coremltools_modules()
    items = collect(args.paths)
    refused = []
    if args.export or args.corpus:
        made, refused = export_all(args, args.export + (corpus_models(args.corpus) if args.corpus else []))
        items += made
    if args.only:
        items = [i for i in items if any(fnmatch.fnmatch(os.path.basename(i[0]), f"*{o}*") for o in args.only)]
    if args.npz and len(items) != 1:
        ap.error(f"--npz is for one package ({len(items)} given)")
    if not items and not refused:
        print("mlprogram cross-check: nothing to check", file=sys.stderr)
        return 2
    failed, skipped = [], 0
    for path, entry, root in items:
        bad, skip, line = check_package(args, mods, path, entry, root)
        print(line, flush=True)
        skipped += skip
        if bad:
            failed.append(os.path.basename(path))
    for line in refused:
        print(("FAIL " if args.strict else "SKIP ") + line)
        if args.strict:
            failed.append(line.split(":")[0])
    if skipped or refused:
        print(f"\n{skipped} packages with skipped checks, {len(refused)} exports refused"
              + ("" if args.strict else " (not failures without --strict)"))
    finish(len(items) + len(refused), failed, "packages")


if __name__ == "__main__":
    sys.exit(main())
