// Where the pretrained sentence encoder's GGUF file is looked for, one rule for the runtime,
// the command line and the tests: SLUICE_ENCODER when set, else
// ${SLUICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice}/models/use-lite.gguf, the file
// scripts/setup-encoder writes.
#pragma once

#include <cstdlib>
#include <string>

namespace sluice::inference {

inline std::string default_encoder_path() {
  if (const char* e = std::getenv("SLUICE_ENCODER"); e && *e) return e;
  std::string cache;
  if (const char* c = std::getenv("SLUICE_CACHE"); c && *c) {
    cache = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    cache = std::string(x) + "/sluice";
  } else {
    const char* home = std::getenv("HOME");
    cache = std::string(home && *home ? home : ".") + "/.cache/sluice";
  }
  return cache + "/models/use-lite.gguf";
}

}  // namespace sluice::inference
