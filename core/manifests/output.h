#pragma once
// Serialises generated manifests to text and to an output directory.

#include "core/common/result.h"
#include "core/manifests/generate.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace powerctl::manifests {

enum class ManifestFormat { kYaml, kJson };

// YAML: a multi-document stream. JSON: one object, or a v1 List of several (as kubectl prints).
std::string FormatManifests(const std::vector<nlohmann::ordered_json>& objects,
                            ManifestFormat format);

// One file per component, prefixed so `kubectl apply -f DIR` applies them in dependency
// order ("00-namespace.yaml", ...). Files holding keys are created 0600, others 0644.
// Returns the paths written.
Result<std::vector<std::filesystem::path>> WriteManifestFiles(const std::filesystem::path& dir,
                                                              const GenerateResult& result,
                                                              ManifestFormat format,
                                                              bool out_of_cluster);

// Writes `content` to `path` atomically (temp file + rename) with `mode` from creation on.
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& content,
                           unsigned mode);

}  // namespace powerctl::manifests
