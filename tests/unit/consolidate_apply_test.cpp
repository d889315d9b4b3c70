// consolidate apply and undo against the in-memory API server: the resume, "the plan no longer
// holds" and 429 decisions, and that a node is never cordoned without its mark. Evictions are
// served by a wrapper that deletes the pod and starts its replacement on another node, as a
// ReplicaSet would; a scripted number of 429s comes first where a test asks.
#include "core/consolidate/apply.h"
#include "core/consolidate/eviction.h"
#include "core/consolidate/node_hook.h"
#include "core/consolidate/node_marks.h"
#include "core/consolidate/undo.h"
#include "tests/unit/fake_api_server.h"

#include <gtest/gtest.h>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;
using kube::HttpRequest;
using kube::HttpResponse;
using kube::HttpTransport;
using kube::fake::FakeApiServer;
using kube::fake::FakeClock;

json PodObject(const std::string& name, const std::string& node, const std::string& owner_kind,
               const std::string& owner_uid) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"uid", "uid-" + name},
                {"labels", {{"app", owner_uid}}}}},
              {"spec", {{"nodeName", node}, {"containers", json::array()}}},
              {"status", {{"phase", "Running"}}}};
  if (!owner_kind.empty()) {
    pod["metadata"]["ownerReferences"] = {
        {{"kind", owner_kind}, {"name", owner_uid}, {"uid", owner_uid}, {"controller", true}}};
  }
  return pod;
}

json ApplyNode(const std::string& name) {
  json node = kube::fake::NodeObject(name);
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "10.0.0.1"}}};
  return node;
}

// FakeApiServer plus what it does not serve: evictions and PodDisruptionBudgets.
class EvictingServer : public HttpTransport {
 public:
  explicit EvictingServer(FakeApiServer& server) : server_(server) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    const std::string path = request.path.substr(0, request.path.find('?'));
    if (path.rfind("/apis/policy/v1/poddisruptionbudgets", 0) == 0) {
      return HttpResponse{
          200, json{{"kind", "PodDisruptionBudgetList"}, {"items", budgets}}.dump(), {}};
    }
    const std::string suffix = "/eviction";
    if (request.method == "POST" && path.size() > suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string pod_path = path.substr(0, path.size() - suffix.size());
      evictions.push_back(pod_path);
      if (refusals > 0) {
        --refusals;
        return HttpResponse{429,
                            json{{"kind", "Status"},
                                 {"status", "Failure"},
                                 {"code", 429},
                                 {"reason", "TooManyRequests"},
                                 {"message",
                                  "Cannot evict pod as it would violate the pod's "
                                  "disruption budget."}}
                                .dump(),
                            {}};
      }
      HttpRequest get;
      get.method = "GET";
      get.path = pod_path;
      auto got = server_.Send(get);
      if (got.ok() && got->status == 404) return HttpResponse{404, "{}", {}};
      json pod = json::parse(got->body);
      server_.Remove(pod_path);
      if (replace) {
        json replacement = pod;
        replacement["metadata"]["name"] = pod["metadata"]["name"].get<std::string>() + "-r";
        replacement["metadata"]["uid"] = pod["metadata"]["uid"].get<std::string>() + "-r";
        replacement["spec"]["nodeName"] = "efficient";
        replacement["metadata"].erase("resourceVersion");
        server_.Put(replacement);
      }
      return HttpResponse{201, json{{"kind", "Eviction"}}.dump(), {}};
    }
    return server_.Send(request);
  }
  Result<long> Stream(const HttpRequest& r, const std::function<bool(std::string_view)>& f,
                      std::string* e) override {
    return server_.Stream(r, f, e);
  }

  json budgets = json::array();
  int refusals = 0;     // 429s to answer before evictions are accepted
  bool replace = true;  // the controller starts a replacement
  std::vector<std::string> evictions;

 private:
  FakeApiServer& server_;
};

// Every pod fits on the first node that stays (or none, with !fits) and adds no watts there.
class FitAll : public Evacuator {
 public:
  explicit FitAll(std::vector<std::string> names, bool fits)
      : names_(std::move(names)), fits_(fits) {}
  Evacuation Evacuate(std::size_t, const std::vector<std::size_t>& pods,
                      const std::vector<bool>& open, double, bool) override {
    Evacuation out;
    out.fits = fits_;
    if (!fits_) {
      out.unplaced = "default/x";
      return out;
    }
    std::string to;
    for (std::size_t i = 0; i < open.size(); ++i)
      if (open[i] && to.empty()) to = names_[i];
    for (std::size_t p = 0; p < pods.size(); ++p) out.moves.push_back({"?", to});
    moved_ = pods;
    return out;
  }
  std::vector<std::size_t> moved_;

 private:
  std::vector<std::string> names_;
  bool fits_;
};

class ConsolidateApplyTest : public ::testing::Test {
 protected:
  ConsolidateApplyTest() : transport_(server_) {
    server_.Put(ApplyNode("costly"));
    server_.Put(ApplyNode("efficient"));
    server_.Put(PodObject("web-1", "costly", "ReplicaSet", "rs-web"));
    server_.Put(PodObject("web-2", "efficient", "ReplicaSet", "rs-web"));
    server_.Put(PodObject("agent-1", "costly", "DaemonSet", "ds-agent"));
    kube::ClientOptions options;
    options.sleep = [](std::chrono::milliseconds) {};
    options.max_attempts = 1;  // each 429 reaches apply, which waits it out on its clock
    client_ = std::make_unique<kube::Client>(
        std::make_unique<kube::fake::ForwardingTransport<EvictingServer>>(&transport_), options);
    // The real planner over a fake evacuator: "costly" saves 100 W, "efficient" nothing.
    planner_ = [this](const ClusterState& state, PlanRequest request) -> Result<Plan> {
      ++plans_;
      std::vector<std::string> names;
      request.nodes.clear();
      for (const json& n : state.nodes) {
        PlanNodeInput in;
        in.name = n["metadata"]["name"];
        in.watts = in.name == "costly" ? 100 : 0;
        for (const json& p : state.pods)
          if (p["spec"].value("nodeName", "") == in.name) in.pods.push_back(p);
        names.push_back(in.name);
        request.nodes.push_back(std::move(in));
      }
      FitAll evacuator(names, fits_);
      auto plan = PlanConsolidation(request, evacuator);
      // The evacuator does not know pod names: fill them in from the node's movable pods.
      if (plan.ok()) {
        for (NodePlan& n : plan->nodes) {
          if (!n.drain) continue;
          n.moves.clear();
          for (const PlanNodeInput& in : request.nodes)
            if (in.name == n.node)
              for (const json& p : in.pods)
                if (ClassifyPod(p).role == PodRole::kMovable)
                  n.moves.push_back({PodName(p), "efficient"});
        }
      }
      if (after_plan_) after_plan_(plans_);
      return plan;
    };
    request_.max_nodes = 1;
    request_.timeout = std::chrono::seconds(60);
  }

  Result<ApplyResult> Apply() {
    return ApplyConsolidation(*client_, request_, planner_, {}, clock_.clock());
  }
  json Stored(const std::string& node) {
    auto got = client_->Get("/api/v1/nodes/" + node);
    return got.ok() ? *got : json();
  }
  // The PATCHes to a node, in order.
  std::vector<json> NodePatches(const std::string& node) {
    std::vector<json> out;
    for (const auto& r : server_.RequestsTo("PATCH", "/api/v1/nodes/" + node))
      out.push_back(json::parse(r.body));
    return out;
  }
  void MarkDraining(const std::string& node, bool was_unschedulable = false) {
    NodeMark mark{kPowerStateDraining, "2026-01-01T00:00:00Z", 80, was_unschedulable};
    ASSERT_TRUE(client_->MergePatch("/api/v1/nodes/" + node, MarkPatch(mark, true)).ok());
    server_.ClearRequests();
  }

  FakeApiServer server_;
  EvictingServer transport_;
  std::unique_ptr<kube::Client> client_;
  FakeClock clock_;
  StatePlanner planner_;
  ApplyRequest request_;
  bool fits_ = true;
  int plans_ = 0;
  std::function<void(int)> after_plan_;
};

TEST_F(ConsolidateApplyTest, CordonsAndMarksInOnePatchEvictsThenMarksDrained) {
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].node, "costly");
  EXPECT_EQ(result->nodes[0].action, NodeAction::kDrained);
  EXPECT_EQ(result->nodes[0].evicted, std::vector<std::string>{"default/web-1"});
  EXPECT_FALSE(result->Failed());
  // The DaemonSet pod is not evicted.
  EXPECT_EQ(transport_.evictions,
            std::vector<std::string>{"/api/v1/namespaces/default/pods/web-1"});
  const std::vector<json> patches = NodePatches("costly");
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0]["spec"]["unschedulable"], true);
  EXPECT_EQ(patches[0]["metadata"]["labels"][kPowerStateLabel], kPowerStateDraining);
  EXPECT_TRUE(patches[0]["metadata"]["annotations"].contains(kConsolidationAnnotation));
  EXPECT_EQ(patches[1]["metadata"]["labels"][kPowerStateLabel], kPowerStateDrained);
  const json node = Stored("costly");
  auto mark = ReadNodeMark(node);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->state, kPowerStateDrained);
  EXPECT_DOUBLE_EQ(mark->expected_watts_saved, 100);
  EXPECT_FALSE(mark->was_unschedulable);
  EXPECT_EQ(node["spec"]["unschedulable"], true);
}

TEST_F(ConsolidateApplyTest, RetriesRefusedEvictionsWithBackoffUntilAllowed) {
  transport_.refusals = 2;
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->nodes[0].action, NodeAction::kDrained);
  EXPECT_EQ(transport_.evictions.size(), 3u);
  ASSERT_GE(clock_.sleeps.size(), 2u);
  EXPECT_EQ(clock_.sleeps[0], std::chrono::seconds(1));
  EXPECT_EQ(clock_.sleeps[1], std::chrono::seconds(2));
}

TEST_F(ConsolidateApplyTest, EvictionRefusedPastTheTimeoutNamesTheBudgetAndKeepsTheMark) {
  transport_.refusals = 1000;
  transport_.budgets =
      json::array({{{"metadata", {{"name", "web"}, {"namespace", "default"}}},
                    {"spec", {{"selector", {{"matchLabels", {{"app", "rs-web"}}}}}}},
                    {"status", {{"disruptionsAllowed", 1}}}}});
  request_.timeout = std::chrono::seconds(30);
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kFailed);
  EXPECT_NE(result->nodes[0].detail.find("PodDisruptionBudget default/web"), std::string::npos)
      << result->nodes[0].detail;
  EXPECT_TRUE(result->Failed());
  // Bounded: the waits add up to no more than the timeout.
  std::chrono::milliseconds waited{0};
  for (auto s : clock_.sleeps) waited += s;
  EXPECT_LE(waited, std::chrono::seconds(30));
  const json node = Stored("costly");
  EXPECT_EQ(node["spec"]["unschedulable"], true);
  EXPECT_EQ(ReadNodeMark(node)->state, kPowerStateDraining);
}

TEST_F(ConsolidateApplyTest, WaitsForReplacementsAndFailsWhenNoneStart) {
  transport_.replace = false;
  request_.timeout = std::chrono::seconds(10);
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->nodes[0].action, NodeAction::kFailed);
  EXPECT_NE(result->nodes[0].detail.find("runs 1 of its 2 pod(s) elsewhere"), std::string::npos)
      << result->nodes[0].detail;
  EXPECT_EQ(ReadNodeMark(Stored("costly"))->state, kPowerStateDraining);
}

TEST_F(ConsolidateApplyTest, ResumesANodeMarkedDrainingWithoutCordoningAgain) {
  MarkDraining("costly");
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_TRUE(result->nodes[0].resumed);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kDrained);
  EXPECT_DOUBLE_EQ(result->nodes[0].expected_watts_saved, 80);  // what the first run expected
  const std::vector<json> patches = NodePatches("costly");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]["metadata"]["labels"][kPowerStateLabel], kPowerStateDrained);
  EXPECT_EQ(transport_.evictions.size(), 1u);
}

TEST_F(ConsolidateApplyTest, AResumedNodeWaitsForPodsAnEarlierRunEvicted) {
  MarkDraining("costly");
  server_.PutExactly([&] {
    json pod = client_->Get("/api/v1/namespaces/default/pods/web-1").value();
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
    pod["metadata"]["finalizers"] = {"example.com/hold"};
    return pod;
  }());
  request_.timeout = std::chrono::seconds(5);
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kFailed);
  EXPECT_NE(result->nodes[0].detail.find("pod default/web-1 is still on costly"), std::string::npos)
      << result->nodes[0].detail;
  EXPECT_TRUE(transport_.evictions.empty());  // not evicted twice
  EXPECT_EQ(ReadNodeMark(Stored("costly"))->state, kPowerStateDraining);
}

TEST_F(ConsolidateApplyTest, ReleasesADrainingNodeWhosePlanNoLongerHolds) {
  MarkDraining("costly");
  json pinned = PodObject("db-0", "costly", "ReplicaSet", "rs-db");
  pinned["metadata"]["annotations"] = {{kSafeToEvictAnnotation, "false"}};
  server_.Put(pinned);
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kReleased);
  EXPECT_NE(result->nodes[0].detail.find("safe-to-evict"), std::string::npos);
  EXPECT_TRUE(transport_.evictions.empty());
  const json node = Stored("costly");
  EXPECT_FALSE(ReadNodeMark(node).has_value());
  EXPECT_EQ(node["spec"]["unschedulable"], false);
}

TEST_F(ConsolidateApplyTest, ClientDryRunReleasesNothing) {
  MarkDraining("costly");
  json pinned = PodObject("db-0", "costly", "ReplicaSet", "rs-db");
  pinned["metadata"]["annotations"] = {{kSafeToEvictAnnotation, "false"}};
  server_.Put(pinned);
  request_.dry_run = kube::DryRun::kClient;
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kReleased);
  EXPECT_TRUE(server_.MutatingRequests().empty());
  EXPECT_EQ(ReadNodeMark(Stored("costly"))->state, kPowerStateDraining);
}

TEST_F(ConsolidateApplyTest, SkipsWithoutEvictingWhenPodsChangedSinceThePlan) {
  after_plan_ = [this](int plan) {
    if (plan == 1) server_.Put(PodObject("late-1", "costly", "ReplicaSet", "rs-late"));
  };
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kSkipped);
  EXPECT_NE(result->nodes[0].detail.find("default/late-1"), std::string::npos)
      << result->nodes[0].detail;
  EXPECT_GE(plans_, 2);  // planned again before touching the node
  EXPECT_TRUE(transport_.evictions.empty());
  EXPECT_TRUE(NodePatches("costly").empty());
  EXPECT_FALSE(result->Failed());
}

TEST_F(ConsolidateApplyTest, SkipsWhenThePodsNoLongerFitElsewhere) {
  after_plan_ = [this](int plan) {
    if (plan == 1) fits_ = false;
  };
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].action, NodeAction::kSkipped);
  EXPECT_NE(result->nodes[0].detail.find("fits on no node"), std::string::npos);
  EXPECT_TRUE(server_.MutatingRequests().empty());
}

TEST_F(ConsolidateApplyTest, ClientDryRunChangesNothing) {
  request_.dry_run = kube::DryRun::kClient;
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->nodes.size(), 1u);
  EXPECT_EQ(result->nodes[0].evicted, std::vector<std::string>{"default/web-1"});
  EXPECT_TRUE(server_.MutatingRequests().empty());
  EXPECT_TRUE(transport_.evictions.empty());
}

TEST_F(ConsolidateApplyTest, KeepsNodesClusterAutoscalerMayNotScaleDown) {
  server_.PutExactly([&] {
    json n = Stored("costly");
    n["metadata"]["annotations"][kScaleDownDisabledAnnotation] = "true";
    return n;
  }());
  auto result = Apply();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->nodes.empty());
  EXPECT_TRUE(server_.MutatingRequests().empty());
}

TEST_F(ConsolidateApplyTest, UndoUncordonsAndRemovesTheMarks) {
  MarkDraining("costly");
  auto undone = UndoNode(*client_, "costly");
  ASSERT_TRUE(undone.ok()) << undone.error().message;
  EXPECT_TRUE(undone->uncordoned);
  const json node = Stored("costly");
  EXPECT_FALSE(ReadNodeMark(node).has_value());
  EXPECT_EQ(node["spec"]["unschedulable"], false);
}

TEST_F(ConsolidateApplyTest, UndoLeavesCordonedANodeThatWasCordonedBefore) {
  MarkDraining("costly", true);
  auto undone = UndoNode(*client_, "costly");
  ASSERT_TRUE(undone.ok()) << undone.error().message;
  EXPECT_FALSE(undone->uncordoned);
  const json node = Stored("costly");
  EXPECT_FALSE(ReadNodeMark(node).has_value());
  EXPECT_EQ(node["spec"]["unschedulable"], true);
}

TEST_F(ConsolidateApplyTest, UndoRefusesANodeWithoutMarks) {
  auto undone = UndoNode(*client_, "efficient");
  ASSERT_FALSE(undone.ok());
  EXPECT_EQ(undone.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(undone.error().message.find("did not drain it"), std::string::npos);
  EXPECT_TRUE(server_.MutatingRequests().empty());
  auto missing = UndoNode(*client_, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(ConsolidateNodeHook, GetsTheNodeAndItsAddressesAsArgumentsAndEnvironment) {
  json node = ApplyNode("n1");
  node["status"]["addresses"] = {{{"type", "Hostname"}, {"address", "n1.lan"}},
                                 {{"type", "InternalIP"}, {"address", "10.0.0.7"}}};
  HookRequest hook;
  hook.command =
      "printf '%s|%s|%s|%s|%s|%s|%s|%s' \"$0\" \"$1\" \"$2\" \"$3\" \"$POWERCTL_NODE\" "
      "\"$POWERCTL_NODE_INTERNAL_IP\" \"$POWERCTL_NODE_ADDRESSES\" \"$POWERCTL_EVENT\" >&2; exit 3";
  hook.environment = {{"PATH", "/usr/bin:/bin"}};
  HookOutcome outcome = RunNodeHook(hook, kHookDrained, node, 120);
  EXPECT_TRUE(outcome.ran);
  EXPECT_FALSE(outcome.ok);
  // A failed hook says how it ended and the last line it wrote to stderr.
  EXPECT_EQ(outcome.detail,
            "exit status 3: powerctl-on-drained|n1|10.0.0.7|n1.lan|n1|10.0.0.7|10.0.0.7 "
            "n1.lan|drained");
  hook.command = "printf '%s|%s' \"$0\" \"$POWERCTL_EVENT\" >&2; exit 1";
  EXPECT_EQ(RunNodeHook(hook, kHookWake, node, 120).detail, "exit status 1: powerctl-on-wake|wake");
  hook.command = "true";
  EXPECT_TRUE(RunNodeHook(hook, kHookDrained, node, 120).ok);
}

// status.addresses is any text the API server was given: only IP literals (InternalIP,
// ExternalIP) and RFC 1123 names (Hostname, InternalDNS, ExternalDNS) reach a hook.
TEST(ConsolidateNodeHook, GetsOnlyValidAddresses) {
  json node = ApplyNode("n1");
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "attacker.example#"}},
                                 {{"type", "Hostname"}, {"address", "-oProxyCommand=touch /tmp/x"}},
                                 {{"type", "ExternalIP"}, {"address", "$(id)"}},
                                 {{"type", "InternalDNS"}, {"address", "n1.lan\n\x1b[2J"}},
                                 {{"type", "InternalIP"}, {"address", "10.0.0.7:22"}},
                                 {{"type", "Weird"}, {"address", "10.0.0.9"}},
                                 {{"type", "InternalIP"}, {"address", "fd00::7"}},
                                 {{"type", "Hostname"}, {"address", "n1.example.com"}},
                                 {{"type", "ExternalIP"}, {"address", "192.0.2.7"}}};
  NodeAddressList valid = ValidNodeAddresses(node);
  EXPECT_EQ(valid.addresses, (std::vector<std::string>{"fd00::7", "n1.example.com", "192.0.2.7"}));
  EXPECT_EQ(valid.internal_ip, "fd00::7");
  EXPECT_EQ(valid.dropped, 6);
  HookRequest hook;
  hook.command =
      "printf '%s|%s|%s|%s' \"$POWERCTL_NODE_INTERNAL_IP\" \"$POWERCTL_NODE_ADDRESSES\" "
      "\"$POWERCTL_NODE_ADDRESSES_DROPPED\" \"$#\" >&2; exit 3";
  hook.environment = {{"PATH", "/usr/bin:/bin"}};
  HookOutcome outcome = RunNodeHook(hook, kHookDrained, node, 0);
  EXPECT_EQ(outcome.detail, "exit status 3: fd00::7|fd00::7 n1.example.com 192.0.2.7|6|4");
  EXPECT_EQ(outcome.addresses_dropped, 6);
  for (const char* ok : {"10.0.0.7", "::1", "fd00::5"}) EXPECT_TRUE(IsIpLiteral(ok)) << ok;
  for (const char* bad : {"", "10.0.0.256", "[::1]", "10.0.0.7 ", "fe80::1%eth0", "x"})
    EXPECT_FALSE(IsIpLiteral(bad)) << bad;
}

TEST(ConsolidateNodeHook, IsKilledAtItsTimeout) {
  HookRequest hook;
  hook.command = "sleep 5";
  hook.timeout = std::chrono::milliseconds(200);
  HookOutcome outcome = RunNodeHook(hook, kHookDrained, ApplyNode("n1"), 0);
  EXPECT_TRUE(outcome.ran);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.detail, "killed after 200ms");
}

TEST(ConsolidateEviction, ApiVersionFollowsTheServer) {
  EXPECT_EQ(EvictionApiVersion({"v1.20.2", 1, 20}), "policy/v1beta1");
  EXPECT_EQ(EvictionApiVersion({"v1.21.0", 1, 21}), "policy/v1beta1");
  EXPECT_EQ(EvictionApiVersion({"v1.22.0", 1, 22}), "policy/v1");
  EXPECT_EQ(EvictionObject(PodObject("a", "n", "", ""), "policy/v1", true)["deleteOptions"],
            (json{{"dryRun", {"All"}}}));
}

}  // namespace
}  // namespace powerctl::consolidate
