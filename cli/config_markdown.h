#pragma once
// docs/configuration.md: every powerctl.yaml key from the schema table (config_schema.cpp),
// with its type, its default as `powerctl init --defaults` writes it, what it accepts and its
// environment variable.

#include <string>

namespace powerctl::cli {

std::string ConfigurationMarkdown();

}  // namespace powerctl::cli
