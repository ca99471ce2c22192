#!/usr/bin/env python3
"""Screenshot a shrinkwrap HTML report in headless Chromium and check it rendered.

Checks on the PNG: the page is not blank, the plot's series colours (read
from the HTML's inline SVG) each paint enough pixels to be a visible legend
line and markers, and the red random-data warning shows when the report has
one. The page must be self-contained: Chromium runs with networking pointed
at nothing, so an external asset would be missing from the picture.

Exit 0 = checked, 1 = failed, 2 = Chromium is not installed (the caller
prints the skip loudly).

usage: html_screenshot.py --html REPORT.html --png OUT.png
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def hex_rgb(h):
    h = h.lstrip("#")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--html", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=2400)
    a = ap.parse_args()

    chromium = find_chromium()
    if chromium is None:
        print("SKIPPED: no chromium on PATH (Debian package 'chromium'); the HTML report was not rendered")
        return 2
    html = open(a.html, encoding="utf-8").read()
    external = re.findall(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", html)
    if external:
        print(f"FAIL: {a.html} references external assets: {external[:3]}")
        return 1

    profile = tempfile.mkdtemp(prefix="sw-chromium-")
    out = os.path.abspath(a.png)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
           f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9", "--no-first-run", "--disable-extensions",
           f"--window-size={a.width},{a.height}", f"--screenshot={out}", "file://" + os.path.abspath(a.html)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if p.returncode != 0 or not os.path.exists(out):
        print(f"FAIL: chromium exited {p.returncode}: {p.stderr.strip()[-800:]}")
        return 1

    img = np.asarray(Image.open(out).convert("RGB")).astype(np.int32)
    h, w, _ = img.shape
    if (w, h) != (a.width, a.height):
        print(f"FAIL: screenshot is {w}x{h}, expected {a.width}x{a.height}")
        return 1
    non_white = int((img.sum(axis=2) < 3 * 250).sum())
    if non_white < 0.01 * w * h:
        print(f"FAIL: the page looks blank ({non_white} non-white pixels)")
        return 1

    problems = []
    series = re.findall(r'<g class="series" data-mode="([^"]+)">\s*(?:<polyline[^>]*stroke="(#[0-9a-fA-F]{6})"|<circle[^>]*fill="(#[0-9a-fA-F]{6})")', html)
    if not series:
        problems.append("the HTML has no plot series")
    for mode, c1, c2 in series:
        rgb = np.array(hex_rgb(c1 or c2))
        hits = int((np.abs(img - rgb).max(axis=2) <= 8).sum())
        print(f"  series {mode} ({c1 or c2}): {hits} pixels")
        if hits < 60:
            problems.append(f"series {mode} paints only {hits} pixels in {c1 or c2}")
    if 'class="warning"' in html:
        banner = int((np.abs(img - np.array(hex_rgb("#fdecea"))).max(axis=2) <= 3).sum())
        print(f"  random-data warning banner: {banner} pixels")
        if banner < 2000:
            problems.append(f"the random-data warning is in the HTML but shows only {banner} pixels")
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print(f"html screenshot: {out} ({w}x{h}, {non_white} non-white pixels, {len(series)} plot series visible)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
