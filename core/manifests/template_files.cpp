#include "core/manifests/template_files.h"

#include "core/common/edit_distance.h"
#include "core/manifests/embedded_templates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace powerctl::manifests {

Result<std::string> LoadTemplate(const std::string& name,
                                 const std::optional<std::filesystem::path>& dir) {
  if (dir) {
    std::filesystem::path path = *dir / name;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      std::ifstream in(path, std::ios::binary);
      if (!in) return MakeError(ErrorCode::kIo, "cannot read template " + path.string());
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    }
  }
  for (const EmbeddedTemplate& t : EmbeddedTemplates()) {
    if (t.name == name) return std::string(t.text);
  }
  return MakeError(ErrorCode::kInternal, "no embedded template " + name);
}

Status CheckTemplateOverrides(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("--templates {}: not a directory", dir.string()));
  }
  std::vector<std::string_view> names;
  for (const EmbeddedTemplate& t : EmbeddedTemplates()) names.push_back(t.name);
  std::vector<std::string> unknown;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    const std::string closest = ClosestMatch(name, names, 4);
    unknown.push_back(closest.empty()
                          ? fmt::format("\"{}\"", name)
                          : fmt::format("\"{}\" (did you mean \"{}\"?)", name, closest));
  }
  if (ec) {
    return MakeError(ErrorCode::kIo, fmt::format("--templates {}: {}", dir.string(), ec.message()));
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("--templates {}: {} matches no template; `powerctl generate "
                                 "--export-templates DIR` writes the ones that exist",
                                 dir.string(), fmt::join(unknown, ", ")));
  }
  return OkStatus();
}

Result<std::vector<std::filesystem::path>> ExportTemplates(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const EmbeddedTemplate& t : EmbeddedTemplates()) {
    if (std::filesystem::exists(dir / t.name, ec)) {
      return MakeError(ErrorCode::kConflict,
                       fmt::format("{} exists: not overwriting templates (nothing written)",
                                   (dir / t.name).string()));
    }
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  }
  std::vector<std::filesystem::path> written;
  for (const EmbeddedTemplate& t : EmbeddedTemplates()) {
    std::filesystem::path path = dir / t.name;
    std::ofstream out(path, std::ios::binary);
    out << t.text;
    out.close();
    if (!out) return MakeError(ErrorCode::kIo, "cannot write " + path.string());
    written.push_back(path);
  }
  return written;
}

}  // namespace powerctl::manifests
