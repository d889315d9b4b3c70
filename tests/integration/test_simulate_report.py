"""The HTML report renders in a real browser: headless Chromium screenshots it, and the
picture has the size asked for and the charts' colours in it (not a blank page)."""
import os
import shutil
import struct
import subprocess
import unittest
import zlib

from support import TempDirTest, run

WIDTH, HEIGHT = 1400, 1800
# The scorers' chart colours (core/simulate/report_html.cpp).
COLOURS = {"powerctl": (0x1B, 0x9E, 0x77), "default": (0x75, 0x70, 0xB3),
           "minimizepower": (0xD9, 0x5F, 0x02), "peaks": (0xE7, 0x29, 0x8A)}


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) for an 8-bit RGB or RGBA PNG, stdlib only."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise AssertionError(f"unexpected PNG format depth={depth} colour={colour}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, previous, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        previous = line
    return width, height, rows


@unittest.skipIf(chromium() is None,
                 "chromium is not installed (packaging/install-deps.sh installs it)")
class SimulateReportBrowserTest(TempDirTest):
    def test_chromium_renders_the_charts(self):
        report = self.path("report.html")
        r = run("simulate", "--seeds", "2", "--report", report)
        self.assertEqual(r.returncode, 0, r.stderr)
        png = self.path("report.png")
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        shot = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", f"file://{report}"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "HOME": self.tmp})
        self.assertTrue(os.path.exists(png), shot.stderr)
        width, height, rows = read_png(png)
        self.assertEqual((width, height), (WIDTH, HEIGHT))
        pixels = [p for row in rows[::4] for p in row[::4]]
        self.assertGreater(len(set(pixels)), 20, "the page looks blank")
        for scorer, colour in COLOURS.items():
            near = sum(1 for p in pixels if all(abs(p[k] - colour[k]) <= 6 for k in range(3)))
            self.assertGreater(near, 20, f"no {scorer} colour in the charts")


if __name__ == "__main__":
    unittest.main()
