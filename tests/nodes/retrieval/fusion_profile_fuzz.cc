// libFuzzer target for fusion profiles (nodes/retrieval/fusion/fusion_profile.h; run by
// scripts/fuzz): each input is a profile file's text. A refusal is std::invalid_argument with a
// message naming the file; anything else escaping crashes the fuzzer, which is the point. A
// profile that is read has its weights in 0-1 and rrf_k in 1-10000, and written and read again
// gives the same parameters.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "nodes/retrieval/fusion/fusion_profile.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice::retrieval;

void check_params(const FusionParams& p) {
  FUZZ_CHECK(p.bm25_weight >= 0 && p.bm25_weight <= 1);
  FUZZ_CHECK(p.final_weight() >= 0 && p.final_weight() <= 1);
  FUZZ_CHECK(p.rrf_k >= 1 && p.rrf_k <= 10000);
}

bool same(const FusionParams& a, const FusionParams& b) {
  return a.method == b.method && a.bm25_weight == b.bm25_weight && a.final_weight() == b.final_weight() && a.rrf_k == b.rrf_k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FusionProfile p;
  try {
    p = parse_fusion_profile(text, "fuzz.json");
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fusion profile fuzz.json: ", 0) == 0);
    return 0;
  }
  check_params(p.natural_language);
  check_params(p.exact_lookup);
  const FusionProfile back = parse_fusion_profile(fusion_profile_json(p), "again.json");
  FUZZ_CHECK(same(back.natural_language, p.natural_language) && same(back.exact_lookup, p.exact_lookup));
  FUZZ_CHECK(back.natural_language_tuned == p.natural_language_tuned && back.exact_lookup_tuned == p.exact_lookup_tuned);
  return 0;
}
