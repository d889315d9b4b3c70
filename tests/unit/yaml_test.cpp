#include "core/common/yaml.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace powerctl {
namespace {

using Json = nlohmann::ordered_json;

// Parses a single-document stream and returns its value; fails the test on error.
Json ParseOne(std::string_view text) {
  auto docs = ParseYamlDocuments(text, "t.yaml");
  EXPECT_TRUE(docs.ok()) << (docs.ok() ? "" : docs.error().message);
  if (!docs.ok()) return Json();
  EXPECT_EQ(docs->size(), 1u) << text;
  return docs->empty() ? Json() : docs->front();
}

// The error message of a parse that must fail.
std::string ParseError(std::string_view text, const YamlLimits& limits = {}) {
  auto docs = ParseYamlDocuments(text, "x.yaml", limits);
  EXPECT_FALSE(docs.ok()) << text.substr(0, 200);
  if (docs.ok()) return "";
  EXPECT_EQ(docs.error().code, ErrorCode::kInvalidInput);
  return docs.error().message;
}

Json Value(std::string_view scalar) {
  return ParseOne(std::string("v: ") + std::string(scalar))["v"];
}

double ElapsedSeconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---------------------------------------------------------------------------
// Parsing: scalar resolution
// ---------------------------------------------------------------------------

TEST(YamlParse, NullsAndBools) {
  for (const char* s : {"", "~", "null", "Null", "NULL"}) EXPECT_TRUE(Value(s).is_null()) << s;
  for (const char* s : {"true", "True", "TRUE"}) EXPECT_EQ(Value(s), Json(true)) << s;
  for (const char* s : {"false", "False", "FALSE"}) EXPECT_EQ(Value(s), Json(false)) << s;
}

TEST(YamlParse, YesNoOnOffStayStrings) {
  // YAML 1.2 core: these are strings (kubectl's YAML 1.1 would say bool;
  // EmitYaml quotes them so our own output means the same to both).
  for (const char* s : {"yes", "no", "on", "off", "y", "n", "Yes", "NO", "On", "OFF"}) {
    EXPECT_EQ(Value(s), Json(s)) << s;
  }
}

TEST(YamlParse, Integers) {
  EXPECT_EQ(Value("0"), Json(0));
  EXPECT_EQ(Value("123"), Json(123));
  EXPECT_EQ(Value("-17"), Json(-17));
  EXPECT_EQ(Value("+5"), Json(5));
  EXPECT_EQ(Value("0x1F"), Json(31));
  EXPECT_EQ(Value("0o17"), Json(15));
  EXPECT_TRUE(Value("123").is_number_integer());
  EXPECT_EQ(Value("9223372036854775807"), Json(std::numeric_limits<std::int64_t>::max()));
  EXPECT_EQ(Value("-9223372036854775808"), Json(std::numeric_limits<std::int64_t>::min()));
  EXPECT_EQ(Value("18446744073709551615"), Json(std::numeric_limits<std::uint64_t>::max()));
  // Too big for any integer: a double for decimals (as go-yaml does), the
  // text for hex.
  EXPECT_TRUE(Value("99999999999999999999").is_number_float());
  EXPECT_EQ(Value("0x1FFFFFFFFFFFFFFFFF"), Json("0x1FFFFFFFFFFFFFFFFF"));
}

TEST(YamlParse, LeadingZeroIsOctalLikeKubectl) {
  // `defaultMode: 0644` means rw-r--r-- to every Kubernetes user.
  EXPECT_EQ(Value("0644"), Json(420));
  EXPECT_EQ(Value("0755"), Json(493));
  EXPECT_EQ(Value("-010"), Json(-8));
  EXPECT_EQ(Value("00"), Json(0));
  EXPECT_EQ(Value("089"), Json(89));  // not octal digits: decimal
}

TEST(YamlParse, Floats) {
  EXPECT_EQ(Value("1.5"), Json(1.5));
  EXPECT_EQ(Value(".5"), Json(0.5));
  EXPECT_EQ(Value("1."), Json(1.0));
  EXPECT_EQ(Value("-2.5e3"), Json(-2500.0));
  EXPECT_TRUE(Value("1e3").is_number_float());
  EXPECT_EQ(Value("1e3"), Json(1000.0));
  EXPECT_EQ(Value(".inf"), Json(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(Value("-.Inf"), Json(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ(Value("+.INF"), Json(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(std::isnan(Value(".nan").get<double>()));
  EXPECT_TRUE(std::isnan(Value(".NaN").get<double>()));
  EXPECT_EQ(Value("1e400"), Json(std::numeric_limits<double>::infinity()));
}

TEST(YamlParse, OtherPlainScalarsAreStrings) {
  for (const char* s : {"hello", "12:30", "1_000", "0b101", "2024-01-01", "1.2.3", "0x", "0xZ", ".",
                        "e3", "nan", "inf", "+-1", "=", "<<", "a:b", "a#b"}) {
    EXPECT_EQ(Value(s), Json(s)) << s;
  }
}

TEST(YamlParse, QuotedAndBlockScalarsAreStrings) {
  EXPECT_EQ(Value("\"123\""), Json("123"));
  EXPECT_EQ(Value("'true'"), Json("true"));
  EXPECT_EQ(Value("\"null\""), Json("null"));
  EXPECT_EQ(Value("''"), Json(""));
  EXPECT_EQ(ParseOne("v: |\n  123\n")["v"], Json("123\n"));
  EXPECT_EQ(ParseOne("v: >-\n  true\n")["v"], Json("true"));
}

TEST(YamlParse, Tags) {
  EXPECT_EQ(Value("!!str 5"), Json("5"));
  EXPECT_EQ(Value("!!str true"), Json("true"));
  EXPECT_EQ(Value("!!int \"7\""), Json(7));
  EXPECT_EQ(Value("!!float 1"), Json(1.0));
  EXPECT_TRUE(Value("!!float 1").is_number_float());
  EXPECT_EQ(Value("!!bool \"false\""), Json(false));
  EXPECT_TRUE(Value("!!null ''").is_null());
  EXPECT_EQ(Value("!custom 5"), Json("5"));  // unknown tags are ignored, scalar stays text
  EXPECT_EQ(ParseOne("v: !custom {a: 1}")["v"], Json::parse(R"({"a": 1})"));
  EXPECT_NE(ParseError("v: !!int abc").find("x.yaml:1:4: !!int value \"abc\" is not a valid int"),
            std::string::npos);
}

TEST(YamlParse, KeysAreTheirText) {
  const Json v = ParseOne("1: a\ntrue: b\n~: c\n\"q\": d\n0x10: e\n");
  EXPECT_EQ(v, Json::parse(R"({"1": "a", "true": "b", "null": "c", "q": "d", "0x10": "e"})"));
}

TEST(YamlParse, KeepsKeyOrder) {
  const Json v = ParseOne("zeta: 1\nalpha: 2\nmid: {b: 1, a: 2}\n");
  std::vector<std::string> keys;
  for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"zeta", "alpha", "mid"}));
  EXPECT_EQ(v["mid"].dump(), R"({"b":1,"a":2})");
}

TEST(YamlParse, KubernetesManifest) {
  const std::string text = R"(# A deployment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: "frontend"}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        image: "nginx:1.25"
        args: ["--port=8080", --verbose]
        ports:
          - containerPort: 80
        env: []
      volumes:
        - name: cfg
          configMap: {name: web, defaultMode: 0644}
)";
  const Json expected = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web", "tier": "frontend"}},
    "spec": {"replicas": 3, "template": {"spec": {
      "containers": [{"name": "web", "image": "nginx:1.25", "args": ["--port=8080", "--verbose"],
                      "ports": [{"containerPort": 80}], "env": []}],
      "volumes": [{"name": "cfg", "configMap": {"name": "web", "defaultMode": 420}}]}}}})");
  EXPECT_EQ(ParseOne(text), expected);
}

// ---------------------------------------------------------------------------
// Parsing: documents, anchors
// ---------------------------------------------------------------------------

TEST(YamlParse, MultiDocumentWithCommentsAndEmptyDocuments) {
  const std::string text = R"(# leading comment
---
a: 1 # trailing comment
---
# only a comment: an empty document
---
- x
- y
...
---
null
---
b: 2
---
)";
  auto docs = ParseYamlDocuments(text, "multi.yaml");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0], Json::parse(R"({"a": 1})"));
  EXPECT_EQ((*docs)[1], Json::parse(R"(["x", "y"])"));
  EXPECT_EQ((*docs)[2], Json::parse(R"({"b": 2})"));
}

TEST(YamlParse, EmptyInput) {
  for (const char* text : {"", "\n", "# nothing\n", "---\n", "---\n---\n"}) {
    auto docs = ParseYamlDocuments(text, "e.yaml");
    ASSERT_TRUE(docs.ok()) << text;
    EXPECT_TRUE(docs->empty()) << text;
  }
}

TEST(YamlParse, AnchorsAndAliases) {
  const Json v = ParseOne(R"(
base: &base {cpu: 100m, memory: 64Mi}
name: &n web
a: *base
b: [*n, *n]
*n : key-from-alias
)");
  EXPECT_EQ(v, Json::parse(R"({"base": {"cpu": "100m", "memory": "64Mi"}, "name": "web",
    "a": {"cpu": "100m", "memory": "64Mi"}, "b": ["web", "web"], "web": "key-from-alias"})"));
}

TEST(YamlParse, AnchorsArePerDocument) {
  EXPECT_NE(ParseError("a: &x 1\n---\nb: *x\n").find("x.yaml:3:"), std::string::npos);
}

TEST(YamlParse, RecursiveAliasIsAnError) {
  const std::string message = ParseError("a: &r [1, *r]\n");
  EXPECT_NE(message.find("x.yaml:1:11: alias *r refers to a node containing it"), std::string::npos)
      << message;
}

TEST(YamlParse, BillionLaughsHitsTheNodeLimitQuickly) {
  std::string text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    const char prev = static_cast<char>(level - 1);
    text += std::string(1, level) + ": &" + level + " [";
    for (int i = 0; i < 10; ++i) text += std::string(i ? ", *" : "*") + prev;
    text += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string message = ParseError(text);
  EXPECT_LT(ElapsedSeconds(start), 1.0);
  EXPECT_NE(message.find("more than max_nodes (200000) nodes"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("x.yaml:", 0), 0u) << message;
}

TEST(YamlParse, AliasedLongStringHitsTheByteLimit) {
  // Few nodes, but every alias of the 100 KB string is another 100 KB.
  std::string text = "a: &a " + std::string(100000, 'x') + "\nb: [*a";
  for (int i = 0; i < 2000; ++i) text += ", *a";
  text += "]\n";
  const auto start = std::chrono::steady_clock::now();
  const std::string message = ParseError(text);
  EXPECT_LT(ElapsedSeconds(start), 1.0);
  EXPECT_NE(message.find("x.yaml:2:"), std::string::npos) << message;
  EXPECT_NE(message.find("more than max_bytes (8388608) bytes of text"), std::string::npos)
      << message;
  YamlLimits limits;
  limits.max_bytes = 30;
  // 22 bytes of text (keys count too), then 32.
  EXPECT_TRUE(ParseYamlDocuments("k: &a abcdefghij\nl: *a\n", "x", limits).ok());
  EXPECT_EQ(ParseError("k: &a abcdefghij\nl: [*a, *a]\n", limits),
            "x.yaml:2:9: more than max_bytes (30) bytes of text; aliases count each time they "
            "are used");
}

TEST(YamlParse, NodeLimitCountsKeysValuesAndDocuments) {
  YamlLimits limits;
  limits.max_nodes = 5;
  EXPECT_TRUE(ParseYamlDocuments("a: 1\nb: 2\n", "x", limits).ok());  // map + 4 scalars
  EXPECT_NE(ParseError("a: 1\nb: 2\nc: 3\n", limits).find("max_nodes (5)"), std::string::npos);
  EXPECT_NE(ParseError("a: 1\n---\nb: 2\n", limits).find("x.yaml:3:"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Parsing: limits and errors
// ---------------------------------------------------------------------------

TEST(YamlParse, DeepFlowNestingFailsFastWithDepthError) {
  const std::string text = std::string(10000, '[') + std::string(10000, ']');
  const std::string message = ParseError(text);
  EXPECT_EQ(message, "x.yaml:1:65: collections nested deeper than max_depth (64)");

  const std::string maps = "a: " + [] {
    std::string s;
    for (int i = 0; i < 10000; ++i) s += "{a: ";
    return s;
  }();
  EXPECT_NE(ParseError(maps).find("nested deeper than max_depth (64)"), std::string::npos);
}

TEST(YamlParse, HugeFlowNestingDoesNotReachYamlCpp) {
  // yaml-cpp would buffer ~1.9 GB of tokens for this before its first event.
  const std::string text(8 << 20, '[');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(ParseError(text).find("x.yaml:1:65:"), std::string::npos);
  EXPECT_LT(ElapsedSeconds(start), 1.0);
}

TEST(YamlParse, DeepBlockNestingFailsWithDepthError) {
  std::string seqs;
  for (int i = 0; i < 10000; ++i) seqs += "- ";
  seqs += "x\n";
  EXPECT_NE(ParseError(seqs).find("x.yaml:1:129: collections nested deeper than max_depth (64)"),
            std::string::npos);

  std::string maps;
  for (int i = 0; i < 300; ++i) maps += std::string(static_cast<std::size_t>(i), ' ') + "a:\n";
  EXPECT_NE(ParseError(maps).find("x.yaml:65:"), std::string::npos);
}

TEST(YamlParse, DepthLimitIsExact) {
  const auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  EXPECT_TRUE(ParseYamlDocuments(nested(64), "x").ok());
  EXPECT_FALSE(ParseYamlDocuments(nested(65), "x").ok());
  YamlLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(ParseYamlDocuments("a: {b: [1]}", "x", limits).ok());
  EXPECT_NE(ParseError("a: {b: [[1]]}", limits).find("x.yaml:1:9: collections nested deeper"),
            std::string::npos);
  // Through an alias: the alias expands to a depth-2 value at depth 2.
  EXPECT_NE(ParseError("x: &x [[1]]\ny: [*x]\n", limits).find("x.yaml:2:5:"), std::string::npos);
}

TEST(YamlParse, BracketsInsideScalarsDoNotCountAsNesting) {
  const std::string many(200, '[');
  const std::string text = "a: \"" + many + "\"\nb: '" + many + "'\nc: x" + many + "\nd: |\n  " +
                           many + "\n  " + many + "\ne: # " + many + "\n  ok\nf: [\"" + many +
                           "\", '" + many + "']\n";
  const Json v = ParseOne(text);
  EXPECT_EQ(v["a"], Json(many));
  EXPECT_EQ(v["c"], Json("x" + many));
  EXPECT_EQ(v["d"], Json(many + "\n" + many + "\n"));
  EXPECT_EQ(v["e"], Json("ok"));
  EXPECT_EQ(v["f"][1], Json(many));
}

TEST(YamlParse, DepthPreScanSkipsTextThatOnlyLooksNested) {
  // Each of these is valid YAML with "[" in text positions; a depth limit of
  // 2 makes any miscounted bracket an error.
  YamlLimits limits;
  limits.max_depth = 2;
  const std::vector<std::pair<std::string, Json>> cases = {
      {"&x k: |\n  [[[[\n", Json{{"k", "[[[[\n"}}},
      {"&x : |\n  [[[[\n", Json{{"null", "[[[[\n"}}},
      {"- |\n [[[[\n", Json::array({"[[[[\n"})},
      {"a: 's'#[[[[\n", Json{{"a", "s"}}},
      {"a: [1]#[[[[\n", Json{{"a", {1}}}},
      {"# c\n\n  plain\n[[[[ more\n", Json("plain [[[[ more")},
      {"- a\n  [[[[ b\n", Json::array({"a [[[[ b"})},
      {"k: v\n  [[[[\n", Json{{"k", "v [[[["}}},
      {"k:\n  \"x\n  [[[[\"\n", Json{{"k", "x [[[["}}},
      {"k: it's [[[[\n", Json{{"k", "it's [[[["}}},
      {"k: [\"[[[[\", '[[[[']\n", Json{{"k", {"[[[[", "[[[["}}}},
  };
  for (const auto& [text, expected] : cases) {
    auto docs = ParseYamlDocuments(text, "x.yaml", limits);
    ASSERT_TRUE(docs.ok()) << text << ": " << docs.error().message;
    ASSERT_EQ(docs->size(), 1u) << text;
    EXPECT_EQ(docs->front(), expected) << text;
  }
}

TEST(YamlParse, ByteLimit) {
  YamlLimits limits;
  limits.max_bytes = 10;
  EXPECT_EQ(ParseError("a: 12345678901", limits),
            "x.yaml: input is 14 bytes, more than max_bytes (10)");
}

TEST(YamlParse, SyntaxErrorsCarryLineAndColumn) {
  const std::string unclosed = ParseError("a: [1, 2");
  EXPECT_EQ(unclosed.rfind("x.yaml:1:", 0), 0u) << unclosed;
  EXPECT_NE(unclosed.find("(the collection starting at 1:4 is not closed)"), std::string::npos)
      << unclosed;

  const std::string bad = ParseError("a: 1\nb: 2\n  c: 3\n");
  EXPECT_EQ(bad.rfind("x.yaml:3:", 0), 0u) << bad;

  // yaml-cpp alone would take the rest of the file as the string's text.
  EXPECT_EQ(ParseError("image: \"nginx:1.25\nports:\n  - 80\n"),
            "x.yaml:1:8: quoted string is not closed");
  EXPECT_EQ(ParseError("a: 1\nb: ['it, x]\n"), "x.yaml:2:5: quoted string is not closed");
  EXPECT_EQ(ParseError("\xEF\xBB\xBFk\xC3\xA9: 1\nb: 'it''s\n"),
            "x.yaml:2:4: quoted string is not closed");
  EXPECT_EQ(ParseOne("a: 'it''s'\nb: \"say \\\"hi\\\"\"\n"),
            Json::parse(R"({"a": "it's", "b": "say \"hi\""})"));

  EXPECT_EQ(ParseError("a: ok\nb: caf\xC3\n"), "x.yaml:2:4: text is not valid UTF-8");
  EXPECT_EQ(ParseError("\xFF: 1\n"), "x.yaml:1:1: text is not valid UTF-8");

  const std::string alias = ParseError("a: 1\nb: *nope\n");
  EXPECT_EQ(alias.rfind("x.yaml:2:4:", 0), 0u) << alias;
}

TEST(YamlParse, StrayFlowIndicatorsDoNotHang) {
  // yaml-cpp 0.7 alone loops forever on these, emitting empty documents.
  EXPECT_EQ(ParseError("- a\n, b\n- c\n"), "x.yaml:2:1: unexpected ','");
  EXPECT_EQ(ParseError("[1, 2],"), "x.yaml:1:7: unexpected ','");
  EXPECT_EQ(ParseError("a: 1\n---\n,\n"), "x.yaml:3:1: unexpected ','");
  EXPECT_NE(ParseError("k: [a]]\n").find("x.yaml:1:"), std::string::npos);
  EXPECT_NE(ParseError("{a: 1}}").find("x.yaml:1:"), std::string::npos);
}

TEST(YamlParse, DuplicateKeys) {
  EXPECT_EQ(ParseError("a: 1\nb: 2\na: 3\n"),
            "x.yaml:3:1: duplicate key \"a\" (first defined at line 1)");
  EXPECT_NE(ParseError("x:\n  k: 1\n  k: 2\n").find("x.yaml:3:3: duplicate key \"k\""),
            std::string::npos);
  EXPECT_NE(ParseError("{a: 1, a: 2}").find("duplicate key \"a\""), std::string::npos);
  // The same key in different mappings is fine.
  EXPECT_TRUE(ParseYamlDocuments("a: {k: 1}\nb: {k: 2}\n", "x").ok());
}

TEST(YamlParse, NonScalarKeys) {
  EXPECT_EQ(ParseError("? [1, 2]\n: v\n"), "x.yaml:1:3: mapping keys must be scalars");
  EXPECT_NE(ParseError("{[1]: v}").find("mapping keys must be scalars"), std::string::npos);
  EXPECT_NE(ParseError("m: &m {a: 1}\n*m : v\n").find("x.yaml:2:1: mapping keys must be scalars"),
            std::string::npos);
}

TEST(YamlParse, LargeFlatMappingIsFast) {
  std::string text;
  for (int i = 0; i < 60000; ++i)
    text += "key" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  const auto start = std::chrono::steady_clock::now();
  const Json v = ParseOne(text);
  EXPECT_LT(ElapsedSeconds(start), 5.0);
  ASSERT_EQ(v.size(), 60000u);
  EXPECT_EQ(v.begin().key(), "key0");
  EXPECT_EQ(v["key59999"], Json(59999));
}

// ---------------------------------------------------------------------------
// Emitting
// ---------------------------------------------------------------------------

std::string EmitValue(const Json& v) {
  return EmitYaml(Json{{"k", v}});
}

TEST(YamlEmit, KubernetesManifestLayout) {
  const Json manifest = Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.25", "args": ["--port=8080", "-v"],
                             "ports": [{"containerPort": 80}], "env": []}],
             "matrix": [[1, 2], []], "ratio": 0.5, "on": true, "note": null}})");
  EXPECT_EQ(EmitYaml(manifest), R"(apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
  annotations: {}
spec:
  containers:
    - name: web
      image: nginx:1.25
      args:
        - "--port=8080"
        - "-v"
      ports:
        - containerPort: 80
      env: []
  matrix:
    - - 1
      - 2
    - []
  ratio: 0.5
  "on": true
  note: null
)");
}

TEST(YamlEmit, TopLevelValues) {
  EXPECT_EQ(EmitYaml(Json::object()), "{}\n");
  EXPECT_EQ(EmitYaml(Json::array()), "[]\n");
  EXPECT_EQ(EmitYaml(Json(42)), "42\n");
  EXPECT_EQ(EmitYaml(Json("text")), "text\n");
  EXPECT_EQ(EmitYaml(Json("yes")), "\"yes\"\n");
  EXPECT_EQ(EmitYaml(Json::parse(R"([1, {"a": 2, "b": 3}])")), "- 1\n- a: 2\n  b: 3\n");
  EXPECT_EQ(EmitYaml(Json("one\ntwo\n")), "|\n  one\n  two\n");
  EXPECT_EQ(EmitYaml(Json(" one\ntwo\n")), "\" one\\ntwo\\n\"\n");
}

TEST(YamlEmit, PlainStrings) {
  for (const char* s : {"web",
                        "nginx:1.25",
                        "a:b",
                        "a#b",
                        "hello world",
                        "x-y",
                        "a,b",
                        "a[0]",
                        "a{b}",
                        "path/to/file",
                        "http://example.com/x?y=1",
                        "héllo",
                        "日本語",
                        "a'b",
                        "a\"b",
                        "tail-",
                        "_under",
                        "Yesterday",
                        "nulls",
                        "truthy",
                        "v1.2.3",
                        "e3"}) {
    EXPECT_EQ(EmitValue(Json(s)), std::string("k: ") + s + "\n") << s;
  }
}

TEST(YamlEmit, QuotedStrings) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", R"("")"},
      {"true", R"("true")"},
      {"False", R"("False")"},
      {"yes", R"("yes")"},
      {"no", R"("no")"},
      {"on", R"("on")"},
      {"off", R"("off")"},
      {"y", R"("y")"},
      {"N", R"("N")"},
      {"null", R"("null")"},
      {"~", R"("~")"},
      {"1", R"("1")"},
      {"1.0", R"("1.0")"},
      {"-1", R"("-1")"},
      {"+1", R"("+1")"},
      {".5", R"(".5")"},
      {"1e3", R"("1e3")"},
      {"0x1F", R"("0x1F")"},
      {"0o17", R"("0o17")"},
      {"0755", R"("0755")"},
      {"12:30", R"("12:30")"},
      {"2024-01-01", R"("2024-01-01")"},
      {"1_000", R"("1_000")"},
      {".inf", R"(".inf")"},
      {"-.INF", R"("-.INF")"},
      {".NaN", R"(".NaN")"},
      {"=", R"("=")"},
      {"<<", R"("<<")"},
      {"...", R"("...")"},
      {"---", R"("---")"},
      {" lead", R"(" lead")"},
      {"trail ", R"("trail ")"},
      {"a: b", R"("a: b")"},
      {"a #b", R"("a #b")"},
      {"end:", R"("end:")"},
      {"-dash", R"("-dash")"},
      {"? q", R"("? q")"},
      {":colon", R"(":colon")"},
      {",comma", R"(",comma")"},
      {"[x]", R"("[x]")"},
      {"{x}", R"("{x}")"},
      {"#x", R"("#x")"},
      {"&x", R"("&x")"},
      {"*x", R"("*x")"},
      {"!x", R"("!x")"},
      {"|x", R"("|x")"},
      {">x", R"(">x")"},
      {"'x'", R"("'x'")"},
      {"\"x\"", R"("\"x\"")"},
      {"%x", R"("%x")"},
      {"@x", R"("@x")"},
      {"`x`", R"("`x`")"},
      {"tab\there", R"("tab\there")"},
      {"cr\r", R"("cr\r")"},
      {"bell\x07", R"("bell\u0007")"},
      {"del\x7f", R"("del\u007f")"},
      {"back\\slash:", R"("back\\slash:")"},
      {"ls\u2028ps\u2029", R"("ls\u2028ps\u2029")"},
      {"nel\u0085", R"("nel\u0085")"},
      {"bom\ufeff", R"("bom\ufeff")"},
      {"bad\xff utf8", "\"bad\xEF\xBF\xBD utf8\""},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(EmitValue(Json(in)), "k: " + out + "\n") << in;
}

TEST(YamlEmit, LiteralBlocks) {
  EXPECT_EQ(EmitValue(Json("a\nb\n")), "k: |\n  a\n  b\n");
  EXPECT_EQ(EmitValue(Json("a\nb")), "k: |-\n  a\n  b\n");
  EXPECT_EQ(EmitValue(Json("a\n\n")), "k: |+\n  a\n\n");
  EXPECT_EQ(EmitValue(Json("a\n\nb\n")), "k: |\n  a\n\n  b\n");
  EXPECT_EQ(EmitValue(Json("  indented\nx\n")), "k: |2\n    indented\n  x\n");
  EXPECT_EQ(EmitValue(Json("\n\n first\n")), "k: |2\n\n\n   first\n");
  EXPECT_EQ(EmitValue(Json("key: value\n# not a comment\n- not a list\n")),
            "k: |\n  key: value\n  # not a comment\n  - not a list\n");
  EXPECT_EQ(EmitYaml(Json::parse(R"({"a": {"b": ["x\ny\n"]}})")),
            "a:\n  b:\n    - |\n      x\n      y\n");
  EXPECT_EQ(EmitYaml(Json::parse(R"([{"s": "p\nq"}])")), "- s: |-\n    p\n    q\n");
  // Not representable exactly as a literal block: double-quoted instead.
  EXPECT_EQ(EmitValue(Json("a\r\nb")), "k: \"a\\r\\nb\"\n");
  EXPECT_EQ(EmitValue(Json("a\tb\nc")), "k: \"a\\tb\\nc\"\n");
  EXPECT_EQ(EmitValue(Json("trailing \nx")), "k: \"trailing \\nx\"\n");
  EXPECT_EQ(EmitValue(Json("\n")), "k: \"\\n\"\n");
}

TEST(YamlEmit, Numbers) {
  EXPECT_EQ(EmitValue(Json(0)), "k: 0\n");
  EXPECT_EQ(EmitValue(Json(-42)), "k: -42\n");
  EXPECT_EQ(EmitValue(Json(std::numeric_limits<std::uint64_t>::max())),
            "k: 18446744073709551615\n");
  EXPECT_EQ(EmitValue(Json(1.0)), "k: 1.0\n");
  EXPECT_EQ(EmitValue(Json(0.1)), "k: 0.1\n");
  EXPECT_EQ(EmitValue(Json(1e20)), "k: 1e+20\n");
  EXPECT_EQ(EmitValue(Json(std::numeric_limits<double>::infinity())), "k: .inf\n");
  EXPECT_EQ(EmitValue(Json(-std::numeric_limits<double>::infinity())), "k: -.inf\n");
  EXPECT_EQ(EmitValue(Json(std::numeric_limits<double>::quiet_NaN())), "k: .nan\n");
  EXPECT_TRUE(std::isnan(ParseOne(EmitValue(Json(NAN)))["k"].get<double>()));
}

TEST(YamlEmit, KeysAreQuotedLikeValues) {
  EXPECT_EQ(EmitYaml(Json::parse(R"({"true": 1, "": 2, "a: b": 3, "x\ny": 4, "plain key": 5})")),
            "\"true\": 1\n\"\": 2\n\"a: b\": 3\n\"x\\ny\": 4\nplain key: 5\n");
}

TEST(YamlEmit, VeryLongKeysUseExplicitForm) {
  const std::string key(3000, 'k');
  const Json v = {{key, Json{{"a", 1}}}, {"b", 2}};
  const std::string text = EmitYaml(v);
  EXPECT_EQ(text.rfind("? " + key + "\n:\n  a: 1\n", 0), 0u);
  EXPECT_EQ(ParseOne(text), v);
}

TEST(YamlEmit, Documents) {
  EXPECT_EQ(EmitYamlDocuments({}), "");
  EXPECT_EQ(EmitYamlDocuments({Json{{"a", 1}}, Json::array({1}), Json("s\n\n")}),
            "a: 1\n---\n- 1\n---\n|+\n  s\n\n");
  auto docs =
      ParseYamlDocuments(EmitYamlDocuments({Json{{"a", 1}}, Json::array({1}), Json("s\n\n")}), "d");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  EXPECT_EQ(*docs, (std::vector<Json>{Json{{"a", 1}}, Json::array({1}), Json("s\n\n")}));
}

TEST(YamlEmit, Flow) {
  EXPECT_EQ(EmitYamlFlow(Json("a\"b\nc")), R"("a\"b\nc")");
  EXPECT_EQ(EmitYamlFlow(Json(nullptr)), "null");
  EXPECT_EQ(EmitYamlFlow(Json::parse(R"({"a": [1, true, null, "x"], "b": {}, "c": []})")),
            R"({"a": [1, true, null, "x"], "b": {}, "c": []})");
  // The flow text is JSON, too.
  const Json v = Json::parse(R"({"k": ["s: t", 1.5, {"n": "\u2028"}]})");
  EXPECT_EQ(Json::parse(EmitYamlFlow(v)), v);
  EXPECT_EQ(ParseOne("v: " + EmitYamlFlow(v))["v"], v);
}

// ---------------------------------------------------------------------------
// Round trip: ParseYamlDocuments(EmitYaml(v)) == {v}
// ---------------------------------------------------------------------------

void ExpectRoundTrip(const Json& v) {
  const std::string text = EmitYaml(v);
  auto docs = ParseYamlDocuments(text, "rt.yaml");
  ASSERT_TRUE(docs.ok()) << docs.error().message << "\n--- emitted:\n" << text;
  ASSERT_EQ(docs->size(), 1u) << text;
  EXPECT_EQ(docs->front(), v) << "value: " << v.dump() << "\n--- emitted:\n" << text;
}

const std::vector<std::string>& TrickyStrings() {
  static const std::vector<std::string> strings = {
      "",
      " ",
      "  ",
      "yes",
      "no",
      "on",
      "off",
      "y",
      "n",
      "Y",
      "N",
      "true",
      "False",
      "null",
      "~",
      "NULL",
      "0",
      "1",
      "-1",
      "+1",
      "1.0",
      "1e3",
      "1.",
      ".5",
      "0x1F",
      "0o17",
      "0755",
      "08",
      "12:30",
      "1:2:3",
      "2024-01-01",
      "2024-01-01T00:00:00Z",
      ".inf",
      "-.inf",
      ".nan",
      "=",
      "<<",
      "-",
      "--",
      "---",
      "...",
      "....",
      "- x",
      "? x",
      ": x",
      "a: b",
      "a:b",
      "a #b",
      "a#b",
      "#",
      "key:",
      "[]",
      "{}",
      "[a, b]",
      "{a: b}",
      "&a",
      "*a",
      "!tag",
      "|",
      ">",
      "'",
      "\"",
      "''",
      "%",
      "@",
      "`",
      ",",
      "a,b",
      "x\ny",
      "x\ny\n",
      "x\n\n",
      "x\n\n\n",
      "\nx",
      "\n\nx\n",
      " x\ny",
      "x\n y\n",
      "x\n\ty",
      "x \ny",
      "x\n  \ny",
      "\t",
      "\r",
      "\r\n",
      "a\r\nb\r\n",
      "\\",
      "\\n",
      "\x01",
      "\x7f",
      "caf\xC3\xA9",
      "\xE2\x80\xA8",
      "\xC2\x85",
      "\xEF\xBB\xBF",
      "emoji \xF0\x9F\x98\x80",
      "  lead",
      "trail  ",
      "mid  space",
      "a: ",
      " #",
      "#comment",
      "x # y",
      "\"quoted\"",
      "'single'",
      "it's",
      "say \"hi\"",
      "C:\\path",
      "100%",
      "50 %",
      "@user",
      "a\u00a0b",
      "multi\nline with: colon\nand # hash\n",
      "- item\n- item2\n",
      "--- \n...\n",
      std::string(1500, 'z'),
      std::string("nul\0byte", 8),
  };
  return strings;
}

TEST(YamlRoundTrip, TrickyStringsAsValuesKeysAndItems) {
  for (const std::string& s : TrickyStrings()) {
    // Invalid UTF-8 and NUL are not representable; everything here is valid.
    ExpectRoundTrip(Json{{"k", s}});
    ExpectRoundTrip(Json::array({s}));
    ExpectRoundTrip(Json::array({Json::array({s, s})}));
    ExpectRoundTrip(Json::array({Json{{"a", s}, {"b", s}}}));
    ExpectRoundTrip(Json{{s, 1}, {"other", Json{{s, s}}}});
    if (!s.empty()) ExpectRoundTrip(Json(s));  // top level
  }
}

TEST(YamlRoundTrip, Numbers) {
  for (const Json& n :
       {Json(0), Json(-1), Json(42), Json(std::numeric_limits<std::int64_t>::max()),
        Json(std::numeric_limits<std::int64_t>::min()),
        Json(std::numeric_limits<std::uint64_t>::max()), Json(0.0), Json(-0.0), Json(1.0),
        Json(0.1), Json(-2.5), Json(1e20), Json(1e-300), Json(5e-324), Json(1.7976931348623157e308),
        Json(123456.789), Json(std::numeric_limits<double>::infinity()),
        Json(-std::numeric_limits<double>::infinity())}) {
    ExpectRoundTrip(Json{{"n", n}});
    const Json back = ParseOne(EmitYaml(Json{{"n", n}}))["n"];
    EXPECT_EQ(back.type(), n.type()) << n.dump();
  }
}

TEST(YamlRoundTrip, Structures) {
  ExpectRoundTrip(Json::parse(R"({"a": {}, "b": [], "c": [{}], "d": [[]], "e": {"f": {}}})"));
  ExpectRoundTrip(Json::parse(R"([[[1, [2, {"x": [3]}]]], {"k": [{"a": 1}, {"b": [[]]}]}])"));
  ExpectRoundTrip(Json::parse(R"({"z": 1, "a": 2, "m": {"y": true, "b": false, "n": null}})"));
  ExpectRoundTrip(Json::parse(R"([null, true, false, "", [null]])"));
}

// Random values from pieces that stress quoting, with a fixed seed so a
// failure reproduces.
class RandomValues {
 public:
  explicit RandomValues(unsigned seed) : rng_(seed) {}

  std::string String() {
    static const std::vector<std::string> pieces = {"a",        "b",    " ",        ":",
                                                    ": ",       "#",    " #",       "-",
                                                    "- ",       "?",    "'",        "\"",
                                                    "\\",       "\n",   "\t",       "\r",
                                                    "0",        "1",    ".",        "x",
                                                    "{",        "}",    "[",        "]",
                                                    ",",        "&",    "*",        "!",
                                                    "|",        ">",    "%",        "@",
                                                    "`",        "~",    "yes",      "null",
                                                    "true",     "0x",   "e",        "+",
                                                    "\x7f",     "\x01", "\xC3\xA9", "\xE2\x80\xA8",
                                                    "\xC2\x85", "no",   "on",       "...",
                                                    "---"};
    std::string s;
    const int n = Uniform(0, 6);
    for (int i = 0; i < n; ++i)
      s += pieces[static_cast<std::size_t>(Uniform(0, static_cast<int>(pieces.size()) - 1))];
    return s;
  }

  Json Value(int depth) {
    const int kind = Uniform(0, depth > 0 ? 7 : 5);
    switch (kind) {
      case 0:
        return Json(nullptr);
      case 1:
        return Json(Uniform(0, 1) == 1);
      case 2:
        return Json(Uniform(-100000, 100000));
      case 3:
        return Json(static_cast<double>(Uniform(-1000000, 1000000)) / 64.0);
      case 4:
      case 5:
        return Json(String());
      case 6: {
        Json arr = Json::array();
        for (int i = Uniform(0, 4); i > 0; --i) arr.push_back(Value(depth - 1));
        return arr;
      }
      default: {
        Json obj = Json::object();
        for (int i = Uniform(0, 4); i > 0; --i) obj[String()] = Value(depth - 1);
        return obj;
      }
    }
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937 rng_;
};

TEST(YamlRoundTrip, RandomValues) {
  RandomValues random(20240601);
  for (int i = 0; i < 3000; ++i) {
    const Json v = random.Value(4);
    if (v.is_null()) continue;  // null documents are skipped by design
    ExpectRoundTrip(v);
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace powerctl
