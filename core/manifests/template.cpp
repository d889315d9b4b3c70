#include "core/manifests/template.h"

#include "core/common/yaml.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace powerctl::manifests {
namespace {

using Json = nlohmann::ordered_json;

// Rendering recurses once per nested section; a bound keeps a pathological
// template from exhausting the stack.
constexpr std::size_t kMaxSectionDepth = 100;

// Nested sections over lists multiply: 32 nested {{#items}} over two items
// is 2^32 passes. Real manifests need a few thousand steps and well under a
// MiB (the API server caps objects near 1.5 MiB), so these only stop runaways.
constexpr std::size_t kMaxRenderSteps = 1'000'000;
constexpr std::size_t kMaxOutputBytes = 64 << 20;

enum class NodeKind { kText, kVariable, kRaw, kSection, kInverted };

struct Node {
  NodeKind kind = NodeKind::kText;
  std::string text;  // literal text, or the tag's name
  int line = 0;      // of the tag, or where the text starts; for errors
  std::vector<Node> children;
};

bool IsBlank(std::string_view s) {
  return s.find_first_not_of(" \t\r") == std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  const std::size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const std::size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

int CountNewlines(std::string_view s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool IsValidName(std::string_view name) {
  if (name == ".") return true;
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  if (name.find("..") != std::string_view::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c == '.' || IsNameChar(c); });
}

class TemplateParser {
 public:
  TemplateParser(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  Result<std::vector<Node>> Parse() {
    std::vector<Node> root;
    std::vector<Node*> open;  // open sections; each lives in its parent's (unchanging) list
    const auto current = [&]() -> std::vector<Node>& {
      return open.empty() ? root : open.back()->children;
    };
    std::string pending;
    int pending_line = 1;
    const auto flush = [&] {
      if (pending.empty()) return;
      current().push_back(Node{NodeKind::kText, std::move(pending), pending_line, {}});
      pending.clear();
    };

    std::size_t pos = 0;
    int line = 1;
    const auto append = [&](std::string_view piece) {
      if (pending.empty()) pending_line = line;
      pending.append(piece);
    };
    while (pos < text_.size()) {
      const std::size_t open_pos = text_.find("{{", pos);
      if (open_pos == std::string_view::npos) {
        append(text_.substr(pos));
        break;
      }
      append(text_.substr(pos, open_pos - pos));
      line += CountNewlines(text_.substr(pos, open_pos - pos));
      const int tag_line = line;

      const bool triple = text_.compare(open_pos, 3, "{{{") == 0;
      const std::string_view closer = triple ? "}}}" : "}}";
      const std::size_t content_start = open_pos + (triple ? 3 : 2);
      const std::size_t close = text_.find(closer, content_start);
      if (close == std::string_view::npos) {
        return ErrorAt(tag_line, "unterminated tag (no closing \"" + std::string(closer) + "\")");
      }
      const std::string_view content = text_.substr(content_start, close - content_start);
      std::size_t tag_end = close + closer.size();
      line += CountNewlines(content);

      char sigil = 0;
      std::string_view name;
      if (triple) {
        sigil = '&';
        name = Trim(content);
      } else {
        const std::string_view body = Trim(content);
        if (!body.empty() && std::string_view("#^/!&>=").find(body[0]) != std::string_view::npos) {
          sigil = body[0];
          name = Trim(body.substr(1));
        } else {
          name = body;
        }
      }
      if (sigil == '>') return ErrorAt(tag_line, "partials ({{>name}}) are not supported");
      if (sigil == '=')
        return ErrorAt(tag_line, "set-delimiter tags ({{=...=}}) are not supported");
      if (sigil != '!' && !IsValidName(name)) {
        return ErrorAt(tag_line, "invalid tag name \"" + std::string(name) +
                                     "\" (use \".\" or dot-separated [A-Za-z0-9_-] parts)");
      }

      // Mustache "standalone" tags: alone on their line apart from
      // whitespace, they take the whole line with them, so a section around
      // YAML lines does not leave blank or mis-indented lines behind.
      if (sigil == '#' || sigil == '^' || sigil == '/' || sigil == '!') {
        std::size_t line_start = 0;
        if (open_pos > 0) {
          const std::size_t nl = text_.rfind('\n', open_pos - 1);
          line_start = nl == std::string_view::npos ? 0 : nl + 1;
        }
        const std::size_t eol = text_.find('\n', tag_end);
        const std::size_t line_end = eol == std::string_view::npos ? text_.size() : eol;
        const std::size_t indent = open_pos - line_start;
        if (IsBlank(text_.substr(line_start, indent)) &&
            IsBlank(text_.substr(tag_end, line_end - tag_end)) && indent <= pending.size()) {
          pending.resize(pending.size() - indent);
          if (eol != std::string_view::npos) ++line;
          tag_end = eol == std::string_view::npos ? text_.size() : eol + 1;
        }
      }
      pos = tag_end;

      switch (sigil) {
        case '!':
          break;
        case '#':
        case '^': {
          flush();
          if (open.size() >= kMaxSectionDepth) {
            return ErrorAt(tag_line, "sections nested more than " +
                                         std::to_string(kMaxSectionDepth) + " deep");
          }
          auto& list = current();
          list.push_back(Node{sigil == '#' ? NodeKind::kSection : NodeKind::kInverted,
                              std::string(name),
                              tag_line,
                              {}});
          open.push_back(&list.back());
          break;
        }
        case '/':
          flush();
          if (open.empty()) {
            return ErrorAt(tag_line, "{{/" + std::string(name) + "}} closes no open section");
          }
          if (open.back()->text != name) {
            return ErrorAt(tag_line, "{{/" + std::string(name) + "}} does not match section \"" +
                                         open.back()->text + "\" opened at line " +
                                         std::to_string(open.back()->line));
          }
          open.pop_back();
          break;
        default:
          flush();
          current().push_back(Node{sigil == '&' ? NodeKind::kRaw : NodeKind::kVariable,
                                   std::string(name),
                                   tag_line,
                                   {}});
      }
    }
    flush();
    if (!open.empty()) {
      return ErrorAt(open.back()->line, "section \"" + open.back()->text + "\" is not closed");
    }
    return root;
  }

 private:
  Error ErrorAt(int line, const std::string& message) const {
    return MakeError(ErrorCode::kInvalidInput,
                     std::string(name_) + ":" + std::to_string(line) + ": " + message);
  }

  std::string_view name_;
  std::string_view text_;
};

bool Truthy(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      return false;
    case Json::value_t::boolean:
      return v.get<bool>();
    case Json::value_t::array:
      return !v.empty();
    case Json::value_t::string:
      return !v.get_ref<const std::string&>().empty();
    default:
      return true;  // objects and numbers (0 included: it is a value, not an absence)
  }
}

class Renderer {
 public:
  Renderer(std::string_view name, const Json& context) : name_(name) { stack_.push_back(&context); }

  Status Render(const std::vector<Node>& nodes) {
    for (const Node& node : nodes) {
      POWERCTL_CHECK_OK(Step(node.line));
      switch (node.kind) {
        case NodeKind::kText:
          out_ += node.text;
          break;
        case NodeKind::kVariable:
        case NodeKind::kRaw: {
          const Json* value = Lookup(node.text);
          if (value == nullptr) {
            return ErrorAt(node.line, "unknown variable \"" + node.text + "\"");
          }
          if (node.kind == NodeKind::kRaw && value->is_string()) {
            out_ += value->get_ref<const std::string&>();
          } else {
            out_ += EmitYamlFlow(*value);
          }
          break;
        }
        case NodeKind::kSection: {
          const Json* value = Lookup(node.text);
          if (value == nullptr || !Truthy(*value)) break;
          if (value->is_array()) {
            for (const Json& item : *value) {
              POWERCTL_CHECK_OK(Step(node.line));
              POWERCTL_CHECK_OK(RenderWith(item, node.children));
            }
          } else {
            POWERCTL_CHECK_OK(RenderWith(*value, node.children));
          }
          break;
        }
        case NodeKind::kInverted: {
          const Json* value = Lookup(node.text);
          if (value == nullptr || !Truthy(*value)) POWERCTL_CHECK_OK(Render(node.children));
          break;
        }
      }
    }
    return OkStatus();
  }

  std::string Take() && { return std::move(out_); }

 private:
  // Charges one unit of work and checks the output so far against the caps.
  Status Step(int line) {
    if (++steps_ > kMaxRenderSteps) {
      return ErrorAt(line, "rendering takes more than " + std::to_string(kMaxRenderSteps) +
                               " steps (nested sections over lists multiply)");
    }
    if (out_.size() > kMaxOutputBytes) {
      return ErrorAt(
          line, "rendered output is larger than " + std::to_string(kMaxOutputBytes >> 20) + " MiB");
    }
    return OkStatus();
  }

  Error ErrorAt(int line, const std::string& message) const {
    return MakeError(ErrorCode::kInvalidInput,
                     std::string(name_) + ":" + std::to_string(line) + ": " + message);
  }

  Status RenderWith(const Json& frame, const std::vector<Node>& nodes) {
    stack_.push_back(&frame);
    Status status = Render(nodes);
    stack_.pop_back();
    return status;
  }

  // Mustache resolution: the first part is looked up innermost-first; once
  // found, the rest must resolve inside it (no falling back to outer frames,
  // which would silently pick an unrelated value).
  const Json* Lookup(std::string_view name) const {
    if (name == ".") return stack_.back();
    const std::size_t dot = name.find('.');
    const std::string first(name.substr(0, dot));
    const Json* value = nullptr;
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
      const Json& frame = **it;
      if (!frame.is_object()) continue;
      const auto found = frame.find(first);
      if (found != frame.end()) {
        value = &*found;
        break;
      }
    }
    std::size_t start = dot;
    while (value != nullptr && start != std::string_view::npos) {
      const std::size_t next = name.find('.', start + 1);
      const std::string part(name.substr(
          start + 1, next == std::string_view::npos ? std::string_view::npos : next - start - 1));
      if (!value->is_object()) return nullptr;
      const auto found = value->find(part);
      value = found == value->end() ? nullptr : &*found;
      start = next;
    }
    return value;
  }

  std::string_view name_;
  std::vector<const Json*> stack_;
  std::string out_;
  std::size_t steps_ = 0;
};

}  // namespace

Result<std::string> RenderTemplate(std::string_view template_name, std::string_view text,
                                   const nlohmann::ordered_json& context) {
  try {
    POWERCTL_TRY(nodes, TemplateParser(template_name, text).Parse());
    Renderer renderer(template_name, context);
    POWERCTL_CHECK_OK(renderer.Render(nodes));
    return std::move(renderer).Take();
  } catch (const std::exception& e) {
    // Only allocation failure can get here; keep the no-throw contract.
    return MakeError(ErrorCode::kInternal, std::string(template_name) + ": " + e.what());
  }
}

}  // namespace powerctl::manifests
