// Which SIMD level the CPU kernels run at. Detected once from CPUID; SLUICE_CPU_ISA
// (scalar|avx2|avx512) lowers it for testing and comparison, never raises it past the CPU.
#pragma once

namespace sluice::kernels {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

Isa detected_isa();       // what this CPU supports (AVX-512 needs F, BW, VL, VNNI)
Isa default_isa();        // detected_isa(), lowered by SLUICE_CPU_ISA when set
const char* isa_name(Isa isa);

}  // namespace sluice::kernels
