// ParseYamlDocuments: the flow-depth pre-scan, then yaml-cpp's event parser
// feeding JsonBuilder, with every failure mapped to "<source>:<line>:<col>".

#include "core/common/yaml.h"
#include "core/common/yaml_json_builder.h"
#include "core/common/yaml_prescan.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <exception>
#include <new>
#include <sstream>
#include <string>

namespace powerctl {
namespace {

using detail::ConversionError;
using detail::FlowDepthScanner;
using detail::Json;
using detail::JsonBuilder;

std::string Location(std::string_view source, int line0, int col0) {
  std::string out(source);
  if (line0 >= 0) out += ":" + std::to_string(line0 + 1) + ":" + std::to_string(col0 + 1);
  return out;
}

Error InvalidAt(std::string_view source, const YAML::Mark& mark, const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput,
                   Location(source, mark.is_null() ? -1 : mark.line, mark.column) + ": " + message);
}

}  // namespace

Result<std::vector<nlohmann::ordered_json>> ParseYamlDocuments(std::string_view text,
                                                               std::string_view source_name,
                                                               const YamlLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return MakeError(ErrorCode::kInvalidInput,
                     std::string(source_name) + ": input is " + std::to_string(text.size()) +
                         " bytes, more than max_bytes (" + std::to_string(limits.max_bytes) + ")");
  }
  if (const auto deep = FlowDepthScanner(text, limits.max_depth).Run()) {
    return MakeError(ErrorCode::kInvalidInput, Location(source_name, deep->first, deep->second) +
                                                   ": collections nested deeper than max_depth (" +
                                                   std::to_string(limits.max_depth) + ")");
  }
  std::vector<Json> docs;
  JsonBuilder builder(text, limits, &docs);
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const ConversionError& e) {
    return InvalidAt(source_name, e.mark, e.message);
  } catch (const YAML::DeepRecursion& e) {
    // Only reachable with max_depth above yaml-cpp's own recursion limit.
    return InvalidAt(source_name, e.mark, "collections nested deeper than yaml-cpp supports");
  } catch (const YAML::Exception& e) {
    std::string message = e.msg;
    // yaml-cpp reports a missing "]" or "}" where the input ends; the
    // collection that was left open is what the user needs to find.
    if (const auto open = builder.InnermostOpen(); open && message.rfind("end of ", 0) == 0) {
      message += " (the collection starting at " + std::to_string(open->line + 1) + ":" +
                 std::to_string(open->column + 1) + " is not closed)";
    }
    return InvalidAt(source_name, e.mark, message);
  } catch (const std::bad_alloc&) {
    return MakeError(ErrorCode::kInternal, std::string(source_name) + ": out of memory");
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternal, std::string(source_name) + ": " + e.what());
  }
  return docs;
}

}  // namespace powerctl
