#include "core/setup/delete.h"

#include "core/kube/resources.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using kube::fake::DeploymentObject;
using kube::fake::FakeApiServer;
using kube::fake::FakeClock;
using kube::fake::RecordedRequest;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kNamespacePath[] = "/api/v1/namespaces/powerctl";
constexpr char kServiceAccountPath[] =
    "/api/v1/namespaces/powerctl/serviceaccounts/powerctl-scheduler";
constexpr char kClusterRolePath[] =
    "/apis/rbac.authorization.k8s.io/v1/clusterroles/powerctl-extender";
constexpr char kAuthReaderPath[] =
    "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/"
    "powerctl-scheduler-auth-reader";
constexpr char kSecretPath[] = "/api/v1/namespaces/powerctl/secrets/powerctl-extender-tls";
constexpr char kCrdPath[] =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/taspolicies.telemetry.intel.com";
constexpr char kPolicyPath[] =
    "/apis/telemetry.intel.com/v1alpha1/namespaces/powerctl/taspolicies/cool-nodes";
constexpr char kConfigMapPath[] = "/api/v1/namespaces/powerctl/configmaps/powerctl-extender-config";
constexpr char kExtenderPath[] = "/apis/apps/v1/namespaces/powerctl/deployments/powerctl-extender";
constexpr char kExtenderServicePath[] = "/api/v1/namespaces/powerctl/services/powerctl-extender";
constexpr char kSchedulerPath[] =
    "/apis/apps/v1/namespaces/powerctl/deployments/powerctl-scheduler";
// Another install (instance "other") and its objects.
constexpr char kOtherNamespacePath[] = "/api/v1/namespaces/other";
constexpr char kOtherClusterRolePath[] =
    "/apis/rbac.authorization.k8s.io/v1/clusterroles/other-extender";
constexpr char kOtherExtenderPath[] =
    "/apis/apps/v1/namespaces/other/deployments/powerctl-extender";
constexpr char kOtherInKubeSystemPath[] =
    "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/"
    "powerctl-scheduler-auth-reader-other";

// The labels powerctl puts on what it creates; the CRD has no instance.
json Labelled(json object, const std::string& component, const std::string& instance) {
  json& labels = object["metadata"]["labels"];
  labels["app.kubernetes.io/name"] = "powerctl";
  labels["app.kubernetes.io/managed-by"] = "powerctl";
  labels["app.kubernetes.io/component"] = component;
  if (!instance.empty()) labels["app.kubernetes.io/instance"] = instance;
  return object;
}

json Object(const std::string& api_version, const std::string& kind, const std::string& ns,
            const std::string& name) {
  json object = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}}}};
  if (!ns.empty()) object["metadata"]["namespace"] = ns;
  return object;
}

class DeleteTest : public ::testing::Test {
 protected:
  DeleteTest() : client_(server_.MakeClient()) {
    const std::string rbac = "rbac.authorization.k8s.io/v1";
    Add(Object("v1", "Namespace", "", "powerctl"), "namespace");
    Add(Object("v1", "ServiceAccount", "powerctl", "powerctl-scheduler"), "rbac");
    Add(Object(rbac, "ClusterRole", "", "powerctl-extender"), "rbac");
    Add(Object(rbac, "RoleBinding", "kube-system", "powerctl-scheduler-auth-reader"), "rbac");
    Add(Object("v1", "Secret", "powerctl", "powerctl-extender-tls"), "secrets");
    server_.Put(Labelled({{"apiVersion", "apiextensions.k8s.io/v1"},
                          {"kind", "CustomResourceDefinition"},
                          {"metadata", {{"name", "taspolicies.telemetry.intel.com"}}},
                          {"spec",
                           {{"group", "telemetry.intel.com"},
                            {"names", {{"kind", "TASPolicy"}, {"plural", "taspolicies"}}},
                            {"scope", "Namespaced"}}}},
                         "policies", ""));
    Add(Object("telemetry.intel.com/v1alpha1", "TASPolicy", "powerctl", "cool-nodes"), "policies");
    Add(Object("v1", "ConfigMap", "powerctl", "powerctl-extender-config"), "extender");
    Add(DeploymentObject("powerctl", "powerctl-extender", "extender"), "extender");
    Add(Object("v1", "Service", "powerctl", "powerctl-extender"), "extender");
    Add(DeploymentObject("powerctl", "powerctl-scheduler", "scheduler"), "scheduler");

    server_.Put(Labelled(Object("v1", "Namespace", "", "other"), "namespace", "other"));
    server_.Put(Labelled(Object(rbac, "ClusterRole", "", "other-extender"), "rbac", "other"));
    server_.Put(
        Labelled(DeploymentObject("other", "powerctl-extender", "extender"), "extender", "other"));
    server_.Put(
        Labelled(Object(rbac, "RoleBinding", "kube-system", "powerctl-scheduler-auth-reader-other"),
                 "rbac", "other"));
  }

  void Add(json object, const std::string& component) {
    server_.Put(Labelled(std::move(object), component, "powerctl"));
  }

  Result<DeleteReport> Run(const DeleteRequest& request) {
    reported_.clear();
    return Delete(
        *client_, request, [this](const DeletedObject& o) { reported_.push_back(o.name); },
        clock_.clock());
  }

  // The position of the DELETE of `path` among the requests, or -1.
  long DeleteIndex(const std::string& path) const {
    const auto& requests = server_.requests();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].method == "DELETE" && requests[i].path == path) return static_cast<long>(i);
    }
    return -1;
  }

  std::vector<std::string> OwnPaths() const {
    return {kNamespacePath,       kServiceAccountPath, kClusterRolePath, kAuthReaderPath,
            kSecretPath,          kPolicyPath,         kConfigMapPath,   kExtenderPath,
            kExtenderServicePath, kSchedulerPath};
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakeClock clock_;
  std::vector<std::string> reported_;
};

TEST_F(DeleteTest, DeletesItsObjectsFoundByLabelsInReverseDependencyOrder) {
  auto report = Run(DeleteRequest{});
  ASSERT_TRUE(report.ok()) << report.error().message;

  for (const std::string& path : OwnPaths()) EXPECT_FALSE(server_.Has(path)) << path;
  // What depends on others goes first; the Namespace last.
  std::vector<std::string> order = {kSchedulerPath,      kExtenderPath,   kPolicyPath,
                                    kSecretPath,         kAuthReaderPath, kClusterRolePath,
                                    kServiceAccountPath, kNamespacePath};
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_GE(DeleteIndex(order[i]), 0) << order[i];
    if (i > 0) {
      EXPECT_GT(DeleteIndex(order[i]), DeleteIndex(order[i - 1])) << order[i];
    }
  }
  EXPECT_EQ(server_.MutatingRequests().back().path, kNamespacePath);
  // Found by the managed-by, component and instance labels.
  for (const RecordedRequest& r : server_.RequestsTo("GET", "/apis/apps/v1/namespaces/")) {
    EXPECT_THAT(r.Query("labelSelector"), HasSubstr("app.kubernetes.io/managed-by=powerctl"));
    EXPECT_THAT(r.Query("labelSelector"), HasSubstr("app.kubernetes.io/instance=powerctl"));
    EXPECT_THAT(r.Query("labelSelector"), HasSubstr("app.kubernetes.io/component="));
  }
  // The report lists each object once, in the order deleted, and the observer heard of each.
  ASSERT_EQ(report->objects.size(), OwnPaths().size() + 1);  // + the kept CRD
  EXPECT_EQ(report->objects.front().name, "deployment/powerctl-scheduler");
  EXPECT_EQ(report->objects.back().name, "namespace/powerctl");
  EXPECT_EQ(reported_.size(), report->objects.size());
}

TEST_F(DeleteTest, KeepsTheSharedCrdUnlessIncludeCrds) {
  auto report = Run(DeleteRequest{});
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_TRUE(server_.Has(kCrdPath));
  EXPECT_EQ(DeleteIndex(kCrdPath), -1);
  bool reported_kept = false;
  for (const DeletedObject& o : report->objects) {
    if (o.path == kCrdPath) reported_kept = o.kept;
    if (o.path != kCrdPath) {
      EXPECT_FALSE(o.kept) << o.name;
    }
  }
  EXPECT_TRUE(reported_kept);
}

TEST_F(DeleteTest, IncludeCrdsDeletesTheCrdAfterThePolicies) {
  DeleteRequest request;
  request.include_crds = true;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_FALSE(server_.Has(kCrdPath));
  ASSERT_GE(DeleteIndex(kCrdPath), 0);
  EXPECT_GT(DeleteIndex(kCrdPath), DeleteIndex(kPolicyPath));
}

TEST_F(DeleteTest, OnlyObjectsOfItsOwnInstanceAreDeleted) {
  auto report = Run(DeleteRequest{});
  ASSERT_TRUE(report.ok()) << report.error().message;

  for (const char* path :
       {kOtherNamespacePath, kOtherClusterRolePath, kOtherExtenderPath, kOtherInKubeSystemPath}) {
    EXPECT_TRUE(server_.Has(path)) << path;
    EXPECT_EQ(DeleteIndex(path), -1) << path;
  }
}

TEST_F(DeleteTest, ServerDryRunSendsDryRunAndDeletesNothing) {
  std::map<std::string, json> before = server_.objects();
  DeleteRequest request;
  request.dry_run = DryRunMode::kServer;
  request.wait = true;  // nothing to wait for in a dry run
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_EQ(server_.objects(), before);
  std::vector<RecordedRequest> writes = server_.MutatingRequests();
  EXPECT_EQ(writes.size(), OwnPaths().size());
  for (const RecordedRequest& r : writes) {
    EXPECT_EQ(r.method, "DELETE");
    EXPECT_TRUE(r.dry_run()) << r.path;
  }
  EXPECT_EQ(report->objects.size(), OwnPaths().size() + 1);
}

TEST_F(DeleteTest, ClientDryRunSendsNoMutatingRequest) {
  std::map<std::string, json> before = server_.objects();
  DeleteRequest request;
  request.dry_run = DryRunMode::kClient;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  EXPECT_EQ(server_.objects(), before);
  EXPECT_EQ(report->objects.size(), OwnPaths().size() + 1);
}

TEST_F(DeleteTest, ADeniedPermissionDeletesNothing) {
  server_.Deny("delete", "deployments", "powerctl");
  std::map<std::string, json> before = server_.objects();
  auto report = Run(DeleteRequest{});
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(report.error().message, HasSubstr("delete deployments.apps in namespace powerctl"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  EXPECT_EQ(server_.objects(), before);
  EXPECT_THAT(reported_, IsEmpty());
}

TEST_F(DeleteTest, PermissionIsCheckedForEachObjectToDeleteButNotTheKeptCrd) {
  auto report = Run(DeleteRequest{});
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<json> reviews = server_.AccessReviews();
  EXPECT_THAT(reviews, Contains(json{{"verb", "delete"},
                                     {"group", "apps"},
                                     {"resource", "deployments"},
                                     {"namespace", "powerctl"},
                                     {"name", "powerctl-scheduler"}}));
  EXPECT_THAT(
      reviews,
      Contains(json{
          {"verb", "delete"}, {"group", ""}, {"resource", "namespaces"}, {"name", "powerctl"}}));
  for (const json& review : reviews) {
    EXPECT_NE(review.value("resource", ""), "customresourcedefinitions");
  }
}

TEST_F(DeleteTest, APermissionDeniedForOneObjectByNameDeletesNothing) {
  server_.Deny("delete", "deployments", "powerctl", "powerctl-extender");
  std::map<std::string, json> before = server_.objects();
  auto report = Run(DeleteRequest{});
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  EXPECT_EQ(server_.objects(), before);
}

TEST_F(DeleteTest, NamedComponentsDeleteOnlyTheirObjects) {
  DeleteRequest request;
  request.components = {"extender"};
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_FALSE(server_.Has(kExtenderPath));
  EXPECT_FALSE(server_.Has(kExtenderServicePath));
  EXPECT_FALSE(server_.Has(kConfigMapPath));
  EXPECT_TRUE(server_.Has(kSchedulerPath));
  EXPECT_TRUE(server_.Has(kNamespacePath));
  EXPECT_TRUE(server_.Has(kSecretPath));
  EXPECT_EQ(server_.MutatingRequests().size(), 3u);
}

TEST_F(DeleteTest, AClusterWithoutTheCrdHasNoPoliciesToDelete) {
  server_.Remove(kPolicyPath);
  server_.Remove(kCrdPath);
  auto report = Run(DeleteRequest{});
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_FALSE(server_.Has(kNamespacePath));
}

TEST_F(DeleteTest, NothingToDeleteIsNotAnError) {
  FakeApiServer empty;
  auto client = empty.MakeClient();
  auto report = Delete(*client, DeleteRequest{}, nullptr, clock_.clock());
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_THAT(report->objects, IsEmpty());
  EXPECT_THAT(empty.MutatingRequests(), IsEmpty());
}

TEST_F(DeleteTest, AnObjectAlreadyGoneIsNotAnError) {
  server_.FailRequests(kExtenderPath, 404, "DELETE", "deployments.apps \"x\" not found");
  auto report = Run(DeleteRequest{});
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_FALSE(server_.Has(kNamespacePath));
}

TEST_F(DeleteTest, AnApiErrorNamesTheObjectAndStopsThere) {
  server_.FailRequests(kExtenderPath, 500, "DELETE", "etcdserver: request timed out");
  auto report = Run(DeleteRequest{});
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().code, ErrorCode::kApi);
  EXPECT_THAT(report.error().message, HasSubstr("deleting deployment/powerctl-extender"));
  EXPECT_THAT(report.error().message, HasSubstr("etcdserver: request timed out"));
  EXPECT_FALSE(server_.Has(kSchedulerPath));  // deleted before
  EXPECT_TRUE(server_.Has(kNamespacePath));   // not reached
}

TEST_F(DeleteTest, AListErrorDeletesNothing) {
  server_.FailRequests("/apis/rbac.authorization.k8s.io/v1/clusterroles", 503, "GET");
  auto report = Run(DeleteRequest{});
  ASSERT_FALSE(report.ok());

  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(DeleteTest, WaitReturnsOnceTheObjectsAreGone) {
  json held = server_.Object(kExtenderPath);
  held["metadata"]["finalizers"] = json::array({"example.com/hold"});
  server_.PutExactly(held);
  clock_.on_sleep = [this] {
    if (clock_.sleeps.size() == 2) server_.Remove(kExtenderPath);  // the finalizer is done
  };
  DeleteRequest request;
  request.wait = true;
  auto report = Run(request);
  ASSERT_TRUE(report.ok()) << report.error().message;

  EXPECT_EQ(clock_.sleeps.size(), 2u);
}

TEST_F(DeleteTest, WaitTimeoutNamesTheObjectStillThere) {
  json held = server_.Object(kExtenderPath);
  held["metadata"]["finalizers"] = json::array({"example.com/hold"});
  server_.PutExactly(held);
  DeleteRequest request;
  request.wait = true;
  request.timeout = std::chrono::seconds(20);
  auto report = Run(request);
  ASSERT_FALSE(report.ok());

  EXPECT_EQ(report.error().message,
            "timed out waiting for deployment/powerctl-extender to be deleted");
  EXPECT_GE(clock_.now - std::chrono::steady_clock::time_point(std::chrono::hours(1)),
            std::chrono::seconds(20));
  EXPECT_TRUE(server_.Object(kExtenderPath)["metadata"].contains("deletionTimestamp"));
}

// ---- with objects made by Apply ---------------------------------------------------------------

class DeleteAfterApplyTest : public ::testing::Test {
 protected:
  DeleteAfterApplyTest() : client_(server_.MakeClient()) {}

  static config::PowerctlConfig Config(const std::string& ns) {
    config::PowerctlConfig config;
    config.namespace_ = ns;
    config::PolicyRule rule;
    rule.metric_name = "node_cpu_temperature_celsius";
    rule.op = "LessThan";
    config::Policy policy;
    policy.name = "cool-nodes";
    policy.strategies["scheduleonmetric"].rules.push_back(rule);
    config.policies.push_back(policy);
    return config;
  }

  // Applies the configuration for namespace `ns`; returns the paths of what it applied.
  std::vector<std::string> ApplyInstance(const std::string& ns,
                                         std::vector<std::string> components = {}) {
    ApplyRequest request;
    request.config = Config(ns);
    request.components = std::move(components);
    request.kube_version = KubeVersion::Parse("1.30").value();
    auto report = Apply(*client_, request, {}, clock_.clock());
    EXPECT_TRUE(report.ok()) << report.error().message;
    std::vector<std::string> paths;
    if (!report.ok()) return paths;
    for (const AppliedObject& o : report->objects)
      paths.push_back(kube::ObjectPath(o.object).value());
    return paths;
  }

  Result<DeleteReport> DeleteInstance(const std::string& ns,
                                      std::vector<std::string> components = {}) {
    DeleteRequest request;
    request.config = Config(ns);
    request.components = std::move(components);
    return Delete(*client_, request, nullptr, clock_.clock());
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakeClock clock_;
};

TEST_F(DeleteAfterApplyTest, DeletesEverythingApplyCreatedButTheCrd) {
  std::vector<std::string> applied = ApplyInstance("powerctl");
  ASSERT_FALSE(applied.empty());
  auto report = DeleteInstance("powerctl");
  ASSERT_TRUE(report.ok()) << report.error().message;

  for (const std::string& path : applied) {
    if (path == kCrdPath) {
      EXPECT_TRUE(server_.Has(path));
    } else {
      EXPECT_FALSE(server_.Has(path)) << path;
    }
  }
  // Nothing but the fake's own namespaces and the CRD is left.
  EXPECT_EQ(server_.Paths(), (std::set<std::string>{"/api/v1/namespaces/default",
                                                    "/api/v1/namespaces/kube-system", kCrdPath}));
}

TEST_F(DeleteAfterApplyTest, ApplyingASecondInstallLeavesTheFirstUntouched) {
  std::vector<std::string> first = ApplyInstance("powerctl");
  std::map<std::string, json> before = server_.objects();
  ApplyInstance("team-b");

  for (const std::string& path : first) {
    if (path == kCrdPath) continue;  // shared by design
    EXPECT_EQ(server_.Object(path), before[path]) << path << " was changed by another install";
  }
}

TEST_F(DeleteAfterApplyTest, DeletingASecondInstallLeavesTheFirstInPlace) {
  std::vector<std::string> first = ApplyInstance("powerctl");
  ApplyInstance("team-b");
  auto report = DeleteInstance("team-b");
  ASSERT_TRUE(report.ok()) << report.error().message;

  for (const std::string& path : first) EXPECT_TRUE(server_.Has(path)) << path;
}

TEST_F(DeleteAfterApplyTest, DeleteLbRemovesTheAgentsObjectsClusterScopedToo) {
  std::vector<std::string> setup = ApplyInstance("powerctl");
  std::vector<std::string> agent = ApplyInstance("powerctl", {"lb"});
  ASSERT_EQ(agent.size(), 5u);
  auto report = DeleteInstance("powerctl", {"lb"});
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<std::string> deleted;
  for (const DeletedObject& o : report->objects) deleted.push_back(o.name);
  // What depends on the others goes first: the DaemonSet before its config and RBAC.
  EXPECT_THAT(deleted, ::testing::ElementsAre("daemonset/powerctl-lb-agent",
                                              "configmap/powerctl-lb-agent-config",
                                              "clusterrolebinding/powerctl:lb-agent:powerctl",
                                              "clusterrole/powerctl:lb-agent:powerctl",
                                              "serviceaccount/powerctl-lb-agent"));
  for (const std::string& path : agent) EXPECT_FALSE(server_.Has(path)) << path;
  for (const std::string& path : setup) EXPECT_TRUE(server_.Has(path)) << path;
}

TEST_F(DeleteAfterApplyTest, DeleteConsolidateRemovesItsClusterScopedRbac) {
  std::vector<std::string> setup = ApplyInstance("powerctl");
  std::vector<std::string> rbac = ApplyInstance("powerctl", {"consolidate"});
  ASSERT_EQ(rbac.size(), 3u);
  auto report = DeleteInstance("powerctl", {"consolidate"});
  ASSERT_TRUE(report.ok()) << report.error().message;

  std::vector<std::string> deleted;
  for (const DeletedObject& o : report->objects) deleted.push_back(o.name);
  EXPECT_THAT(deleted, ::testing::ElementsAre("clusterrolebinding/powerctl:consolidate:powerctl",
                                              "clusterrole/powerctl:consolidate:powerctl",
                                              "serviceaccount/powerctl-consolidate"));
  for (const std::string& path : rbac) EXPECT_FALSE(server_.Has(path)) << path;
  for (const std::string& path : setup) EXPECT_TRUE(server_.Has(path)) << path;
}

TEST_F(DeleteAfterApplyTest, DeleteAllRemovesTheOptInComponentsApplyAllLeftOut) {
  ApplyInstance("powerctl");
  std::vector<std::string> agent = ApplyInstance("powerctl", {"lb"});
  std::vector<std::string> rbac = ApplyInstance("powerctl", {"consolidate"});
  auto report = DeleteInstance("powerctl");
  ASSERT_TRUE(report.ok()) << report.error().message;

  for (const std::string& path : agent) EXPECT_FALSE(server_.Has(path)) << path;
  for (const std::string& path : rbac) EXPECT_FALSE(server_.Has(path)) << path;
  EXPECT_EQ(server_.Paths(), (std::set<std::string>{"/api/v1/namespaces/default",
                                                    "/api/v1/namespaces/kube-system", kCrdPath}));
}

}  // namespace
}  // namespace powerctl::setup
