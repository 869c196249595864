#include "nodes/generation/chat_template.h"

#include <cctype>
#include <stdexcept>

#include "graph/units.h"
#include "inference/gguf/gguf_file.h"
#include "inference/model_error.h"
#include "nodes/generation/model_path.h"

namespace sluice::generation {

using namespace sluice::inference;  // the model runtime these nodes drive
namespace {

enum class Role { kSystem, kUser, kAssistant };

Role role_of(const ChatMessage& m) {
  if (m.role == "system" || m.role == "developer") return Role::kSystem;
  if (m.role == "assistant") return Role::kAssistant;
  return Role::kUser;  // "user", and "tool" results, which the model reads as input
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Content (a message, a role name) is literal text; markup goes in as markers, which the
// tokenizer turns into control tokens where the vocabulary has them (prompt_text.h).
PromptText render_plain(const std::vector<ChatMessage>& messages) {
  PromptText out;
  bool first = true;
  for (const auto& m : messages) {
    if (m.content.empty()) continue;
    if (!first) out.append_literal("\n\n");
    first = false;
    out.append_literal(m.content);
  }
  return out;
}

PromptText render_llama2(const std::vector<ChatMessage>& messages) {
  PromptText out;
  std::string system;  // waits for the next user turn's <<SYS>> block
  bool first_turn = true;
  auto open_turn = [&] {
    if (!first_turn) out.append_marker("<s>");  // the first <s> is the generator's BOS
    out.append_marker("[INST]").append_literal(" ");
    first_turn = false;
    if (!system.empty()) {
      out.append_marker("<<SYS>>").append_literal("\n" + system + "\n").append_marker("<</SYS>>").append_literal("\n\n");
      system.clear();
    }
  };
  for (const auto& m : messages) {
    switch (role_of(m)) {
      case Role::kSystem:
        if (!system.empty() && !m.content.empty()) system += "\n\n";
        system += m.content;
        break;
      case Role::kUser:
        open_turn();
        out.append_literal(strip(m.content)).append_literal(" ").append_marker("[/INST]");
        break;
      case Role::kAssistant:
        out.append_literal(" ").append_literal(strip(m.content)).append_literal(" ").append_marker("</s>");
        break;
    }
  }
  if (!system.empty()) {  // a system message with no user turn after it
    open_turn();
    out.append_literal(" ").append_marker("[/INST]");
  }
  return out;
}

PromptText render_chatml(const std::vector<ChatMessage>& messages) {
  PromptText out;
  for (const auto& m : messages) {
    out.append_marker("<|im_start|>");
    out.append_literal(m.role == "developer" ? "system" : m.role);
    out.append_literal("\n").append_literal(m.content).append_marker("<|im_end|>").append_literal("\n");
  }
  out.append_marker("<|im_start|>").append_literal("assistant\n");
  return out;
}

PromptText render_zephyr(const std::vector<ChatMessage>& messages) {
  static constexpr const char* kRoleTag[] = {"<|system|>", "<|user|>", "<|assistant|>"};
  PromptText out;
  for (const auto& m : messages) {
    out.append_marker(kRoleTag[static_cast<int>(role_of(m))]).append_literal("\n");
    out.append_literal(m.content).append_marker("</s>").append_literal("\n");
  }
  out.append_marker("<|assistant|>").append_literal("\n");
  return out;
}

}  // namespace

const char* chat_template_name(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kPlain: return "plain";
    case ChatTemplate::kLlama2: return "llama2";
    case ChatTemplate::kChatml: return "chatml";
    case ChatTemplate::kZephyr: return "zephyr";
  }
  return "plain";
}

ChatTemplate chat_template_from_config(std::string_view name, std::string_view field, std::string_view model_template) {
  if (name == "auto") return detect_chat_template(model_template);
  for (ChatTemplate t : {ChatTemplate::kPlain, ChatTemplate::kLlama2, ChatTemplate::kChatml, ChatTemplate::kZephyr}) {
    if (name == chat_template_name(t)) return t;
  }
  std::string message = std::string(field) + ": unknown chat template '" + std::string(name) +
                        "' (expected auto, plain, llama2, chatml or zephyr)";
  const std::string guess = did_you_mean(name, {"auto", "plain", "llama2", "chatml", "zephyr"});
  if (!guess.empty()) message += "; did you mean '" + guess + "'?";
  throw std::invalid_argument(message);
}

ChatTemplate detect_chat_template(std::string_view jinja) {
  auto has = [&](std::string_view marker) { return jinja.find(marker) != std::string_view::npos; };
  if (has("<|im_start|>")) return ChatTemplate::kChatml;
  if (has("[INST]")) return ChatTemplate::kLlama2;
  if (has("<|user|>") && has("<|assistant|>") && !has("<|end|>")) return ChatTemplate::kZephyr;
  return ChatTemplate::kPlain;
}

std::string_view model_chat_template(const GgufFile& file) {
  return file.find_string("tokenizer.chat_template").value_or(std::string_view());
}

PromptText render_chat(const std::vector<ChatMessage>& messages, ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kPlain: return render_plain(messages);
    case ChatTemplate::kLlama2: return render_llama2(messages);
    case ChatTemplate::kChatml: return render_chatml(messages);
    case ChatTemplate::kZephyr: return render_zephyr(messages);
  }
  return render_plain(messages);
}

PromptText request_prompt(const RequestInput& input, ChatTemplate t) {
  return input.kind == RequestInput::Kind::kChat ? render_chat(input.messages, t) : PromptText(input.prompt);
}

ChatTemplate chat_template_for(std::string_view name, std::string_view field, const std::string& configured_model,
                               const std::string& base_dir) {
  std::string model_template;
  if (name == "auto") {
    std::string path;
    try {
      path = model_path_from(configured_model, base_dir);
    } catch (const std::invalid_argument&) {
      return ChatTemplate::kPlain;  // no model anywhere: nothing to read a template from
    }
    try {
      model_template = std::string(model_chat_template(*GgufFile::open(path)));
    } catch (const ModelError& e) {
      throw std::invalid_argument(std::string("model: ") + e.what());
    }
  }
  return chat_template_from_config(name, field, model_template);
}

}  // namespace sluice::generation
