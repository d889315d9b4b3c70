#pragma once
#include <string>

namespace powerctl {

// What `powerctl version` prints; filled in at configure time (cmake/Version.cmake).
struct BuildInfo {
  std::string version;
  std::string git_commit;
  std::string build_date;
};

const BuildInfo& GetBuildInfo();

}  // namespace powerctl
