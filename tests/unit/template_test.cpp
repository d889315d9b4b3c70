#include "core/manifests/template.h"

#include "core/common/yaml.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

namespace powerctl::manifests {
namespace {

using Json = nlohmann::ordered_json;

std::string Render(std::string_view text, const Json& context) {
  auto result = RenderTemplate("t.yaml", text, context);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? *result : "<error>";
}

std::string RenderError(std::string_view text, const Json& context = Json::object()) {
  auto result = RenderTemplate("t.yaml", text, context);
  EXPECT_FALSE(result.ok()) << text;
  if (result.ok()) return "";
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  return result.error().message;
}

// ---------------------------------------------------------------------------
// Variables
// ---------------------------------------------------------------------------

TEST(Template, PlainTextPassesThrough) {
  EXPECT_EQ(Render("", Json::object()), "");
  EXPECT_EQ(Render("a: 1\n  b: {x}\n} }} {\n", Json::object()), "a: 1\n  b: {x}\n} }} {\n");
}

TEST(Template, VariablesAreJson) {
  const Json ctx = Json::parse(R"({"s": "web", "n": 3, "f": 0.5, "t": true, "z": null,
                                   "o": {"a": 1, "b": [1, "x"]}, "a": [], "e": {}})");
  EXPECT_EQ(Render("{{s}}", ctx), R"("web")");
  EXPECT_EQ(Render("{{n}}", ctx), "3");
  EXPECT_EQ(Render("{{f}}", ctx), "0.5");
  EXPECT_EQ(Render("{{t}}", ctx), "true");
  EXPECT_EQ(Render("{{z}}", ctx), "null");
  EXPECT_EQ(Render("{{o}}", ctx), R"({"a": 1, "b": [1, "x"]})");
  EXPECT_EQ(Render("{{a}} {{e}}", ctx), "[] {}");
  EXPECT_EQ(Render("name: {{ s }}\n", ctx), "name: \"web\"\n");
}

TEST(Template, StringsAreJsonQuoted) {
  const Json ctx = {{"q", "say \"hi\""},
                    {"nl", "a\nb"},
                    {"c", "k: v"},
                    {"b", "back\\slash"},
                    {"u", "caf\xC3\xA9 \xE2\x80\xA8"}};
  EXPECT_EQ(Render("{{q}}", ctx), R"("say \"hi\"")");
  EXPECT_EQ(Render("{{nl}}", ctx), R"("a\nb")");
  EXPECT_EQ(Render("{{c}}", ctx), R"("k: v")");
  EXPECT_EQ(Render("{{b}}", ctx), R"("back\\slash")");
  // U+2028 is escaped: YAML 1.1 readers (kubectl) treat it as a line break.
  EXPECT_EQ(Render("{{u}}", ctx), "\"caf\xC3\xA9 \\u2028\"");
}

TEST(Template, RawVariables) {
  const Json ctx = {{"s", "a \"b\"\nc"}, {"n", 7}, {"o", {{"k", "v"}}}};
  EXPECT_EQ(Render("{{{s}}}", ctx), "a \"b\"\nc");
  EXPECT_EQ(Render("{{& s}}", ctx), "a \"b\"\nc");
  EXPECT_EQ(Render("{{&s}}|{{{ n }}}|{{{o}}}", ctx), R"(a "b"
c|7|{"k": "v"})");
}

TEST(Template, DottedNames) {
  const Json ctx = Json::parse(R"({"image": {"repo": "nginx", "tag": "1.25", "meta": {"x": 1}}})");
  EXPECT_EQ(Render("{{image.repo}}:{{{image.tag}}} {{image.meta.x}}", ctx), R"("nginx":1.25 1)");
  EXPECT_NE(RenderError("{{image.missing}}", ctx).find("unknown variable \"image.missing\""),
            std::string::npos);
  EXPECT_NE(RenderError("{{image.repo.x}}", ctx).find("unknown variable"), std::string::npos);
}

TEST(Template, UnknownVariableIsAnErrorWithLine) {
  EXPECT_EQ(RenderError("a: 1\nb: {{nope}}\n"), "t.yaml:2: unknown variable \"nope\"");
  EXPECT_EQ(RenderError("a\n\n\n{{{raw}}}"), "t.yaml:4: unknown variable \"raw\"");
  // Line numbers count newlines inside earlier multi-line comments and skipped lines.
  EXPECT_EQ(RenderError("{{! one\ntwo }}\n{{#no}}\nx\n{{/no}}\n{{x}}"),
            "t.yaml:6: unknown variable \"x\"");
}

// ---------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------

TEST(Template, SectionTruthiness) {
  const Json ctx = Json::parse(R"({"t": true, "f": false, "z": null, "s": "x", "es": "",
                                   "n": 0, "a": [1], "ea": [], "o": {}})");
  for (const char* name : {"t", "s", "n", "a", "o"}) {
    const std::string text = std::string("{{#") + name + "}}yes{{/" + name + "}}";
    EXPECT_EQ(Render(text, ctx), "yes") << name;
    const std::string inverted = std::string("{{^") + name + "}}no{{/" + name + "}}";
    EXPECT_EQ(Render(inverted, ctx), "") << name;
  }
  for (const char* name : {"f", "z", "es", "ea", "missing"}) {
    const std::string text = std::string("{{#") + name + "}}yes{{/" + name + "}}";
    EXPECT_EQ(Render(text, ctx), "") << name;
    const std::string inverted = std::string("{{^") + name + "}}no{{/" + name + "}}";
    EXPECT_EQ(Render(inverted, ctx), "no") << name;
  }
}

TEST(Template, ArraySectionsIterate) {
  const Json ctx = Json::parse(R"({"xs": [1, "two", null, [3]], "sep": ","})");
  EXPECT_EQ(Render("{{#xs}}{{.}}{{sep}}{{/xs}}", ctx), R"(1",""two"","null","[3]",")");
  EXPECT_EQ(Render("{{#xs}}<{{{.}}}>{{/xs}}", ctx), "<1><two><null><[3]>");
}

TEST(Template, ObjectAndScalarSectionsPushContext) {
  const Json ctx = Json::parse(R"({"name": "outer", "obj": {"name": "inner", "only": 1},
                                   "s": "str", "flag": true})");
  EXPECT_EQ(Render("{{#obj}}{{name}} {{only}}{{/obj}} {{name}}", ctx), R"("inner" 1 "outer")");
  EXPECT_EQ(Render("{{#s}}{{.}}{{/s}}", ctx), R"("str")");
  EXPECT_EQ(Render("{{#flag}}{{.}} {{name}}{{/flag}}", ctx), R"(true "outer")");
}

TEST(Template, NestedSectionsWithArraysOfObjects) {
  const Json ctx = Json::parse(R"({
    "app": "web",
    "containers": [
      {"name": "main", "ports": [80, 443], "env": [{"k": "A", "v": "1"}]},
      {"name": "sidecar", "ports": [], "env": []}
    ]})");
  const std::string text =
      "{{#containers}}{{name}}@{{app}}:{{#ports}}{{.}};{{/ports}}{{^ports}}none{{/ports}}"
      "{{#env}}[{{k}}={{v}}]{{/env}}\n{{/containers}}";
  EXPECT_EQ(Render(text, ctx),
            "\"main\"@\"web\":80;443;[\"A\"=\"1\"]\n"
            "\"sidecar\"@\"web\":none\n");
}

TEST(Template, DottedNamesDoNotFallBackToOuterFrames) {
  // Mustache: once "a" is found, "a.b" must resolve inside it.
  const Json ctx = Json::parse(R"({"b": {"c": "outer"}, "a": {"x": 1}})");
  EXPECT_NE(RenderError("{{#a}}{{a.b.c}}{{/a}}", ctx).find("unknown variable \"a.b.c\""),
            std::string::npos);
  EXPECT_EQ(Render("{{#a}}{{b.c}}{{/a}}", ctx), R"("outer")");
}

TEST(Template, Comments) {
  EXPECT_EQ(Render("a{{! note }}b{{!}}c", Json::object()), "abc");
  EXPECT_EQ(Render("a: 1\n{{! a comment\n  over lines }}\nb: 2\n", Json::object()), "a: 1\nb: 2\n");
  // As in Mustache, a comment ends at the first "}}"; "{{" inside is fine.
  EXPECT_EQ(Render("{{! {{ not a tag }}x", Json::object()), "x");
}

// ---------------------------------------------------------------------------
// Standalone lines
// ---------------------------------------------------------------------------

TEST(Template, StandaloneLinesKeepYamlIndentationExact) {
  const std::string text = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{name}}
  {{#labels}}
  labels:
    {{#pairs}}
    {{{key}}}: {{value}}
    {{/pairs}}
  {{/labels}}
spec:
  template:
    spec:
      containers:
        {{! one entry per container }}
        {{#containers}}
        - name: {{name}}
          image: {{image}}
          args: {{args}}
          ports:
            {{#ports}}
            - containerPort: {{.}}
            {{/ports}}
          {{#resources}}
          resources:
            limits: {cpu: {{cpu}}}
          {{/resources}}
          {{^resources}}
          resources: {}
          {{/resources}}
        {{/containers}}
)";
  const Json ctx = Json::parse(R"({
    "name": "web",
    "labels": {"pairs": [{"key": "app", "value": "web"}, {"key": "tier", "value": "yes"}]},
    "containers": [
      {"name": "main", "image": "nginx:1.25", "args": ["--port", "8080"], "ports": [80, 443],
       "resources": {"cpu": "500m"}},
      {"name": "side", "image": "busybox", "args": [], "ports": [9090]}
    ]})");
  const std::string expected = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web"
  labels:
    app: "web"
    tier: "yes"
spec:
  template:
    spec:
      containers:
        - name: "main"
          image: "nginx:1.25"
          args: ["--port", "8080"]
          ports:
            - containerPort: 80
            - containerPort: 443
          resources:
            limits: {cpu: "500m"}
        - name: "side"
          image: "busybox"
          args: []
          ports:
            - containerPort: 9090
          resources: {}
)";
  EXPECT_EQ(Render(text, ctx), expected);

  // And the result is the YAML we meant.
  auto docs = ParseYamlDocuments(expected, "rendered.yaml");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  EXPECT_EQ((*docs)[0]["metadata"]["labels"]["tier"], Json("yes"));
  const Json& containers = (*docs)[0]["spec"]["template"]["spec"]["containers"];
  EXPECT_EQ(containers[0]["resources"]["limits"]["cpu"], Json("500m"));
  EXPECT_EQ(containers[0]["ports"][1]["containerPort"], Json(443));
  EXPECT_EQ(containers[1]["resources"], Json::object());
}

TEST(Template, StandaloneRules) {
  const Json ctx = {{"t", true}, {"v", "x"}};
  // Whitespace-only line with one section tag: removed with its newline.
  EXPECT_EQ(Render("a\n  {{#t}}  \nb\n  {{/t}}\nc\n", ctx), "a\nb\nc\n");
  // At the start and end of the text, without a final newline.
  EXPECT_EQ(Render("{{#t}}\nb\n{{/t}}", ctx), "b\n");
  // CRLF line endings.
  EXPECT_EQ(Render("a\r\n{{#t}}\r\nb\r\n{{/t}}\r\nc\r\n", ctx), "a\r\nb\r\nc\r\n");
  // Not standalone: other text or another tag on the line.
  EXPECT_EQ(Render("a {{#t}}b{{/t}} c\n", ctx), "a b c\n");
  EXPECT_EQ(Render("{{#t}}{{/t}}\nz\n", ctx), "\nz\n");
  EXPECT_EQ(Render("  {{#t}}{{v}}\n  {{/t}}\n", ctx), "  \"x\"\n");
  // Variables are never standalone.
  EXPECT_EQ(Render("  {{v}}\n", ctx), "  \"x\"\n");
  // Inverted and comment tags are.
  EXPECT_EQ(Render("a\n {{^t}}\nno\n {{/t}}\n {{! c }}\nb\n", ctx), "a\nb\n");
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

TEST(Template, StructuralErrorsCarryLines) {
  EXPECT_EQ(RenderError("a\n{{#items}}\nb\n"), "t.yaml:2: section \"items\" is not closed");
  EXPECT_EQ(RenderError("{{#a}}\n{{#b}}\n{{/a}}\n{{/b}}\n"),
            "t.yaml:3: {{/a}} does not match section \"b\" opened at line 2");
  EXPECT_EQ(RenderError("x\ny\n{{/a}}\n"), "t.yaml:3: {{/a}} closes no open section");
  EXPECT_EQ(RenderError("a: 1\nb: {{name\nc: 3\n"),
            "t.yaml:2: unterminated tag (no closing \"}}\")");
  EXPECT_EQ(RenderError("{{{name}}\n"), "t.yaml:1: unterminated tag (no closing \"}}}\")");
  EXPECT_EQ(RenderError("\n{{}}"),
            "t.yaml:2: invalid tag name \"\" (use \".\" or dot-separated [A-Za-z0-9_-] parts)");
  EXPECT_NE(RenderError("{{a..b}}").find("t.yaml:1: invalid tag name \"a..b\""), std::string::npos);
  EXPECT_NE(RenderError("{{#a b}}{{/a b}}").find("invalid tag name \"a b\""), std::string::npos);
  EXPECT_NE(RenderError("{{.x}}").find("invalid tag name"), std::string::npos);
  EXPECT_EQ(RenderError("\n\n{{> partial}}"), "t.yaml:3: partials ({{>name}}) are not supported");
  EXPECT_EQ(RenderError("{{=<% %>=}}"),
            "t.yaml:1: set-delimiter tags ({{=...=}}) are not supported");
}

TEST(Template, ErrorsInsideSectionsReportTheirLine) {
  const Json ctx = Json::parse(R"({"xs": [{"a": 1}, {"b": 2}]})");
  EXPECT_EQ(RenderError("{{#xs}}\n- {{a}}\n{{/xs}}\n", ctx), "t.yaml:2: unknown variable \"a\"");
}

TEST(Template, SectionNestingIsBounded) {
  std::string deep;
  for (int i = 0; i < 101; ++i) deep += "{{#a}}";
  EXPECT_EQ(RenderError(deep), "t.yaml:1: sections nested more than 100 deep");
  std::string ok;
  for (int i = 0; i < 100; ++i) ok += "{{#a}}";
  ok += "x";
  for (int i = 0; i < 100; ++i) ok += "{{/a}}";
  EXPECT_EQ(Render(ok, Json{{"a", Json{{"a", true}}}}), "x");
}

TEST(Template, ExponentialSectionsHitTheStepBudget) {
  // 32 nested sections over two items would be 2^32 passes.
  std::string text = "a\n";
  for (int i = 0; i < 32; ++i) text += "{{#items}}";
  text += "x";
  for (int i = 0; i < 32; ++i) text += "{{/items}}";
  const Json ctx = Json::parse(R"({"items": [1, 2]})");
  const auto start = std::chrono::steady_clock::now();
  const std::string message = RenderError(text, ctx);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(message.rfind("t.yaml:2: rendering takes more than 1000000 steps", 0), 0u) << message;
}

TEST(Template, OutputIsCapped) {
  // Few steps, large output: 200 x 200 passes over a 2 KB string is 80 MB.
  Json xs = Json::array();
  for (int i = 0; i < 200; ++i) xs.push_back(i);
  const Json ctx = {{"xs", xs}, {"big", std::string(2000, 'b')}};
  EXPECT_NE(RenderError("{{#xs}}{{#xs}}{{{big}}}{{/xs}}{{/xs}}", ctx)
                .find("rendered output is larger than 64 MiB"),
            std::string::npos);
}

TEST(Template, LargeOrdinaryRenderIsFine) {
  Json items = Json::array();
  for (int i = 0; i < 5000; ++i) items.push_back({{"name", "n" + std::to_string(i)}, {"port", i}});
  auto result =
      RenderTemplate("t.yaml", "{{#items}}\n- name: {{name}}\n  port: {{port}}\n{{/items}}\n",
                     Json{{"items", items}});
  ASSERT_TRUE(result.ok()) << result.error().message;
  auto docs = ParseYamlDocuments(*result, "r.yaml");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0].size(), 5000u);
  EXPECT_EQ((*docs)[0][4999]["name"], Json("n4999"));
}

// ---------------------------------------------------------------------------
// Why values are JSON: `key: {{v}}` parses back to exactly v
// ---------------------------------------------------------------------------

void ExpectRenderedValueParsesBack(const Json& v) {
  const Json ctx = {{"v", v}};
  auto rendered = RenderTemplate("rt.yaml", "key: {{v}}\nlist: [{{v}}, {{v}}]\n", ctx);
  ASSERT_TRUE(rendered.ok()) << rendered.error().message;
  auto docs = ParseYamlDocuments(*rendered, "rt.yaml");
  ASSERT_TRUE(docs.ok()) << docs.error().message << "\n" << *rendered;
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0]["key"], v) << *rendered;
  EXPECT_EQ((*docs)[0]["list"], Json::array({v, v})) << *rendered;
}

TEST(Template, RenderedValuesParseBackExactly) {
  for (const char* s :
       {"",           " ",        "yes",        "no",         "on",          "off",
        "y",          "true",     "null",       "~",          "0755",        "0x1F",
        "1.0",        "1e3",      "12:30",      "2024-01-01", "=",           "<<",
        "a: b",       "a #b",     "#c",         "- x",        "? x",         "[1, 2]",
        "{a: b}",     "&anchor",  "*alias",     "!tag",       "|",           ">",
        "'",          "\"",       "say \"hi\"", "it's",       "back\\slash", "line1\nline2",
        "trailing\n", "\n\n",     "tab\there",  "cr\r\n",     "caf\xC3\xA9", "\xE2\x80\xA8",
        "\xC2\x85",   "\x01\x7f", "  lead",     "trail  ",    "%percent",    "@at",
        "`tick`",     "---",      "...",        "{{v}}"}) {
    ExpectRenderedValueParsesBack(Json(s));
  }
  for (const Json& v :
       {Json(0), Json(-42), Json(std::numeric_limits<std::int64_t>::max()), Json(0.1), Json(1e20),
        Json(-2.5), Json(true), Json(false), Json(nullptr), Json::array(), Json::object(),
        Json::parse(R"({"k": ["yes", {"n": null, "x": "a: b\nc"}], "e": {}, "z": [[]]})")}) {
    ExpectRenderedValueParsesBack(v);
  }
}

}  // namespace
}  // namespace powerctl::manifests
