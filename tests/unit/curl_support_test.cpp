#include "core/kube/curl_support.h"

#include "core/common/json_bounds.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::kube::curl {
namespace {

Target TargetFor(const std::string& server, const std::string& tls_server_name = "") {
  ClusterConnection connection;
  connection.server = server;
  connection.tls_server_name = tls_server_name;
  Result<Target> target = MakeTarget(connection);
  EXPECT_TRUE(target.ok()) << server << ": " << target.error().message;
  return target.ok() ? *target : Target{};
}

TEST(MakeTargetTest, KeepsTheServerAndItsPathPrefix) {
  Target target = TargetFor("https://10.0.0.1:6443/");
  EXPECT_EQ(target.base_url, "https://10.0.0.1:6443");
  EXPECT_EQ(target.display, "https://10.0.0.1:6443");
  EXPECT_EQ(target.connect_to, "");
  EXPECT_EQ(target.host_header, "");
  EXPECT_EQ(TargetFor("https://rancher.example/k8s/clusters/c-1").base_url,
            "https://rancher.example/k8s/clusters/c-1");
}

TEST(MakeTargetTest, TlsServerNameConnectsToTheRealAddress) {
  Target target = TargetFor("https://10.0.0.1:6443", "kubernetes.default.svc");
  EXPECT_EQ(target.base_url, "https://kubernetes.default.svc:6443");
  EXPECT_EQ(target.display, "https://10.0.0.1:6443");
  EXPECT_EQ(target.connect_to, "kubernetes.default.svc:6443:10.0.0.1:6443");
  EXPECT_EQ(target.host_header, "Host: 10.0.0.1:6443");

  Target v6 = TargetFor("https://[fd00::1]/prefix/", "api.internal");
  EXPECT_EQ(v6.base_url, "https://api.internal:443/prefix");
  EXPECT_EQ(v6.connect_to, "api.internal:443:[fd00::1]:443");
  EXPECT_EQ(v6.host_header, "Host: [fd00::1]:443");

  EXPECT_EQ(TargetFor("https://api.internal:6443", "api.internal").connect_to, "");
}

TEST(MakeTargetTest, RejectsWhatIsNotAnHttpUrl) {
  for (std::string server : {"", "ftp://example.com", "10.0.0.1:6443 x", "https://"}) {
    ClusterConnection connection;
    connection.server = server;
    Result<Target> target = MakeTarget(connection);
    ASSERT_FALSE(target.ok()) << server;
    EXPECT_EQ(target.error().code, ErrorCode::kInvalidInput);
  }
}

TEST(StreamWriteTest, SplitsLinesAcrossWritesAndStops) {
  std::vector<std::string> lines;
  std::function<bool(std::string_view)> on_line = [&](std::string_view line) {
    lines.emplace_back(line);
    return lines.size() < 3;
  };
  StreamState state;
  state.status = 200;
  state.on_line = &on_line;
  std::string first = "{\"a\":1}\r\n\n{\"b\"";
  std::string second = ":2}\n{\"c\":3}\n{\"d\":4}\n";
  EXPECT_EQ(StreamWrite(first.data(), 1, first.size(), &state), first.size());
  EXPECT_EQ(StreamWrite(second.data(), 1, second.size(), &state), 0u);  // stop
  EXPECT_TRUE(state.stopped);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
}

TEST(StreamWriteTest, KeepsTheBodyOfAnErrorStatus) {
  std::function<bool(std::string_view)> on_line = [](std::string_view) { return true; };
  StreamState state;
  state.status = 403;
  state.on_line = &on_line;
  std::string body = "{\"kind\":\"Status\"}\n";
  EXPECT_EQ(StreamWrite(body.data(), 1, body.size(), &state), body.size());
  EXPECT_EQ(state.error_body, body);
}

TEST(StreamWriteTest, HandsOverALineThatNeverEndsOnceItIsTooLong) {
  std::vector<std::size_t> sizes;
  std::function<bool(std::string_view)> on_line = [&](std::string_view line) {
    sizes.push_back(line.size());
    return false;  // as the watch does with an event it cannot parse
  };
  StreamState state;
  state.status = 200;
  state.on_line = &on_line;
  std::string chunk(1 << 20, 'x');
  std::size_t written = 0;
  while (!state.stopped && written <= kKubeJsonLimits.max_bytes + chunk.size()) {
    if (StreamWrite(chunk.data(), 1, chunk.size(), &state) == 0) break;
    written += chunk.size();
  }
  EXPECT_TRUE(state.stopped);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_GT(sizes[0], kKubeJsonLimits.max_bytes);
  EXPECT_LE(sizes[0], kKubeJsonLimits.max_bytes + chunk.size());
  EXPECT_TRUE(state.buffer.empty());
}

}  // namespace
}  // namespace powerctl::kube::curl
