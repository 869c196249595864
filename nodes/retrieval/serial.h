// BinaryWriter / BinaryReader: the one binary encoding for retrieval's persisted structures
// (BM25 index, LSA model, vectors, knowledge base). Host byte order (little-endian on every
// platform we build for); lengths are u64. The reader is bounded: a length larger than
// `max_elements` or a short read throws std::runtime_error naming what was being read, so a
// torn or hostile file fails cleanly instead of allocating without limit.
// Not thread-safe; one per stream.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace sluice::retrieval {

class BinaryWriter {
 public:
  explicit BinaryWriter(std::ostream& out) : out_(out) {}
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void f32(float v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    u64(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
  void strings(const std::vector<std::string>& v) {
    u64(v.size());
    for (const auto& s : v) str(s);
  }

 private:
  void raw(const void* p, std::size_t n) { out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); }
  std::ostream& out_;
};

class BinaryReader {
 public:
  BinaryReader(std::istream& in, std::string what, std::uint64_t max_elements = 1ull << 34)
      : in_(in), what_(std::move(what)), max_(max_elements) {
    // When the stream is seekable, lengths are also checked against the bytes left, so a
    // corrupt length fails before any allocation.
    const auto here = in_.tellg();
    if (here != std::streampos(-1) && in_.seekg(0, std::ios::end)) {
      remaining_ = static_cast<std::uint64_t>(in_.tellg() - here);
      in_.seekg(here);
    } else {
      in_.clear();
    }
  }
  std::uint32_t u32() { return pod<std::uint32_t>(); }
  std::uint64_t u64() { return pod<std::uint64_t>(); }
  float f32() { return pod<float>(); }
  double f64() { return pod<double>(); }
  std::string str() {
    std::string s(length(1), '\0');
    raw(s.data(), s.size());
    return s;
  }
  template <class T>
  std::vector<T> vec() {
    std::vector<T> v(length(sizeof(T)));
    raw(v.data(), v.size() * sizeof(T));
    return v;
  }
  std::vector<std::string> strings() {
    std::vector<std::string> v(length(sizeof(std::uint64_t)));
    for (auto& s : v) s = str();
    return v;
  }

 private:
  template <class T>
  T pod() {
    T v{};
    raw(&v, sizeof v);
    return v;
  }
  std::uint64_t length(std::uint64_t element_bytes) {
    const std::uint64_t n = u64();
    if (n > max_ || n * element_bytes > remaining_ - offset_) throw std::runtime_error(what_ + ": implausible length " + std::to_string(n));
    return n;
  }
  void raw(void* p, std::size_t n) {
    in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    if (static_cast<std::size_t>(in_.gcount()) != n) {
      throw std::runtime_error(what_ + ": truncated at byte " + std::to_string(offset_));
    }
    offset_ += n;
  }
  std::istream& in_;
  std::string what_;
  std::uint64_t max_;
  std::uint64_t offset_ = 0;
  std::uint64_t remaining_ = UINT64_MAX;
};

}  // namespace sluice::retrieval
