"""Helpers the cross-check scripts share: running `shrinkwrap run` and comparing outputs."""
import os
import subprocess
import sys

import numpy as np


def sanitized(name):
    """The file name `shrinkwrap run --output-dir` gives an output called `name` (without .npy)."""
    s = "".join(c if c.isalpha() or c.isnumeric() or c in "-_." else "_" for c in name)
    return s or "output"


def last_error(stderr):
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    errs = [l for l in lines if "error" in l.lower()]
    return (errs or lines or ["(no message)"])[-1]


def max_diff(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


def ours_run(shrinkwrap, path, feeds, tmp, timeout):
    """`shrinkwrap run` on `feeds` (saved as .npy under tmp); its outputs by sanitized name."""
    out = os.path.join(tmp, "ours")
    os.makedirs(out, exist_ok=True)
    cmd = [shrinkwrap, "run", path, "--output-dir", out]
    for k, (name, x) in enumerate(feeds.items()):
        f = os.path.join(tmp, f"input{k}.npy")
        np.save(f, x)
        cmd += ["-i", f"{name}={f}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("shrinkwrap run: " + last_error(r.stderr))
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}


def finish(total, failed, what="exports"):
    """Prints the summary line (and the failed names) and exits 1 on any failure."""
    print(f"\n{total} {what}: {total - len(failed)} passed, {len(failed)} failed")
    if failed:
        print("failed: " + ", ".join(failed))
    sys.exit(1 if failed else 0)
