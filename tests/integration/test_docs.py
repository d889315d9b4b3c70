"""The documentation stays honest: README.md is a front page of at most 300 lines that links every
page of docs/, every relative link in the Markdown resolves to a file (and a #anchor to a heading
of that file, by GitHub's rules), the pages carry no lab-notebook residue, and code comments and
docs cite the repository's own pages, not notes kept outside it."""
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


# Where code comments and docs may point for upstream facts: the repository's own pages. A path
# through "shared/" or a note named DESIGN.md, wao.md, tas.md or protocols.md is a file outside
# the repository, unless the name is one of docs/reference's own pages reached through
# "reference/" (or, from a page in docs/reference, by its bare name).
CITED_TREES = ["core", "cli", "templates", "docs"]
CITED_FILES = ["ARCHITECTURE.md"]
SHARED_PATH = re.compile(r"[\w./-]*shared/[\w./-]*")
NOTE_NAME = re.compile(r"([\w./-]*?)\b(DESIGN|wao|tas|protocols)\.md\b")
# "the seed" (or "seed 002") named the upstream projects powerctl started from; code says which
# one instead. simulate's random seeds ("--seeds", "seed(s)", "first_seed") are another thing.
SEED_TREES = ["core", "cli"]
THE_SEED = re.compile(r"\bthe seed\b|\bseed 00\d\b", re.IGNORECASE)


def outside_citations(text, page, reference_pages):
    """The places in `text` (the file `page`) that point outside the repository: the problems as
    strings, empty when there are none."""
    problems = []
    for m in SHARED_PATH.finditer(text):
        # "/shared/" alone is an absolute path inside a container (the model image's volume).
        if not m.group(0).startswith("/shared/"):
            problems.append(m.group(0))
    in_reference = os.path.dirname(page) == os.path.join("docs", "reference")
    for m in NOTE_NAME.finditer(text):
        prefix, name = m.group(1), m.group(2) + ".md"
        via_reference = prefix.endswith("reference/") or (prefix == "" and in_reference)
        if not (via_reference and name in reference_pages):
            problems.append(m.group(0))
    return problems


def files_under(trees, files=()):
    out = list(files)
    for tree in trees:
        for path in sorted(glob.glob(os.path.join(ROOT, tree, "**", "*"), recursive=True)):
            if os.path.isfile(path):
                out.append(os.path.relpath(path, ROOT))
    return out


def read_text(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


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


class CitationMatcherTest(unittest.TestCase):
    REFERENCE = {"tas.md", "peaks.md"}

    def problems(self, text, page="core/x.h"):
        return outside_citations(text, page, self.REFERENCE)

    def test_flags_paths_outside_the_repository(self):
        self.assertEqual(self.problems("// see shared/reference/wao.md §1.5"),
                         ["shared/reference/wao.md", "shared/reference/wao.md"])
        self.assertEqual(self.problems("(../shared/notes.txt)"), ["../shared/notes.txt"])
        self.assertEqual(self.problems("/work/shared/x"), ["/work/shared/x"])
        self.assertEqual(self.problems("as DESIGN.md says"), ["DESIGN.md"])
        self.assertEqual(self.problems("obs. in tas.md §1.2; protocols.md section 6"),
                         ["tas.md", "protocols.md"])
        self.assertEqual(self.problems("reference/wao.md 1.9"), ["reference/wao.md"])

    def test_allows_the_repositorys_own_pages_and_container_paths(self):
        self.assertEqual(self.problems('docs/reference/tas.md ("Strategies")'), [])
        self.assertEqual(self.problems("[TAS](reference/tas.md#strategies)", "docs/extender.md"), [])
        self.assertEqual(self.problems("[TAS](tas.md)", os.path.join("docs", "reference", "peaks.md")),
                         [])
        self.assertEqual(self.problems('command: ["sh", "-c", "cp -R /models/. /shared/"]'), [])
        self.assertEqual(self.problems("tas.md", "docs/extender.md"), ["tas.md"])

    def test_the_seed_is_not_simulates_seeds(self):
        self.assertTrue(THE_SEED.search("// Unlike the seed, which ignores"))
        self.assertTrue(THE_SEED.search("// The seed's REST client"))
        self.assertTrue(THE_SEED.search("// Pod groups (seed 003): completeness"))
        for text in ("{} seed(s)", "averaged over seeds", "--seed N", "each seed draws",
                     "the seeds 1 to 5", "seed * 7919 + k"):
            self.assertIsNone(THE_SEED.search(text), text)


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

    def test_kubernetes_release_table_matches_the_code(self):
        code = read("core/common/kube_version.cpp")
        body = code[code.index("kReleaseLines[] = {"):]
        body = body[:body.index("};")]
        date = r"Date\((\d+), (\d+), (\d+)\)"
        in_code = {(f"1.{m}", f"{int(ry):04}-{int(rm):02}-{int(rd):02}",
                    f"{int(ey):04}-{int(em):02}-{int(ed):02}", f"1.{m}.{p}", final == "true")
                   for m, p, final, ry, rm, rd, ey, em, ed in re.findall(
                       r"\{(\d+), (\d+), (true|false), " + date + ", " + date + r"\}", body)}
        rows = re.findall(r"^\| (1\.\d+) \| (\d{4}-\d\d-\d\d) \| (\d{4}-\d\d-\d\d) \| "
                          r"(1\.\d+\.\d+) \| (yes|no) \|$",
                          read("docs/reference/kubernetes-releases.md"), re.MULTILINE)
        in_docs = {(minor, released, ended, patch, final == "yes")
                   for minor, released, ended, patch, final in rows}
        self.assertEqual(len(in_code), body.count("Date(") // 2)
        self.assertTrue(in_code)
        self.assertEqual(in_docs, in_code)

    def test_code_and_docs_cite_only_the_repository(self):
        reference_pages = {os.path.basename(p)
                           for p in glob.glob(os.path.join(ROOT, "docs", "reference", "*.md"))}
        self.assertIn("tas.md", reference_pages)
        problems = []
        for path in files_under(CITED_TREES, CITED_FILES):
            for number, line in enumerate(read_text(path).split("\n"), 1):
                for found in outside_citations(line, path, reference_pages):
                    problems.append(f"{path}:{number}: {found!r}: {line.strip()[:100]}")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_code_names_the_upstream_project_not_the_seed(self):
        problems = []
        paths = files_under(SEED_TREES)
        self.assertTrue(any(p.endswith(".cpp") for p in paths), "no sources found under core/, cli/")
        for path in paths:
            for number, line in enumerate(read_text(path).split("\n"), 1):
                if THE_SEED.search(line):
                    problems.append(f"{path}:{number}: {line.strip()[:100]}")
        self.assertEqual(problems, [], "\n".join(problems))

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
