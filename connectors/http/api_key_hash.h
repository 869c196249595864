// API key secrets and their stored form. A key is what a client sends (`Authorization: Bearer
// sk-sluice-...`); the key file stores only "sha256:<salt hex>:<digest hex>", the SHA-256 of a
// random 16-byte salt followed by the key, so a leaked file gives no usable key. Keys made by
// make_api_key carry 256 random bits, which is what makes one salted SHA-256 enough (a slow
// password hash protects guessable secrets; these are not guessable).
//
// Comparisons of digests take the same time whatever the bytes (CRYPTO_memcmp), so timing does
// not tell how much of a guess was right. Thread-safety: all functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::http {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(std::string_view a, std::string_view b = {});  // SHA-256 of a followed by b

struct StoredKeyHash {
  std::array<std::uint8_t, 16> salt{};
  Sha256Digest digest{};
};

// "sha256:<32 hex>:<64 hex>", or nullopt with `error` saying what is wrong (never quoting it).
std::optional<StoredKeyHash> parse_stored_key_hash(std::string_view text, std::string* error);
// The stored form of `key` under a fresh random salt.
std::string hash_api_key(std::string_view key);
// Whether `key` is the key `stored` was made from; constant time in the digest comparison.
bool key_matches(const StoredKeyHash& stored, std::string_view key);
// A new key: "sk-sluice-" and 43 base64url characters (32 random bytes from the OS CSPRNG).
std::string make_api_key();
// Constant-time equality of two digests.
bool digests_equal(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace sluice::http
