// Chat templates: OpenAI chat messages turned into the prompt text a model was fine-tuned on,
// ending where the assistant's reply begins.
//
//   plain   the messages' contents joined by a blank line ("\n\n"); no markers. For base models
//           (stories260K) and the default when a GGUF carries no tokenizer.chat_template. One
//           user message renders as exactly its content.
//   llama2  Meta's Llama 2 chat: "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]", an
//           assistant turn " {answer} </s>", later turns "<s>[INST] {user} [/INST]". The leading
//           "<s>" is left out: the generator puts BOS first. User and assistant contents are
//           stripped of surrounding white space, as Meta's reference does.
//   chatml  "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
//           "<|im_start|>assistant\n".
//   zephyr  "<|{role}|>\n{content}</s>\n" per message, then "<|assistant|>\n".
//
// Roles: "developer" is OpenAI's newer name for "system" and renders as one; a role other than
// system, user and assistant ("tool") renders as a user turn, except in chatml, which writes
// role names as given. A system message in llama2 goes into the next user turn's <<SYS>> block.
//
// `auto` in a config picks a template from the model's tokenizer.chat_template (Jinja text) by
// its markers, as llama.cpp does without running Jinja; unrecognised or absent means plain.
// Rendering yields a PromptText: the template's markers ("<|im_start|>", "</s>", "[INST]", the
// later turns' "<s>") as marker parts, every message's content and role name as literal parts.
// The tokenizer encodes a marker that is a control token of the model's vocabulary as that
// token and everything else as text, so message content can never inject a control token.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/request.h"
#include "inference/tokenize/prompt_text.h"

namespace sluice::inference {
class GgufFile;
}  // namespace sluice::inference

namespace sluice::generation {

enum class ChatTemplate { kPlain, kLlama2, kChatml, kZephyr };

const char* chat_template_name(ChatTemplate t);

// A configured name: auto, plain, llama2, chatml or zephyr. `auto` resolves through
// detect_chat_template(model_template). Throws std::invalid_argument naming `field` and the
// accepted names for anything else.
ChatTemplate chat_template_from_config(std::string_view name, std::string_view field, std::string_view model_template);

// Recognises a tokenizer.chat_template by its markers: <|im_start|> is chatml, [INST] llama2,
// <|user|> with <|assistant|> zephyr (unless it also has Phi-3's <|end|>); otherwise plain.
ChatTemplate detect_chat_template(std::string_view jinja);

// The file's tokenizer.chat_template metadata; empty when absent. A value that is not a string
// is refused with a ModelError naming the file and key.
std::string_view model_chat_template(const inference::GgufFile& file);

// The messages rendered with `t`, ready for the assistant's reply.
inference::PromptText render_chat(const std::vector<ChatMessage>& messages, ChatTemplate t);

// The prompt a request asks the model to continue: a chat request's messages rendered with
// `t`; a completion's (or retrieval's) prompt as given, all literal: it is the client's text.
inference::PromptText request_prompt(const RequestInput& input, ChatTemplate t);

// A node config's chat template: `name` as chat_template_from_config reads it, where `auto`
// reads the template of the node's model (configured path, else SLUICE_MODEL, relative to
// base_dir) and is `plain` when no model is configured at all (nothing generates then). Throws
// std::invalid_argument naming `field` or `model`.
ChatTemplate chat_template_for(std::string_view name, std::string_view field, const std::string& configured_model,
                               const std::string& base_dir);

}  // namespace sluice::generation
