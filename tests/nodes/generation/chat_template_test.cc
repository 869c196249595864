// Chat templates: the exact text each named template renders, detection from a GGUF's
// tokenizer.chat_template, and the configuration errors.
#include "nodes/generation/chat_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "tests/support/error_message.h"
#include "tests/support/test_models.h"

namespace sluice::generation {

using namespace sluice::inference;
namespace {

using ::testing::HasSubstr;

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Again"}};

TEST(ChatTemplate, PlainJoinsContentsWithBlankLines) {
  EXPECT_EQ(render_chat(kConversation, ChatTemplate::kPlain).flat(), "Be brief.\n\nHi\n\nHello!\n\nAgain");
  // A lone user message is exactly its content: what a base model such as stories260K continues.
  EXPECT_EQ(render_chat({{"user", "Once upon a time"}}, ChatTemplate::kPlain).flat(), "Once upon a time");
  EXPECT_EQ(render_chat({{"system", ""}, {"user", "x"}}, ChatTemplate::kPlain).flat(), "x");
}

TEST(ChatTemplate, Llama2PutsTheSystemIntoTheFirstInstruction) {
  EXPECT_EQ(render_chat(kConversation, ChatTemplate::kLlama2).flat(),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Again [/INST]");
  EXPECT_EQ(render_chat({{"user", "  Hi \n"}}, ChatTemplate::kLlama2).flat(), "[INST] Hi [/INST]");
  EXPECT_EQ(render_chat({{"system", "S"}}, ChatTemplate::kLlama2).flat(), "[INST] <<SYS>>\nS\n<</SYS>>\n\n [/INST]");
}

TEST(ChatTemplate, ChatmlMarksEveryTurnAndOpensTheAssistants) {
  EXPECT_EQ(render_chat(kConversation, ChatTemplate::kChatml).flat(),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nAgain<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat({{"developer", "D"}, {"tool", "42"}}, ChatTemplate::kChatml).flat(),
            "<|im_start|>system\nD<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ZephyrEndsTurnsWithEos) {
  EXPECT_EQ(render_chat(kConversation, ChatTemplate::kZephyr).flat(),
            "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n<|user|>\nAgain</s>\n<|assistant|>\n");
  EXPECT_EQ(render_chat({{"developer", "D"}, {"tool", "42"}}, ChatTemplate::kZephyr).flat(),
            "<|system|>\nD</s>\n<|user|>\n42</s>\n<|assistant|>\n");
}

TEST(ChatTemplate, RequestPromptRendersChatsAndKeepsCompletionsVerbatim) {
  RequestInput chat;
  chat.kind = RequestInput::Kind::kChat;
  chat.messages = {{"user", "Hi"}};
  EXPECT_EQ(request_prompt(chat, ChatTemplate::kChatml).flat(), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  RequestInput completion;
  completion.kind = RequestInput::Kind::kCompletion;
  completion.prompt = "[INST] raw";
  EXPECT_EQ(request_prompt(completion, ChatTemplate::kChatml).flat(), "[INST] raw");
}

TEST(ChatTemplate, DetectsTheFamilyFromJinjaMarkers) {
  EXPECT_EQ(detect_chat_template("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
                                 "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"),
            ChatTemplate::kChatml);
  EXPECT_EQ(detect_chat_template("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"), ChatTemplate::kLlama2);
  EXPECT_EQ(detect_chat_template("{{ '<|user|>\n' + message['content'] + eos_token }}{{ '<|assistant|>' }}"),
            ChatTemplate::kZephyr);
  // Phi-3 shares zephyr's role tags but ends turns with <|end|>: not zephyr, so plain.
  EXPECT_EQ(detect_chat_template("{{'<|user|>' + '\n' + message['content'] + '<|end|>'}}{{ '<|assistant|>' }}"),
            ChatTemplate::kPlain);
  EXPECT_EQ(detect_chat_template(""), ChatTemplate::kPlain);
}

TEST(ChatTemplate, ConfigNamesAndAuto) {
  EXPECT_EQ(chat_template_from_config("llama2", "chat_template", "<|im_start|>"), ChatTemplate::kLlama2);
  EXPECT_EQ(chat_template_from_config("auto", "chat_template", "<|im_start|>"), ChatTemplate::kChatml);
  EXPECT_EQ(chat_template_from_config("auto", "chat_template", ""), ChatTemplate::kPlain);
  for (auto t : {ChatTemplate::kPlain, ChatTemplate::kLlama2, ChatTemplate::kChatml, ChatTemplate::kZephyr}) {
    EXPECT_EQ(chat_template_from_config(chat_template_name(t), "f", ""), t);
  }
}

TEST(ChatTemplate, UnknownNameIsAConfigErrorNamingTheField) {
  EXPECT_EQ(inference::testing::invalid_argument_message([] { chat_template_from_config("chatlm", "chat_template", ""); }),
            "chat_template: unknown chat template 'chatlm' (expected auto, plain, llama2, chatml or zephyr); did you "
            "mean 'chatml'?");
  EXPECT_THAT(inference::testing::invalid_argument_message([] { chat_template_from_config("", "chat_template", ""); }),
              ::testing::StartsWith("chat_template: unknown chat template ''"));
}

TEST(ChatTemplate, ReadsTheModelFilesTemplate) {
  auto writer = inference::testing::tiny_llama_writer();
  writer.add_string("tokenizer.chat_template", "{{ '<|im_start|>' }}");
  const auto bytes = writer.serialize();
  const auto file = GgufFile::parse("chatml.gguf", bytes.data(), bytes.size());
  EXPECT_EQ(model_chat_template(*file), "{{ '<|im_start|>' }}");

  const auto plain_bytes = inference::testing::tiny_llama_writer().serialize();
  EXPECT_EQ(model_chat_template(*GgufFile::parse("plain.gguf", plain_bytes.data(), plain_bytes.size())), "");

  auto wrong = inference::testing::tiny_llama_writer();
  wrong.add_u32("tokenizer.chat_template", 7);
  const auto wrong_bytes = wrong.serialize();
  const auto wrong_file = GgufFile::parse("wrong.gguf", wrong_bytes.data(), wrong_bytes.size());
  try {
    model_chat_template(*wrong_file);
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("wrong.gguf"));
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.chat_template"));
  }
}

TEST(ChatTemplate, Stories260KHasNoTemplateSoAutoIsPlain) {
  const std::string path = inference::testing::shared_model("stories260K.gguf");
  SLUICE_REQUIRE_SHARED(path);
  const auto file = GgufFile::open(path);
  EXPECT_EQ(chat_template_from_config("auto", "chat_template", model_chat_template(*file)), ChatTemplate::kPlain);
}

}  // namespace
}  // namespace sluice::generation
