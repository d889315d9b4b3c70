#include "core/common/host_name.h"

#include <unistd.h>

namespace powerctl {

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

}  // namespace powerctl
