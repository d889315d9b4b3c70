#pragma once
// "Can I?" checks (SelfSubjectAccessReview), so a mutating command can refuse before it
// changes anything when the user lacks a permission it will need.

#include "core/common/result.h"
#include "core/kube/client.h"

#include <string>
#include <vector>

namespace powerctl::setup {

struct AccessCheck {
  std::string verb;  // get, list, create, patch, delete, ...
  std::string group;
  std::string resource;
  std::string namespace_;  // "" = cluster scope
  std::string name;        // "" = any
};

// The checks that fail, each as `verb resource[.group] [in namespace NS]` followed by the
// denied object names in parentheses when the checks named objects; an empty list means
// everything is allowed. Each distinct check (names included) is asked once.
Result<std::vector<std::string>> MissingPermissions(kube::Client& client,
                                                    const std::vector<AccessCheck>& checks);

// One error listing the missing permissions and the RBAC rules that would grant them.
Error PermissionError(const std::string& what, const std::vector<std::string>& missing);

}  // namespace powerctl::setup
