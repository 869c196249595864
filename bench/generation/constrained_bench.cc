// constrained_bench: what constrained decoding (inference/constrain/) costs (docs/benchmarks.md,
// "Structured outputs"). For each model given:
//
//  1. The vocabulary trie: nodes and build time (once per model, at the first constrained request).
//  2. The per-step mask, median over --reps calls, in the grammar states an answer passes
//     through: the document's start, a fixed object key, a string value's body (most of an
//     answer's tokens; most of the trie passes), a number, and json_object's free keys.
//  3. End to end on the engine, one greedy sequence: ms per generated token constrained to a
//     schema vs free text (ignore_eos, the same number of tokens), and the share of the step the
//     mask takes.
//
//   constrained_bench [--reps 200] [--tokens 96] [-t 2] MODEL.gguf...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inference/constrain/token_mask.h"
#include "inference/engine/engine_scheduler.h"
#include "inference/llama/llama_model.h"

using namespace sluice;
using namespace sluice::inference;
using Steady = std::chrono::steady_clock;

namespace {

double secs(Steady::time_point a, Steady::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

constexpr const char* kSchema = R"({"type":"object","properties":{
    "name":{"type":"string"},"age":{"type":"integer"},"happy":{"type":"boolean"},
    "friends":{"type":"array","items":{"type":"string"}},"mood":{"enum":["glad","sad","sleepy"]}},
    "required":["name","age","happy","friends","mood"],"additionalProperties":false})";

std::shared_ptr<const constrain::JsonGrammar> schema_grammar() {
  constrain::GrammarError e;
  return constrain::JsonGrammar::compile(nlohmann::ordered_json::parse(kSchema), "schema", &e);
}

// Median ms per generated token of one greedy sequence of `tokens` tokens (constrained: until
// the document closes, which the budget rule makes happen by `tokens`).
double ms_per_token(const LlamaModel& model, int threads, int tokens, bool constrained, int* generated) {
  EngineOptions o;
  o.threads = threads;
  EngineScheduler s(model, o);
  GenerationRequest r;
  r.prompt = "Lily was a little girl. She had a friend.";
  r.max_tokens = tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = !constrained;
  if (constrained) r.grammar = schema_grammar();
  GenerationResult res;
  r.on_finish = [&](const GenerationResult& g) { res = g; };
  (void)s.add(std::move(r), Steady::now());
  while (!s.idle()) s.step();
  *generated = res.completion_tokens;
  return res.completion_tokens > 0 ? 1e3 * (res.total_seconds - res.ttft_seconds) / std::max(1, res.completion_tokens - 1) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 200, tokens = 96, threads = 2;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "-t") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else models.push_back(argv[i]);
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: constrained_bench [--reps 200] [--tokens 96] [-t 2] MODEL.gguf...\n");
    return 2;
  }
  auto schema = schema_grammar();
  auto any = constrain::JsonGrammar::any_object();
  struct State {
    const char* name;
    std::shared_ptr<const constrain::JsonGrammar> grammar;
    const char* prefix;
  };
  const State states[] = {
      {"document start", schema, ""},
      {"fixed key (after '{')", schema, "{"},
      {"string body", schema, R"({"name": "Lily and)"},
      {"number", schema, R"({"name": "Lily", "age": 4)"},
      {"json_object free key", any, R"({"colour": "red", ")"},
  };
  for (const std::string& path : models) {
    auto model = LlamaModel::load(path);
    const Tokenizer& tok = model->tokenizer();
    std::vector<std::string> pieces(size_t(tok.vocab_size()));
    for (int32_t id = 0; id < tok.vocab_size(); ++id) pieces[size_t(id)] = std::string(tok.piece(-1, id));
    const auto t0 = Steady::now();
    auto trie = std::make_shared<const constrain::VocabTrie>(pieces);
    const double build_ms = 1e3 * secs(t0, Steady::now());
    std::printf("model %s: vocabulary %d tokens, trie %zu nodes built in %.2f ms\n\n", path.c_str(), tok.vocab_size(),
                trie->node_count(), build_ms);
    std::printf("| state | allowed tokens | mask us (median of %d) |\n| --- | --- | --- |\n", reps);
    std::vector<float> logits(size_t(tok.vocab_size()));
    for (const State& st : states) {
      constrain::TokenConstraint c(st.grammar, trie, {tok.eos()});
      if (!c.accept(st.prefix)) {
        std::fprintf(stderr, "prefix %s refused\n", st.prefix);
        return 1;
      }
      std::vector<double> us;
      size_t allowed = 0;
      for (int i = 0; i < reps; ++i) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        const auto a = Steady::now();
        allowed = c.mask(logits, 1000);
        us.push_back(1e6 * secs(a, Steady::now()));
      }
      std::printf("| %s | %zu | %.1f |\n", st.name, allowed, median(us));
    }
    std::vector<double> free_ms, constrained_ms;
    int free_n = 0, constrained_n = 0;
    for (int rep = 0; rep < 5; ++rep) {  // alternated, so drift hits both alike
      free_ms.push_back(ms_per_token(*model, threads, tokens, false, &free_n));
      constrained_ms.push_back(ms_per_token(*model, threads, tokens, true, &constrained_n));
    }
    const double f = median(free_ms), c = median(constrained_ms);
    std::printf("\nengine, 1 greedy sequence, %d threads: free text %.3f ms/token (%d tokens), constrained %.3f ms/token (%d tokens), "
                "ratio %.2f\n\n",
                threads, f, free_n, c, constrained_n, c / f);
  }
  return 0;
}
