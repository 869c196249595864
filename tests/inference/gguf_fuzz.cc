// libFuzzer target for the GGUF reader and the model/tokenizer validation behind it: any byte
// string must either load or be refused with a ModelError; never crash, hang or read out of
// bounds (built with ASan+UBSan). Run by scripts/fuzz for a bounded time.
#include <cstddef>
#include <cstdint>

#include "inference/gguf/gguf_file.h"
#include "inference/llama/llama_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::inference;
  try {
    auto file = GgufFile::parse("fuzz.gguf", data, size);
    for (const auto& t : file->tensors()) {  // every tensor's bytes must be inside the input
      volatile uint8_t sink = 0;
      if (t.bytes > 0) sink = sink + t.data[0] + t.data[t.bytes - 1];
    }
    auto model = LlamaModel::from_file(std::move(file));
    model->tokenizer().encode("Hello, world! \xC3\xA9", true);
  } catch (const ModelError&) {
  }
  return 0;
}
