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
//
// `kubectl apply -f DIR` applies whatever is there, so files powerctl wrote before and would not
// write now are removed: a written component's twin in the other format, the scheduler's file
// under the other naming (in or out of cluster), and, when `every_component` (`generate all`),
// the files of components `all` no longer renders (the model once the predictor needs no model
// server). `lb` is never removed (`all` never renders it). Only files with powerctl's names and
// powerctl's content (its managed-by label, or a KubeSchedulerConfiguration) are touched.
//
// In the cluster's layout it also writes `kustomization.yaml` listing every manifest file of
// powerctl's in DIR (what this run wrote and what earlier runs left, such as `lb`), so Argo CD,
// Flux and `kubectl apply -k DIR` take the folder as it is. A kustomization.yaml of the user's
// (one without powerctl's header) is left alone and `kustomization_skipped` says why.
struct ManifestFiles {
  std::vector<std::filesystem::path> written;
  std::vector<std::filesystem::path> removed;
  std::string kustomization_skipped;  // "" when written (it is then the last of `written`)
};
Result<ManifestFiles> WriteManifestFiles(const std::filesystem::path& dir,
                                         const GenerateResult& result, ManifestFormat format,
                                         bool out_of_cluster, bool every_component);

// Writes `content` to `path` atomically (temp file + rename) with `mode` from creation on.
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& content,
                           unsigned mode);

}  // namespace powerctl::manifests
