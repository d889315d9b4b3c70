#include "core/extender/wire.h"
#include "core/extender/wire_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace powerctl::extender {
namespace {

using nlohmann::json;

// From k8s.io/kube-scheduler extender/v1/types_test.go.
constexpr const char* kTestPod =
    R"({"metadata":{"name":"podname"},"spec":{"containers":null},"status":{}})";
constexpr const char* kTestNode =
    R"({"metadata":{"name":"nodename"},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}})";

std::string Node(const std::string& name) {
  return R"({"metadata":{"name":")" + name + R"("},"spec":{},"status":{}})";
}

TEST(DecodeExtenderArgsTest, NodeCacheCapableBody) {
  auto args = DecodeExtenderArgs(std::string(R"({"Pod":)") + kTestPod +
                                 R"(,"Nodes":null,"NodeNames":["n1","n2"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->mode, NodesMode::kNodeNames);
  EXPECT_EQ(args->node_names, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_TRUE(args->node_items.empty());
  EXPECT_EQ(args->pod, json::parse(kTestPod));
}

TEST(DecodeExtenderArgsTest, NodeListBodyKeepsTheNodeObjects) {
  auto args = DecodeExtenderArgs(std::string(R"({"Pod":)") + kTestPod +
                                 R"(,"Nodes":{"metadata":{},"items":[)" + kTestNode + "," +
                                 Node("n2") + R"(]},"NodeNames":null})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->mode, NodesMode::kNodes);
  EXPECT_EQ(args->node_names, (std::vector<std::string>{"nodename", "n2"}));
  ASSERT_EQ(args->node_items.size(), 2u);
  EXPECT_EQ(args->node_items[0], json::parse(kTestNode));
}

TEST(DecodeExtenderArgsTest, TypesTestDocumentWithBothPrefersNodeNames) {
  auto args = DecodeExtenderArgs(std::string(R"({"Pod":)") + kTestPod +
                                 R"(,"Nodes":{"metadata":{},"items":[)" + kTestNode +
                                 R"(]},"NodeNames":["node1"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->mode, NodesMode::kNodeNames);
  EXPECT_EQ(args->node_names, std::vector<std::string>{"node1"});
  EXPECT_TRUE(args->node_items.empty());  // not kept in NodeNames mode
}

TEST(DecodeExtenderArgsTest, KeysMatchCaseInsensitivelyExactFirst) {
  auto lower = DecodeExtenderArgs(R"({"pod":{"metadata":{"name":"p"}},"nodenames":["a"]})");
  ASSERT_TRUE(lower.ok()) << lower.error().message;
  EXPECT_EQ(lower->node_names, std::vector<std::string>{"a"});
  auto both = DecodeExtenderArgs(R"({"Pod":{},"nodenames":["b"],"NodeNames":["a"]})");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->node_names, std::vector<std::string>{"a"});
  auto items = DecodeExtenderArgs(R"({"POD":{},"NODES":{"ITEMS":[{"Metadata":{"Name":"x"}}]}})");
  ASSERT_TRUE(items.ok()) << items.error().message;
  EXPECT_EQ(items->mode, NodesMode::kNodes);
  EXPECT_EQ(items->node_names, std::vector<std::string>{"x"});
}

TEST(DecodeExtenderArgsTest, NoCandidatesIsNodeNamesModeWithNone) {
  for (const char* body : {R"({"Pod":{},"Nodes":null,"NodeNames":null})", R"({"Pod":{}})",
                           R"({"Pod":{},"Nodes":{"metadata":{},"items":null}})"}) {
    auto args = DecodeExtenderArgs(body);
    ASSERT_TRUE(args.ok()) << body;
    EXPECT_TRUE(args->node_names.empty()) << body;
  }
  auto args = DecodeExtenderArgs(R"({"Pod":{}})");
  EXPECT_EQ(
      EncodeFilterResult(*args, {}),
      R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":null,"Error":""})");
}

TEST(DecodeExtenderArgsTest, BadBodiesGiveAReason) {
  const std::string deep =
      R"({"Pod":{},"x":)" + std::string(100, '[') + std::string(100, ']') + "}";
  const std::pair<std::string, std::string> cases[] = {
      {"", "not valid JSON"},
      {"{\"Pod\":", "not valid JSON"},
      {"[]", "not a JSON object"},
      {R"({"NodeNames":["a"]})", "Pod is missing"},
      {R"({"Pod":null,"NodeNames":["a"]})", "Pod is missing"},
      {R"({"Pod":"p","NodeNames":["a"]})", "Pod is not an object"},
      {R"({"Pod":{},"NodeNames":"a"})", "NodeNames is not an array"},
      {R"({"Pod":{},"NodeNames":["a",1]})", "NodeNames[1] is not a string"},
      {R"({"Pod":{},"Nodes":[]})", "Nodes is not a NodeList"},
      {R"({"Pod":{},"Nodes":{"items":{}}})", "Nodes.items is not an array"},
      {R"({"Pod":{},"Nodes":{"items":[{"metadata":{}}]}})", "Nodes.items[0] has no metadata.name"},
      {deep, "nested deeper than 64"},
  };
  for (const auto& [body, reason] : cases) {
    auto args = DecodeExtenderArgs(body);
    ASSERT_FALSE(args.ok()) << body;
    EXPECT_EQ(args.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(args.error().message.find(reason), std::string::npos) << args.error().message;
    EXPECT_EQ(args.error().message.rfind("ExtenderArgs: ", 0), 0u) << args.error().message;
  }
}

TEST(DecodeExtenderArgsTest, DepthCountsOnlyOutsideStrings) {
  const std::string body =
      R"({"Pod":{"metadata":{"name":")" + std::string(200, '[') + R"(\"{"}},"NodeNames":["a"]})";
  auto args = DecodeExtenderArgs(body);
  ASSERT_TRUE(args.ok()) << args.error().message;
}

// The streaming parser that takes NodeNames out must build the same document as the DOM
// parser, and hand everything it would decide differently to the general decoder.
TEST(DecodeExtenderArgsTest, FastParserMatchesTheDomParser) {
  const std::string same[] = {
      R"({"Pod":{"metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1.5"}}}]}},"Nodes":null,"NodeNames":["n1","n\u00e9",""]})",
      R"({"NodeNames":[],"Pod":{"x":[1,-2,3.5,true,false,null,[[]],{}]}})",
      R"({"Pod":{},"NodeNames":null,"Nodes":{"items":[{"metadata":{"name":"x"}}]}})",
      R"({"Pod":{},"Pod":{"dup":1},"NodeNames":["a"],"Nodes":{"items":[]}})",
      R"({"Pod":{"n":18446744073709551615,"m":-9223372036854775808,"f":1e300}})",
  };
  for (const std::string& body : same) {
    internal::ArgsDocument fast;
    ASSERT_TRUE(internal::ParseArgsFast(body, fast)) << body;
    json dom = json::parse(body);
    json names = dom.contains("NodeNames") ? dom["NodeNames"] : json(nullptr);
    dom.erase("NodeNames");
    EXPECT_EQ(fast.root, dom) << body;
    EXPECT_EQ(fast.names_present, names.is_array()) << body;
    if (names.is_array()) {
      EXPECT_EQ(json(fast.names), names) << body;
    }
  }
  const std::string general[] = {
      R"({"Pod":{},"nodenames":["a"]})",     R"({"Pod":{},"NodeNames":["a"],"NodeNames":["b"]})",
      R"({"Pod":{},"NodeNames":"a"})",       R"({"Pod":{},"NodeNames":["a",1]})",
      R"({"Pod":{},"NodeNames":[["a"]]})",   R"({"Pod":{},"NodeNames":{"a":1}})",
      R"({"Pod":{},"NodeNames":[{"a":1}]})", R"([])",
      R"({"Pod":{},"NodeNames":["a"])",      R"()",
  };
  for (const std::string& body : general) {
    internal::ArgsDocument fast;
    EXPECT_FALSE(internal::ParseArgsFast(body, fast)) << body;
  }
  // Nested keys spelled like NodeNames are ordinary data.
  internal::ArgsDocument nested;
  ASSERT_TRUE(internal::ParseArgsFast(R"({"Pod":{"NodeNames":[1],"nodenames":2}})", nested));
  EXPECT_EQ(nested.root["Pod"]["NodeNames"], json::array({1}));
  EXPECT_FALSE(nested.names_present);
}

TEST(DecodeExtenderArgsTest, TakingPlainNamesOutFirstChangesNothing) {
  // ParseArgsFast lifts a plain NodeNames array out before the SAX parse; whatever the body,
  // the result must be the SAX parse of all of it.
  const std::string bodies[] = {
      R"({"Pod":{},"NodeNames":["a","b"]})",
      " {\n \"Pod\" : {} ,\t\"NodeNames\" :\r[ \"a\" , \"b\" ] } ",
      R"({"Pod":{},"NodeNames":["a\"b","c"]})",  // an escape: not plain
      R"({"Pod":{},"NodeNames":["\u0041"]})",
      R"({"Pod":{},"NodeNames":["cafÃ©"]})",   // non-ASCII: not plain
      R"({"Pod":{},"NodeNames":["badÿ"]})",    // invalid UTF-8
      R"({"Pod":{},"Node\u004eames":["a"]})",  // the key escaped
      R"({"Pod":{},"Node\u004eames":["a"],"NodeNames":["b"]})",
      R"({"Pod":"NodeNames","NodeNames":["a"]})",  // the spelling as a value
      R"({"Pod":{"s":"\"NodeNames\":[\"x\"]"},"NodeNames":["a"]})",
      R"({"Pod":{},"NodeNames":["a"],"NodeNames":["b"]})",  // twice
      R"({"Pod":{},"NodeNames":["a"]} trailing)",
      R"({"Pod":{},"NodeNames":["a"],})",
      R"({"Pod":{} "NodeNames":["a"]})",
      R"({"Pod":{},"NodeNames" ["a"]})",
      R"({"Pod":{},"NodeNames":["a" "b"]})",
      R"({"Pod":{},"NodeNames":["a",]})",
      R"({"Pod":{},"NodeNames":["a)",
      R"({"Pod":{},"NodeNames":[])",
      R"({"Pod":{"x":[}],"NodeNames":["a"]})",
      R"({"Pod":{},"NodeNames":["tab	inside"]})",  // a raw control byte
  };
  for (const std::string& body : bodies) {
    internal::ArgsDocument fast;
    internal::ArgsDocument sax;
    const bool fast_ok = internal::ParseArgsFast(body, fast);
    ASSERT_EQ(fast_ok, internal::ParseArgsSax(body, sax)) << body;
    if (!fast_ok) continue;
    EXPECT_EQ(fast.root, sax.root) << body;
    EXPECT_EQ(fast.names, sax.names) << body;
    EXPECT_EQ(fast.names_present, sax.names_present) << body;
  }
  internal::ArgsDocument spaced;
  ASSERT_TRUE(internal::ParseArgsFast(bodies[1], spaced));
  EXPECT_EQ(spaced.names, (std::vector<std::string>{"a", "b"}));
}

TEST(DecodeExtenderArgsTest, FiveThousandNodesInBothModes) {
  std::string names, items;
  for (int i = 0; i < 5000; ++i) {
    if (i > 0) names += ",", items += ",";
    names += "\"node-" + std::to_string(i) + "\"";
    items += Node("node-" + std::to_string(i));
  }
  auto by_name = DecodeExtenderArgs(R"({"Pod":{},"Nodes":null,"NodeNames":[)" + names + "]}");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->node_names.size(), 5000u);
  EXPECT_EQ(by_name->node_names[4999], "node-4999");
  auto by_object = DecodeExtenderArgs(R"({"Pod":{},"Nodes":{"items":[)" + items + "]}}");
  ASSERT_TRUE(by_object.ok());
  EXPECT_EQ(by_object->node_items.size(), 5000u);
  FilterAnswer answer;
  answer.rejected["node-0"] = {"too hot", false};
  json out = json::parse(EncodeFilterResult(*by_object, answer));
  EXPECT_EQ(out["Nodes"]["items"].size(), 4999u);
}

TEST(EncodeFilterResultTest, NodeNamesModeAsTheChecklist) {
  auto args = DecodeExtenderArgs(R"({"Pod":{},"Nodes":null,"NodeNames":["a","b"]})");
  ASSERT_TRUE(args.ok());
  FilterAnswer answer;
  answer.rejected["b"] = {"too hot", false};
  EXPECT_EQ(
      EncodeFilterResult(*args, answer),
      R"({"Nodes":null,"NodeNames":["a"],"FailedNodes":{"b":"too hot"},"FailedAndUnresolvableNodes":null,"Error":""})");
}

TEST(EncodeFilterResultTest, NodesModeReturnsThePassingObjects) {
  auto args = DecodeExtenderArgs(std::string(R"({"Pod":{},"Nodes":{"metadata":{},"items":[)") +
                                 kTestNode + "," + Node("n2") + R"(]},"NodeNames":null})");
  ASSERT_TRUE(args.ok());
  FilterAnswer answer;
  answer.rejected["n2"] = {"policy dontschedule: temperature > 80", true};
  const std::string expected =
      std::string(R"({"Nodes":{"metadata":{},"items":[)") + json::parse(kTestNode).dump() +
      R"(]},"NodeNames":null,"FailedNodes":{"n2":"policy dontschedule: temperature > 80"},"FailedAndUnresolvableNodes":{"n2":"policy dontschedule: temperature > 80"},"Error":""})";
  EXPECT_EQ(EncodeFilterResult(*args, answer), expected);
  // The Go-encoded shape: every key present, Port keeps its capital P.
  EXPECT_NE(expected.find(R"("kubeletEndpoint":{"Port":0})"), std::string::npos);
}

TEST(EncodeFilterResultTest, OnlyCandidatesAppearAndOrderIsKept) {
  auto args = DecodeExtenderArgs(R"({"Pod":{},"NodeNames":["c","a","b","a"]})");
  ASSERT_TRUE(args.ok());
  FilterAnswer answer;
  answer.rejected["a"] = {"x", false};
  answer.rejected["zzz"] = {"not a candidate", true};
  answer.error = "";
  EXPECT_EQ(
      EncodeFilterResult(*args, answer),
      R"({"Nodes":null,"NodeNames":["c","b"],"FailedNodes":{"a":"x"},"FailedAndUnresolvableNodes":null,"Error":""})");
}

TEST(EncodeFilterResultTest, EscapesStringsAndCarriesTheError) {
  auto args = DecodeExtenderArgs(R"({"Pod":{},"NodeNames":["n\"1"]})");
  ASSERT_TRUE(args.ok());
  FilterAnswer answer;
  answer.error = "model \"down\"\n";
  const std::string out = EncodeFilterResult(*args, answer);
  json parsed = json::parse(out);
  EXPECT_EQ(parsed["NodeNames"][0], "n\"1");
  EXPECT_EQ(parsed["Error"], "model \"down\"\n");
  EXPECT_EQ(
      EncodeFilterError("boom"),
      R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":"boom"})");
}

TEST(EncodeHostPriorityListTest, BareArrayClampedToExtenderRange) {
  EXPECT_EQ(EncodeHostPriorityList({{"a", 10}, {"b", 0}}),
            R"([{"Host":"a","Score":10},{"Host":"b","Score":0}])");
  EXPECT_EQ(EncodeHostPriorityList({{"myhost", 1}}), R"([{"Host":"myhost","Score":1}])");
  EXPECT_EQ(EncodeHostPriorityList({{"hi", 15}, {"lo", -3}}),
            R"([{"Host":"hi","Score":10},{"Host":"lo","Score":0}])");
  EXPECT_EQ(EncodeHostPriorityList({}), "[]");
}

TEST(EncodeHostPriorityListTest, NamesOfEveryKindAreWrittenAsJsonWouldWriteThem) {
  // Plain names take the short path, names to escape or too long for it the other: the
  // result is the same JSON either way.
  const std::string long_name(300, 'n');
  const std::vector<std::string> names = {"node-1",      "ip-10-0-3-17.eu-west-1.compute.internal",
                                          long_name,     "quote\"d",
                                          "back\\slash", "ctrl\x01",
                                          "caf\xc3\xa9", ""};
  std::vector<HostPriority> list;
  json expected = json::array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    list.push_back({names[i], static_cast<std::int64_t>(i) * 3 - 5});
    expected.push_back({{"Host", names[i]}, {"Score", std::clamp<std::int64_t>(i * 3 - 5, 0, 10)}});
  }
  const std::string encoded = EncodeHostPriorityList(list);
  EXPECT_EQ(json::parse(encoded), expected) << encoded;
  EXPECT_EQ(encoded, expected.dump());
}

TEST(PreemptionTest, TypesTestDocumentsRoundTrip) {
  // types_test.go line 2: both maps present; the meta map is the one to answer from.
  auto args = DecodePreemptionArgs(
      std::string(R"({"Pod":)") + kTestPod + R"(,"NodeNameToVictims":{"foo":{"Pods":[)" + kTestPod +
      R"(],"NumPDBViolations":1}},"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_TRUE(args->meta);
  ASSERT_EQ(args->node_victims.count("foo"), 1u);
  EXPECT_EQ(args->node_victims.at("foo").pod_uids, std::vector<std::string>{"myuid"});
  // types_test.go line 1, byte for byte.
  EXPECT_EQ(EncodePreemptionResult(*args, {}),
            R"({"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}})");
}

TEST(PreemptionTest, FullVictimsGiveUidsAndRejectedNodesAreDropped) {
  auto args = DecodePreemptionArgs(
      R"({"Pod":{},"NodeNameToVictims":{"a":{"Pods":[{"metadata":{"uid":"u1"}},{"metadata":{"uid":"u2"}}],"NumPDBViolations":0},"b":{"Pods":[{"metadata":{"uid":"u3"}}],"NumPDBViolations":2},"c":{"Pods":[],"NumPDBViolations":0},"d":null},"NodeNameToMetaVictims":null})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_FALSE(args->meta);
  std::map<std::string, Rejection> rejected{{"b", {"too hot", false}}};
  EXPECT_EQ(
      EncodePreemptionResult(*args, rejected),
      R"({"NodeNameToMetaVictims":{"a":{"Pods":[{"UID":"u1"},{"UID":"u2"}],"NumPDBViolations":0}}})");
  auto empty = DecodePreemptionArgs(R"({"Pod":{},"NodeNameToVictims":null})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(EncodePreemptionResult(*empty, {}), R"({"NodeNameToMetaVictims":{}})");
}

TEST(PreemptionTest, BadBodiesGiveAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"NodeNameToMetaVictims":{}})", "Pod is missing"},
      {R"({"Pod":{},"NodeNameToMetaVictims":[]})", "NodeNameToMetaVictims is not an object"},
      {R"({"Pod":{},"NodeNameToMetaVictims":{"a":{"Pods":[{}]}}})", "Pods[0] has no UID"},
      {R"({"Pod":{},"NodeNameToVictims":{"a":{"Pods":[{"metadata":{}}]}}})",
       "Pods[0] has no metadata.uid"},
      {R"({"Pod":{},"NodeNameToMetaVictims":{"a":{"NumPDBViolations":1.5}}})",
       "NumPDBViolations is not an integer"},
      {R"({"Pod":{},"NodeNameToMetaVictims":{"a":{"Pods":{}}}})", "Pods is not an array"},
  };
  for (const auto& [body, reason] : cases) {
    auto args = DecodePreemptionArgs(body);
    ASSERT_FALSE(args.ok()) << body;
    EXPECT_NE(args.error().message.find(reason), std::string::npos) << args.error().message;
  }
}

TEST(FindGoFieldTest, ExactThenCaseInsensitive) {
  json doc = json::parse(R"({"nodenames":1,"NodeNames":2,"other":3})");
  EXPECT_EQ(*FindGoField(doc, "NodeNames"), 2);
  EXPECT_EQ(*FindGoField(doc, "OTHER"), 3);
  EXPECT_EQ(FindGoField(doc, "missing"), nullptr);
  EXPECT_EQ(FindGoField(json::array(), "x"), nullptr);
}

}  // namespace
}  // namespace powerctl::extender
