// StoriesModelTest: a GoogleTest fixture for tests on the real stories260K model of ../shared,
// loaded once per process (skipped, saying why, when ../shared is absent), and what a prompt
// generates alone (the single-stream Generator), the reference every engine test compares with.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "tests/support/test_models.h"

namespace sluice::inference::testing {

struct StoriesModelTest : ::testing::Test {
  static inline std::unique_ptr<LlamaModel> model;
  static void SetUpTestSuite() {
    const std::string path = shared_model("stories260K.gguf");
    if (!model && std::filesystem::exists(path)) model = LlamaModel::load(path);
  }
  void SetUp() override {
    if (!model) GTEST_SKIP() << "needs " << shared_model("stories260K.gguf") << " (../shared)";
  }
  static SamplingParams greedy() {
    SamplingParams s;
    s.temperature = 0;
    return s;
  }
  // What `prompt` generates alone.
  static std::string alone(const std::string& prompt, int max_tokens, SamplingParams sampling = greedy()) {
    Generator gen(*model, GeneratorOptions{});
    GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.sampling = sampling;
    return gen.generate(r).text;
  }
};

}  // namespace sluice::inference::testing
