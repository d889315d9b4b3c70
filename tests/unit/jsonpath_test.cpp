#include "core/common/jsonpath.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace powerctl {
namespace {

const nlohmann::json& Nodes() {
  static const nlohmann::json doc = nlohmann::json::parse(R"({
    "kind": "List",
    "items": [
      {"metadata": {"name": "a", "labels": {"kubernetes.io/os": "linux"}}, "watts": 120.5,
       "ready": true, "tags": ["x", "y"]},
      {"metadata": {"name": "b", "labels": {}}, "watts": null, "ready": false, "tags": []},
      {"metadata": {"name": "c"}, "watts": 7}
    ]
  })");
  return doc;
}

std::string Render(const std::string& text, const nlohmann::json& doc = Nodes()) {
  auto path = ParseJsonPath(text);
  EXPECT_TRUE(path.ok()) << text << ": " << path.error().message;
  if (!path.ok()) return "<parse error>";
  auto out = RenderJsonPath(*path, doc);
  EXPECT_TRUE(out.ok()) << text << ": " << out.error().message;
  return out.ok() ? *out : "<render error>";
}

std::string ParseErrorOf(const std::string& text) {
  auto path = ParseJsonPath(text);
  EXPECT_FALSE(path.ok()) << text;
  if (path.ok()) return "";
  EXPECT_EQ(path.error().code, ErrorCode::kInvalidInput);
  return path.error().message;
}

TEST(JsonPathTest, FieldsAndLiteralText) {
  EXPECT_EQ(Render("{.kind}"), "List");
  EXPECT_EQ(Render("kind: {.kind}!"), "kind: List!");
  EXPECT_EQ(Render("{$.items[0].metadata.name}"), "a");
  EXPECT_EQ(Render("{kind}"), "List");  // kubectl's relaxed form
}

TEST(JsonPathTest, WildcardsJoinResultsWithSpaces) {
  EXPECT_EQ(Render("{.items[*].metadata.name}"), "a b c");
  EXPECT_EQ(Render("{.items[0].tags.*}"), "x y");
}

TEST(JsonPathTest, IndexesAndSlices) {
  EXPECT_EQ(Render("{.items[-1].metadata.name}"), "c");
  EXPECT_EQ(Render("{.items[1:].metadata.name}"), "b c");
  EXPECT_EQ(Render("{.items[:2].metadata.name}"), "a b");
  EXPECT_EQ(Render("{.items[5].metadata.name}"), "");
}

TEST(JsonPathTest, BracketKeysMayHoldDotsAndSlashes) {
  EXPECT_EQ(Render("{.items[0].metadata.labels['kubernetes.io/os']}"), "linux");
  EXPECT_EQ(Render(R"({.items[0]["metadata"].name})"), "a");
}

TEST(JsonPathTest, NonStringsPrintAsCompactJson) {
  EXPECT_EQ(Render("{.items[*].watts}"), "120.5 null 7");
  EXPECT_EQ(Render("{.items[0].ready}"), "true");
  EXPECT_EQ(Render("{.items[0].tags}"), R"(["x","y"])");
}

TEST(JsonPathTest, MissingFieldsPrintNothing) {
  EXPECT_EQ(Render("[{.nope.deeper}]"), "[]");
  EXPECT_EQ(Render("{.items[*].tags[0]}"), "x");
}

TEST(JsonPathTest, RangeRepeatsTheBodyPerElement) {
  EXPECT_EQ(Render(R"({range .items[*]}{.metadata.name}{"\t"}{.watts}{"\n"}{end})"),
            "a\t120.5\nb\tnull\nc\t7\n");
  EXPECT_EQ(Render(R"({range .items[*]}{range .tags[*]}{.}{end};{end})"), "xy;;;");
  // $ is the document even inside a range.
  EXPECT_EQ(Render("{range .items[*]}{$.kind}{end}"), "ListListList");
}

TEST(JsonPathTest, EscapesInTextAndQuotes) {
  EXPECT_EQ(Render(R"({.kind}\n{.kind}\t\{x\})"), "List\nList\t{x}");
  EXPECT_EQ(Render(R"({"say \"hi\"\n"})"), "say \"hi\"\n");
  EXPECT_EQ(Render(R"(a\qb)"), R"(a\qb)");
}

TEST(JsonPathTest, SyntaxErrorsNameThePosition) {
  EXPECT_NE(ParseErrorOf("{.kind").find("unclosed"), std::string::npos);
  EXPECT_NE(ParseErrorOf("{range .items[*]}{.a}").find("without an {end}"), std::string::npos);
  EXPECT_NE(ParseErrorOf("{.a}{end}").find("position 5: {end} without a {range}"),
            std::string::npos);
  EXPECT_NE(ParseErrorOf("{.items[x]}").find("expected a number"), std::string::npos);
  EXPECT_NE(ParseErrorOf("a}").find("unexpected \"}\""), std::string::npos);
  EXPECT_NE(ParseErrorOf(R"({"open})").find("unterminated"), std::string::npos);
  EXPECT_NE(ParseErrorOf("").find("empty"), std::string::npos);
}

TEST(JsonPathTest, UnsupportedSyntaxIsNamed) {
  EXPECT_NE(ParseErrorOf("{..name}").find("recursive descent"), std::string::npos);
  EXPECT_NE(ParseErrorOf("{.items[?(@.ready)]}").find("filters"), std::string::npos);
  EXPECT_NE(ParseErrorOf("{.items[0,1]}").find("unions"), std::string::npos);
}

TEST(JsonPathTest, LimitsBoundTheTemplateAndTheOutput) {
  EXPECT_NE(ParseErrorOf(std::string(kJsonPathMaxTemplate + 1, 'x')).find("longer than"),
            std::string::npos);
  std::string deep;
  for (int i = 0; i <= kJsonPathMaxRangeDepth; ++i) deep += "{range .}";
  for (int i = 0; i <= kJsonPathMaxRangeDepth; ++i) deep += "{end}";
  EXPECT_NE(ParseErrorOf(deep).find("nest deeper"), std::string::npos);

  // 8 nested ranges over 16 elements would print 16^8 times 4 KiB: refused at the output limit.
  nlohmann::json wide = nlohmann::json::array();
  for (int i = 0; i < 16; ++i) wide.push_back(i);
  nlohmann::json doc = {{"a", wide}};
  std::string bomb;
  for (int i = 0; i < kJsonPathMaxRangeDepth; ++i) bomb += "{range $.a[*]}";
  bomb += std::string(4096, 'x');
  for (int i = 0; i < kJsonPathMaxRangeDepth; ++i) bomb += "{end}";
  auto path = ParseJsonPath(bomb);
  ASSERT_TRUE(path.ok()) << path.error().message;
  auto out = RenderJsonPath(*path, doc);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(out.error().message.find("MiB"), std::string::npos);
}

}  // namespace
}  // namespace powerctl
