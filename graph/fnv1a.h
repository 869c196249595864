// fnv1a64: the 64-bit FNV-1a hash, the project's one non-cryptographic content hash (model file
// identities in the system fingerprint, knowledge-base document fingerprints and chunk keys,
// the engine's prefix-block hashes). Fast, stable across builds and machines (it is persisted
// in kb.bin), and not collision-resistant: wherever a collision would be wrong rather than
// slow, the caller compares the full value too.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice {

inline constexpr std::uint64_t kFnv1a64Offset = 14695981039346656037ull;

// Continues `h` (the offset basis to start) over the bytes of `bytes`.
inline std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h = kFnv1a64Offset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace sluice
