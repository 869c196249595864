// GgufFile: a read-only view of a GGUF (version 2 or 3) model file: metadata key/values, the
// tensor table and tensor data, memory-mapped once and never copied.
//
// Every size, count and offset read from the file is checked against the bytes that remain
// before it is used, so truncated, corrupt or hostile files are refused with a ModelError
// naming the file, the field and the problem; nothing is read out of bounds.
// Tensor types: F32, F16, Q4_0, Q8_0 (others are refused, naming the tensor and type).
//
// Ownership: the GgufFile owns the mapping; every string_view and data pointer it hands out
// lives as long as the GgufFile. Immutable after open(): safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inference/model_error.h"
#include "kernels/backend.h"

namespace sluice::inference {

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* gguf_type_name(GgufType t);

struct GgufValue {
  GgufType type = GgufType::kU8;
  // Scalars: integers in `i` (and `u` when non-negative), floats in `f`, bools as 0/1.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  bool is_negative = false;
  std::string_view str;  // kString
  // kArray: element type, count; numeric elements are raw little-endian bytes at `data`,
  // string elements are in `strings`.
  GgufType elem_type = GgufType::kU8;
  uint64_t count = 0;
  const uint8_t* data = nullptr;
  std::vector<std::string_view> strings;
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (row) dimension
  kernels::DType type = kernels::DType::kF32;
  uint64_t offset = 0;        // relative to the data section
  uint64_t bytes = 0;
  int64_t elements = 0;
  const uint8_t* data = nullptr;
};

class GgufFile {
 public:
  // Maps and parses `path`. Throws ModelError.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses bytes owned by the caller (who keeps them alive); `label` names them in errors.
  static std::unique_ptr<GgufFile> parse(std::string label, const uint8_t* data, size_t size);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t size() const { return size_; }
  uint64_t alignment() const { return alignment_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  const GgufValue* find(std::string_view key) const;
  const GgufTensor* find_tensor(std::string_view name) const;

  // Typed accessors; the get_ forms throw when the key is missing or has the wrong type.
  std::optional<uint64_t> find_uint(std::string_view key) const;  // any integer type, >= 0
  uint64_t get_uint(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;   // any numeric type
  std::string_view get_string(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;
  const GgufValue& get_array(std::string_view key, GgufType elem_type) const;

  // Throws ModelError("<path>: <field>: <problem>").
  [[noreturn]] void fail(std::string_view field, std::string_view problem) const;

 private:
  GgufFile() = default;
  void parse_all();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when we own an mmap
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace sluice::inference
