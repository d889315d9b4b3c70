#pragma once
// Internal to the YAML reader (core/common/yaml_*.cpp): the yaml-cpp event
// handler that converts a YAML stream into JSON values, enforcing YamlLimits.

#include "core/common/yaml.h"
#include "core/common/yaml_internal.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace powerctl::detail {

// Thrown by JsonBuilder; ParseYamlDocuments reports it at `mark`.
struct ConversionError {
  YAML::Mark mark;
  std::string message;
};

// Event handler building JSON: one value per non-empty document, appended to
// `docs`, with limits, duplicate keys and aliases checked as events arrive.
class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(std::string_view text, const YamlLimits& limits, std::vector<Json>* docs);

  // The innermost open collection, for "unclosed" syntax errors.
  std::optional<YAML::Mark> InnermostOpen() const {
    if (stack_.empty()) return std::nullopt;
    return stack_.back().mark;
  }

  void OnDocumentStart(const YAML::Mark& mark) override;
  void OnDocumentEnd() override;
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override;
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override;
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override;

  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    Open(mark, anchor, /*is_map=*/false);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    Open(mark, anchor, /*is_map=*/true);
  }
  void OnMapEnd() override { Close(); }

  void OnAnchor(const YAML::Mark& /*mark*/, const std::string& name) override {
    pending_anchor_name_ = name;
  }

 private:
  struct Frame {
    Json value;
    bool is_map = false;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    std::size_t first_node = 0;
    std::size_t first_byte = 0;
    int child_height = 0;
    bool has_key = false;
    std::string key;
    std::unordered_map<std::string, int> key_lines;  // for duplicate detection
  };

  struct Anchored {
    Json value;
    std::size_t nodes = 0;
    std::size_t bytes = 0;  // of scalar text
    int height = 0;         // 0 for scalars, else 1 + deepest child
    bool scalar = false;
    std::string key_text;  // the scalar's text, for aliases used as keys
  };

  int Depth() const { return static_cast<int>(stack_.size()); }

  [[noreturn]] void DepthError(const YAML::Mark& mark) const;

  // Aliases expand as they are converted, so both counts include every use:
  // nodes stop "billion laughs" trees, bytes stop one long string aliased
  // thousands of times (few nodes, gigabytes of text).
  void Count(const YAML::Mark& mark, std::size_t nodes, std::size_t bytes);

  void RememberAnchorName(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchor_names_[anchor] = pending_anchor_name_;
  }

  Json Resolve(const YAML::Mark& mark, const std::string& tag, const std::string& value) const;

  // yaml-cpp 0.7 accepts a quoted scalar that is never closed and makes the
  // rest of the stream its text, so `image: "nginx:1.25` silently swallows
  // every line after it. The mark says exactly where the scalar starts.
  void CheckQuoteClosed(const YAML::Mark& mark) const;

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map);
  void Close();
  void Complete(const YAML::Mark& mark, YAML::anchor_t anchor, Json value,
                const std::string& key_text, std::size_t bytes);

  // `key_text` is the node's text when it is a scalar, else null.
  void AddToParent(const YAML::Mark& mark, Json value, int height, const std::string* key_text);

  std::string_view text_;
  std::size_t pos_offset_ = 0;
  bool check_quotes_ = true;  // whether marks map to offsets in text_
  int last_document_pos_ = -1;
  const YamlLimits& limits_;
  std::vector<Json>* docs_;
  std::vector<Frame> stack_;
  Json root_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::unordered_map<YAML::anchor_t, std::string> anchor_names_;
  std::string pending_anchor_name_;
  // Over the whole stream: the memory bound is per call.
  std::size_t node_count_ = 0;
  std::size_t text_bytes_ = 0;
};

}  // namespace powerctl::detail
