// GGUF reader: good files parse; truncated, corrupt and hostile files are refused with a
// ModelError naming the file, the field and the problem (ASan runs this too: no OOB reads).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "inference/gguf/gguf_file.h"
#include "inference/llama/llama_model.h"
#include "tests/support/test_models.h"

namespace sluice::inference {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::parse("t.gguf", bytes.data(), bytes.size());
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

template <class T>
void poke(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

TEST(GgufFile, ParsesWrittenFile) {
  const auto bytes = testing::tiny_llama_writer().serialize();
  const auto f = GgufFile::parse("t.gguf", bytes.data(), bytes.size());
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_uint("llama.embedding_length"), 32u);
  const GgufTensor* t = f->find_tensor("blk.1.ffn_down.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(t->bytes, 64u * 32u * 4u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 32, reinterpret_cast<uintptr_t>(bytes.data()) % 32);
  EXPECT_THAT(error_of({}), HasSubstr("t.gguf: magic"));
}

TEST(GgufFile, EveryTruncationIsRefusedCleanly) {
  const auto bytes = testing::tiny_llama_writer().serialize();
  // Every prefix up to the end of the last tensor's data (the final padding is optional).
  for (size_t n = 0; n + 32 < bytes.size(); n += (n < 20000 ? 1 : 97)) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(n));
    const std::string err = error_of(cut);
    ASSERT_THAT(err, HasSubstr("t.gguf: ")) << "prefix of " << n << " bytes was accepted";
  }
}

TEST(GgufFile, HostileCountsAndSizesAreRefused) {
  const auto good = testing::tiny_llama_writer().serialize();
  auto b = good;
  poke<uint32_t>(b, 4, 1);
  EXPECT_THAT(error_of(b), HasSubstr("version: GGUF version 1 is not supported"));
  b = good;
  poke<uint64_t>(b, 8, ~0ull);
  EXPECT_THAT(error_of(b), HasSubstr("tensor_count"));
  b = good;
  poke<uint64_t>(b, 16, uint64_t(1) << 40);
  EXPECT_THAT(error_of(b), HasSubstr("metadata_kv_count"));
  b = good;
  poke<uint64_t>(b, 24, ~0ull - 3);  // first key's string length
  EXPECT_THAT(error_of(b), HasSubstr("metadata key #0"));
}

// Builds a file with one tensor whose header fields are then corrupted.
std::vector<uint8_t> one_tensor_file(std::vector<int64_t> dims, uint32_t type, size_t data_bytes) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_tensor("t", std::move(dims), kernels::DType(type == 12 ? 0 : type), std::vector<uint8_t>(data_bytes));
  return w.serialize();
}

TEST(GgufFile, TensorTableProblemsNameTheTensor) {
  auto b = one_tensor_file({8, 4}, 0, 128);
  // Layout after the kv: name (8+1), n_dims (4), dims (2*8), type (4), offset (8).
  const size_t kv_end = 24 + (8 + 20 + 4 + 8 + 5);
  const size_t dims_at = kv_end + 9 + 4, type_at = dims_at + 16, offset_at = type_at + 4;
  auto c = b;
  poke<uint64_t>(c, dims_at, uint64_t(1) << 40);
  poke<uint64_t>(c, dims_at + 8, uint64_t(1) << 40);
  EXPECT_THAT(error_of(c), HasSubstr("tensor 't': element count overflows"));
  c = b;
  poke<uint32_t>(c, type_at, 12);
  EXPECT_THAT(error_of(c), HasSubstr("tensor 't': tensor type 12 is not supported"));
  c = b;
  poke<uint64_t>(c, offset_at, 1 << 20);
  EXPECT_THAT(error_of(c), HasSubstr("tensor 't': data [offset 1048576"));
  c = b;
  poke<uint64_t>(c, offset_at, ~uint64_t(31));  // aligned, and offset + size overflows
  EXPECT_THAT(error_of(c), HasSubstr("ends past the end of the file"));
  c = b;
  poke<uint64_t>(c, offset_at, 7);
  EXPECT_THAT(error_of(c), HasSubstr("not a multiple of the alignment"));
  c = b;
  poke<uint32_t>(c, kv_end + 9, 9);
  EXPECT_THAT(error_of(c), HasSubstr("tensor 't': 9 dimensions"));
  c = one_tensor_file({8, 4}, 8, 34 * 1);  // Q8_0 with 8-element rows
  EXPECT_THAT(error_of(c), HasSubstr("not a multiple of the q8_0 block size 32"));
}

TEST(GgufFile, ModelLoaderNamesMissingAndMisshapenTensors) {
  auto w = testing::tiny_llama_writer();
  auto bytes = w.serialize();
  EXPECT_NO_THROW(LlamaModel::from_file(GgufFile::parse("t.gguf", bytes.data(), bytes.size())));
  GgufWriter bad;
  bad.add_string("general.architecture", "gptneox");
  bytes = bad.serialize();
  try {
    LlamaModel::from_file(GgufFile::parse("t.gguf", bytes.data(), bytes.size()));
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("t.gguf: metadata 'general.architecture': architecture 'gptneox' is not supported"));
  }
}

}  // namespace
}  // namespace sluice::inference
