// The powerctl.io/config-hash pod annotation follows the TLS material each Deployment mounts,
// so applying new Secrets rolls the pods that read them at start.
#include "core/common/encoding.h"
#include "core/manifests/generate.h"
#include "core/manifests/render_context.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace powerctl::manifests {
namespace {

using json = nlohmann::ordered_json;

GenerateRequest Request(std::vector<std::string> components) {
  GenerateRequest request;
  request.version = KubeVersion{1, 30, -1};
  request.config.extender.image = "example.com/powerctl:1";
  request.components = std::move(components);
  return request;
}

// Workload name -> its pod template's config-hash.
std::map<std::string, std::string> Hashes(const GenerateRequest& request) {
  auto result = Generate(request);
  EXPECT_TRUE(result.ok()) << result.error().message;
  std::map<std::string, std::string> hashes;
  if (!result.ok()) return hashes;
  for (const auto& component : result->components) {
    for (const json& o : component.objects) {
      const std::string kind = o.value("kind", "");
      if (kind != "Deployment" && kind != "DaemonSet") continue;
      hashes[o["metadata"]["name"].get<std::string>()] =
          o["spec"]["template"]["metadata"]["annotations"]["powerctl.io/config-hash"]
              .get<std::string>();
    }
  }
  return hashes;
}

KeyMaterial NewKeys() {
  auto m = GenerateKeyMaterial(ExtenderCertificateRequest(config::PowerctlConfig{}));
  EXPECT_TRUE(m.ok());
  return *m;
}

TEST(ConfigHashTest, NewKeyMaterialChangesTheHashOfEachDeploymentThatMountsIt) {
  const auto all = std::vector<std::string>{"secrets", "extender", "scheduler", "lb"};
  std::map<std::string, std::string> a = Hashes(Request(all));
  std::map<std::string, std::string> b = Hashes(Request(all));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_NE(a["powerctl-extender"], b["powerctl-extender"]);
  EXPECT_NE(a["powerctl-scheduler"], b["powerctl-scheduler"]);
  // The lb-agent mounts no certificate: new keys leave it alone.
  EXPECT_EQ(a["powerctl-lb-agent"], b["powerctl-lb-agent"]);
}

TEST(ConfigHashTest, TheSameMaterialGivesTheSameHash) {
  GenerateRequest request = Request({"secrets", "extender", "scheduler"});
  request.keys = NewKeys();
  EXPECT_EQ(Hashes(request), Hashes(request));
}

TEST(ConfigHashTest, EachDeploymentFollowsOnlyTheCertificatesItMounts) {
  GenerateRequest request = Request({"extender", "scheduler"});
  request.keys = NewKeys();
  std::map<std::string, std::string> before = Hashes(request);
  request.keys->client_cert = NewKeys().client_cert;  // only the scheduler's Secret changes
  std::map<std::string, std::string> after = Hashes(request);
  EXPECT_EQ(before["powerctl-extender"], after["powerctl-extender"]);
  EXPECT_NE(before["powerctl-scheduler"], after["powerctl-scheduler"]);
  request.keys->server_cert = NewKeys().server_cert;
  EXPECT_NE(Hashes(request)["powerctl-extender"], after["powerctl-extender"]);
}

TEST(ConfigHashTest, WithoutTlsTheHashIsTheConfigTextsAlone) {
  GenerateRequest request = Request({"extender"});
  request.config.extender.tls_mode = "insecure";
  request.keys = NewKeys();
  auto result = Generate(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const json context = BuildRenderContext(request.config, RenderOptions{request.version});
  const std::string text = context["extender"]["configText"].get<std::string>();
  EXPECT_EQ(Hashes(request)["powerctl-extender"], Sha256Hex(text).substr(0, 16));
}

TEST(ConfigHashTest, HashesCertificatesAfterTheConfigText) {
  EXPECT_EQ(ConfigHash("a"), Sha256Hex("a").substr(0, 16));
  EXPECT_EQ(ConfigHash("a", {"ca", "leaf"}), Sha256Hex("a\n---\nca\n---\nleaf").substr(0, 16));
  EXPECT_NE(ConfigHash("a", {"ca", "leaf"}), ConfigHash("a", {"ca", "other"}));
}

}  // namespace
}  // namespace powerctl::manifests
