// Helpers of the libFuzzer targets: a check that aborts (so libFuzzer keeps the input as a
// crash), JSON that must parse, and whether bytes are UTF-8.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

// Aborts with the failed condition; the fuzzer saves the input that got here.
#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace sluice::fuzzing {

// `text` parsed as JSON; aborts, printing it, when it is not valid JSON (UTF-8 included). No
// exceptions: nlohmann is asked to answer "discarded" instead.
inline nlohmann::json must_parse(const std::string& text, const char* what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "%s is not valid JSON (%zu bytes):\n", what, text.size());
    for (unsigned char c : text) {
      if (c >= 0x20 && c < 0x7f) std::fputc(c, stderr);
      else std::fprintf(stderr, "\\x%02x", c);
    }
    std::fputc('\n', stderr);
    std::abort();
  }
  return j;
}

// Whether `s` is valid UTF-8: nlohmann refuses to write a string that is not (type_error 316).
inline bool is_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace sluice::fuzzing
