// Lookup cost of the answer caches at N cached entries (default 100,000), one thread, the
// store's own mutex taken as in service:
//
//   exact hit      request_cache_key() of a two-message chat request + ExactStore::find
//   exact miss     the same for a question never stored
//   semantic       question_features() + SemanticStore::find (8 candidates, threshold 0.93),
//                  the query vector given (the embedding excluded)
//   semantic+embed the same with the USE-lite embedding of the question included (needs the
//                  encoder at default_encoder_path(); skipped, and said so, without it)
//
// All N semantic entries are in one scope, the worst case (a lookup searches only its scope's
// index). Their vectors are synthetic: 1,000 Gaussian cluster centres in 512 dimensions, each
// entry = centre + noise, L2-normalised (so the HNSW graph has the clustered shape of real
// question embeddings without embedding 100,000 questions); each semantic query is a stored
// entry's vector with a little noise, so the candidates and the guards run as on a hit.
// Prints p50, p99 and max in microseconds per kind. Usage: bench_cache_lookup [N] [queries]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "inference/encoder/encoder_location.h"
#include "inference/encoder/shared_encoders.h"
#include "nodes/cache/cache_key.h"
#include "nodes/cache/exact_store.h"
#include "nodes/cache/semantic_store.h"
#include "nodes/retrieval/dense/embedder.h"

using namespace sluice;
using namespace sluice::cache;
using BenchClock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kDim = 512;

const char* const kVerbs[] = {"configure", "reset", "enable", "rotate", "back up", "monitor", "scale", "upgrade"};
const char* const kThings[] = {"the API gateway", "my account", "dark mode", "TLS certificates", "the database",
                               "the build cache", "webhooks", "the search index", "billing alerts", "SSO"};

// A distinct, realistic question per i (the numbers keep them distinct and give the guards work).
std::string question(std::size_t i) {
  return std::string("How do I ") + kVerbs[i % 8] + " " + kThings[(i / 8) % 10] + " for project " +
         std::to_string(i / 80) + "?";
}

RequestPtr chat(const std::string& q) {
  RequestInput in;
  in.kind = RequestInput::Kind::kChat;
  in.model = "sluice";
  in.messages = {{"system", "Answer from the documentation; cite your sources."}, {"user", q}};
  return std::make_shared<Request>(1, std::move(in), nullptr);
}

std::shared_ptr<const CachedAnswer> answer(Nanos now) {
  auto a = std::make_shared<CachedAnswer>();
  a->parts.push_back({false, "", std::string(600, 'x')});
  a->parts.push_back({true, "sources", R"([{"title":"Operations","source":"operations.md"}])"});
  a->kb_version = 3;
  a->cited = {"operations.md#0123456789abcdef"};
  a->created = now;
  return a;
}

struct Percentiles {
  double p50, p99, max;
};
Percentiles percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)], us.back()};
}
void print(const char* what, const std::vector<double>& us) {
  const Percentiles p = percentiles(us);
  std::printf("%-16s p50 %8.2f us   p99 %8.2f us   max %8.2f us   (%zu lookups)\n", what, p.p50, p.p99, p.max, us.size());
}
template <typename F>
double time_us(F&& f) {
  const auto t0 = BenchClock::now();
  f();
  return std::chrono::duration<double, std::micro>(BenchClock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
  const std::size_t queries = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20'000;
  SteadyClock clock;
  StoreLimits limits;
  limits.max_bytes = std::size_t{8} << 30;  // nothing is evicted: the bench measures lookups at n entries
  const CacheIdentity id{"default", "0123456789abcdef", "fp_bench"};
  std::mt19937_64 rng(42);

  // Exact.
  ExactStore exact(limits, clock);
  auto t0 = BenchClock::now();
  for (std::size_t i = 0; i < n; ++i) exact.put(request_cache_key(*chat(question(i)), id), "", answer(clock.now()));
  std::printf("entries %zu; exact fill %.1f s\n", n, std::chrono::duration<double>(BenchClock::now() - t0).count());
  std::vector<RequestPtr> asked, unknown;
  for (std::size_t q = 0; q < queries; ++q) {
    asked.push_back(chat(question(rng() % n)));
    unknown.push_back(chat(question(n + q)));
  }
  std::vector<double> hit_us, miss_us;
  std::size_t found = 0;
  for (std::size_t q = 0; q < queries; ++q) {
    hit_us.push_back(time_us([&] { found += exact.find(request_cache_key(*asked[q], id)) != nullptr; }));
    miss_us.push_back(time_us([&] { found += exact.find(request_cache_key(*unknown[q], id)) != nullptr; }));
  }
  if (found != queries) std::printf("error: %zu of %zu exact lookups found an entry\n", found, queries);
  print("exact hit", hit_us);
  print("exact miss", miss_us);

  // Semantic.
  SemanticStore semantic(limits, clock, kDim);
  std::normal_distribution<float> g;
  std::vector<float> centres(1000 * kDim);
  for (float& c : centres) c = g(rng);
  std::vector<float> vectors(n * kDim);
  for (std::size_t i = 0; i < n; ++i) {
    const float* c = centres.data() + (rng() % 1000) * kDim;
    for (std::size_t j = 0; j < kDim; ++j) vectors[i * kDim + j] = c[j] + 0.5f * g(rng);
  }
  retrieval::l2_normalize_rows(vectors.data(), n, kDim);
  const std::string scope = semantic_scope(*chat("q"), id);
  t0 = BenchClock::now();
  for (std::size_t i = 0; i < n; ++i) semantic.put(scope, "", question(i), vectors.data() + i * kDim, answer(clock.now()));
  std::printf("semantic fill %.1f s\n", std::chrono::duration<double>(BenchClock::now() - t0).count());
  std::vector<float> query(kDim);
  std::vector<double> sem_us;
  std::size_t hits = 0;
  for (std::size_t q = 0; q < queries; ++q) {
    const std::size_t i = rng() % n;
    for (std::size_t j = 0; j < kDim; ++j) query[j] = vectors[i * kDim + j] + 0.01f * g(rng);
    retrieval::l2_normalize_rows(query.data(), 1, kDim);
    const std::string text = question(i);
    sem_us.push_back(time_us([&] { hits += semantic.find(scope, query.data(), question_features(text), 0.93f, 8).answer != nullptr; }));
  }
  print("semantic", sem_us);
  std::printf("semantic hits %zu of %zu\n", hits, queries);

  const std::string path = inference::default_encoder_path();
  if (!std::filesystem::exists(path)) {
    std::printf("semantic+embed   skipped: no encoder at %s (scripts/setup-encoder)\n", path.c_str());
    return 0;
  }
  auto encoder = inference::shared_sentence_encoder(path, 0);  // as the semantic_cache node makes it
  std::vector<double> embed_us;
  const std::size_t embedded = std::min<std::size_t>(queries, 2000);
  for (std::size_t q = 0; q < embedded; ++q) {
    const std::string text = question(rng() % n);
    embed_us.push_back(time_us([&] {
      encoder->embed({text}, query.data());
      semantic.find(scope, query.data(), question_features(text), 0.93f, 8);
    }));
  }
  print("semantic+embed", embed_us);
  return 0;
}
