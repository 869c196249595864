#include "inference/gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>

#include "kernels/quant_blocks.h"

namespace sluice::inference {
namespace {

constexpr uint64_t kAlignment = 32;

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}
void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
size_t elem_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    default: return 8;
  }
}

}  // namespace

void GgufWriter::key(std::string_view k, GgufType t) {
  put_string(kv_, k);
  put<uint32_t>(kv_, uint32_t(t));
  ++n_kv_;
}

void GgufWriter::add_u32(std::string_view k, uint32_t v) { key(k, GgufType::kU32); put(kv_, v); }
void GgufWriter::add_f32(std::string_view k, float v) { key(k, GgufType::kF32); put(kv_, v); }
void GgufWriter::add_bool(std::string_view k, bool v) { key(k, GgufType::kBool); put<uint8_t>(kv_, v ? 1 : 0); }
void GgufWriter::add_string(std::string_view k, std::string_view v) { key(k, GgufType::kString); put_string(kv_, v); }

void GgufWriter::add_string_array(std::string_view k, const std::vector<std::string>& v) {
  key(k, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kString));
  put<uint64_t>(kv_, v.size());
  for (const auto& s : v) put_string(kv_, s);
}
void GgufWriter::add_f32_array(std::string_view k, const std::vector<float>& v) {
  key(k, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kF32));
  put<uint64_t>(kv_, v.size());
  for (float f : v) put(kv_, f);
}
void GgufWriter::add_f64_array(std::string_view k, const std::vector<double>& v) {
  key(k, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kF64));
  put<uint64_t>(kv_, v.size());
  for (double d : v) put(kv_, d);
}
void GgufWriter::add_i32_array(std::string_view k, const std::vector<int32_t>& v) {
  key(k, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kI32));
  put<uint64_t>(kv_, v.size());
  for (int32_t i : v) put(kv_, i);
}

void GgufWriter::add_value(std::string_view k, const GgufValue& v) {
  key(k, v.type);
  switch (v.type) {
    case GgufType::kString: put_string(kv_, v.str); return;
    case GgufType::kArray:
      put<uint32_t>(kv_, uint32_t(v.elem_type));
      put<uint64_t>(kv_, v.count);
      if (v.elem_type == GgufType::kString) {
        for (auto s : v.strings) put_string(kv_, s);
      } else {
        kv_.insert(kv_.end(), v.data, v.data + v.count * elem_size(v.elem_type));
      }
      return;
    case GgufType::kF32: put(kv_, float(v.f)); return;
    case GgufType::kF64: put(kv_, v.f); return;
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64: {
      const int64_t i = v.i;
      kv_.insert(kv_.end(), reinterpret_cast<const uint8_t*>(&i), reinterpret_cast<const uint8_t*>(&i) + elem_size(v.type));
      return;
    }
    default: {  // unsigned and bool
      const uint64_t u = v.u;
      kv_.insert(kv_.end(), reinterpret_cast<const uint8_t*>(&u), reinterpret_cast<const uint8_t*>(&u) + elem_size(v.type));
      return;
    }
  }
}

void GgufWriter::add_tensor(std::string_view name, std::vector<int64_t> dims, kernels::DType type,
                            std::vector<uint8_t> bytes) {
  Tensor t{std::string(name), std::move(dims), type, std::move(bytes), nullptr, 0};
  t.data = t.owned.data();
  t.size = t.owned.size();
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor_borrowed(std::string_view name, std::vector<int64_t> dims, kernels::DType type,
                                     const uint8_t* data, size_t size) {
  tensors_.push_back(Tensor{std::string(name), std::move(dims), type, {}, data, size});
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> out;
  out.insert(out.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, n_kv_);
  out.insert(out.end(), kv_.begin(), kv_.end());
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, uint32_t(t.dims.size()));
    for (int64_t d : t.dims) put<uint64_t>(out, uint64_t(d));
    put<uint32_t>(out, uint32_t(t.type));
    put<uint64_t>(out, offset);
    offset = (offset + t.size + kAlignment - 1) / kAlignment * kAlignment;
  }
  out.resize((out.size() + kAlignment - 1) / kAlignment * kAlignment, 0);
  return out;
}

std::vector<uint8_t> GgufWriter::serialize() const {
  std::vector<uint8_t> out = header();
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data, t.data + t.size);
    out.resize((out.size() + kAlignment - 1) / kAlignment * kAlignment, 0);
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw ModelError(path + ": file: cannot create for writing");
  const std::vector<uint8_t> h = header();
  bool ok = std::fwrite(h.data(), 1, h.size(), f) == h.size();
  static const uint8_t zeros[kAlignment] = {};
  for (const auto& t : tensors_) {
    if (!ok) break;
    ok = std::fwrite(t.data, 1, t.size, f) == t.size;
    const size_t pad = (kAlignment - t.size % kAlignment) % kAlignment;
    ok = ok && std::fwrite(zeros, 1, pad, f) == pad;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw ModelError(path + ": file: write failed (disk full?)");
}

}  // namespace sluice::inference
