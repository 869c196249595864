// Internal: how the SIMD matmul kernels walk rows [r0, r1) x n tokens. Tokens go in blocks of
// kTokenBlock (their activations stay in L2 while the block's rows stream past), rows in tiles
// of kRows (kDecodeRows when n == 1: decoding is memory-bound, so more weight streams in
// flight), tokens in tiles of kMaxTokens with narrower tiles for the remainder.
// Tiles::run<R, NT>(w, x, xq, r, t0, y) computes rows [r, r+R) x tokens [t0, t0+NT).
//
// Batch invariance rests on the tiles, not on this walk: each Tiles::run<R, NT> must give every
// (row, token) pair the same arithmetic whatever R and NT are.
//
// Instantiate only with a Tiles type from the ISA file's anonymous namespace: each ISA file is
// compiled with its own flags, and a file-local argument keeps the instantiations file-local.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/matmul.h"

namespace sluice::kernels::detail {

inline constexpr int64_t kTokenBlock = 32;

// Full NT-token tiles, then the remainder with NT-1, NT-2, ... token tiles.
template <class Tiles, int R, int NT>
inline void run_token_tiles(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t r,
                            int64_t tb, int64_t te, float* y) {
  int64_t t = tb;
  for (; t + NT <= te; t += NT) Tiles::template run<R, NT>(w, x, xq, r, t, y);
  if constexpr (NT > 1) {
    if (t < te) run_token_tiles<Tiles, R, NT - 1>(w, x, xq, r, t, te, y);
  }
}

template <class Tiles, int kRows, int kDecodeRows, int kMaxTokens>
void tiled_rows_kernel(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n,
                       int64_t r0, int64_t r1, float* y) {
  for (int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const int64_t te = std::min(n, tb + kTokenBlock);
    int64_t r = r0;
    if (n == 1) {
      for (; r + kDecodeRows <= r1; r += kDecodeRows)
        run_token_tiles<Tiles, kDecodeRows, 1>(w, x, xq, r, tb, te, y);  // one token
    }
    for (; r + kRows <= r1; r += kRows) run_token_tiles<Tiles, kRows, kMaxTokens>(w, x, xq, r, tb, te, y);
    for (; r < r1; ++r) run_token_tiles<Tiles, 1, kMaxTokens>(w, x, xq, r, tb, te, y);
  }
}

}  // namespace sluice::kernels::detail
