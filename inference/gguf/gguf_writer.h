// GgufWriter: builds a GGUF version 3 file: metadata key/values and tensors, data aligned to
// `general.alignment` (32). Used by the quantize and synth tools and by tests that need
// good, truncated or hostile files. Tensor bytes are either copied in or borrowed (the
// caller keeps them alive until write()). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "kernels/backend.h"

namespace sluice::inference {

class GgufWriter {
 public:
  void add_u32(std::string_view key, uint32_t v);
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, const std::vector<std::string>& v);
  void add_f32_array(std::string_view key, const std::vector<float>& v);
  void add_f64_array(std::string_view key, const std::vector<double>& v);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& v);
  // Copies any value read by GgufFile (quantize keeps the input's metadata).
  void add_value(std::string_view key, const GgufValue& v);

  // dims in ggml order (dims[0] contiguous). `bytes` must match the type and shape.
  void add_tensor(std::string_view name, std::vector<int64_t> dims, kernels::DType type,
                  std::vector<uint8_t> bytes);
  void add_tensor_borrowed(std::string_view name, std::vector<int64_t> dims, kernels::DType type,
                           const uint8_t* data, size_t size);

  // The whole file in memory (tests) or written to `path` (throws ModelError on I/O errors).
  std::vector<uint8_t> serialize() const;
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    kernels::DType type;
    std::vector<uint8_t> owned;
    const uint8_t* data;
    size_t size;
  };
  std::vector<uint8_t> header() const;  // everything before the (aligned) data section
  void key(std::string_view k, GgufType t);

  std::vector<uint8_t> kv_;  // serialized key/values
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace sluice::inference
