// Converts yaml-cpp parser events into JSON (see JsonBuilder in
// yaml_json_builder.h).

#include "core/common/yaml_json_builder.h"

#include <algorithm>
#include <utility>

namespace powerctl::detail {
namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

}  // namespace

JsonBuilder::JsonBuilder(std::string_view text, const YamlLimits& limits, std::vector<Json>* docs)
    : text_(text), limits_(limits), docs_(docs) {
  // yaml-cpp's Mark::pos is a byte offset after any UTF-8 BOM. It re-encodes
  // UTF-16/32 input, and then offsets do not map back to `text`.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    pos_offset_ = 3;
  } else if (text.size() >= 2 &&
             (text[0] == '\0' || text[1] == '\0' || text.substr(0, 2) == "\xFE\xFF" ||
              text.substr(0, 2) == "\xFF\xFE")) {
    check_quotes_ = false;
  }
}

void JsonBuilder::OnDocumentStart(const YAML::Mark& mark) {
  // yaml-cpp 0.7 never consumes a token that cannot start a node (a stray
  // "," or a "]" after a complete node, e.g. the comma-first typo
  // "- a\n, b\n- c") and reports empty documents at it forever. A real
  // document consumes at least one token, so a repeated start means that.
  if (mark.pos == last_document_pos_) {
    const std::size_t i = static_cast<std::size_t>(mark.pos) + pos_offset_;
    const bool known = check_quotes_ && i < text_.size();
    throw ConversionError{
        mark, known ? "unexpected '" + std::string(1, text_[i]) + "'" : "unexpected token"};
  }
  last_document_pos_ = mark.pos;
  // Anchors are per document in YAML, and yaml-cpp restarts their ids.
  anchors_.clear();
  anchor_names_.clear();
  stack_.clear();
  root_ = Json();
}

void JsonBuilder::OnDocumentEnd() {
  if (!root_.is_null()) docs_->push_back(std::move(root_));
  root_ = Json();
}

void JsonBuilder::OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) {
  static const std::string kNullKey = "null";
  Count(mark, 1, 0);
  Complete(mark, anchor, Json(nullptr), kNullKey, 0);
}

void JsonBuilder::OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                           const std::string& value) {
  Count(mark, 1, value.size());
  // yaml-cpp passes raw bytes through; a string that is not UTF-8 would
  // make every later nlohmann::json::dump() of the manifest throw.
  if (!IsValidUtf8(value)) throw ConversionError{mark, "text is not valid UTF-8"};
  if (tag == "!") CheckQuoteClosed(mark);
  Complete(mark, anchor, Resolve(mark, tag, value), value, value.size());
}

void JsonBuilder::OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) {
  const auto it = anchors_.find(anchor);
  if (it == anchors_.end()) {
    // yaml-cpp knows the anchor, so we are still inside the node it names.
    throw ConversionError{mark,
                          "alias *" + anchor_names_[anchor] + " refers to a node containing it"};
  }
  const Anchored& anchored = it->second;
  Count(mark, anchored.nodes, anchored.bytes);
  if (Depth() + anchored.height > limits_.max_depth) DepthError(mark);
  AddToParent(mark, Json(anchored.value), anchored.height,
              anchored.scalar ? &anchored.key_text : nullptr);
}

void JsonBuilder::DepthError(const YAML::Mark& mark) const {
  throw ConversionError{
      mark, "collections nested deeper than max_depth (" + std::to_string(limits_.max_depth) + ")"};
}

void JsonBuilder::Count(const YAML::Mark& mark, std::size_t nodes, std::size_t bytes) {
  node_count_ += nodes;
  if (node_count_ > limits_.max_nodes) {
    throw ConversionError{mark, "more than max_nodes (" + std::to_string(limits_.max_nodes) +
                                    ") nodes; aliases count each time they are used"};
  }
  text_bytes_ += bytes;
  if (text_bytes_ > limits_.max_bytes) {
    throw ConversionError{mark, "more than max_bytes (" + std::to_string(limits_.max_bytes) +
                                    ") bytes of text; aliases count each time they are used"};
  }
}

Json JsonBuilder::Resolve(const YAML::Mark& mark, const std::string& tag,
                          const std::string& value) const {
  if (tag == "?") return ResolvePlain(value);
  if (tag.substr(0, kTagPrefix.size()) != kTagPrefix) return Json(value);  // "!" or custom
  const std::string_view type = std::string_view(tag).substr(kTagPrefix.size());
  const Json resolved = ResolvePlain(value);
  const auto mismatch = [&]() -> ConversionError {
    return ConversionError{mark, "!!" + std::string(type) + " value " + QuoteString(value) +
                                     " is not a valid " + std::string(type)};
  };
  if (type == "null") {
    if (!resolved.is_null()) throw mismatch();
    return resolved;
  }
  if (type == "bool") {
    if (!resolved.is_boolean()) throw mismatch();
    return resolved;
  }
  if (type == "int") {
    if (!resolved.is_number_integer()) throw mismatch();
    return resolved;
  }
  if (type == "float") {
    if (!resolved.is_number()) throw mismatch();
    return Json(resolved.get<double>());
  }
  return Json(value);  // !!str, !!binary, !!timestamp, ...: keep the text
}

void JsonBuilder::CheckQuoteClosed(const YAML::Mark& mark) const {
  if (!check_quotes_ || mark.pos < 0) return;
  std::size_t i = static_cast<std::size_t>(mark.pos) + pos_offset_;
  if (i >= text_.size()) return;
  const char quote = text_[i];
  if (quote != '"' && quote != '\'') return;  // a block scalar, or properties first
  for (++i; i < text_.size(); ++i) {
    if (quote == '"' && text_[i] == '\\') {
      ++i;
    } else if (text_[i] == quote) {
      if (quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') {
        ++i;  // '' is an escaped quote
      } else {
        return;
      }
    }
  }
  throw ConversionError{mark, "quoted string is not closed"};
}

void JsonBuilder::Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
  if (!stack_.empty() && stack_.back().is_map && !stack_.back().has_key) {
    throw ConversionError{mark, "mapping keys must be scalars"};
  }
  Count(mark, 1, 0);
  if (Depth() + 1 > limits_.max_depth) DepthError(mark);
  RememberAnchorName(anchor);
  Frame frame;
  frame.value = is_map ? Json::object() : Json::array();
  frame.is_map = is_map;
  frame.mark = mark;
  frame.anchor = anchor;
  frame.first_node = node_count_ - 1;
  frame.first_byte = text_bytes_;
  stack_.push_back(std::move(frame));
}

void JsonBuilder::Close() {
  Frame frame = std::move(stack_.back());
  stack_.pop_back();
  const int height = 1 + frame.child_height;
  if (frame.anchor != YAML::NullAnchor) {
    anchors_[frame.anchor] = Anchored{
        frame.value, node_count_ - frame.first_node, text_bytes_ - frame.first_byte, height, false,
        {}};
  }
  AddToParent(frame.mark, std::move(frame.value), height, nullptr);
}

void JsonBuilder::Complete(const YAML::Mark& mark, YAML::anchor_t anchor, Json value,
                           const std::string& key_text, std::size_t bytes) {
  if (anchor != YAML::NullAnchor) {
    RememberAnchorName(anchor);
    anchors_[anchor] = Anchored{value, 1, bytes, 0, true, key_text};
  }
  AddToParent(mark, std::move(value), 0, &key_text);
}

void JsonBuilder::AddToParent(const YAML::Mark& mark, Json value, int height,
                              const std::string* key_text) {
  if (stack_.empty()) {
    root_ = std::move(value);
    return;
  }
  Frame& parent = stack_.back();
  parent.child_height = std::max(parent.child_height, height);
  if (!parent.is_map) {
    parent.value.get_ref<Json::array_t&>().push_back(std::move(value));
    return;
  }
  if (!parent.has_key) {
    if (key_text == nullptr) throw ConversionError{mark, "mapping keys must be scalars"};
    const auto [it, inserted] = parent.key_lines.emplace(*key_text, mark.line + 1);
    if (!inserted) {
      throw ConversionError{mark, "duplicate key " + QuoteString(*key_text) +
                                      " (first defined at line " + std::to_string(it->second) +
                                      ")"};
    }
    parent.key = *key_text;
    parent.has_key = true;
    return;
  }
  // ordered_map::emplace searches linearly for the key, which makes large
  // mappings quadratic; key_lines already rules out duplicates, so append.
  parent.value.get_ref<Json::object_t&>().emplace_back(std::move(parent.key), std::move(value));
  parent.has_key = false;
}

}  // namespace powerctl::detail
