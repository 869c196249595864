#include "inference/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "kernels/quant_blocks.h"

namespace sluice::inference {
namespace {

// Hard bounds on what a model file may declare, far above any real model, so a hostile count
// cannot make us allocate much before the per-byte checks reject it.
constexpr uint64_t kMaxKeys = 1 << 20;
constexpr uint64_t kMaxTensors = 1 << 20;
constexpr uint64_t kMaxStringBytes = 1 << 30;
constexpr uint32_t kMaxDims = 4;
constexpr int64_t kMaxElements = int64_t(1) << 48;

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

bool known_type(uint32_t t) { return t <= uint32_t(GgufType::kF64); }

// Reads little-endian values from [pos, end), failing with the current field's name.
class Cursor {
 public:
  Cursor(const GgufFile& file, const uint8_t* base, size_t size) : file_(file), base_(base), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  void set_field(std::string field) { field_ = std::move(field); }
  const std::string& field() const { return field_; }

  [[noreturn]] void fail(const std::string& problem) const {
    file_.fail(field_, problem + " (at byte offset " + std::to_string(pos_) + ")");
  }
  const uint8_t* take(size_t n) {
    if (n > remaining())
      fail("needs " + std::to_string(n) + " bytes but the file ends after " + std::to_string(remaining()));
    const uint8_t* p = base_ + pos_;
    pos_ += n;
    return p;
  }
  template <class T>
  T read() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string_view read_string() {
    const uint64_t n = read<uint64_t>();
    if (n > kMaxStringBytes) fail("string length " + std::to_string(n) + " is implausible");
    if (n > remaining())
      fail("string of " + std::to_string(n) + " bytes runs past the end of the file");
    return {reinterpret_cast<const char*>(take(size_t(n))), size_t(n)};
  }

 private:
  const GgufFile& file_;
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
  std::string field_ = "header";
};

void read_scalar(Cursor& c, GgufType t, GgufValue& v) {
  v.type = t;
  switch (t) {
    case GgufType::kU8: v.u = c.read<uint8_t>(); break;
    case GgufType::kI8: v.i = c.read<int8_t>(); break;
    case GgufType::kU16: v.u = c.read<uint16_t>(); break;
    case GgufType::kI16: v.i = c.read<int16_t>(); break;
    case GgufType::kU32: v.u = c.read<uint32_t>(); break;
    case GgufType::kI32: v.i = c.read<int32_t>(); break;
    case GgufType::kU64: v.u = c.read<uint64_t>(); break;
    case GgufType::kI64: v.i = c.read<int64_t>(); break;
    case GgufType::kBool: {
      const uint8_t b = c.read<uint8_t>();
      if (b > 1) c.fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
      v.u = b;
      break;
    }
    case GgufType::kF32: v.f = c.read<float>(); break;
    case GgufType::kF64: v.f = c.read<double>(); break;
    case GgufType::kString: v.str = c.read_string(); return;
    default: c.fail("unexpected value type");
  }
  switch (t) {
    case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64: case GgufType::kBool:
      v.i = int64_t(v.u);
      v.f = double(v.u);
      break;
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      v.is_negative = v.i < 0;
      v.u = v.is_negative ? 0 : uint64_t(v.i);
      v.f = double(v.i);
      break;
    default: break;
  }
}

GgufValue read_value(Cursor& c, uint32_t raw_type) {
  if (!known_type(raw_type)) c.fail("unknown value type " + std::to_string(raw_type));
  GgufValue v;
  const auto t = GgufType(raw_type);
  if (t != GgufType::kArray) {
    read_scalar(c, t, v);
    return v;
  }
  v.type = GgufType::kArray;
  const uint32_t et = c.read<uint32_t>();
  if (!known_type(et)) c.fail("array of unknown element type " + std::to_string(et));
  if (GgufType(et) == GgufType::kArray) c.fail("nested arrays are not supported");
  v.elem_type = GgufType(et);
  v.count = c.read<uint64_t>();
  if (v.elem_type == GgufType::kString) {
    // Each string takes at least its 8-byte length.
    if (v.count > c.remaining() / 8)
      c.fail("array of " + std::to_string(v.count) + " strings cannot fit in the rest of the file");
    v.strings.reserve(size_t(v.count));
    for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(c.read_string());
  } else {
    const size_t es = scalar_size(v.elem_type);
    if (v.count > c.remaining() / es)
      c.fail("array of " + std::to_string(v.count) + " " + gguf_type_name(v.elem_type) +
             " values runs past the end of the file");
    v.data = c.take(size_t(v.count) * es);
  }
  return v;
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) <= 12 ? names[uint32_t(t)] : "unknown";
}

GgufFile::~GgufFile() {
  if (mapping_) munmap(mapping_, size_);
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) f->fail("file", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    f->fail("file", "not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    f->fail("header", "empty file");
  }
  void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (m == MAP_FAILED) f->fail("file", std::string("cannot map: ") + std::strerror(err));
  f->mapping_ = m;
  f->base_ = static_cast<const uint8_t*>(m);
  f->size_ = size_t(st.st_size);
  f->parse_all();
  return f;
}

std::unique_ptr<GgufFile> GgufFile::parse(std::string label, const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(label);
  f->base_ = data;
  f->size_ = size;
  f->parse_all();
  return f;
}

void GgufFile::fail(std::string_view field, std::string_view problem) const {
  throw ModelError(path_ + ": " + std::string(field) + ": " + std::string(problem));
}

void GgufFile::parse_all() {
  Cursor c(*this, base_, size_);
  c.set_field("magic");
  if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0) c.fail("not a GGUF file (magic is not 'GGUF')");
  c.take(4);
  c.set_field("version");
  version_ = c.read<uint32_t>();
  if (version_ != 2 && version_ != 3)
    c.fail("GGUF version " + std::to_string(version_) + " is not supported (2 and 3 are)");
  c.set_field("tensor_count");
  const uint64_t n_tensors = c.read<uint64_t>();
  if (n_tensors > kMaxTensors) c.fail(std::to_string(n_tensors) + " tensors is implausible");
  c.set_field("metadata_kv_count");
  const uint64_t n_kv = c.read<uint64_t>();
  if (n_kv > kMaxKeys) c.fail(std::to_string(n_kv) + " metadata keys is implausible");
  // A key/value takes at least 13 bytes, a tensor record at least 32: reject counts the
  // remaining bytes cannot hold before reserving anything.
  if (n_kv > c.remaining() / 13) c.fail(std::to_string(n_kv) + " metadata keys cannot fit in the file");

  kv_.reserve(size_t(n_kv));
  std::unordered_set<std::string_view> seen;  // views into the file: stable while we parse
  for (uint64_t k = 0; k < n_kv; ++k) {
    c.set_field("metadata key #" + std::to_string(k));
    const std::string_view key = c.read_string();
    c.set_field("metadata '" + std::string(key) + "'");
    const uint32_t type = c.read<uint32_t>();
    GgufValue v = read_value(c, type);
    if (!seen.insert(key).second) c.fail("duplicate key");
    kv_.emplace_back(std::string(key), std::move(v));
  }
  for (size_t k = 0; k < kv_.size(); ++k) kv_index_.emplace(kv_[k].first, k);

  if (const GgufValue* a = find("general.alignment")) {
    if (a->type == GgufType::kArray || a->type == GgufType::kString || a->is_negative)
      fail("metadata 'general.alignment'", "must be a non-negative integer");
    alignment_ = a->u;
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > (1u << 20))
      fail("metadata 'general.alignment'", "value " + std::to_string(alignment_) + " is not a power of two up to 1 MiB");
  }

  c.set_field("tensor_count");
  if (n_tensors > c.remaining() / 32) c.fail(std::to_string(n_tensors) + " tensors cannot fit in the file");
  tensors_.reserve(size_t(n_tensors));
  seen.clear();
  for (uint64_t k = 0; k < n_tensors; ++k) {
    c.set_field("tensor #" + std::to_string(k));
    GgufTensor t;
    const std::string_view name = c.read_string();
    t.name = std::string(name);
    c.set_field("tensor '" + t.name + "'");
    const uint32_t n_dims = c.read<uint32_t>();
    if (n_dims == 0 || n_dims > kMaxDims)
      c.fail(std::to_string(n_dims) + " dimensions (1 to 4 are allowed)");
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = c.read<uint64_t>();
      if (dim == 0 || dim > uint64_t(kMaxElements)) c.fail("dimension " + std::to_string(d) + " is " + std::to_string(dim));
      if (__builtin_mul_overflow(elements, int64_t(dim), &elements) || elements > kMaxElements)
        c.fail("element count overflows");
      t.dims.push_back(int64_t(dim));
    }
    t.elements = elements;
    const uint32_t type = c.read<uint32_t>();
    if (type != uint32_t(kernels::DType::kF32) && type != uint32_t(kernels::DType::kF16) &&
        type != uint32_t(kernels::DType::kQ4_0) && type != uint32_t(kernels::DType::kQ8_0))
      c.fail("tensor type " + std::to_string(type) + " is not supported (F32, F16, Q4_0, Q8_0 are)");
    t.type = kernels::DType(type);
    const int64_t be = kernels::dtype_block_elems(t.type);
    if (t.dims[0] % be != 0)
      c.fail("row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
             kernels::dtype_name(t.type) + " block size " + std::to_string(be));
    t.bytes = uint64_t(elements / be) * uint64_t(kernels::dtype_block_bytes(t.type));
    t.offset = c.read<uint64_t>();
    if (t.offset % alignment_ != 0)
      c.fail("data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
    if (!seen.insert(name).second) c.fail("duplicate tensor name");
    tensors_.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment after the header.
  const uint64_t header_end = c.pos();
  const uint64_t data_start = (header_end + alignment_ - 1) / alignment_ * alignment_;
  for (auto& t : tensors_) {
    const std::string field = "tensor '" + t.name + "'";
    if (data_start > size_ || t.offset > size_ - data_start || t.bytes > size_ - data_start - t.offset)
      fail(field, "data [offset " + std::to_string(t.offset) + ", " + std::to_string(t.bytes) +
                      " bytes] ends past the end of the file (" + std::to_string(size_) + " bytes, data section at " +
                      std::to_string(data_start) + ")");
    t.data = base_ + data_start + t.offset;
  }
  for (size_t k = 0; k < tensors_.size(); ++k) tensor_index_.emplace(tensors_[k].name, k);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<uint64_t> GgufFile::find_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  switch (v->type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16:
    case GgufType::kU32: case GgufType::kI32: case GgufType::kU64: case GgufType::kI64:
      if (v->is_negative) fail("metadata '" + std::string(key) + "'", "must not be negative");
      return v->u;
    default:
      fail("metadata '" + std::string(key) + "'", std::string("expected an integer, found ") + gguf_type_name(v->type));
  }
}

uint64_t GgufFile::get_uint(std::string_view key) const {
  const auto v = find_uint(key);
  if (!v) fail("metadata '" + std::string(key) + "'", "missing");
  return *v;
}

std::optional<double> GgufFile::find_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == GgufType::kString || v->type == GgufType::kArray || v->type == GgufType::kBool)
    fail("metadata '" + std::string(key) + "'", std::string("expected a number, found ") + gguf_type_name(v->type));
  return v->f;
}

std::optional<std::string_view> GgufFile::find_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::kString)
    fail("metadata '" + std::string(key) + "'", std::string("expected a string, found ") + gguf_type_name(v->type));
  return v->str;
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const auto v = find_string(key);
  if (!v) fail("metadata '" + std::string(key) + "'", "missing");
  return *v;
}

const GgufValue& GgufFile::get_array(std::string_view key, GgufType elem_type) const {
  const GgufValue* v = find(key);
  if (!v) fail("metadata '" + std::string(key) + "'", "missing");
  if (v->type != GgufType::kArray || v->elem_type != elem_type)
    fail("metadata '" + std::string(key) + "'",
         std::string("expected an array of ") + gguf_type_name(elem_type));
  return *v;
}

}  // namespace sluice::inference
