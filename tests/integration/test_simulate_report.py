"""The HTML report: what it says first, how it groups nodes, the spread across seeds, what
produced it, and how it lays out in a real browser (headless Chromium) at 800 and 1,600 px."""
import json
import os
import re
import shutil
import struct
import subprocess
import unittest
import zlib

from support import TempDirTest, clean_env, run

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


def headings(html):
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h2[^>]*>(.*?)</h2>", html)]


def table_after(html, heading):
    """The text of each row of the first table after the <h2> `heading`, cells joined by |."""
    start = html.index(f">{heading}")
    table = html[html.index("<table", start):html.index("</table>", start)]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        rows.append("|".join(re.sub(r"<[^>]+>", " ", c).strip() for c in cells))
    return rows


class SimulateReportContentTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        cls.dir = __import__("tempfile").mkdtemp(prefix="powerctl-report-")
        cls.report = os.path.join(cls.dir, "my report.html")
        cls.result = run("simulate", "--seeds", "3", "--load", "30,60", "--report", cls.report)
        with open(cls.report) as f:
            cls.html = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def test_the_outcome_comes_first_per_load(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        self.assertEqual(headings(self.html)[0], "Outcome")
        rows = table_after(self.html, "Outcome")
        self.assertEqual(rows[0].split("|"), ["load", "powerctl", "saves vs kube-scheduler's default",
                                              "saves vs PEAKS", "lower bound",
                                              "powerctl above the bound"])
        self.assertEqual([r.split("|")[0] for r in rows[1:]], ["30%", "60%"])
        # The same figures the terminal shows first (means of the seeds).
        doc = json.loads(run("simulate", "--seeds", "3", "--load", "30,60", "-o", "json").stdout)
        by = {s["scorer"]: s for s in doc["summary"]}
        saving = by["default"]["loads"][1]["powerctlSavingPercent"]
        shown = float(rows[2].split("|")[2].split("%")[0])
        self.assertAlmostEqual(shown, saving, delta=0.051)

    def test_every_figure_carries_its_spread_across_seeds(self):
        rows = table_after(self.html, "Outcome")[1:]
        for row in rows:
            for cell in row.split("|")[1:]:
                self.assertRegex(cell, r"[-+]?[\d.]+ to [-+]?[\d.]+, median", row)
        single = self.path("one.html")
        self.assertEqual(run("simulate", "--seeds", "1", "--report", single).returncode, 0)
        with open(single) as f:
            self.assertFalse("median" in f.read())  # one seed has no spread

    def test_nodes_are_grouped_by_server_type(self):
        rows = table_after(self.html, "By server type")
        types = [r.split("|")[0].split()[0] for r in rows[1:]]
        self.assertEqual(types, ["gen2007", "gen2009", "gen2011", "gen2019"])
        for row in rows[1:]:
            self.assertEqual(row.split("|")[1], "6")
            self.assertIn("pods placed", row)
        self.assertIn("8 cores, 16 GiB", rows[1])

    def test_the_command_line_and_version_that_produced_it(self):
        version = run("version", "--short").stdout.strip()
        self.assertIn(f"powerctl {version} (commit ", self.html)
        # Quoted as a shell needs it: the file name has a space.
        self.assertIn(f"powerctl simulate --seeds 3 --load 30,60 --report '{self.report}'",
                      self.html)

    def test_self_contained(self):
        for forbidden in ("<script", "src=", "href=", "url(", "@import", "<link"):
            self.assertNotIn(forbidden, self.html)


def measured_copy(report, directory):
    """A copy of the report with a script that writes the page's measurements into the DOM,
    for --dump-dom; the report itself runs nothing."""
    script = """<script>
addEventListener('load', () => {
  const d = document.documentElement;
  let widest = 0;
  for (const e of document.querySelectorAll('body *'))
    widest = Math.max(widest, e.getBoundingClientRect().right);
  const width = s => Math.round(document.querySelector(s).getBoundingClientRect().width);
  const p = document.createElement('pre');
  p.id = 'measure';
  p.textContent = JSON.stringify({viewport: innerWidth, scrollWidth: d.scrollWidth,
    widest: Math.ceil(widest), loadChart: width('#load + svg'), nodeChart: width('#nodes + svg'),
    outcome: width('table.outcome')});
  document.body.appendChild(p);
});
</script>"""
    with open(report) as f:
        html = f.read()
    path = os.path.join(directory, "measured.html")
    with open(path, "w") as f:
        f.write(html.replace("</body>", script + "</body>"))
    return path


@unittest.skipIf(chromium() is None,
                 "chromium is not installed (packaging/install-deps.sh installs it)")
class SimulateReportLayoutTest(TempDirTest):
    def measure(self, width):
        report = self.path("report.html")
        r = run("simulate", "--seeds", "2", "--report", report)
        self.assertEqual(r.returncode, 0, r.stderr)
        page = measured_copy(report, self.tmp)
        dom = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size={width},1000", "--run-all-compositor-stages-before-draw",
             "--virtual-time-budget=5000", "--dump-dom", f"file://{page}"],
            capture_output=True, text=True, timeout=120, env={**clean_env(), "HOME": self.tmp})
        found = re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout)
        self.assertIsNotNone(found, dom.stderr[-2000:])
        m = json.loads(found.group(1))
        self.assertEqual(m["viewport"], width)
        return m

    def test_no_horizontal_scrolling_at_800_px(self):
        m = self.measure(800)
        self.assertLessEqual(m["scrollWidth"], 800, m)
        self.assertLessEqual(m["widest"], 800, m)
        self.assertGreaterEqual(m["loadChart"], 600, m)  # the charts still fill the width

    def test_the_charts_use_the_space_at_1600_px(self):
        m = self.measure(1600)
        self.assertLessEqual(m["scrollWidth"], 1600, m)
        self.assertGreaterEqual(m["nodeChart"], 1400, m)
        self.assertGreaterEqual(m["outcome"], 1400, m)
        # Two columns: the scorer table and the load chart side by side.
        self.assertGreaterEqual(m["loadChart"], 600, m)
        self.assertLessEqual(m["loadChart"], 800, m)


if __name__ == "__main__":
    unittest.main()
