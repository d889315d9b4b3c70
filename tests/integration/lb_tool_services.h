#pragma once
// What tests/integration/lb_nft_tool and lb_ipvs_tool share: the SERVICES.json they read and how
// they report a failure.
//
// SERVICES.json: [{"namespace", "name", "cluster_ip", "port", "protocol",
//                  "endpoints": [{"ip", "port", "weight"}]}]

#include "core/lb/nft_ruleset.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lb_tool {

// Throws (std::runtime_error, nlohmann's exceptions) on a missing file or a malformed one.
inline std::vector<powerctl::lb::BalancedService> LoadServices(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const auto doc = nlohmann::json::parse(in);
  std::vector<powerctl::lb::BalancedService> out;
  for (const auto& j : doc) {
    powerctl::lb::BalancedService s;
    s.namespace_name = j.at("namespace").get<std::string>();
    s.name = j.at("name").get<std::string>();
    s.cluster_ip = j.at("cluster_ip").get<std::string>();
    s.port = j.at("port").get<int>();
    s.protocol = j.value("protocol", "TCP");
    for (const auto& e : j.at("endpoints")) {
      s.endpoints.push_back(
          {e.at("ip").get<std::string>(), e.at("port").get<int>(), e.at("weight").get<int>()});
    }
    out.push_back(std::move(s));
  }
  return out;
}

// "error: MESSAGE" on stderr; returns the tools' failure exit code, 1.
inline int Fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

}  // namespace lb_tool
