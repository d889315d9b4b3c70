#include "core/kube/connection.h"

#include "core/common/encoding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace powerctl::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecretToken[] = "s3cr3t-t0ken-value";
constexpr char kCertPem[] = "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n";
constexpr char kKeyPem[] = "-----BEGIN PRIVATE KEY-----\nMIIBkey\n-----END PRIVATE KEY-----\n";
constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n";

// A kubeconfig with one cluster, user and context; `user` is spliced in as the user's body.
std::string Kubeconfig(const std::string& name, const std::string& server, const std::string& user,
                       const std::string& extra = "") {
  return "apiVersion: v1\nkind: Config\n"
         "clusters:\n- name: " +
         name + "-cluster\n  cluster:\n    server: " + server +
         "\n"
         "users:\n- name: " +
         name + "-user\n  user:\n" + user + "contexts:\n- name: " + name +
         "\n  context:\n    cluster: " + name + "-cluster\n    user: " + name + "-user\n" + extra;
}

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(::testing::TempDir()) /
            ("powerctl_conn_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    request_.service_account_dir = (root_ / "sa").string();  // absent unless a test creates it
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Write(const std::string& relative, const std::string& text, bool executable = false) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    if (executable) fs::permissions(path, fs::perms::owner_all | fs::perms::group_read);
    return path.string();
  }

  std::string Read(const std::string& relative) {
    std::ifstream in(root_ / relative, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  Error ResolveError() {
    Result<ClusterConnection> r = ResolveConnection(request_);
    EXPECT_FALSE(r.ok());
    return r.ok() ? Error{} : r.error();
  }

  fs::path root_;
  ConnectionRequest request_;
};

TEST_F(ConnectionTest, SingleFileWithToken) {
  request_.kubeconfig_flag = Write("kc", Kubeconfig("dev", "https://10.0.0.1:6443",
                                                    "    token: abc\n", "current-context: dev\n"));
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->credentials.token, "abc");
  EXPECT_EQ(c->namespace_, "default");
  EXPECT_EQ(c->context_name, "dev");
  EXPECT_EQ(c->user_name, "dev-user");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->description, "context \"dev\" of " + request_.kubeconfig_flag);
}

TEST_F(ConnectionTest, ClusterOptionsAndContextNamespace) {
  request_.kubeconfig_flag =
      Write("kc",
            "clusters:\n- name: c\n  cluster:\n    server: https://k:6443\n"
            "    tls-server-name: api.internal\n    insecure-skip-tls-verify: true\n"
            "contexts:\n- name: x\n  context: {cluster: c, namespace: team-a}\n"
            "current-context: x\n");
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tls_server_name, "api.internal");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_EQ(c->user_name, "");
  EXPECT_TRUE(c->credentials.token.empty());
}

TEST_F(ConnectionTest, CertificateDataIsDecoded) {
  request_.kubeconfig_flag =
      Write("kc",
            "clusters:\n- name: c\n  cluster:\n    server: https://k\n"
            "    certificate-authority-data: " +
                Base64Encode(kCaPem) +
                "\n"
                "users:\n- name: u\n  user:\n    client-certificate-data: " +
                Base64Encode(kCertPem) + "\n    client-key-data: " + Base64Encode(kKeyPem) +
                "\n"
                "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->ca_pem, kCaPem);
  EXPECT_EQ(c->credentials.client_cert_pem, kCertPem);
  EXPECT_EQ(c->credentials.client_key_pem, kKeyPem);
}

TEST_F(ConnectionTest, RelativeFilesResolveAgainstTheKubeconfigDirectory) {
  Write("conf/pki/ca.crt", kCaPem);
  Write("conf/pki/client.crt", kCertPem);
  Write("conf/pki/client.key", kKeyPem);
  Write("conf/token", "from-file\n");
  request_.kubeconfig_flag =
      Write("conf/kc",
            "clusters:\n- name: c\n  cluster:\n    server: https://k\n"
            "    certificate-authority: pki/ca.crt\n"
            "users:\n- name: u\n  user:\n    client-certificate: pki/client.crt\n"
            "    client-key: ./pki/../pki/client.key\n    tokenFile: token\n"
            "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->ca_pem, kCaPem);
  EXPECT_EQ(c->credentials.client_cert_pem, kCertPem);
  EXPECT_EQ(c->credentials.client_key_pem, kKeyPem);
  EXPECT_EQ(c->credentials.token_file, (root_ / "conf/token").string());
}

TEST_F(ConnectionTest, MissingReferencedFileNamesKeyAndPath) {
  request_.kubeconfig_flag =
      Write("conf/kc",
            "clusters:\n- name: c\n  cluster:\n    server: https://k\n"
            "    certificate-authority: pki/ca.crt\n"
            "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n");
  Error e = ResolveError();
  EXPECT_EQ(e.code, ErrorCode::kInvalidInput);
  EXPECT_THAT(e.message, AllOf(HasSubstr("cluster \"c\" in " + request_.kubeconfig_flag),
                               HasSubstr("certificate-authority"),
                               HasSubstr((root_ / "conf/pki/ca.crt").string())));
}

TEST_F(ConnectionTest, DataAndFileTogetherAreRejectedLikeKubectl) {
  Write("ca.crt", kCaPem);
  request_.kubeconfig_flag =
      Write("kc",
            "clusters:\n- name: c\n  cluster:\n    server: https://k\n"
            "    certificate-authority: ca.crt\n    certificate-authority-data: " +
                Base64Encode(kCaPem) +
                "\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n");
  EXPECT_THAT(ResolveError().message,
              HasSubstr("both certificate-authority-data and certificate-authority are set"));
}

TEST_F(ConnectionTest, BadBase64NamesTheKeyButNotTheValue) {
  request_.kubeconfig_flag =
      Write("kc", Kubeconfig("dev", "https://k",
                             std::string("    client-certificate-data: ") + Base64Encode(kCertPem) +
                                 "\n    client-key-data: " + kSecretToken + "!\n",
                             "current-context: dev\n"));
  Error e = ResolveError();
  EXPECT_EQ(e.code, ErrorCode::kInvalidInput);
  EXPECT_THAT(e.message, AllOf(HasSubstr("user \"dev-user\""),
                               HasSubstr("client-key-data is not valid base64"),
                               Not(HasSubstr(kSecretToken))));
}

TEST_F(ConnectionTest, ContextFlagSelectsAndUnknownContextListsNames) {
  request_.kubeconfig_flag = Write("kc",
                                   "clusters:\n- name: a\n  cluster: {server: https://a}\n"
                                   "- name: b\n  cluster: {server: https://b}\n"
                                   "contexts:\n- name: ctx-a\n  context: {cluster: a}\n"
                                   "- name: ctx-b\n  context: {cluster: b, namespace: nb}\n"
                                   "current-context: ctx-a\n");
  request_.context_flag = "ctx-b";
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://b");
  EXPECT_EQ(c->namespace_, "nb");

  request_.context_flag = "nope";
  Error e = ResolveError();
  EXPECT_EQ(e.code, ErrorCode::kInvalidInput);
  EXPECT_THAT(e.message, AllOf(HasSubstr("context \"nope\" (from --context) is not defined"),
                               HasSubstr("available contexts: ctx-a, ctx-b")));
}

TEST_F(ConnectionTest, CurrentContextMissingOrUndefinedSaysHowToFix) {
  const std::string body =
      "clusters:\n- name: a\n  cluster: {server: https://a}\n"
      "contexts:\n- name: ctx-a\n  context: {cluster: a}\n";
  request_.kubeconfig_flag = Write("kc", body);
  EXPECT_THAT(ResolveError().message,
              AllOf(HasSubstr("no current-context is set in " + request_.kubeconfig_flag),
                    HasSubstr("--context"), HasSubstr("kubectl config use-context"),
                    HasSubstr("available contexts: ctx-a")));
  Write("kc", body + "current-context: gone\n");
  EXPECT_THAT(ResolveError().message,
              AllOf(HasSubstr("current-context \"gone\""), HasSubstr("use-context")));
}

TEST_F(ConnectionTest, ContextReferencesAreChecked) {
  request_.kubeconfig_flag = Write("kc",
                                   "clusters:\n- name: a\n  cluster: {tls-server-name: x}\n"
                                   "contexts:\n- name: no-cluster\n  context: {cluster: missing}\n"
                                   "- name: no-server\n  context: {cluster: a}\n"
                                   "- name: no-user\n  context: {cluster: a, user: ghost}\n");
  request_.context_flag = "no-cluster";
  EXPECT_THAT(ResolveError().message, HasSubstr("cluster \"missing\" is not defined"));
  request_.context_flag = "no-server";
  EXPECT_THAT(ResolveError().message,
              HasSubstr("cluster \"a\" in " + request_.kubeconfig_flag + ": server is required"));
  Write("kc",
        "clusters:\n- name: a\n  cluster: {server: https://a}\n"
        "contexts:\n- name: no-user\n  context: {cluster: a, user: ghost}\n");
  request_.context_flag = "no-user";  // kubectl connects anonymously
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->user_name, "ghost");
  EXPECT_TRUE(c->credentials.token.empty());
  EXPECT_FALSE(c->credentials.exec.has_value());
}

TEST_F(ConnectionTest, KubeconfigEnvMergesFirstFileWins) {
  Write("b/ca.crt", kCaPem);
  const std::string a =
      Write("a/config",
            "clusters:\n- name: shared\n  cluster: {server: https://from-a}\n"
            "contexts:\n- name: both\n  context: {cluster: shared, namespace: from-a}\n");
  const std::string b =
      Write("b/config",
            "clusters:\n- name: shared\n  cluster: {server: https://from-b}\n"
            "- name: b-cluster\n  cluster: {server: https://b, certificate-authority: ca.crt}\n"
            "users:\n- name: b-user\n  user: {token: tb}\n"
            "contexts:\n- name: both\n  context: {cluster: shared, namespace: from-b}\n"
            "- name: b-only\n  context: {cluster: shared, user: b-user}\n"
            "- name: b-own\n  context: {cluster: b-cluster}\n"
            "current-context: both\n");
  const std::string c = Write("c/config", "current-context: b-only\n");
  request_.environment["KUBECONFIG"] =
      a + ":" + (root_ / "missing").string() + "::" + b + ":" + c + ":" + a;
  request_.environment["HOME"] = (root_ / "home").string();
  Result<ClusterConnection> conn = ResolveConnection(request_);
  ASSERT_TRUE(conn.ok()) << conn.error().message;
  // current-context comes from b (a sets none), the context "both" and cluster from a.
  EXPECT_EQ(conn->context_name, "both");
  EXPECT_EQ(conn->namespace_, "from-a");
  EXPECT_EQ(conn->server, "https://from-a");
  EXPECT_EQ(conn->description, "context \"both\" of " + a);

  request_.context_flag = "b-only";  // defined only in b, but its cluster name resolves to a's
  conn = ResolveConnection(request_);
  ASSERT_TRUE(conn.ok()) << conn.error().message;
  EXPECT_EQ(conn->server, "https://from-a");
  EXPECT_EQ(conn->credentials.token, "tb");
  EXPECT_EQ(conn->description, "context \"b-only\" of " + b);

  request_.context_flag = "b-own";  // relative CA resolves against b's directory
  conn = ResolveConnection(request_);
  ASSERT_TRUE(conn.ok()) << conn.error().message;
  EXPECT_EQ(conn->ca_pem, kCaPem);
}

TEST_F(ConnectionTest, InvalidFileInKubeconfigListIsAnError) {
  const std::string good =
      Write("good", Kubeconfig("dev", "https://k", "    token: t\n", "current-context: dev\n"));
  const std::string bad = Write("bad", "clusters: {not: a list}\n");
  request_.environment["KUBECONFIG"] = good + ":" + bad;
  EXPECT_THAT(ResolveError().message, HasSubstr(bad + ": clusters must be a list"));
  Write("bad", "users:\n- name: u\n  user: {token: a}\n- name: u\n  user: {token: b}\n");
  EXPECT_THAT(ResolveError().message, HasSubstr(bad + ": duplicate user name \"u\""));
}

TEST_F(ConnectionTest, KubeconfigFlagIgnoresEnvAndMustExist) {
  const std::string env_file =
      Write("env", Kubeconfig("env", "https://env", "    token: e\n", "current-context: env\n"));
  request_.environment["KUBECONFIG"] = env_file;
  request_.kubeconfig_flag = Write(
      "flag", Kubeconfig("flag", "https://flag", "    token: f\n", "current-context: flag\n"));
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://flag");

  request_.kubeconfig_flag = (root_ / "nope").string();
  Error e = ResolveError();
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_THAT(e.message,
              HasSubstr(request_.kubeconfig_flag + " (from --kubeconfig) does not exist"));
}

TEST_F(ConnectionTest, HomeFallbackWhenKubeconfigUnsetOrEmpty) {
  const std::string home_config =
      Write("home/.kube/config",
            Kubeconfig("home", "https://home", "    token: h\n", "current-context: home\n"));
  request_.environment["HOME"] = (root_ / "home").string();
  request_.environment["KUBECONFIG"] = "";
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://home");
  EXPECT_EQ(c->description, "context \"home\" of " + home_config);
}

class InClusterTest : public ConnectionTest {
 protected:
  void SetUp() override {
    ConnectionTest::SetUp();
    Write("sa/token", kSecretToken);
    Write("sa/ca.crt", kCaPem);
    Write("sa/namespace", "team-a\n");
    request_.environment["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
    request_.environment["KUBERNETES_SERVICE_PORT"] = "443";
    request_.environment["HOME"] = (root_ / "home").string();
  }
};

TEST_F(InClusterTest, UsesServiceAccount) {
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->credentials.token_file, (root_ / "sa/token").string());
  EXPECT_TRUE(c->credentials.token.empty());
  EXPECT_EQ(c->ca_pem, kCaPem);
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_EQ(c->context_name, "");
  EXPECT_EQ(c->description, "in-cluster service account");
}

TEST_F(InClusterTest, PodNamespaceIpv6AndDefaults) {
  request_.environment["POD_NAMESPACE"] = "from-env";
  request_.environment["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://[fd00:10:96::1]:443");
  EXPECT_EQ(c->namespace_, "from-env");

  request_.environment.erase("POD_NAMESPACE");
  fs::remove(root_ / "sa/namespace");
  fs::remove(root_ / "sa/ca.crt");  // like client-go: not fatal, system trust store
  c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->namespace_, "default");
  EXPECT_EQ(c->ca_pem, "");
}

TEST_F(InClusterTest, KubeconfigWinsButMissingFilesFallBack) {
  request_.environment["KUBECONFIG"] = (root_ / "missing").string();
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->description, "in-cluster service account");

  request_.environment["KUBECONFIG"] =
      Write("kc", Kubeconfig("dev", "https://k", "    token: t\n", "current-context: dev\n"));
  c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://k");

  // Contexts but no current-context: kubectl's merged config has no cluster, so it uses the pod.
  request_.environment["KUBECONFIG"] =
      Write("kc", Kubeconfig("dev", "https://k", "    token: t\n"));
  c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->description, "in-cluster service account");

  request_.context_flag = "other";  // an unknown --context is an error, not a fallback
  EXPECT_THAT(ResolveError().message, HasSubstr("context \"other\" (from --context)"));
}

TEST_F(InClusterTest, NeedsTheTokenFile) {
  fs::remove(root_ / "sa/token");
  Error e = ResolveError();
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_THAT(e.message, HasSubstr("KUBERNETES_SERVICE_HOST is set, but " +
                                   (root_ / "sa/token").string() + " does not exist"));
}

TEST_F(ConnectionTest, NothingConfiguredIsNotFound) {
  request_.environment["HOME"] = (root_ / "home").string();
  Error e = ResolveError();
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_EQ(e.message,
            "no Kubernetes configuration: set --kubeconfig or KUBECONFIG, create ~/.kube/config, "
            "or run in a pod (not found: " +
                (root_ / "home/.kube/config").string() + ")");
  request_.environment.clear();
  EXPECT_EQ(ResolveError().message,
            "no Kubernetes configuration: set --kubeconfig or KUBECONFIG, create ~/.kube/config, "
            "or run in a pod");
}

TEST_F(ConnectionTest, UnsupportedAuthenticationIsRejected) {
  auto expect = [&](const std::string& user, const std::string& fragment) {
    request_.kubeconfig_flag =
        Write("kc", Kubeconfig("dev", "https://k", user, "current-context: dev\n"));
    Error e = ResolveError();
    EXPECT_EQ(e.code, ErrorCode::kInvalidInput) << user;
    EXPECT_THAT(e.message, AllOf(HasSubstr("user \"dev-user\""), HasSubstr(fragment),
                                 Not(HasSubstr(kSecretToken))));
  };
  expect("    auth-provider:\n      name: oidc\n      config: {id-token: " +
             std::string(kSecretToken) + "}\n",
         "auth-provider \"oidc\" is not supported");
  expect("    auth-provider:\n      name: gcp\n", "exec credential plugin");
  expect("    username: admin\n    password: " + std::string(kSecretToken) + "\n",
         "username/password (basic auth) is not supported");
  expect("    token: t\n    as: someone\n", "as (impersonation) is not supported");
}

TEST_F(ConnectionTest, ErrorsNeverContainSecrets) {
  const std::string secret = kSecretToken;
  const std::string users[] = {
      "    token: [" + secret + "]\n",
      "    token: " + secret + "\n    tokenFile: missing-token\n",
      "    token: " + secret + "\n    client-key-data: " + Base64Encode(secret) + "\n",
      "    client-certificate-data: " + secret + "\n    client-key-data: " + secret + "\n",
      "    token: " + secret +
          "\n    exec: {command: x, apiVersion: client.authentication.k8s.io/v1}\n",
      "    token: \"" + secret + "\n",
  };
  for (const std::string& user : users) {
    request_.kubeconfig_flag =
        Write("kc", Kubeconfig("dev", "https://k", user, "current-context: dev\n"));
    Error e = ResolveError();
    EXPECT_THAT(e.message, Not(HasSubstr(secret))) << user;
    EXPECT_THAT(e.message, Not(HasSubstr(Base64Encode(secret)))) << user;
  }
  request_.kubeconfig_flag = Write(
      "kc",
      Kubeconfig("dev", "https://k", "    token: " + secret + "\n", "current-context: dev\n"));
  request_.context_flag = "other";
  EXPECT_THAT(ResolveError().message, Not(HasSubstr(secret)));
}

TEST_F(ConnectionTest, ExecConfigIsParsedAndValidated) {
  const std::string kc = Write(
      "conf/kc",
      Kubeconfig("dev", "https://k",
                 "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
                 "      command: ./bin/get-token\n      args: [--region, eu]\n"
                 "      env:\n      - {name: A, value: '1'}\n      installHint: brew install x\n"
                 "      provideClusterInfo: true\n",
                 "current-context: dev\n"));
  request_.kubeconfig_flag = kc;
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->credentials.exec.has_value());
  const ExecConfig& exec = *c->credentials.exec;
  EXPECT_EQ(exec.command, (root_ / "conf/bin/get-token").string());
  EXPECT_EQ(exec.args, (std::vector<std::string>{"--region", "eu"}));
  EXPECT_EQ(exec.env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}}));
  EXPECT_EQ(exec.interactive_mode, "IfAvailable");  // the v1beta1 default
  EXPECT_EQ(exec.install_hint, "brew install x");
  EXPECT_TRUE(exec.provide_cluster_info);

  auto exec_error = [&](const std::string& body) {
    Write("conf/kc",
          Kubeconfig("dev", "https://k", "    exec:\n" + body, "current-context: dev\n"));
    return ResolveError().message;
  };
  EXPECT_THAT(exec_error("      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"),
              HasSubstr("exec.interactiveMode is required for client.authentication.k8s.io/v1"));
  EXPECT_THAT(
      exec_error("      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: aws\n"),
      HasSubstr("v1alpha1 was removed"));
  EXPECT_THAT(exec_error("      apiVersion: client.authentication.k8s.io/v1\n"
                         "      interactiveMode: Never\n"),
              HasSubstr("exec.command is required"));
  EXPECT_THAT(exec_error("      apiVersion: client.authentication.k8s.io/v1\n"
                         "      interactiveMode: Sometimes\n      command: aws\n"),
              HasSubstr("interactiveMode must be Never, IfAvailable or Always"));

  Write("conf/kc", Kubeconfig("dev", "https://k",
                              "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                              "      command: aws\n      interactiveMode: Never\n",
                              "current-context: dev\n"));
  c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->credentials.exec->command, "aws");  // a bare name is looked up in PATH
}

// ---------------------------------------------------------------------------
// Exec plugins
// ---------------------------------------------------------------------------

class ExecPluginTest : public ConnectionTest {
 protected:
  void SetUp() override {
    ConnectionTest::SetUp();
    env_["PATH"] = (root_ / "bin").string() + ":/usr/bin:/bin";
    exec_.api_version = "client.authentication.k8s.io/v1";
    exec_.interactive_mode = "Never";
    cluster_.server = "https://10.0.0.1:6443";
  }

  // A plugin script in bin/ (on PATH); `body` runs under /bin/sh.
  void Plugin(const std::string& name, const std::string& body) {
    Write("bin/" + name, "#!/bin/sh\n" + body, /*executable=*/true);
    exec_.command = name;
  }

  static std::string Credential(const std::string& status,
                                const std::string& version = "client.authentication.k8s.io/v1") {
    return "cat <<'EOF'\n{\"apiVersion\": \"" + version +
           "\", \"kind\": \"ExecCredential\", \"status\": " + status + "}\nEOF\n";
  }

  Error RunError(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    Result<ExecCredential> r = RunExecPlugin(exec_, cluster_, env_, timeout);
    EXPECT_FALSE(r.ok());
    return r.ok() ? Error{} : r.error();
  }

  ExecConfig exec_;
  ClusterConnection cluster_;
  std::map<std::string, std::string> env_;
};

TEST_F(ExecPluginTest, ReturnsTokenAndExpiry) {
  Plugin("get-token", Credential(std::string("{\"token\": \"") + kSecretToken +
                                 "\", \"expirationTimestamp\": \"2030-01-02T03:04:05Z\"}"));
  Result<ExecCredential> cred = RunExecPlugin(exec_, cluster_, env_);
  ASSERT_TRUE(cred.ok()) << cred.error().message;
  EXPECT_EQ(cred->token, kSecretToken);
  using namespace std::chrono;
  ASSERT_TRUE(cred->expires.has_value());
  EXPECT_EQ(*cred->expires, sys_days(year(2030) / 1 / 2) + hours(3) + minutes(4) + seconds(5));
}

TEST_F(ExecPluginTest, ExpiryWithOffsetAndFraction) {
  Plugin("get-token",
         Credential("{\"token\": \"t\", \"expirationTimestamp\": \"2030-01-02T03:04:05.5+02:00\"}",
                    "client.authentication.k8s.io/v1beta1"));
  exec_.api_version = "client.authentication.k8s.io/v1beta1";
  exec_.interactive_mode = "";  // v1beta1 defaults to IfAvailable
  Result<ExecCredential> cred = RunExecPlugin(exec_, cluster_, env_);
  ASSERT_TRUE(cred.ok()) << cred.error().message;
  using namespace std::chrono;
  EXPECT_EQ(*cred->expires,
            sys_days(year(2030) / 1 / 2) + hours(1) + minutes(4) + seconds(5) + milliseconds(500));
}

TEST_F(ExecPluginTest, PassesExecInfoArgsAndEnvironment) {
  const std::string out = (root_ / "seen").string();
  Plugin("get-token", "printf '%s' \"$KUBERNETES_EXEC_INFO\" > " + out + ".info\n" +
                          "printf '%s|%s|%s|%s' \"$1\" \"$2\" \"$FOO\" \"$BAR\" > " + out +
                          ".args\ninput=$(cat)\n[ -z \"$input\" ] || exit 9\n" +
                          Credential("{\"token\": \"t\"}"));
  exec_.args = {"get", "two words"};
  exec_.env = {{"FOO", "from-exec"}};
  env_["FOO"] = "from-process";
  env_["BAR"] = "process-only";
  ASSERT_TRUE(RunExecPlugin(exec_, cluster_, env_).ok());
  EXPECT_EQ(Read("seen.args"), "get|two words|from-exec|process-only");
  nlohmann::json info = nlohmann::json::parse(Read("seen.info"));
  EXPECT_EQ(info, nlohmann::json::parse(R"({"apiVersion": "client.authentication.k8s.io/v1",
      "kind": "ExecCredential", "spec": {"interactive": false}})"));

  exec_.provide_cluster_info = true;
  cluster_.ca_pem = kCaPem;
  cluster_.tls_server_name = "api.internal";
  ASSERT_TRUE(RunExecPlugin(exec_, cluster_, env_).ok());
  info = nlohmann::json::parse(Read("seen.info"));
  EXPECT_EQ(info["spec"]["cluster"],
            nlohmann::json({{"server", "https://10.0.0.1:6443"},
                            {"tls-server-name", "api.internal"},
                            {"certificate-authority-data", Base64Encode(kCaPem)}}));
  EXPECT_EQ(info["spec"]["interactive"], false);
}

TEST_F(ExecPluginTest, FailureQuotesStderrTailAndHintButNeverStdout) {
  Plugin("get-token", std::string("echo ") + kSecretToken +
                          "\necho 'first line' >&2\necho 'token expired for bob' >&2\nexit 3\n");
  exec_.install_hint = "install it with: brew install get-token";
  Error e = RunError();
  EXPECT_EQ(e.code, ErrorCode::kApi);
  EXPECT_THAT(e.message, AllOf(HasSubstr("exec plugin get-token failed with exit code 3"),
                               HasSubstr("first line\ntoken expired for bob"),
                               HasSubstr("brew install get-token"), Not(HasSubstr(kSecretToken))));

  Plugin("get-token",
         "i=0\nwhile [ $i -lt 100 ]; do printf 'HEAD-%03d-xxxxxxxxxxxxxxxx' $i >&2; "
         "i=$((i+1)); done\necho ' TAIL-END' >&2\nexit 1\n");
  e = RunError();
  EXPECT_THAT(e.message,
              AllOf(HasSubstr("TAIL-END"), Not(HasSubstr("HEAD-000")), HasSubstr("...")));
  EXPECT_LT(e.message.size(), 700u);

  Plugin("get-token", "kill -9 $$\n");
  EXPECT_THAT(RunError().message, HasSubstr("killed by signal 9"));
}

TEST_F(ExecPluginTest, TimeoutKillsTheProcessGroup) {
  const std::string pid_file = (root_ / "child.pid").string();
  Plugin("slow", "sleep 30 &\necho $! > " + pid_file + "\nwait\n");
  const auto start = std::chrono::steady_clock::now();
  Error e = RunError(std::chrono::milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(e.code, ErrorCode::kNetwork);
  EXPECT_THAT(e.message, HasSubstr("exec plugin slow timed out after 0.3s"));
  // The background sleep was in the plugin's process group, so it is gone (or a zombie).
  const pid_t child = std::stoi(Read("child.pid"));
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    gone = ::kill(child, 0) != 0 || !(stat >> pid >> comm >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

TEST_F(ExecPluginTest, ReturnsClientCertificateAndKey) {
  nlohmann::json status = {{"clientCertificateData", kCertPem}, {"clientKeyData", kKeyPem}};
  Plugin("get-cert", Credential(status.dump()));
  Result<ExecCredential> cred = RunExecPlugin(exec_, cluster_, env_);
  ASSERT_TRUE(cred.ok()) << cred.error().message;
  EXPECT_EQ(cred->client_cert_pem, kCertPem);
  EXPECT_EQ(cred->client_key_pem, kKeyPem);
  EXPECT_TRUE(cred->token.empty());
  EXPECT_FALSE(cred->expires.has_value());

  Plugin("get-cert", Credential(nlohmann::json({{"clientCertificateData", kCertPem}}).dump()));
  EXPECT_THAT(RunError().message, HasSubstr("only a client certificate or key, not both"));
}

TEST_F(ExecPluginTest, ConfigErrors) {
  Plugin("get-token", Credential("{\"token\": \"t\"}"));
  exec_.interactive_mode = "";
  EXPECT_THAT(RunError().message,
              HasSubstr("interactiveMode is required for client.authentication.k8s.io/v1"));
  exec_.interactive_mode = "Always";
  EXPECT_THAT(RunError().message, HasSubstr("exec plugin requires an interactive terminal"));
  exec_.interactive_mode = "IfAvailable";
  EXPECT_TRUE(RunExecPlugin(exec_, cluster_, env_).ok());
  exec_.api_version = "client.authentication.k8s.io/v1alpha1";
  EXPECT_EQ(RunError().code, ErrorCode::kInvalidInput);

  exec_.api_version = "client.authentication.k8s.io/v1";
  exec_.command = "not-installed";
  exec_.install_hint = "see https://example.com/install";
  Error e = RunError();
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_THAT(e.message, AllOf(HasSubstr("exec plugin not-installed: executable not found"),
                               HasSubstr("https://example.com/install")));
  exec_.command = (root_ / "bin/absent").string();
  EXPECT_EQ(RunError().code, ErrorCode::kNotFound);
}

TEST_F(ExecPluginTest, BadOutputIsRejectedWithoutQuotingIt) {
  auto expect = [&](const std::string& body, const std::string& fragment) {
    Plugin("get-token", body);
    Error e = RunError();
    EXPECT_THAT(e.message, AllOf(HasSubstr(fragment), Not(HasSubstr(kSecretToken)))) << body;
  };
  expect(std::string("echo 'token: ") + kSecretToken + "'\n", "not an ExecCredential JSON object");
  expect(Credential(std::string("{\"token\": \"") + kSecretToken + "\"}",
                    "client.authentication.k8s.io/v1beta1"),
         "configured to use API version client.authentication.k8s.io/v1, plugin returned version "
         "\"client.authentication.k8s.io/v1beta1\"");
  expect(
      "echo '{\"apiVersion\": \"client.authentication.k8s.io/v1\", \"kind\": "
      "\"ExecCredential\"}'\n",
      "no status field");
  expect(Credential("{}"), "neither a token nor a client certificate and key");
  expect(Credential(std::string("{\"token\": \"") + kSecretToken +
                    "\", \"expirationTimestamp\": \"tomorrow\"}"),
         "expirationTimestamp is not an RFC 3339 time");
  expect(Credential("{\"token\": 42}"), "status.token must be a string");
}

TEST_F(ExecPluginTest, RunsPluginResolvedFromKubeconfig) {
  Write("conf/plugins/get-token", "#!/bin/sh\n" + Credential("{\"token\": \"from-kc\"}"), true);
  request_.kubeconfig_flag = Write(
      "conf/kc", Kubeconfig("dev", "https://k",
                            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                            "      command: plugins/get-token\n      interactiveMode: Never\n",
                            "current-context: dev\n"));
  Result<ClusterConnection> c = ResolveConnection(request_);
  ASSERT_TRUE(c.ok()) << c.error().message;
  Result<ExecCredential> cred = RunExecPlugin(*c->credentials.exec, *c, env_);
  ASSERT_TRUE(cred.ok()) << cred.error().message;
  EXPECT_EQ(cred->token, "from-kc");
}

}  // namespace
}  // namespace powerctl::kube
