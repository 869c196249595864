#include "nodes/generation/cited_prompt.h"

#include <algorithm>

#include "graph/placeholders.h"

namespace sluice::generation {

namespace {

bool is_utf8_lead(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_system(const ChatMessage& m) { return m.role == "system" || m.role == "developer"; }

}  // namespace

void check_cited_prompt_options(const CitedPromptOptions& o) {
  check_placeholders("passage_template", o.passage_template, {{"n", ""}, {"doc_id", ""}, {"title", ""}, {"text", ""}},
                     {"n", "text"});
  check_placeholders("question_template", o.question_template, {{"question", ""}}, {"question"});
  check_placeholders("no_passages", o.no_passages, {});
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
                                  std::string_view question, std::size_t last_passage_chars) {
  std::string out;
  const std::size_t n = passages_used(o, passages.size());
  if (n == 0) out += o.no_passages;
  for (std::size_t i = 0; i < n; ++i) {
    const Passage& p = passages[i];
    const std::string number = std::to_string(i + 1);
    std::size_t max_chars = o.max_passage_chars;
    if (i + 1 == n && last_passage_chars > 0) max_chars = max_chars == 0 ? last_passage_chars : std::min(max_chars, last_passage_chars);
    const std::string text = cut_passage(p.text, max_chars);
    const std::string_view title = p.title.empty() ? p.doc_id : p.title;
    fill_placeholders(o.passage_template, {{"n", number}, {"doc_id", p.doc_id}, {"title", title}, {"text", text}}, out);
  }
  fill_placeholders(o.question_template, {{"question", question}}, out);
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
