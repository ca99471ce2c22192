"""corpus_inputs.py's audio models: silero VAD (faster-whisper's and silero-vad's own), the
openWakeWord chain (melspectrogram → embedding → hey-mycroft, each fed the previous model's real
outputs) and basic-pitch. Speech: espeak-ng (Debian) resampled to 16 kHz mono by sox; music: Bach
chorales from music21's corpus written as MIDI and rendered by fluidsynth with FluidR3_GM
(fluid-soundfont-gm), resampled by sox. Every tool runs with fixed settings: same bytes each run
(sox -R -D: no dither, whose noise is random by default)."""
import functools
import os
import subprocess
import tempfile
import wave

import numpy as np

import corpus_inputs as ci

SENTENCES = [  # (voice, words per minute, text, a wake phrase?); espeak-ng says "mycroft" best spelled "my croft"
    ("en-us", 120, "hey mycroft", True),
    ("en-us+f3", 150, "hey mycroft", True),
    ("en-us", 150, "hey my croft", True),
    ("en-gb", 150, "hey mycroft", True),
    ("en-us", 140, "hey my croft, what time is it", False),  # the windows sit at the end, after the question
    ("en-us", 150, "The weather today will be sunny with a light breeze.", False),
    ("en-gb", 150, "Please remember to lock the front door before you leave.", False),
    ("en-us", 150, "Seven hundred and twenty four people attended the meeting.", False),
    ("en-gb", 150, "Hey Microsoft, this is not the word you are listening for.", False),
]
CHORALES = ("bach/bwv66.6", "bach/bwv7.7", "bach/bwv26.6", "bach/bwv40.8")
SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2"


def tool(*args):
    done = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"corpus-inputs: {args[0]} failed: {done.stderr.decode(errors='replace').strip()[:300]}")


def read_wav(path):
    """Mono 16-bit PCM as float32 in [-1, 1)."""
    with wave.open(path) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0


@functools.lru_cache(maxsize=None)
def speech(rate=16000):
    """(voice, speed, text, wake, float32 audio at `rate`) per sentence: espeak-ng, then sox to mono
    16-bit at `rate`."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (voice, speed, text, wake) in enumerate(SENTENCES):
            raw, wav = os.path.join(tmp, f"{n}.raw.wav"), os.path.join(tmp, f"{n}.wav")
            tool("espeak-ng", "-v", voice, "-s", str(speed), "-w", raw, text)
            tool("sox", "-R", "-D", raw, "-r", str(rate), "-c", "1", "-b", "16", "-e", "signed-integer", wav)
            out.append((voice, speed, text, wake, read_wav(wav)))
    return out


@functools.lru_cache(maxsize=None)
def music(rate):
    """(chorale, float32 audio at `rate`, its MIDI pitches): music21 → MIDI → fluidsynth (no reverb
    or chorus, 44.1 kHz float) → sox to mono 16-bit at `rate`."""
    from music21 import corpus as m21
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, name in enumerate(CHORALES):
            score = m21.parse(name)
            mid, raw, wav = (os.path.join(tmp, f"{n}.{ext}") for ext in ("mid", "raw.wav", "wav"))
            score.write("midi", fp=mid)
            tool("fluidsynth", "-ni", "-q", "-R", "0", "-C", "0", "-g", "0.6", "-r", "44100", "-O", "float",
                 "-T", "wav", "-F", raw, SOUNDFONT, mid)
            tool("sox", "-R", "-D", raw, "-r", str(rate), "-c", "1", "-b", "16", "-e", "signed-integer", wav)
            pitches = sorted({p.midi for p in score.pitches})
            out.append((name, read_wav(wav), pitches))
    return out


def speech_and_others(rate):
    """(about, audio): the sentences, the chorales (music: no speech) and 2 s of digital silence."""
    items = [({"speech": text, "voice": voice, "words_per_minute": speed, "wake_phrase": wake, "expected": "speech"}, a)
             for voice, speed, text, wake, a in speech(rate)]
    items += [({"music": name, "expected": "no speech"}, a) for name, a, _ in music(rate)]
    return items + [({"silence": "2 s of zeros", "expected": "no speech"}, np.zeros(2 * rate, np.float32))]


def fixed(audio, n, offset=0):
    """audio[offset:offset + n], zero-padded at the end to n samples."""
    out = np.zeros(n, np.float32)
    part = audio[offset:offset + n]
    out[:len(part)] = part
    return out


# --------------------------------------------------------------------------------------------
# silero VAD
# --------------------------------------------------------------------------------------------

def silero_v6():
    """faster-whisper's SileroVADModel: 512-sample chunks, each with the previous chunk's last 64
    samples in front (zeros for the first), all chunks of 2.048 s in one call; h = c = zeros."""
    samples, probs = [], []
    for about, audio in speech_and_others(16000):
        chunks = fixed(audio, 64 * 512).reshape(64, 512)
        context = np.roll(chunks[:, -64:], 1, axis=0)
        context[0] = 0
        x = np.concatenate([context, chunks], axis=1).astype(np.float32)
        samples.append({"inputs": {"input": x}, **about})
    zero = np.zeros((1, 1, 128), np.float32)
    for s in samples:
        probs.append(float(np.mean(ci.run("silero-vad-v6", {**s["inputs"], "h": zero, "c": zero})[0])))
    pos = [p for p, s in zip(probs, samples) if s["expected"] == "speech"]
    neg = [p for p, s in zip(probs, samples) if s["expected"] != "speech"]
    return {"samples": samples, "broadcast": {"h": zero, "c": zero},
            "source": "9 espeak-ng sentences, 4 fluidsynth chorales, silence at 16 kHz; 64 chunks of 64 + 512 samples",
            "sanity": f"mean speech probability: speech {ci.fmt(pos)}, music / silence {ci.fmt(neg)}"}


def silero_if():
    """silero_vad's OnnxWrapper at 16 kHz: one 512-sample chunk with the stream's previous 64 samples
    in front; state = zeros [2, 1, 128], sr = 16000 (both one file, broadcast). Chunks at 0.4, 0.8
    and 1.2 s into each recording."""
    samples = []
    for about, audio in speech_and_others(16000):
        for at in (6400, 12800, 19200):
            x = fixed(audio, 576, at - 64)[None]
            samples.append({"inputs": {"input": x}, **about, "chunk_start": at})
    state, sr = np.zeros((2, 1, 128), np.float32), np.array(16000, np.int64)
    probs = [float(ci.run("silero-vad-if", {**s["inputs"], "state": state, "sr": sr})[0].reshape(-1)[0]) for s in samples]
    pos = [p for p, s in zip(probs, samples) if s["expected"] == "speech"]
    neg = [p for p, s in zip(probs, samples) if s["expected"] != "speech"]
    return {"samples": samples, "broadcast": {"state": state, "sr": sr},
            "source": "chunks of 64 + 512 samples of the 9 espeak-ng sentences, 4 chorales and silence at 16 kHz",
            "sanity": f"speech probability (fresh state): speech mean {np.mean(pos):.2f} max {max(pos):.2f}, "
                      f"music / silence mean {np.mean(neg):.2f} max {max(neg):.2f}"}


# --------------------------------------------------------------------------------------------
# openWakeWord: melspectrogram → embedding → hey mycroft
# --------------------------------------------------------------------------------------------

def pcm(audio):
    """The float32 of int16 samples, as openwakeword feeds its melspectrogram model."""
    return np.round(audio * 32768.0).clip(-32768, 32767).astype(np.float32)


def melspectrogram():
    samples, means = [], []
    for about, audio in speech_and_others(16000):
        x = pcm(fixed(audio, 16000))[None]
        samples.append({"inputs": {"input": x}, **about})
        spec = ci.run("oww-melspectrogram", {"input": x})[0]
        means.append(float(np.mean(spec / 10 + 2)))
    return {"samples": samples, "source": "the first second of the 9 espeak-ng sentences, 4 chorales, silence; "
            "16 kHz, int16-range float32", "sanity": f"mean of x/10 + 2 per sample: {ci.fmt(means)}"}


@functools.lru_cache(maxsize=None)
def clip_features():
    """Per recording (1 s of zeros either side, as Model.predict_clip pads): its melspectrogram
    (x/10 + 2, [frames, 32]) and its embeddings ([n, 96], windows of 76 frames every 8)."""
    out = []
    for about, audio in speech_and_others(16000):
        padded = np.concatenate([np.zeros(16000, np.float32), audio, np.zeros(16000, np.float32)])
        spec = np.squeeze(ci.run("oww-melspectrogram", {"input": pcm(padded)[None]})[0]) / 10 + 2
        windows = [spec[i:i + 76] for i in range(0, spec.shape[0] - 75, 8)]
        emb = np.concatenate([ci.run("oww-embedding", {"input_1": w[None, :, :, None].astype(np.float32)})[0].reshape(1, 96)
                              for w in windows])
        out.append((about, spec.astype(np.float32), emb.astype(np.float32), len(audio) / 16000))
    return out


def embedding():
    samples = []
    for about, spec, _, _ in clip_features():
        starts = np.linspace(0, spec.shape[0] - 76, 3).round().astype(int)
        for start in starts:
            samples.append({"inputs": {"input_1": spec[start:start + 76][None, :, :, None].copy()}, **about,
                            "first_frame": int(start)})
    norms = [float(np.linalg.norm(ci.run("oww-embedding", s["inputs"])[0])) for s in samples]
    return {"samples": samples, "source": "76-frame windows (start, middle, end) of oww-melspectrogram's output "
            "(x/10 + 2) on each padded recording", "sanity": f"embedding norm min {min(norms):.1f} max {max(norms):.1f}"}


def hey_mycroft():
    """16 consecutive embeddings around the end of the words (8 frames = 80 ms per embedding): the
    window whose last embedding is the first to end after the speech, and those 2 steps before and after."""
    samples = []
    for about, _, emb, seconds in clip_features():
        end = int(np.ceil((1.0 + seconds) * 100 / 8)) - 76 // 8  # first embedding whose window ends after the words
        for last in (end - 2, end, end + 2):
            last = int(np.clip(last, 15, emb.shape[0] - 1))
            label = "hey mycroft" if about.get("wake_phrase") else "other"
            samples.append({"inputs": {"input_1": emb[last - 15:last + 1][None].copy()}, **about, "expected": label,
                            "last_embedding": last})
    scores = [float(ci.run("oww-hey-mycroft", s["inputs"])[0].reshape(-1)[0]) for s in samples]
    best = [max(scores[i:i + 3]) for i in range(0, len(scores), 3)]
    pos = [b for b, s in zip(best, samples[::3]) if s["expected"] == "hey mycroft"]
    neg = [b for b, s in zip(best, samples[::3]) if s["expected"] != "hey mycroft"]
    return {"samples": samples, "source": "16 consecutive oww-embedding outputs at the end of each recording (3 windows)",
            "sanity": f"best score of a recording's 3 windows: wake phrases {ci.fmt(pos)}, others {ci.fmt(neg)}"}


# --------------------------------------------------------------------------------------------
# basic-pitch
# --------------------------------------------------------------------------------------------

N_SAMPLES, OVERLAP = 43844, 30 * 256  # basic_pitch.constants: AUDIO_N_SAMPLES; 30 overlapping frames x FFT_HOP


@functools.lru_cache(maxsize=None)
def pitch_windows():
    """basic_pitch.inference.get_audio_input: OVERLAP/2 zeros in front, windows of 43844 every
    43844 - OVERLAP samples (the first 3 of each chorale), plus one window of silence."""
    out = []
    for name, audio, pitches in music(22050):
        audio = np.concatenate([np.zeros(OVERLAP // 2, np.float32), audio])
        for k in range(3):
            start = k * (N_SAMPLES - OVERLAP)
            out.append(({"music": name, "window_start": start, "score_pitches": pitches},
                        fixed(audio, N_SAMPLES, start)[None, :, None]))
    return out + [({"silence": "zeros", "score_pitches": []}, np.zeros((1, N_SAMPLES, 1), np.float32))]


def basic_pitch(model_id):
    name = ci.manifest_models()[model_id]["inputs"][0]["name"]
    samples = [{"inputs": {name: x}, **about} for about, x in pitch_windows()]
    if model_id in ("basic-pitch-mlpackage", "basic-pitch-savedmodel"):
        why = "no Core ML runtime on Linux" if model_id.endswith("mlpackage") else "the network basic-pitch-onnx was converted from, checked there"
        return {"samples": samples, "source": "as basic-pitch-onnx (the same windows)",
                "sanity": f"not run ({why}): the same bytes as basic-pitch-onnx's windows"}
    hits, total, silent = 0, 0, 0.0
    for s in samples:
        outs = ci.run(model_id, s["inputs"])
        note = [o for o in outs if o.shape[-1] == 88][-1][0]  # StatefulPartitionedCall:1 = note
        on = np.argwhere(note > 0.5)
        if "silence" in s:
            silent = float(note.max())
            continue
        total += len(on)
        hits += sum(int(p) + 21 in s["score_pitches"] for _, p in on)
    return {"samples": samples, "source": "3 windows of each of 4 fluidsynth-rendered Bach chorales (music21) at "
            "22050 Hz, and a silent window", "sanity": f"note cells > 0.5 whose pitch is in the score: {hits} / {total}; "
            f"silent window max {silent:.2f}"}


GENERATORS = {
    "silero-vad-v6": silero_v6,
    "silero-vad-if": silero_if,
    "oww-melspectrogram": melspectrogram,
    "oww-embedding": embedding,
    "oww-hey-mycroft": hey_mycroft,
    "basic-pitch-onnx": lambda: basic_pitch("basic-pitch-onnx"),
    "basic-pitch-tflite": lambda: basic_pitch("basic-pitch-tflite"),
    "basic-pitch-mlpackage": lambda: basic_pitch("basic-pitch-mlpackage"),
    "basic-pitch-savedmodel": lambda: basic_pitch("basic-pitch-savedmodel"),
}
