"""The unity build's batches (POWERCTL_UNITY_BUILD=ON) share no file-local names.

A unity batch compiles several sources as one translation unit, so a helper in one file's
anonymous namespace is visible to the files after it. Two files defining the same name do not
always fail to compile: a call can silently resolve to the other file's overload (a
`Pod(name, "")` picking a `const char*` parameter over a `std::string` one). This test reads the
batches CMake generated (build/CMakeFiles/<target>.dir/Unity/unity_<n>_cxx.cxx) and fails when
two sources of one batch define the same name at the top level of an anonymous namespace or as a
`static` function, naming both places, so such a name is renamed before it can change a result.
It also fails on a file-local alias or type named like a type of core/'s headers (`using Clock =
std::chrono::steady_clock;`): the headers a later file of the batch includes would read their own
`Clock` as that alias, and two translation units would disagree on a struct's layout.
"""

import os
import pathlib
import re
import unittest

BUILD_DIR = pathlib.Path(os.environ.get("POWERCTL_BUILD_DIR", "build"))
SOURCE_DIR = pathlib.Path(
    os.environ.get("POWERCTL_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2])
)

INCLUDE = re.compile(r'^#include "(?P<path>[^"]+)"$', re.M)
# Top-level declarations in clang-formatted code start in column 0.
CLASS = re.compile(r"^(?:template <[^>]*>\s*)?(?:struct|class|enum(?: class)?|union) (\w+)\b(?!;)")
FUNCTION = re.compile(
    r"^(?:template <[^>]*>\s*)?(?:\[\[\w+\]\]\s*)?(?:static |inline |constexpr |const )*"
    r"(?!return\b|using\b|namespace\b|TEST)[\w:<>,*& ]+?[\s*&](?P<name>\w+)\((?!\))?"
)
ALIAS = re.compile(r"^using (\w+) =")
HEADER_TYPE = re.compile(r"^\s*(?:struct|class|enum(?: class)?) (\w+)\b(?!;)", re.M)
CONSTANT = re.compile(
    r"^(?:static |inline |constexpr |const |thread_local )+[\w:<>,*& ]+?\b(?P<name>\w+)(?:\[\])?\s*(?:=|\{|;)"
)


def namespace_lines(source: str):
    """(line number, line, inside an anonymous namespace) for each line outside the braces."""
    depth_anonymous = 0
    for number, line in enumerate(source.splitlines(), 1):
        if line.startswith("namespace {"):
            depth_anonymous += 1
        elif line.startswith("}  // namespace"):
            if depth_anonymous and "namespace " not in line[3:14]:
                depth_anonymous -= 1
        else:
            yield number, line, depth_anonymous > 0


def anonymous_names(source: str):
    """Names defined at the top level of each anonymous namespace, and static functions."""
    names = {}
    for number, line, anonymous in namespace_lines(source):
        local = anonymous or line.startswith("static ")
        if not local or line.startswith(("using ", "#", "//", " ", "}", "TEST", "MATCHER")):
            continue
        for pattern, group in ((CLASS, 1), (CONSTANT, "name"), (FUNCTION, "name")):
            m = pattern.match(line)
            if m:
                names.setdefault(m.group(group), number)
                break
    return names


def file_local_types(source: str):
    """Aliases (`using X = ...;`) and types declared in anonymous namespaces or at file scope."""
    found = {}
    for number, line, anonymous in namespace_lines(source):
        m = ALIAS.match(line) or (CLASS.match(line) if anonymous else None)
        if m:
            found.setdefault(m.group(1), number)
    return found


def header_types():
    return {
        m.group(1)
        for header in (SOURCE_DIR / "core").rglob("*.h")
        for m in HEADER_TYPE.finditer(header.read_text())
    }


def unity_batches():
    for unity in sorted(BUILD_DIR.glob("**/CMakeFiles/*.dir/Unity/unity_*_cxx.cxx")):
        sources = [pathlib.Path(p) for p in INCLUDE.findall(unity.read_text())]
        yield unity, sources


class UnityBatchesTest(unittest.TestCase):
    def test_reader_finds_local_names(self):
        names = anonymous_names(
            "namespace a {\nnamespace {\n\nusing json = int;\nconstexpr int kLimit = 3;\n"
            "json Pod(const std::string& name, const char* owner) {\n  return 1;\n}\n"
            "struct Fixture {\n};\nclass Recorder : public Base {\n};\n"
            "const std::chrono::system_clock::time_point kNow =\n    Now();\n"
            "}  // namespace\n\nint Public(int x) {\n  return x;\n}\n"
            "static std::string ReadFile(const fs::path& path) {\n}\n}  // namespace a\n"
        )
        self.assertEqual(set(names), {"kLimit", "Pod", "Fixture", "Recorder", "kNow", "ReadFile"})

    def test_reader_finds_aliases_and_local_types(self):
        found = file_local_types(
            "namespace a {\nusing Clock = std::chrono::steady_clock;\nnamespace {\n"
            "struct Fixture {\n};\n}  // namespace\nstruct Public {\n};\n}  // namespace a\n"
        )
        self.assertEqual(set(found), {"Clock", "Fixture"})

    def test_no_file_local_name_hides_a_core_type(self):
        batches = list(unity_batches())
        if not batches:
            self.skipTest(f"{BUILD_DIR} is not a unity build (POWERCTL_UNITY_BUILD=OFF)")
        types = header_types()
        self.assertIn("Clock", types)
        hiding = []
        for _, sources in batches:
            for source in sources:
                for name, line in file_local_types(source.read_text()).items():
                    if name in types:
                        hiding.append(f"{source}:{line}: {name} is also a type in core/")
        self.assertEqual(sorted(set(hiding)), [], "rename these:\n" + "\n".join(sorted(set(hiding))))

    def test_no_two_sources_of_a_batch_share_a_local_name(self):
        batches = list(unity_batches())
        if not batches:
            self.skipTest(f"{BUILD_DIR} is not a unity build (POWERCTL_UNITY_BUILD=OFF)")
        clashes = []
        for unity, sources in batches:
            seen = {}
            for source in sources:
                for name, line in anonymous_names(source.read_text()).items():
                    if name in seen:
                        first, first_line = seen[name]
                        clashes.append(
                            f"{name}: {first}:{first_line} and {source}:{line} ({unity.name})"
                        )
                    else:
                        seen[name] = (source, line)
        self.assertEqual(clashes, [], "rename one of each pair:\n" + "\n".join(clashes))


if __name__ == "__main__":
    unittest.main()
