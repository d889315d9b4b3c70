#pragma once
#include <string_view>
#include <vector>

namespace powerctl::manifests {

struct EmbeddedTemplate {
  std::string_view name;  // file name under templates/
  std::string_view text;
};

// The templates/ directory compiled into the binary (cmake/EmbedTemplates.cmake).
const std::vector<EmbeddedTemplate>& EmbeddedTemplates();

}  // namespace powerctl::manifests
