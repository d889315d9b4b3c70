#pragma once
// An in-memory IPVS table behind the IpvsAdmin interface: List returns it, SetWeights edits
// it. Records every batch of changes; fails the calls it is told to (a failed call applies
// nothing), and can apply only part of the next batch, failed or not (ipvsadm -R stops
// part-way, or one line fails while the exit status says success).

#include "core/lb/ipvs_admin.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::lb {

class FakeIpvsAdmin final : public IpvsAdmin {
 public:
  std::vector<IpvsVirtualServer> table;
  std::vector<std::vector<IpvsWeightChange>> batches;  // every SetWeights call
  int lists = 0;
  // Checked before each call; an error fails it.
  std::function<Status()> fail_list;
  std::function<Status(const std::vector<IpvsWeightChange>&)> fail_set;
  // The next SetWeights applies only this many changes, whatever it returns; then reset.
  std::optional<std::size_t> apply_next_only;

  Result<std::vector<IpvsVirtualServer>> List() override {
    ++lists;
    if (fail_list) {
      if (auto s = fail_list(); !s.ok()) return s.error();
    }
    return table;
  }

  Status SetWeights(const std::vector<IpvsWeightChange>& changes) override {
    batches.push_back(changes);
    Status status = fail_set ? fail_set(changes) : OkStatus();
    std::size_t n = status.ok() ? changes.size() : 0;
    if (apply_next_only) n = *apply_next_only;
    apply_next_only.reset();
    for (std::size_t i = 0; i < n && i < changes.size(); ++i) Apply(changes[i]);
    return status;
  }

  // The weight of a real server, or -1 when it is not there.
  int Weight(const std::string& vip, int port, const std::string& ip, int rport) const {
    for (const auto& vs : table) {
      if (vs.key.address != vip || vs.key.port != port) continue;
      for (const auto& rs : vs.real_servers) {
        if (rs.address == ip && rs.port == rport) return rs.weight;
      }
    }
    return -1;
  }

 private:
  void Apply(const IpvsWeightChange& c) {
    for (auto& vs : table) {
      if (!(vs.key == c.service)) continue;
      for (auto& rs : vs.real_servers) {
        if (rs.address == c.real_server.address && rs.port == c.real_server.port) {
          rs.weight = c.real_server.weight;
        }
      }
    }
  }
};

}  // namespace powerctl::lb
