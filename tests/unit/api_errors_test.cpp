#include "core/kube/client.h"
#include "tests/unit/fake_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace powerctl::kube {
namespace {

using fake::ApiReply;
using fake::StatusBody;
using ::testing::HasSubstr;
using ::testing::Not;

Error ErrorFor(const std::string& method, const std::string& path, long status, const json& body) {
  return ErrorFromResponse(method, path, ApiReply(status, body));
}

json Forbidden() {
  return StatusBody(403, "Forbidden",
                    "deployments.apps \"x\" is forbidden: User \"bob\" cannot patch");
}

TEST(ErrorFromResponseTest, ForbiddenNamesTheRuleToGrant) {
  Error error = ErrorFor("PATCH", "/apis/apps/v1/namespaces/prod/deployments/x?fieldManager=p", 403,
                         Forbidden());
  EXPECT_EQ(error.code, ErrorCode::kForbidden);
  EXPECT_EQ(
      error.message,
      "forbidden: deployments.apps \"x\" is forbidden: User \"bob\" cannot patch; grant: apiGroups "
      "[\"apps\"], resources [\"deployments\"], verbs [\"patch\"] in namespace \"prod\"");
}

TEST(ErrorFromResponseTest, ForbiddenVerbsAndResources) {
  auto grant = [](const std::string& method, const std::string& path) {
    std::string message = ErrorFor(method, path, 403, Forbidden()).message;
    return message.substr(message.find("grant: ") + 7);
  };
  EXPECT_EQ(grant("GET", "/api/v1/nodes"),
            R"(apiGroups [""], resources ["nodes"], verbs ["list"])");
  EXPECT_EQ(grant("GET", "/api/v1/nodes/n1"),
            R"(apiGroups [""], resources ["nodes"], verbs ["get"])");
  EXPECT_EQ(grant("GET", "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=5"),
            R"(apiGroups [""], resources ["pods"], verbs ["watch"] in namespace "ns")");
  EXPECT_EQ(grant("PUT", "/api/v1/namespaces/ns/pods/p/status"),
            R"(apiGroups [""], resources ["pods/status"], verbs ["update"] in namespace "ns")");
  EXPECT_EQ(grant("POST", "/api/v1/namespaces/ns/pods/p/binding"),
            R"(apiGroups [""], resources ["pods/binding"], verbs ["create"] in namespace "ns")");
  EXPECT_EQ(
      grant("DELETE", "/apis/coordination.k8s.io/v1/namespaces/ns/leases"),
      R"(apiGroups ["coordination.k8s.io"], resources ["leases"], verbs ["deletecollection"] in namespace "ns")");
  EXPECT_EQ(grant("DELETE", "/api/v1/namespaces/old"),
            R"(apiGroups [""], resources ["namespaces"], verbs ["delete"])");
  EXPECT_EQ(grant("PUT", "/api/v1/namespaces/old/finalize"),
            R"(apiGroups [""], resources ["namespaces/finalize"], verbs ["update"])");
  EXPECT_EQ(
      grant("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
      R"(apiGroups ["rbac.authorization.k8s.io"], resources ["clusterroles"], verbs ["create"])");
  EXPECT_EQ(grant("GET", "/version"), R"(nonResourceURLs ["/version"], verbs ["get"])");
}

TEST(ErrorFromResponseTest, ForbiddenWithoutAStatusBody) {
  Error error = ErrorFromResponse("GET", "/api/v1/nodes", HttpResponse{403, "forbidden\n", {}});
  EXPECT_EQ(error.code, ErrorCode::kForbidden);
  EXPECT_THAT(error.message,
              HasSubstr("HTTP 403 from GET /api/v1/nodes: forbidden; grant: apiGroups"));
}

TEST(ErrorFromResponseTest, Unauthorized) {
  Error error = ErrorFromResponse("GET", "/api/v1/nodes",
                                  ApiReply(401, StatusBody(401, "Unauthorized", "Unauthorized")),
                                  "context \"dev\" of /home/u/.kube/config");
  EXPECT_EQ(error.code, ErrorCode::kApi);
  EXPECT_THAT(error.message, HasSubstr("unauthorized: the server rejected the credentials of "
                                       "context \"dev\" of /home/u/.kube/config"));
}

TEST(ErrorFromResponseTest, NotFound) {
  Error named = ErrorFor(
      "GET", "/api/v1/nodes/n9", 404,
      StatusBody(404, "NotFound", "nodes \"n9\" not found", {{"name", "n9"}, {"kind", "nodes"}}));
  EXPECT_EQ(named.code, ErrorCode::kNotFound);
  EXPECT_EQ(named.message, "nodes \"n9\" not found");
  Error type =
      ErrorFor("GET", "/apis/example.com/v1/widgets?limit=500", 404,
               StatusBody(404, "NotFound", "the server could not find the requested resource"));
  EXPECT_EQ(type.message,
            "the server could not find the requested resource (GET /apis/example.com/v1/widgets)");
  Error plain =
      ErrorFromResponse("GET", "/apis/x/v1/y", HttpResponse{404, "404 page not found\n", {}});
  EXPECT_EQ(plain.code, ErrorCode::kNotFound);
  EXPECT_EQ(plain.message, "HTTP 404 from GET /apis/x/v1/y: 404 page not found");
}

TEST(ErrorFromResponseTest, ApplyConflictSuggestsForceConflicts) {
  json conflict = StatusBody(
      409, "Conflict", "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .data.a",
      {{"causes", {{{"reason", "FieldManagerConflict"}, {"field", ".data.a"}}}}});
  Error error =
      ErrorFor("PATCH", "/api/v1/namespaces/ns/configmaps/c?fieldManager=powerctl", 409, conflict);
  EXPECT_EQ(error.code, ErrorCode::kConflict);
  EXPECT_EQ(
      error.message,
      "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .data.a; re-run with "
      "--force-conflicts to take ownership of these fields");
  Error exists = ErrorFor("POST", "/api/v1/namespaces/ns/configmaps", 409,
                          StatusBody(409, "AlreadyExists", "configmaps \"c\" already exists"));
  EXPECT_EQ(exists.code, ErrorCode::kConflict);
  EXPECT_EQ(exists.message, "configmaps \"c\" already exists");
}

TEST(ErrorFromResponseTest, InvalidListsCausesNotInTheMessage) {
  json invalid = StatusBody(
      422, "Invalid", "ConfigMap \"C\" is invalid: metadata.name: Invalid value: \"C\"",
      {{"causes",
        {{{"reason", "FieldValueInvalid"},
          {"field", "metadata.name"},
          {"message", "Invalid value: \"C\""}},
         {{"reason", "FieldValueRequired"}, {"field", "data"}, {"message", "Required value"}}}}});
  Error error = ErrorFor("POST", "/api/v1/namespaces/ns/configmaps", 422, invalid);
  EXPECT_EQ(error.code, ErrorCode::kApi);
  EXPECT_EQ(
      error.message,
      "ConfigMap \"C\" is invalid: metadata.name: Invalid value: \"C\"; data: Required value");
}

TEST(ErrorFromResponseTest, NonStatusBodiesAreCappedAndFlattened) {
  std::string body = "<html>\n<body>" + std::string(500, 'x') + "</body></html>";
  Error error = ErrorFromResponse("GET", "/api/v1/nodes?limit=500", HttpResponse{502, body, {}});
  EXPECT_EQ(error.code, ErrorCode::kApi);
  EXPECT_THAT(error.message, HasSubstr("HTTP 502 from GET /api/v1/nodes: <html> <body>xxx"));
  EXPECT_THAT(error.message, Not(HasSubstr("\n")));
  EXPECT_LT(error.message.size(), 260u);
  EXPECT_EQ(ErrorFromResponse("GET", "/x", HttpResponse{500, "", {}}).message,
            "HTTP 500 from GET /x: (empty body)");
}

TEST(ErrorFromResponseTest, NonStatusBodiesAreCutBetweenCharactersAndStayUtf8) {
  std::string accents;
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";
  Error error = ErrorFromResponse("GET", "/x", HttpResponse{502, "a" + accents, {}});
  EXPECT_THAT(error.message, HasSubstr("HTTP 502 from GET /x: a\xc3\xa9"));
  EXPECT_NO_THROW((void)nlohmann::json(error.message).dump()) << error.message;
  error = ErrorFromResponse("GET", "/x", HttpResponse{502, "bad \xff\xfe body\r\n", {}});
  EXPECT_EQ(error.message, "HTTP 502 from GET /x: bad ?? body");
  EXPECT_NO_THROW((void)nlohmann::json(error.message).dump());
}

TEST(ErrorFromResponseTest, OtherStatusesKeepTheServerMessage) {
  Error error = ErrorFor("GET", "/api/v1/nodes", 500,
                         StatusBody(500, "InternalError", "etcdserver: request timed out"));
  EXPECT_EQ(error.code, ErrorCode::kApi);
  EXPECT_EQ(error.message, "etcdserver: request timed out (HTTP 500, GET /api/v1/nodes)");
}

}  // namespace
}  // namespace powerctl::kube
