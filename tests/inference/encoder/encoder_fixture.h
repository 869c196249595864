// The pretrained encoder and its reference for the encoder tests: the model at
// default_encoder_path() (scripts/setup-encoder writes it) and the reference's token ids and
// vectors (SLUICE_ENCODER_REFERENCE, which tests/inference/encoder/run_reference.sh sets to a
// file the JavaScript reference has just written, else the committed reference.json made by
// the same script). A missing model skips the test in a developer build and fails it where
// CI is set: CI must never pass by skipping the parity checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "inference/encoder/encoder_location.h"
#include "inference/encoder/use_lite_model.h"

namespace sluice::inference::testing {

#define SLUICE_REQUIRE_ENCODER()                                                                        \
  do {                                                                                                  \
    if (!std::filesystem::exists(::sluice::inference::default_encoder_path())) {                                           \
      if (std::getenv("CI")) FAIL() << "CI: the encoder model is missing at " << ::sluice::inference::default_encoder_path() \
                                    << " (scripts/setup-encoder BUILD/apps/sluice writes it)";          \
      GTEST_SKIP() << "needs " << ::sluice::inference::default_encoder_path() << " (run scripts/setup-encoder build/apps/sluice)"; \
    }                                                                                                   \
  } while (0)

inline std::shared_ptr<const UseLiteModel> shared_encoder_model() {
  static std::shared_ptr<const UseLiteModel> model = UseLiteModel::load(default_encoder_path());
  return model;
}

struct ReferenceVector {
  std::string text;
  std::vector<float> values;
};
struct Reference {
  std::string path;
  nlohmann::json tokens;  // [{"text", "ids"}]
  std::vector<ReferenceVector> vectors;
};

inline std::vector<uint8_t> base64_decode(const std::string& in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<uint8_t> out;
  int bits = 0, acc = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) continue;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t((acc >> bits) & 0xFF));
    }
  }
  return out;
}

inline const Reference& reference() {
  static const Reference ref = [] {
    Reference r;
    const char* env = std::getenv("SLUICE_ENCODER_REFERENCE");
    r.path = env && *env ? env : std::string(SLUICE_SOURCE_DIR) + "/tests/inference/encoder/reference.json";
    std::ifstream in(r.path);
    std::stringstream s;
    s << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(s.str());
    r.tokens = j.at("tokens");
    for (const auto& v : j.at("vectors")) {
      const std::vector<uint8_t> bytes = base64_decode(v.at("f32le_base64").get<std::string>());
      ReferenceVector rv{v.at("text").get<std::string>(), std::vector<float>(bytes.size() / 4)};
      std::memcpy(rv.values.data(), bytes.data(), bytes.size());
      r.vectors.push_back(std::move(rv));
    }
    return r;
  }();
  return ref;
}

}  // namespace sluice::inference::testing
