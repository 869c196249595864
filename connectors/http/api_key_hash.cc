#include "connectors/http/api_key_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace sluice::http {
namespace {

constexpr std::string_view kPrefix = "sha256:";
constexpr char kHex[] = "0123456789abcdef";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>* out) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <std::size_t N>
void write_hex(const std::array<std::uint8_t, N>& bytes, std::string* out) {
  for (std::uint8_t b : bytes) {
    out->push_back(kHex[b >> 4]);
    out->push_back(kHex[b & 15]);
  }
}

void random_bytes(std::uint8_t* out, int n) {
  if (RAND_bytes(out, n) != 1) throw std::runtime_error("the OS random generator failed (RAND_bytes)");
}

}  // namespace

Sha256Digest sha256(std::string_view a, std::string_view b) {
  // OpenSSL 3 looks an algorithm up in its provider store on every implicit use (EVP_sha256()
  // in EVP_DigestInit_ex), which costs more than hashing a key: fetch it once, and keep one
  // context per thread (the event loops hash on every authenticated request).
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  struct Context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Context context;
  Sha256Digest out{};
  unsigned int len = 0;
  EVP_MD_CTX* ctx = context.ctx;
  const bool ok = md && ctx && EVP_DigestInit_ex2(ctx, md, nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, a.data(), a.size()) == 1 && EVP_DigestUpdate(ctx, b.data(), b.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
  if (!ok || len != out.size()) throw std::runtime_error("SHA-256 failed (libcrypto EVP)");
  return out;
}

std::optional<StoredKeyHash> parse_stored_key_hash(std::string_view text, std::string* error) {
  if (text.substr(0, kPrefix.size()) != kPrefix) {
    *error = "a key hash starts with \"sha256:\" (make one with `sluice keys hash` or `sluice keys new`)";
    return std::nullopt;
  }
  text.remove_prefix(kPrefix.size());
  const std::size_t colon = text.find(':');
  StoredKeyHash h;
  if (colon == std::string_view::npos || !read_hex(text.substr(0, colon), &h.salt) ||
      !read_hex(text.substr(colon + 1), &h.digest)) {
    *error = "a key hash is \"sha256:\", 32 hex digits of salt, \":\" and 64 hex digits of digest";
    return std::nullopt;
  }
  return h;
}

std::string hash_api_key(std::string_view key) {
  StoredKeyHash h;
  random_bytes(h.salt.data(), static_cast<int>(h.salt.size()));
  h.digest = sha256(std::string_view(reinterpret_cast<const char*>(h.salt.data()), h.salt.size()), key);
  std::string out(kPrefix);
  write_hex(h.salt, &out);
  out += ':';
  write_hex(h.digest, &out);
  return out;
}

bool digests_equal(const Sha256Digest& a, const Sha256Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool key_matches(const StoredKeyHash& stored, std::string_view key) {
  const Sha256Digest d = sha256(std::string_view(reinterpret_cast<const char*>(stored.salt.data()), stored.salt.size()), key);
  return digests_equal(d, stored.digest);
}

std::string make_api_key() {
  static constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::array<std::uint8_t, 33> raw{};  // 32 random bytes, padded to a multiple of 3
  random_bytes(raw.data(), 32);
  std::string out = "sk-sluice-";
  for (std::size_t i = 0; i < raw.size(); i += 3) {
    const std::uint32_t v = (raw[i] << 16) | (raw[i + 1] << 8) | raw[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kBase64Url[(v >> shift) & 63]);
  }
  out.resize(10 + 43);  // 256 bits are 43 base64 characters; the 44th holds only padding
  return out;
}

}  // namespace sluice::http
