#include "kernels/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sluice::kernels {

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = (uint32_t(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal half: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t fp32_to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {                                   // subnormal or zero half
    if (absx < 0x33000000u) return uint16_t(sign);
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24 + 1
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = ((absx >> 13) - (112u << 10));
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
  return uint16_t(sign | r);
}

int64_t dtype_block_elems(DType t) {
  return (t == DType::kQ4_0 || t == DType::kQ8_0 || t == DType::kQ8_0x8 || t == DType::kQ4_0x8) ? kQuantBlock : 1;
}

int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF32x16: return 4;
    case DType::kF16:
    case DType::kBF16x16: return 2;
    case DType::kQ4_0:
    case DType::kQ4_0x8: return sizeof(BlockQ4_0);
    case DType::kQ8_0:
    case DType::kQ8_0x8: return sizeof(BlockQ8_0);  // per row on average: 8 rows share 8 blocks' bytes
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF32x16: return "f32x16";
    case DType::kBF16x16: return "bf16x16";
    case DType::kF16: return "f16";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ8_0x8: return "q8_0x8";
    case DType::kQ4_0x8: return "q4_0x8";
  }
  return "?";
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case DType::kQ8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n / kQuantBlock; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 32; ++j) dst[i * 32 + j] = d * b[i].qs[j];
      }
      return;
    }
    case DType::kQ4_0: {
      const auto* b = static_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < n / kQuantBlock; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; ++j) {
          dst[i * 32 + j] = d * ((b[i].qs[j] & 0x0f) - 8);
          dst[i * 32 + j + 16] = d * ((b[i].qs[j] >> 4) - 8);
        }
      }
      return;
    }
    case DType::kQ8_0x8:
    case DType::kQ4_0x8:
    case DType::kF32x16:
    case DType::kBF16x16:
      break;  // rows are interleaved: dequantize_row_x8 (quant_x8.h), f32_panel_row or bf16_panel_row reads one
  }
  throw std::invalid_argument("dequantize_row: interleaved rows; use dequantize_row_x8 or f32_panel_row");
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case DType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
      return;
    }
    case DType::kQ8_0: {  // as ggml's quantize_row_q8_0_ref
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t i = 0; i < n / kQuantBlock; ++i) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[i * 32 + j]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = fp32_to_fp16(d);
        for (int j = 0; j < 32; ++j) b[i].qs[j] = int8_t(std::lround(src[i * 32 + j] * id));
      }
      return;
    }
    case DType::kQ4_0: {  // as ggml's quantize_row_q4_0_ref: the signed max maps to -8
      auto* b = static_cast<BlockQ4_0*>(dst);
      for (int64_t i = 0; i < n / kQuantBlock; ++i) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j) {
          const float v = src[i * 32 + j];
          if (std::fabs(v) > amax) {
            amax = std::fabs(v);
            max = v;
          }
        }
        const float d = max / -8.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = fp32_to_fp16(d);
        for (int j = 0; j < 16; ++j) {
          const float x0 = src[i * 32 + j] * id;
          const float x1 = src[i * 32 + 16 + j] * id;
          const int q0 = std::min(15, int(x0 + 8.5f));
          const int q1 = std::min(15, int(x1 + 8.5f));
          b[i].qs[j] = uint8_t(q0 | (q1 << 4));
        }
      }
      return;
    }
    case DType::kQ8_0x8:
    case DType::kQ4_0x8:
    case DType::kF32x16:
    case DType::kBF16x16:
      break;  // made from whole matrices by interleave_x8 (quant_x8.h), panel_f32 or panel_bf16
  }
  throw std::invalid_argument("quantize_row: interleaved types are made from a whole matrix by interleave_x8");
}

}  // namespace sluice::kernels
