#include "core/setup/apply.h"

#include "core/kube/resources.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace powerctl::setup {

// For gtest's messages: created, configured, unchanged, ...
void PrintTo(ApplyAction action, std::ostream* os) {
  *os << ApplyActionName(action);
}

namespace {

using json = nlohmann::json;
using kube::fake::FakeApiServer;
using kube::fake::FakeClock;
using kube::fake::RecordedRequest;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kNamespacePath[] = "/api/v1/namespaces/powerctl";
constexpr char kCrdPath[] =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/taspolicies.telemetry.intel.com";
constexpr char kPolicyPath[] =
    "/apis/telemetry.intel.com/v1alpha1/namespaces/powerctl/taspolicies/cool-nodes";
constexpr char kSecretsPrefix[] = "/api/v1/namespaces/powerctl/secrets/";
constexpr char kExtenderSecretPath[] = "/api/v1/namespaces/powerctl/secrets/powerctl-extender-tls";
constexpr char kSchedulerSecretPath[] =
    "/api/v1/namespaces/powerctl/secrets/powerctl-scheduler-tls";
constexpr char kExtenderPath[] = "/apis/apps/v1/namespaces/powerctl/deployments/powerctl-extender";
constexpr char kSchedulerPath[] =
    "/apis/apps/v1/namespaces/powerctl/deployments/powerctl-scheduler";

// The default configuration plus one telemetry policy, so a TASPolicy is applied too.
config::PowerctlConfig TestConfig() {
  config::PolicyRule rule;
  rule.metric_name = "node_cpu_temperature_celsius";
  rule.op = "GreaterThan";
  rule.target = 85;
  rule.has_target = true;
  config::Policy policy;
  policy.name = "cool-nodes";
  policy.strategies["dontschedule"].rules.push_back(rule);
  config::PowerctlConfig config;
  config.policies.push_back(policy);
  return config;
}

std::string PathOf(const AppliedObject& o) {
  auto path = kube::ObjectPath(o.object);
  return path.ok() ? *path : "(no path: " + path.error().message + ")";
}

class ApplyTest : public ::testing::Test {
 protected:
  ApplyTest() : client_(server_.MakeClient()) {}

  static ApplyRequest Request() {
    ApplyRequest request;
    request.config = TestConfig();
    request.kube_version = KubeVersion::Parse("1.30").value();
    return request;
  }

  Result<ApplyReport> Run(const ApplyRequest& request) {
    notes_.clear();
    applied_.clear();
    progress_.clear();
    ApplyObserver observer;
    observer.note = [this](const std::string& message) { notes_.push_back(message); };
    observer.applied = [this](const AppliedObject& o) { applied_.push_back(o.name); };
    observer.rollout = [this](const std::vector<RolloutProgress>& p) { progress_.push_back(p); };
    return Apply(*client_, request, observer, clock_.clock());
  }

  // Applies Request() to the empty fake and forgets the requests it took.
  void ApplyOnce() {
    auto report = Run(Request());
    ASSERT_TRUE(report.ok()) << report.error().message;
    server_.ClearRequests();
  }

  // The position of the first request with this method and path, or -1.
  long IndexOf(const std::string& method, const std::string& path) const {
    const auto& requests = server_.requests();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].method == method && requests[i].path == path) return static_cast<long>(i);
    }
    return -1;
  }

  static std::map<std::string, ApplyAction> Actions(const ApplyReport& report) {
    std::map<std::string, ApplyAction> actions;
    for (const AppliedObject& o : report.objects) actions[PathOf(o)] = o.action;
    return actions;
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakeClock clock_;
  std::vector<std::string> notes_;
  std::vector<std::string> applied_;
  std::vector<std::vector<RolloutProgress>> progress_;
};

TEST_F(ApplyTest, FirstRunCreatesEveryObjectWithFieldManagerPowerctl) {
  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_TRUE(report->changed());
  EXPECT_FALSE(report->version_from_server);
  ASSERT_GE(report->objects.size(), 10u);
  for (const AppliedObject& o : report->objects) {
    EXPECT_EQ(o.action, ApplyAction::kCreated) << o.name;
    std::string path = PathOf(o);
    ASSERT_TRUE(server_.Has(path)) << path;
    json managers = server_.Object(path)["metadata"]["managedFields"];
    ASSERT_EQ(managers.size(), 1u) << path;
    EXPECT_EQ(managers[0]["manager"], "powerctl") << path;
  }
  for (const char* path : {kNamespacePath, kCrdPath, kPolicyPath, kExtenderSecretPath,
                           kSchedulerSecretPath, kExtenderPath, kSchedulerPath}) {
    EXPECT_TRUE(server_.Has(path)) << path;
  }
  // The observer heard of each object as it was applied.
  ASSERT_EQ(applied_.size(), report->objects.size());
  EXPECT_EQ(applied_.front(), "namespace/powerctl");
  // Every write was a server-side apply by "powerctl".
  std::vector<RecordedRequest> writes = server_.MutatingRequests();
  ASSERT_EQ(writes.size(), report->objects.size());
  for (const RecordedRequest& r : writes) {
    EXPECT_EQ(r.method, "PATCH") << r.path;
    EXPECT_EQ(r.content_type, "application/apply-patch+yaml") << r.path;
    EXPECT_EQ(r.Query("fieldManager"), "powerctl") << r.path;
    EXPECT_EQ(r.Query("force"), "") << r.path;
    EXPECT_FALSE(r.dry_run()) << r.path;
  }
  EXPECT_THAT(notes_, Contains(HasSubstr("generated new TLS material")));
}

TEST_F(ApplyTest, FirstRunAppliesNamespaceAndCrdBeforeWhatDependsOnThem) {
  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<RecordedRequest> patches = server_.RequestsTo("PATCH", "/");
  ASSERT_FALSE(patches.empty());
  EXPECT_EQ(patches[0].path, kNamespacePath);
  long namespace_index = IndexOf("PATCH", kNamespacePath);
  long crd_index = IndexOf("PATCH", kCrdPath);
  long policy_index = IndexOf("PATCH", kPolicyPath);
  ASSERT_GE(crd_index, 0);
  ASSERT_GE(policy_index, 0);
  for (std::size_t i = 0; i < server_.requests().size(); ++i) {
    const RecordedRequest& r = server_.requests()[i];
    if (r.method != "PATCH" || r.path.find("/namespaces/powerctl/") == std::string::npos) continue;
    EXPECT_GT(static_cast<long>(i), namespace_index) << r.path << " before its Namespace";
    EXPECT_GT(static_cast<long>(i), crd_index) << r.path << " before the CRD";
  }
  EXPECT_GT(policy_index, crd_index);
  // The TASPolicy waited for the CRD to be established: the CRD was read back in between.
  bool crd_read = false;
  for (long i = crd_index + 1; i < policy_index; ++i) {
    const RecordedRequest& r = server_.requests()[static_cast<std::size_t>(i)];
    crd_read = crd_read || (r.method == "GET" && r.path == kCrdPath);
  }
  EXPECT_TRUE(crd_read);
}

TEST_F(ApplyTest, EveryPermissionIsCheckedBeforeAnythingIsRead) {
  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  long first_other = -1;
  long last_review = -1;
  for (std::size_t i = 0; i < server_.requests().size(); ++i) {
    const RecordedRequest& r = server_.requests()[i];
    if (r.IsAccessReview()) last_review = static_cast<long>(i);
    if (!r.IsAccessReview() && first_other < 0) first_other = static_cast<long>(i);
  }
  ASSERT_GE(last_review, 0);
  EXPECT_LT(last_review, first_other);
  std::vector<json> reviews = server_.AccessReviews();
  EXPECT_THAT(reviews, Contains(json{{"verb", "patch"},
                                     {"group", "apps"},
                                     {"resource", "deployments"},
                                     {"namespace", "powerctl"}}));
  EXPECT_THAT(reviews, Contains(json{{"verb", "create"},
                                     {"group", "apiextensions.k8s.io"},
                                     {"resource", "customresourcedefinitions"}}));
}

TEST_F(ApplyTest, SecondRunIsUnchangedAndKeepsSecretsWithoutPatchingThem) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  std::map<std::string, json> before = server_.objects();

  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_FALSE(report->changed());
  int kept = 0;
  for (const AppliedObject& o : report->objects) {
    if (o.object.value("kind", "") == "Secret") {
      EXPECT_EQ(o.action, ApplyAction::kKept) << o.name;
      ++kept;
    } else {
      EXPECT_EQ(o.action, ApplyAction::kUnchanged) << o.name;
    }
  }
  EXPECT_EQ(kept, 2);
  EXPECT_THAT(server_.RequestsTo("PATCH", kSecretsPrefix), IsEmpty());
  EXPECT_EQ(server_.objects(), before);  // not even a resourceVersion moved
  EXPECT_THAT(notes_, Not(Contains(HasSubstr("TLS material"))));
}

TEST_F(ApplyTest, RotateCertsReplacesTheSecrets) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  json old_secret = server_.Object(kExtenderSecretPath);
  const json old_hash = server_.Object(
      kExtenderPath)["spec"]["template"]["metadata"]["annotations"]["powerctl.io/config-hash"];

  ApplyRequest request = Request();
  request.rotate_certs = true;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_TRUE(report->changed());
  std::map<std::string, ApplyAction> actions = Actions(*report);
  EXPECT_EQ(actions[kExtenderSecretPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kSchedulerSecretPath], ApplyAction::kConfigured);
  // The extender mounts the new certificates: its pods roll, as kube-scheduler's do.
  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kConfigured);
  EXPECT_NE(
      server_.Object(
          kExtenderPath)["spec"]["template"]["metadata"]["annotations"]["powerctl.io/config-hash"],
      old_hash);
  EXPECT_EQ(server_.RequestsTo("PATCH", kSecretsPrefix).size(), 2u);
  json new_secret = server_.Object(kExtenderSecretPath);
  EXPECT_NE(new_secret["data"]["tls.crt"], old_secret["data"]["tls.crt"]);
  EXPECT_NE(new_secret["metadata"]["resourceVersion"], old_secret["metadata"]["resourceVersion"]);
  EXPECT_THAT(notes_, Contains(HasSubstr("generated new TLS material")));
}

TEST_F(ApplyTest, AMissingSecretReplacesBothSoTheyShareOneCa) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  server_.Remove(kSchedulerSecretPath);

  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::map<std::string, ApplyAction> actions = Actions(*report);
  EXPECT_EQ(actions[kSchedulerSecretPath], ApplyAction::kCreated);
  EXPECT_EQ(actions[kExtenderSecretPath], ApplyAction::kConfigured);
  EXPECT_EQ(server_.Object(kSchedulerSecretPath)["data"]["ca.crt"],
            server_.Object(kExtenderSecretPath)["data"]["ca.crt"]);
}

TEST_F(ApplyTest, ReportedSecretsAreRedacted) {
  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  int secrets = 0;
  for (const AppliedObject& o : report->objects) {
    if (o.object.value("kind", "") != "Secret") continue;
    ++secrets;
    ASSERT_TRUE(o.object.contains("data")) << o.name;
    for (const auto& [key, value] : o.object["data"].items()) {
      EXPECT_EQ(value, "(redacted)") << o.name << " " << key;
    }
  }
  EXPECT_EQ(secrets, 2);
  // ...while the server got the real material.
  EXPECT_NE(server_.Object(kExtenderSecretPath)["data"]["tls.key"], "(redacted)");
}

TEST_F(ApplyTest, ServerDryRunSendsDryRunAndPersistsNothing) {
  std::map<std::string, json> before = server_.objects();
  ApplyRequest request = Request();
  request.dry_run = DryRunMode::kServer;
  request.wait = true;  // nothing to wait for in a dry run
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_EQ(server_.objects(), before);
  std::vector<RecordedRequest> writes = server_.MutatingRequests();
  ASSERT_FALSE(writes.empty());
  for (const RecordedRequest& r : writes) {
    EXPECT_TRUE(r.dry_run()) << r.method << " " << r.path;
    // Objects in the namespace this apply would create cannot be dry-run by the server.
    EXPECT_THAT(r.path, Not(HasSubstr("/namespaces/powerctl/")));
  }
  // The cluster-scoped and kube-system objects were dry-run on the server.
  EXPECT_THAT(server_.RequestsTo("PATCH", kNamespacePath), Not(IsEmpty()));
  EXPECT_THAT(server_.RequestsTo("PATCH", kCrdPath), Not(IsEmpty()));
  EXPECT_THAT(server_.RequestsTo("PATCH", "/apis/rbac.authorization.k8s.io/v1/clusterroles/"),
              Not(IsEmpty()));
  EXPECT_THAT(
      server_.RequestsTo("PATCH",
                         "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/"),
      Not(IsEmpty()));
  // ...and everything is reported as it would be: created.
  for (const AppliedObject& o : report->objects) {
    EXPECT_EQ(o.action, ApplyAction::kCreated) << o.name;
  }
  EXPECT_TRUE(report->changed());
  EXPECT_THAT(server_.RequestsTo("PATCH", kPolicyPath), IsEmpty());
  EXPECT_THAT(server_.RequestsTo("GET", kExtenderPath), IsEmpty());
  EXPECT_TRUE(clock_.sleeps.empty());
}

TEST_F(ApplyTest, ServerDryRunOfAnAppliedClusterComparesWithWhatIsThere) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  std::map<std::string, json> before = server_.objects();

  ApplyRequest request = Request();
  request.dry_run = DryRunMode::kServer;
  auto unchanged = Run(request);
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message;
  EXPECT_FALSE(unchanged->changed());
  for (const RecordedRequest& r : server_.MutatingRequests()) {
    EXPECT_TRUE(r.dry_run()) << r.path;
    EXPECT_THAT(r.path, Not(StartsWith(kSecretsPrefix)));
  }

  request.config.extender.replicas = 3;
  auto changed = Run(request);
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  std::map<std::string, ApplyAction> actions = Actions(*changed);
  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kSchedulerPath], ApplyAction::kUnchanged);
  EXPECT_EQ(server_.objects(), before);
  EXPECT_EQ(server_.Object(kExtenderPath)["spec"]["replicas"], 1);
}

TEST_F(ApplyTest, ClientDryRunSendsNoMutatingRequest) {
  ApplyRequest request = Request();
  request.dry_run = DryRunMode::kClient;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  EXPECT_EQ(server_.Paths().size(), 2u);  // default and kube-system, as the fake started
  for (const AppliedObject& o : report->objects) {
    EXPECT_EQ(o.action, ApplyAction::kCreated) << o.name;
  }
  EXPECT_TRUE(report->changed());
}

TEST_F(ApplyTest, ClientDryRunOfAnAppliedClusterKeepsSecretsAndSendsNothing) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  ApplyRequest request = Request();
  request.dry_run = DryRunMode::kClient;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  std::map<std::string, ApplyAction> actions = Actions(*report);
  EXPECT_EQ(actions[kExtenderSecretPath], ApplyAction::kKept);
  EXPECT_EQ(actions[kSchedulerSecretPath], ApplyAction::kKept);
  EXPECT_NE(actions[kExtenderPath], ApplyAction::kCreated);
}

// ---- client dry run compares with the live objects ---------------------------------------

constexpr char kExtenderConfigMapPath[] =
    "/api/v1/namespaces/powerctl/configmaps/powerctl-extender-config";
constexpr char kExtenderServicePath[] = "/api/v1/namespaces/powerctl/services/powerctl-extender";

class ClientDryRunTest : public ApplyTest {
 protected:
  static ApplyRequest ClientDryRun() {
    ApplyRequest request = Request();
    request.dry_run = DryRunMode::kClient;
    return request;
  }

  // Runs a client dry run and checks it sent nothing and changed nothing.
  std::map<std::string, ApplyAction> DryRunActions(const ApplyRequest& request) {
    std::map<std::string, json> before = server_.objects();
    auto report = Run(request);
    EXPECT_TRUE(report.ok()) << report.error().message;
    if (!report.ok()) return {};
    EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
    EXPECT_EQ(server_.objects(), before);
    return Actions(*report);
  }

  // Changes the stored object at `path` as another writer (a controller, kubectl) would.
  void Edit(const std::string& path, const std::function<void(json&)>& edit) {
    json object = server_.Object(path);
    ASSERT_FALSE(object.empty()) << path;
    edit(object);
    server_.PutExactly(object);
  }

  // powerctl's managedFields entry on the stored object, with this field set.
  void SetOwnedFields(const std::string& path, json fields_v1) {
    Edit(path, [&](json& o) {
      o["metadata"]["managedFields"] = json::array({{{"manager", "powerctl"},
                                                     {"operation", "Apply"},
                                                     {"apiVersion", o["apiVersion"]},
                                                     {"fieldsType", "FieldsV1"},
                                                     {"fieldsV1", std::move(fields_v1)}}});
    });
  }
};

TEST_F(ClientDryRunTest, AnAppliedClusterIsUnchangedAndSecretsAreKept) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  auto report = Run(ClientDryRun());
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_FALSE(report->changed());
  for (const AppliedObject& o : report->objects) {
    if (o.object.value("kind", "") == "Secret") {
      EXPECT_EQ(o.action, ApplyAction::kKept) << o.name;
    } else {
      EXPECT_EQ(o.action, ApplyAction::kUnchanged) << o.name;
    }
  }
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(ClientDryRunTest, AChangedSettingConfiguresOnlyWhatItChanges) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  ApplyRequest request = ClientDryRun();
  request.config.extender.replicas = 3;
  std::map<std::string, ApplyAction> actions = DryRunActions(request);

  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kExtenderConfigMapPath], ApplyAction::kConfigured);  // holds the config
  EXPECT_EQ(actions[kSchedulerPath], ApplyAction::kUnchanged);
  EXPECT_EQ(actions[kExtenderServicePath], ApplyAction::kUnchanged);
  EXPECT_EQ(actions[kNamespacePath], ApplyAction::kUnchanged);
  EXPECT_EQ(server_.Object(kExtenderPath)["spec"]["replicas"], 1);
}

TEST_F(ClientDryRunTest, ServerDefaultsAndOtherWritersFieldsAreNotChanges) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  Edit(kExtenderPath, [](json& d) {
    json& spec = d["spec"];
    spec["progressDeadlineSeconds"] = 600;
    spec["revisionHistoryLimit"] = 10;
    spec["strategy"] = {{"type", "RollingUpdate"}};
    spec["template"]["metadata"]["creationTimestamp"] = nullptr;
    json& pod = spec["template"]["spec"];
    pod["dnsPolicy"] = "ClusterFirst";
    json& container = pod["containers"][0];
    container["imagePullPolicy"] = "IfNotPresent";
    container["terminationMessagePath"] = "/dev/termination-log";
    d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1";
    d["metadata"]["labels"]["team"] = "energy";  // someone else's label
  });
  Edit(kExtenderServicePath, [](json& s) {
    s["spec"]["clusterIP"] = "10.96.0.17";
    s["spec"]["type"] = "ClusterIP";
    s["spec"]["sessionAffinity"] = "None";
  });
  std::map<std::string, ApplyAction> actions = DryRunActions(ClientDryRun());

  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kUnchanged);
  EXPECT_EQ(actions[kExtenderServicePath], ApplyAction::kUnchanged);
}

TEST_F(ClientDryRunTest, QuantitiesAreComparedByValue) {
  ApplyRequest request = Request();
  request.config.extender.cpu_request = "0.1";
  request.config.extender.memory_limit = "0.25Gi";
  auto applied = Run(request);
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  server_.ClearRequests();
  // The API server stores quantities in canonical form.
  Edit(kExtenderPath, [](json& d) {
    json& resources = d["spec"]["template"]["spec"]["containers"][0]["resources"];
    ASSERT_EQ(resources["requests"]["cpu"], "0.1");
    resources["requests"]["cpu"] = "100m";
    resources["limits"]["memory"] = "256Mi";
  });
  request.dry_run = DryRunMode::kClient;
  EXPECT_EQ(DryRunActions(request)[kExtenderPath], ApplyAction::kUnchanged);

  Edit(kExtenderPath, [](json& d) {
    d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m";
  });
  EXPECT_EQ(DryRunActions(request)[kExtenderPath], ApplyAction::kConfigured);
}

TEST_F(ClientDryRunTest, AValueAnotherWriterChangedIsConfigured) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  Edit(kExtenderPath, [](json& d) { d["spec"]["replicas"] = 5; });  // kubectl scale
  Edit(kExtenderServicePath, [](json& s) { s["spec"]["ports"].erase(1); });
  std::map<std::string, ApplyAction> actions = DryRunActions(ClientDryRun());

  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kExtenderServicePath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kSchedulerPath], ApplyAction::kUnchanged);
}

TEST_F(ClientDryRunTest, AFieldPowerctlSetButNoLongerSendsIsConfigured) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  // What the last apply owned, as the server records it: the desired fields...
  json config_map_fields = {
      {"f:data", {{".", json::object()}, {"f:powerctl.yaml", json::object()}}},
      {"f:metadata", {{"f:labels", {{"f:app.kubernetes.io/name", json::object()}}}}}};
  SetOwnedFields(kExtenderConfigMapPath, config_map_fields);
  json deployment_fields = {
      {"f:spec",
       {{"f:replicas", json::object()},
        {"f:template",
         {{"f:spec",
           {{"f:containers", {{R"(k:{"name":"extender"})", {{"f:image", json::object()}}}}}}}}}}}};
  SetOwnedFields(kExtenderPath, deployment_fields);
  EXPECT_EQ(DryRunActions(ClientDryRun())[kExtenderConfigMapPath], ApplyAction::kUnchanged);
  EXPECT_EQ(DryRunActions(ClientDryRun())[kExtenderPath], ApplyAction::kUnchanged);

  // ...plus a label, a data key and a container that this apply does not send: the server
  // would remove them.
  config_map_fields["f:metadata"]["f:labels"]["f:example.com/retired"] = json::object();
  SetOwnedFields(kExtenderConfigMapPath, config_map_fields);
  Edit(kExtenderConfigMapPath,
       [](json& c) { c["metadata"]["labels"]["example.com/retired"] = "yes"; });
  deployment_fields["f:spec"]["f:template"]["f:spec"]["f:containers"][R"(k:{"name":"sidecar"})"] = {
      {"f:image", json::object()}};
  SetOwnedFields(kExtenderPath, deployment_fields);
  std::map<std::string, ApplyAction> actions = DryRunActions(ClientDryRun());

  EXPECT_EQ(actions[kExtenderConfigMapPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kSchedulerPath], ApplyAction::kUnchanged);
}

TEST_F(ClientDryRunTest, FieldsOwnedByOtherManagersAreNotPowerctls) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  Edit(kExtenderConfigMapPath, [](json& c) {
    c["metadata"]["labels"]["example.com/theirs"] = "yes";
    c["metadata"]["managedFields"] = json::array(
        {{{"manager", "kubectl-label"},
          {"operation", "Update"},
          {"fieldsType", "FieldsV1"},
          {"fieldsV1",
           {{"f:metadata", {{"f:labels", {{"f:example.com/theirs", json::object()}}}}}}}}});
  });
  EXPECT_EQ(DryRunActions(ClientDryRun())[kExtenderConfigMapPath], ApplyAction::kUnchanged);
}

TEST_F(ClientDryRunTest, AnObjectThatCannotBeReadIsReportedConfigured) {
  ASSERT_NO_FATAL_FAILURE(ApplyOnce());
  server_.FailRequests(kExtenderPath, 500, "GET");
  std::map<std::string, ApplyAction> actions = DryRunActions(ClientDryRun());

  EXPECT_EQ(actions[kExtenderPath], ApplyAction::kConfigured);
  EXPECT_EQ(actions[kSchedulerPath], ApplyAction::kUnchanged);
}

TEST_F(ApplyTest, DeniedPermissionIsForbiddenListsItAndChangesNothing) {
  server_.Deny("patch", "deployments", "powerctl");
  server_.Deny("create", "clusterroles");
  auto report = Run(Request());
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(report.error().message, HasSubstr("patch deployments.apps in namespace powerctl"));
  EXPECT_THAT(report.error().message, HasSubstr("create clusterroles.rbac.authorization.k8s.io"));
  EXPECT_THAT(report.error().message, HasSubstr("2 permissions"));
  EXPECT_THAT(report.error().message, HasSubstr("nothing was changed"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  EXPECT_EQ(server_.Paths().size(), 2u);
  EXPECT_THAT(applied_, IsEmpty());
}

TEST_F(ApplyTest, KubeVersionComesFromTheServerWhenNotGiven) {
  ApplyRequest request = Request();
  request.kube_version.reset();
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_TRUE(report->version_from_server);
  EXPECT_EQ(report->version.major, 1);
  EXPECT_EQ(report->version.minor, 20);
  EXPECT_EQ(IndexOf("GET", "/version"), 0);
  // The 1.20 scheduler image was chosen.
  json scheduler = server_.Object(kSchedulerPath);
  EXPECT_THAT(scheduler["spec"]["template"]["spec"]["containers"][0]["image"].get<std::string>(),
              HasSubstr("v1.20"));
}

TEST_F(ApplyTest, AnUnsupportedServerVersionIsInvalidInputAndChangesNothing) {
  server_.SetVersion("v1.18.6", "1", "18");
  ApplyRequest request = Request();
  request.kube_version.reset();
  auto report = Run(request);
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(report.error().message, HasSubstr("v1.18.6"));
  EXPECT_THAT(report.error().message, HasSubstr("--kube-version"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(ApplyTest, AnApiErrorMidApplyNamesTheObject) {
  server_.FailRequests(kExtenderPath, 500, "PATCH", "etcdserver: request timed out");
  auto report = Run(Request());
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().code, ErrorCode::kApi);
  EXPECT_THAT(report.error().message, HasSubstr("applying deployment/powerctl-extender"));
  EXPECT_THAT(report.error().message, HasSubstr("etcdserver: request timed out"));
  // It stopped there: what came before is applied, what comes after is not.
  EXPECT_TRUE(server_.Has(kNamespacePath));
  EXPECT_FALSE(server_.Has(kExtenderPath));
  EXPECT_THAT(server_.RequestsTo("PATCH", kSchedulerPath), IsEmpty());
}

TEST_F(ApplyTest, ForceConflictsForcesEveryApply) {
  ApplyRequest request = Request();
  request.force_conflicts = true;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<RecordedRequest> writes = server_.MutatingRequests();
  ASSERT_FALSE(writes.empty());
  for (const RecordedRequest& r : writes) EXPECT_EQ(r.Query("force"), "true") << r.path;
}

TEST_F(ApplyTest, ACrdThatIsNeverEstablishedFailsTheApplyOfItsPolicies) {
  server_.SetEstablishCrds(false);
  auto report = Run(Request());
  ASSERT_FALSE(report.ok());

  EXPECT_THAT(report.error().message,
              HasSubstr("customresourcedefinition/taspolicies.telemetry.intel.com was not "
                        "established within 60s"));
  EXPECT_THAT(server_.RequestsTo("PATCH", kPolicyPath), IsEmpty());
  EXPECT_GE(clock_.now - std::chrono::steady_clock::time_point(std::chrono::hours(1)),
            std::chrono::seconds(60));
}

TEST_F(ApplyTest, WaitSucceedsOnceTheDeploymentsAreAvailable) {
  server_.SetDeploymentsAvailable(false);
  clock_.on_sleep = [this] {
    if (clock_.sleeps.size() == 3) server_.SetDeploymentsAvailable(true);
  };
  ApplyRequest request = Request();
  request.wait = true;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_EQ(clock_.sleeps.size(), 3u);
  ASSERT_EQ(progress_.size(), 4u);
  ASSERT_EQ(progress_.front().size(), 2u);
  for (const RolloutProgress& p : progress_.front()) {
    EXPECT_FALSE(p.done) << p.name;
    EXPECT_THAT(p.waiting_for, HasSubstr(FakeApiServer::kDefaultUnschedulable)) << p.name;
  }
  std::vector<std::string> names;
  for (const RolloutProgress& p : progress_.back()) {
    EXPECT_TRUE(p.done) << p.name;
    names.push_back(p.name);
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("deployment/powerctl-extender",
                                                     "deployment/powerctl-scheduler"));
}

TEST_F(ApplyTest, WaitTimeoutNamesTheDeploymentsAndTheUnschedulableMessage) {
  server_.SetDeploymentsAvailable(false);
  ApplyRequest request = Request();
  request.wait = true;
  request.timeout = std::chrono::seconds(30);
  auto report = Run(request);
  ASSERT_FALSE(report.ok());

  const std::string& message = report.error().message;
  EXPECT_THAT(message, HasSubstr("timed out after 30s"));
  EXPECT_THAT(message, HasSubstr("deployment/powerctl-extender 0/1 available"));
  EXPECT_THAT(message, HasSubstr("deployment/powerctl-scheduler 0/1 available"));
  EXPECT_THAT(message, HasSubstr("pod powerctl-extender-7d4b9c8f6-x2x9q unschedulable: "
                                 "0/3 nodes are available: 3 Insufficient cpu."));
  EXPECT_GE(clock_.now - std::chrono::steady_clock::time_point(std::chrono::hours(1)),
            std::chrono::seconds(30));
  // The objects were applied before the wait began.
  EXPECT_TRUE(server_.Has(kExtenderPath));
}

TEST_F(ApplyTest, ComponentsLimitWhatIsApplied) {
  ApplyRequest request = Request();
  request.components = {"namespace", "policies"};
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<std::string> paths;
  for (const AppliedObject& o : report->objects) paths.push_back(PathOf(o));
  EXPECT_THAT(paths, ::testing::ElementsAre(kNamespacePath, kCrdPath, kPolicyPath));
  EXPECT_FALSE(server_.Has(kExtenderPath));
}

constexpr char kLbAgentPath[] = "/apis/apps/v1/namespaces/powerctl/daemonsets/powerctl-lb-agent";

TEST_F(ApplyTest, AllLeavesTheLbAgentOut) {
  auto report = Run(Request());
  ASSERT_TRUE(report.ok()) << report.error().message;

  for (const AppliedObject& o : report->objects) EXPECT_THAT(o.name, Not(HasSubstr("lb-agent")));
  EXPECT_FALSE(server_.Has(kLbAgentPath));
}

TEST_F(ApplyTest, LbAppliesTheAgentsObjectsAndWaitsForItsDaemonSet) {
  ApplyOnce();  // the namespace
  for (const char* node : {"n1", "n2"}) server_.Put(kube::fake::NodeObject(node));
  server_.SetDeploymentsAvailable(false);
  clock_.on_sleep = [this] {
    if (clock_.sleeps.size() == 2) server_.SetDeploymentsAvailable(true);
  };
  ApplyRequest request = Request();
  request.components = {"lb"};
  request.wait = true;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<std::string> names;
  for (const AppliedObject& o : report->objects) names.push_back(o.name);
  EXPECT_THAT(names, ::testing::ElementsAre("serviceaccount/powerctl-lb-agent",
                                            "clusterrole/powerctl:lb-agent:powerctl",
                                            "clusterrolebinding/powerctl:lb-agent:powerctl",
                                            "configmap/powerctl-lb-agent-config",
                                            "daemonset/powerctl-lb-agent"));
  EXPECT_TRUE(server_.Has(kLbAgentPath));
  // Polled until both nodes' agents were available, reporting the DaemonSet by its kind.
  EXPECT_EQ(clock_.sleeps.size(), 2u);
  ASSERT_FALSE(progress_.empty());
  ASSERT_EQ(progress_.front().size(), 1u);
  EXPECT_EQ(progress_.front()[0].name, "daemonset/powerctl-lb-agent");
  EXPECT_FALSE(progress_.front()[0].done);
  EXPECT_EQ(progress_.front()[0].replicas, 2);
  EXPECT_EQ(progress_.front()[0].available, 0);
  EXPECT_THAT(progress_.front()[0].waiting_for, HasSubstr(FakeApiServer::kDefaultUnschedulable));
  EXPECT_TRUE(progress_.back()[0].done);
  EXPECT_EQ(progress_.back()[0].available, 2);
}

TEST_F(ApplyTest, LbWithoutTheNamespaceFailsNamingIt) {
  ApplyRequest request = Request();
  request.components = {"lb"};
  auto report = Run(request);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.error().message, HasSubstr("namespaces \"powerctl\" not found"));
}

}  // namespace
}  // namespace powerctl::setup
