#include "core/extender/pod_group_touch.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::extender {
namespace {

using ::testing::ElementsAre;

TEST(PodGroupTouch, PatchesAnAnnotationPerPodAndReportsEachOutcome) {
  kube::fake::FakeApiServer server;
  server.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}});
  for (const char* name : {"a", "b"}) {
    server.Put(
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", name}, {"namespace", "team"}, {"labels", {{"podGroup", "g"}}}}},
         {"status", {{"phase", "Pending"}}}});
  }
  server.FailRequests("/api/v1/namespaces/team/pods/b", 403, "PATCH", "pods \"b\" is forbidden");
  auto client = server.MakeClient();
  TouchResult result = TouchPods(
      *client, {{"team", "a", "T;members=1"}, {"team", "b", "T;members=1"}, {"team", "gone", "T"}});
  EXPECT_THAT(result.touched, ElementsAre("team/a"));
  EXPECT_THAT(result.gone, ElementsAre("team/gone"));
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_THAT(result.errors[0], ::testing::HasSubstr("pod team/b: "));
  kube::json a = server.Object("/api/v1/namespaces/team/pods/a");
  EXPECT_EQ(a["metadata"]["annotations"][cluster::kGroupCompleteAnnotation], "T;members=1");
  EXPECT_EQ(a["metadata"]["labels"]["podGroup"], "g");  // a merge patch keeps the rest
  const auto& last = server.requests().back();
  EXPECT_EQ(last.content_type, "application/merge-patch+json");
}

}  // namespace
}  // namespace powerctl::extender
