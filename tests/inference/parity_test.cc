// The reference-parity test: greedy decoding of stories260K from BOS for 256 positions,
// stopping at BOS, must reproduce llama2.c's output byte for byte.
#include <gtest/gtest.h>

#include <filesystem>

#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "tests/support/read_file.h"

namespace sluice::inference {
namespace {

std::string shared_path(const char* rel) { return std::string(SLUICE_SHARED_DIR) + "/" + rel; }

TEST(Parity, Stories260KGreedyMatchesReferenceByteForByte) {
  const std::string model_path = shared_path("models/stories260K.gguf");
  const std::string ref_path = shared_path("models/stories260K.greedy-256.txt");
  if (!std::filesystem::exists(model_path) || !std::filesystem::exists(ref_path))
    GTEST_SKIP() << "needs " << model_path << " and " << ref_path << " (../shared)";
  const auto model = LlamaModel::load(model_path);
  GeneratorOptions opts;
  opts.context = 256;  // the reference ran 256 positions
  Generator gen(*model, opts);
  GenerationRequest req;
  req.sampling.temperature = 0;  // greedy
  req.max_tokens = 256;
  std::string streamed;
  req.on_text = [&](std::string_view s) { streamed += s; };
  const GenerationResult res = gen.generate(req);
  EXPECT_EQ(streamed, res.text);
  // llama2.c ends its output with a newline after the loop.
  EXPECT_EQ(res.text + "\n", sluice::testing::read_file(ref_path));
  EXPECT_EQ(res.prompt_tokens, 1);
}

}  // namespace
}  // namespace sluice::inference
