// Fuzzes ParseIpvsSave, the parser of `ipvsadm -S -n` output (kernel state that any program
// with CAP_NET_ADMIN on the node may have written) for the lb-agent's ipvs mode:
//  * the limits hold;
//  * an accepted table re-renders to the save format and re-parses to the same table, so
//    nothing is lost or invented (addresses canonical, forwarding and options kept);
//  * the `-e` edit lines rendered for every real server are one line each, with no control
//    characters, so nothing read can smuggle another ipvsadm command into a restore batch;
//  * a rejected input names a line ("line N: ...").
//
// Run: tests/fuzz/run.sh ipvs_save_fuzzer

#include "core/lb/ipvs_rules.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

using powerctl::lb::IpvsHostPort;
using powerctl::lb::IpvsParseLimits;
using powerctl::lb::IpvsServiceSpec;
using powerctl::lb::IpvsVirtualServer;
using powerctl::lb::IpvsWeightChange;
using powerctl::lb::ParseIpvsSave;
using powerctl::lb::RenderIpvsWeightEdits;

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "ipvs_save_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

// The save format as ipvsadm prints it (only the fields the parser keeps).
std::string Render(const std::vector<IpvsVirtualServer>& table) {
  std::string out;
  for (const IpvsVirtualServer& vs : table) {
    out += "-A " + IpvsServiceSpec(vs.key) + " -s " + vs.scheduler + "\n";
    for (const auto& rs : vs.real_servers) {
      out += "-a " + IpvsServiceSpec(vs.key) + " -r " + IpvsHostPort(rs.address, rs.port) + " -" +
             rs.forward + " -w " + std::to_string(rs.weight);
      for (const std::string& option : rs.options) out += " " + option;
      out += "\n";
    }
  }
  return out;
}

bool Same(const std::vector<IpvsVirtualServer>& a, const std::vector<IpvsVirtualServer>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i].key == b[i].key) || a[i].scheduler != b[i].scheduler ||
        a[i].real_servers.size() != b[i].real_servers.size()) {
      return false;
    }
    for (std::size_t j = 0; j < a[i].real_servers.size(); ++j) {
      const auto& x = a[i].real_servers[j];
      const auto& y = b[i].real_servers[j];
      if (x.address != y.address || x.port != y.port || x.forward != y.forward ||
          x.weight != y.weight || x.options != y.options) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  IpvsParseLimits limits;
  limits.max_virtual_servers = 32;
  limits.max_real_servers = 64;
  limits.max_line_bytes = 256;
  auto parsed = ParseIpvsSave(text, limits);
  if (!parsed.ok()) {
    if (parsed.error().message.rfind("line ", 0) != 0) {
      Fail("an error does not name its line", text, parsed.error().message);
    }
    return 0;
  }
  std::size_t real_servers = 0;
  std::vector<IpvsWeightChange> changes;
  for (const IpvsVirtualServer& vs : *parsed) {
    real_servers += vs.real_servers.size();
    for (const auto& rs : vs.real_servers) changes.push_back({vs.key, rs});
  }
  if (parsed->size() > limits.max_virtual_servers || real_servers > limits.max_real_servers) {
    Fail("a limit was exceeded", text, "");
  }
  const std::string rendered = Render(*parsed);
  auto again = ParseIpvsSave(rendered);
  if (!again.ok()) Fail("a rendered table does not parse", text, again.error().message);
  if (!Same(*parsed, *again)) Fail("the table changed in the round trip", text, rendered);

  const std::string edits = RenderIpvsWeightEdits(changes);
  std::size_t lines = 0;
  for (char c : edits) {
    if (c == '\n') ++lines;
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') Fail("control character", text, edits);
  }
  if (lines != changes.size()) Fail("an edit is not exactly one line", text, edits);
  return 0;
}
