#pragma once
// This machine's host name (gethostname), for the identities powerctl reports: a Lease holder,
// an lb-agent's node, an Event's reportingInstance.

#include <string>

namespace powerctl {

// "" when the system gives none; callers choose their own fallback.
std::string HostName();

}  // namespace powerctl
