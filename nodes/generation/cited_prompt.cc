#include "nodes/generation/cited_prompt.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

namespace sluice::generation {
namespace {

struct Placeholder {
  std::string_view name;
  std::string_view value;
};

// Appends `tmpl` to `out` with each {{name}} replaced by its value. Returns an empty string,
// or the problem (unclosed or unknown placeholder) as a sentence.
std::string fill(std::string_view tmpl, std::initializer_list<Placeholder> values, std::string& out) {
  std::size_t pos = 0;
  while (pos < tmpl.size()) {
    const std::size_t open = tmpl.find("{{", pos);
    if (open == std::string_view::npos) break;
    const std::size_t close = tmpl.find("}}", open + 2);
    if (close == std::string_view::npos) return "'{{' at byte " + std::to_string(open) + " is never closed by '}}'";
    const std::string_view name = tmpl.substr(open + 2, close - open - 2);
    const auto it = std::find_if(values.begin(), values.end(), [&](const Placeholder& p) { return p.name == name; });
    if (it == values.end()) {
      std::string known;
      for (const auto& p : values) known += (known.empty() ? "" : ", ") + ("{{" + std::string(p.name) + "}}");
      return "unknown placeholder '{{" + std::string(name) + "}}' (" + (known.empty() ? "none are allowed" : "allowed: " + known) +
             ")";
    }
    out.append(tmpl.substr(pos, open - pos));
    out.append(it->value);
    pos = close + 2;
  }
  out.append(tmpl.substr(pos));
  return {};
}

void check(std::string_view field, std::string_view tmpl, std::initializer_list<Placeholder> values,
           std::initializer_list<std::string_view> required) {
  std::string scratch;
  if (std::string problem = fill(tmpl, values, scratch); !problem.empty()) {
    throw std::invalid_argument(std::string(field) + ": " + problem);
  }
  for (std::string_view name : required) {
    if (tmpl.find("{{" + std::string(name) + "}}") == std::string_view::npos) {
      throw std::invalid_argument(std::string(field) + ": must contain {{" + std::string(name) + "}}");
    }
  }
}

bool is_utf8_lead(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_system(const ChatMessage& m) { return m.role == "system" || m.role == "developer"; }

}  // namespace

void check_cited_prompt_options(const CitedPromptOptions& o) {
  check("passage_template", o.passage_template, {{"n", ""}, {"doc_id", ""}, {"title", ""}, {"text", ""}}, {"n", "text"});
  check("question_template", o.question_template, {{"question", ""}}, {"question"});
  check("no_passages", o.no_passages, {}, {});
}

std::size_t passages_used(const CitedPromptOptions& o, std::size_t available) {
  return std::min(available, o.max_passages);
}

std::string cut_passage(std::string_view text, std::size_t max_chars) {
  if (max_chars == 0) return std::string(text);
  std::size_t chars = 0, half_at = 0, cut = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!is_utf8_lead(text[i])) continue;
    if (chars == max_chars / 2) half_at = i;
    if (chars == max_chars) {
      cut = i;
      break;
    }
    ++chars;
  }
  if (cut == text.size()) return std::string(text);
  std::size_t end = cut;
  if (!is_space(text[cut])) {  // cutting inside a word: end at the last space, if not too early
    const std::size_t space = text.substr(0, cut).find_last_of(" \n\t\r");
    if (space != std::string_view::npos && space >= half_at) end = space;
  }
  while (end > 0 && is_space(text[end - 1])) --end;
  return std::string(text.substr(0, end)) + "...";
}

std::string passages_and_question(const CitedPromptOptions& o, const std::vector<Passage>& passages,
                                  std::string_view question) {
  std::string out;
  const std::size_t n = passages_used(o, passages.size());
  if (n == 0) out += o.no_passages;
  for (std::size_t i = 0; i < n; ++i) {
    const Passage& p = passages[i];
    const std::string number = std::to_string(i + 1);
    const std::string text = cut_passage(p.text, o.max_passage_chars);
    const std::string_view title = p.title.empty() ? p.doc_id : p.title;
    fill(o.passage_template, {{"n", number}, {"doc_id", p.doc_id}, {"title", title}, {"text", text}}, out);
  }
  fill(o.question_template, {{"question", question}}, out);
  return out;
}

std::vector<ChatMessage> cited_conversation(const CitedPromptOptions& o, const RequestInput& input,
                                            std::string user_turn) {
  const bool chat = input.kind == RequestInput::Kind::kChat;
  std::string system = o.system;  // configured preamble first: the byte-stable prefix
  if (chat) {
    for (const auto& m : input.messages) {
      if (!is_system(m) || m.content.empty()) continue;
      if (!system.empty()) system += "\n\n";
      system += m.content;
    }
  }
  std::vector<ChatMessage> out;
  if (!system.empty()) out.push_back({"system", std::move(system)});
  std::size_t last_user = input.messages.size();
  if (chat) {
    for (std::size_t i = 0; i < input.messages.size(); ++i) {
      if (input.messages[i].role == "user") last_user = i;
    }
    for (std::size_t i = 0; i < input.messages.size(); ++i) {
      if (is_system(input.messages[i])) continue;
      if (i == last_user) {
        out.push_back({"user", std::move(user_turn)});
      } else {
        out.push_back(input.messages[i]);
      }
    }
  }
  if (last_user == input.messages.size() || !chat) out.push_back({"user", std::move(user_turn)});
  return out;
}

}  // namespace sluice::generation
