// libFuzzer target for the GGUF reader, the tokenizer built from its metadata (encode and
// decode), and the model validation behind it: any byte string must either load or be refused
// with a ModelError; never crash, hang or read out of bounds (built with ASan+UBSan). Run by
// scripts/fuzz for a bounded time; seeded with the model files' heads and with their metadata
// alone (no tensors), which reaches the tokenizer whole.
#include <cstddef>
#include <cstdint>

#include "inference/gguf/gguf_file.h"
#include "inference/llama/llama_model.h"
#include "inference/tokenize/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::inference;
  try {
    auto file = GgufFile::parse("fuzz.gguf", data, size);
    for (const auto& t : file->tensors()) {  // every tensor's bytes must be inside the input
      volatile uint8_t sink = 0;
      if (t.bytes > 0) sink = sink + t.data[0] + t.data[t.bytes - 1];
    }
    // The tokenizer on its own first: a file whose tensors are refused (most mutants, and the
    // metadata-only seeds) still has its tokenizer.ggml.* metadata read and a text encoded.
    try {
      Tokenizer tokenizer(*file);
      const auto ids = tokenizer.encode("Hello, world! \xC3\xA9 <s> \xF0\x9F\x98\x80", true);
      volatile std::size_t printed = tokenizer.decode(ids).size();
      (void)printed;
    } catch (const ModelError&) {
    }
    auto model = LlamaModel::from_file(std::move(file));
    model->tokenizer().encode("Hello, world! \xC3\xA9", true);
  } catch (const ModelError&) {
  }
  return 0;
}
