"""The documentation stays honest: README.md is a front page of at most 300 lines that links every
page of docs/, every relative link in the Markdown resolves to a file (and a #anchor to a heading
of that file, by GitHub's rules), and the pages carry no lab-notebook residue."""
import glob
import os
import re
import unittest

ROOT = os.environ.get("POWERCTL_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

README_MAX_LINES = 300

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def prose_lines(text):
    """The lines of a Markdown text outside fenced code blocks."""
    in_fence = False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield line


def slug(heading_text):
    """GitHub's anchor for a heading: the rendered text, lower-cased, without punctuation
    (letters, digits, '_', '-' and spaces stay), spaces turned into '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading_text)  # a link's text only
    text = text.replace("`", "")
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "_- ")
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor GitHub makes for the headings of a Markdown text (repeats get -1, -2...)."""
    seen = {}
    result = set()
    for line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def links(text):
    """The link targets of a Markdown text, outside code blocks and inline code."""
    for line in prose_lines(text):
        line = INLINE_CODE.sub("", line)
        for pattern in (LINK, IMAGE):
            for m in pattern.finditer(line):
                yield m.group(1)


def is_external(target):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None  # https:, mailto:, ...


def checked_pages():
    pages = ["README.md", "ARCHITECTURE.md", "SECURITY.md"]
    pages += sorted(os.path.relpath(p, ROOT)
                    for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return pages


class SlugTest(unittest.TestCase):
    def test_slugs_follow_githubs_rules(self):
        self.assertEqual(slug("How powerctl's score meets kube-scheduler's"),
                         "how-powerctls-score-meets-kube-schedulers")
        self.assertEqual(slug("`powerctl lb-agent`: weights in the kernel, kube-proxy kept"),
                         "powerctl-lb-agent-weights-in-the-kernel-kube-proxy-kept")
        self.assertEqual(slug("Memory at 5,000 nodes"), "memory-at-5000-nodes")
        self.assertEqual(slug("5. Label the nodes"), "5-label-the-nodes")
        self.assertEqual(anchors("# A\n## A\n```\n# not a heading\n```\n## A\n"),
                         {"a", "a-1", "a-2"})

    def test_links_skip_code(self):
        text = "[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n![i](img.png) [d](w.md#h)\n"
        self.assertEqual(sorted(links(text)), ["img.png", "w.md#h", "x.md"])


class DocsTest(unittest.TestCase):
    def test_readme_is_a_front_page(self):
        lines = read("README.md").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        self.assertLessEqual(len(lines), README_MAX_LINES,
                             f"README.md has {len(lines)} lines; the manual belongs in docs/")

    def test_readme_starts_with_the_two_commands(self):
        head = read("README.md").split("\n")[:6]
        self.assertEqual(head[0], "# powerctl")
        self.assertEqual(head[2], "```sh")
        self.assertTrue(head[3].startswith("packaging/quickstart.sh "), head[3])
        self.assertTrue(head[4].startswith("packaging/test.sh "), head[4])
        self.assertEqual(head[5], "```")

    def test_relative_links_resolve(self):
        problems = []
        anchor_cache = {}
        for page in checked_pages():
            base = os.path.dirname(page)
            for target in links(read(page)):
                if is_external(target):
                    continue
                path, _, fragment = target.partition("#")
                resolved = os.path.normpath(os.path.join(base, path)) if path else page
                if not os.path.exists(os.path.join(ROOT, resolved)):
                    problems.append(f"{page}: link to {target}: {resolved} does not exist")
                    continue
                if fragment:
                    if not resolved.endswith(".md"):
                        problems.append(f"{page}: link to {target}: an anchor in a non-Markdown file")
                        continue
                    if resolved not in anchor_cache:
                        anchor_cache[resolved] = anchors(read(resolved))
                    if fragment not in anchor_cache[resolved]:
                        problems.append(f"{page}: link to {target}: {resolved} has no heading "
                                        f"with anchor #{fragment}")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_every_docs_page_is_linked_from_the_readme(self):
        linked = set()
        for target in links(read("README.md")):
            if not is_external(target):
                linked.add(os.path.normpath(target.partition("#")[0]))
        pages = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
        self.assertTrue(pages, "docs/ has no pages")
        missing = [p for p in pages if p not in linked]
        self.assertEqual(missing, [], f"README.md does not link {missing}")

    def test_no_notebook_residue(self):
        words = re.compile(r"shared/|\bsessions?\b", re.IGNORECASE)
        pages = ["README.md", "ARCHITECTURE.md"] + [
            os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*"), recursive=True)
            if os.path.isfile(p)]
        problems = []
        for page in pages:
            for number, line in enumerate(read(page).split("\n"), 1):
                m = words.search(line)
                if m:
                    problems.append(f"{page}:{number}: {m.group(0)!r}: {line.strip()[:100]}")
        self.assertEqual(problems, [], "\n".join(problems))


if __name__ == "__main__":
    unittest.main()
