#pragma once
// The manifest templates as files: the embedded set (templates/, compiled in), a user's
// --templates directory that overrides some of them by file name, and writing the embedded set
// out as a starting point for such a directory.

#include "core/common/result.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::manifests {

// Loads a template by file name: from `dir` when it holds that file, else embedded.
Result<std::string> LoadTemplate(const std::string& name,
                                 const std::optional<std::filesystem::path>& dir);

// kInvalidInput when `dir` is not a directory or holds a file whose name matches no embedded
// template (a misspelt override would otherwise be ignored silently); hidden files are skipped.
Status CheckTemplateOverrides(const std::filesystem::path& dir);

// Writes every embedded template into `dir` (created when missing). Refuses, writing nothing,
// when any of those files exists already (kConflict). Returns the paths written.
Result<std::vector<std::filesystem::path>> ExportTemplates(const std::filesystem::path& dir);

}  // namespace powerctl::manifests
