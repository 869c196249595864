// encoder_bench: sentences per second of the USE-lite encoder at a batch size and thread
// count, and the latency of one batch (p50, p95), over the sentences of a JSON file.
//   encoder_bench --sentences FILE.json [--model M.gguf] [--threads N] [--batch B] [--repeat R]
//                 [--pass-tokens P]   (SentenceEncoderOptions::max_pass_tokens, default 2048)
// Prints one JSON line: {"threads","batch","sentences_per_s" (median of R rounds),
// "batch_ms_p50","batch_ms_p95","tokens_per_sentence"}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "inference/encoder/encoder_location.h"
#include "inference/encoder/sentence_encoder.h"

using namespace sluice::inference;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::string sentences_path, model_path = default_encoder_path();
  int threads = 1, batch = 1, repeat = 5, pass_tokens = SentenceEncoderOptions{}.max_pass_tokens;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--sentences") sentences_path = v;
    else if (a == "--model") model_path = v;
    else if (a == "--threads") threads = std::stoi(v);
    else if (a == "--batch") batch = std::stoi(v);
    else if (a == "--repeat") repeat = std::stoi(v);
    else if (a == "--pass-tokens") pass_tokens = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  const char* usage = "usage: encoder_bench --sentences FILE.json [--model M.gguf] [--threads N] [--batch B] [--repeat R] [--pass-tokens P]\n";
  std::ifstream in(sentences_path);
  if (sentences_path.empty() || !in) {
    std::fprintf(stderr, "encoder_bench: cannot read the sentences file '%s'\n%s", sentences_path.c_str(), usage);
    return 2;
  }
  std::stringstream s;
  s << in.rdbuf();
  const auto doc = nlohmann::json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_array() || !std::all_of(doc.begin(), doc.end(), [](const auto& v) { return v.is_string(); })) {
    std::fprintf(stderr, "encoder_bench: %s is not a JSON array of strings (make_sentences.mjs writes one)\n",
                 sentences_path.c_str());
    return 2;
  }
  const auto texts = doc.get<std::vector<std::string>>();
  if (texts.empty() || batch < 1 || threads < 1 || repeat < 1) {
    std::fprintf(stderr, "encoder_bench: no sentences, or a batch, thread or repeat count below 1\n%s", usage);
    return 2;
  }
  auto model = std::shared_ptr<const UseLiteModel>(UseLiteModel::load(model_path));
  SentenceEncoderOptions options;
  options.threads = threads;
  options.max_pass_tokens = pass_tokens;
  SentenceEncoder encoder(model, options);
  size_t tokens = 0;
  for (const auto& t : texts) tokens += encoder.tokenize(t).size();
  std::vector<float> out(size_t(batch) * size_t(encoder.dimension()));
  std::vector<double> rates, batch_ms;
  // Warm-up: one batch.
  encoder.embed(std::vector<std::string>(texts.begin(), texts.begin() + std::min<size_t>(size_t(batch), texts.size())), out.data());
  for (int r = 0; r < repeat; ++r) {
    size_t done = 0;
    const auto t0 = Clock::now();
    // Every sentence once per round, in batches of `batch` (at least 256 sentences a round).
    for (size_t at = 0; done < std::max<size_t>(texts.size(), 256);) {
      std::vector<std::string> group;
      for (int k = 0; k < batch; ++k) group.push_back(texts[(at++) % texts.size()]);
      const auto b0 = Clock::now();
      encoder.embed(group, out.data());
      batch_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - b0).count());
      done += group.size();
    }
    rates.push_back(double(done) / std::chrono::duration<double>(Clock::now() - t0).count());
  }
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
  };
  nlohmann::json j = {{"threads", threads}, {"batch", batch}, {"sentences_per_s", quantile(rates, 0.5)},
                      {"batch_ms_p50", quantile(batch_ms, 0.5)}, {"batch_ms_p95", quantile(batch_ms, 0.95)},
                      {"tokens_per_sentence", double(tokens) / double(texts.size())}};
  std::cout << j.dump() << "\n";
  return 0;
}
