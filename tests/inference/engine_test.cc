// EngineScheduler and ServingEngine on the real stories260K model: continuous batching gives
// every sequence exactly the tokens it gets alone; sequences join and leave per step; chunked
// prefill; preemption and resumption are exact; prefix reuse skips prefill without changing
// output; forged hash collisions are harmless; cancellation frees blocks; many concurrent
// submitters all complete exactly once. The same exactness on rand15M (wider heads) with F32
// and F16 KV.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "inference/engine/engine_scheduler.h"
#include "inference/engine/serving_engine.h"
#include "inference/llama/generator.h"
#include "tests/inference/stories_model_test.h"
#include "tests/support/test_models.h"

namespace sluice::inference {
namespace {

using testing::shared_model;
using Steady = std::chrono::steady_clock;

const std::vector<std::string> kPrompts = {"Once upon a time", "The cat sat", "Lily and Ben went to the park",
                                           "One day", "Tom had a big red ball", "She was happy"};

struct EngineTest : testing::StoriesModelTest {
  struct Out {
    std::string streamed;
    GenerationResult result;
    bool finished = false;
    int finish_order = -1;  // 0 for the first sequence to finish in this test, 1 next, ...
  };
  int finished_so_far = 0;
  GenerationRequest request(const std::string& prompt, int max_tokens, Out* out, int priority = 0,
                        SamplingParams sampling = greedy()) {
    GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.sampling = sampling;
    r.priority = priority;
    r.on_text = [out](std::string_view s) { out->streamed += s; };
    r.on_finish = [this, out](const GenerationResult& res) {
      EXPECT_FALSE(out->finished) << "finished twice";
      out->finished = true;
      out->finish_order = finished_so_far++;
      out->result = res;
    };
    return r;
  }
  static void run_until_idle(EngineScheduler& s, int max_steps = 10000) {
    for (int i = 0; i < max_steps && !s.idle(); ++i) s.step();
    ASSERT_TRUE(s.idle());
  }
};

TEST_F(EngineTest, ContinuousBatchingGivesEachSequenceItsTokensAlone) {
  EngineOptions o;
  EngineScheduler s(*model, o);
  std::vector<Out> outs(kPrompts.size());
  // Staggered arrivals: some join while others are mid-generation.
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(s.add(request(kPrompts[i], 60, &outs[i]), Steady::now()).ok());
  for (int k = 0; k < 7; ++k) s.step();
  for (size_t i = 3; i < kPrompts.size(); ++i) ASSERT_TRUE(s.add(request(kPrompts[i], 60, &outs[i]), Steady::now()).ok());
  run_until_idle(s);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    ASSERT_TRUE(outs[i].finished);
    EXPECT_EQ(outs[i].result.text, alone(kPrompts[i], 60)) << kPrompts[i];
    EXPECT_EQ(outs[i].streamed, outs[i].result.text);
  }
  EXPECT_EQ(s.kv_stats().in_use, 0);
}

TEST_F(EngineTest, SampledSequencesAreReproducibleInABatch) {
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.seed = 7;
  EngineScheduler s(*model, EngineOptions{});
  Out a, b;
  s.add(request("Once upon a time", 50, &a, 0, sp), Steady::now());
  s.add(request("The dog", 50, &b, 0, sp), Steady::now());
  run_until_idle(s);
  EXPECT_EQ(a.result.text, alone("Once upon a time", 50, sp));
  EXPECT_EQ(b.result.text, alone("The dog", 50, sp));
}

TEST_F(EngineTest, ReproducesTheReferenceGreedyOutput) {
  const std::string ref_path = std::string(SLUICE_SHARED_DIR) + "/models/stories260K.greedy-256.txt";
  SLUICE_REQUIRE_SHARED(ref_path);
  std::ifstream in(ref_path, std::ios::binary);
  const std::string ref((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EngineOptions o;
  o.context = 256;
  EngineScheduler s(*model, o);
  Out out, other;
  s.add(request("", 256, &out), Steady::now());
  s.add(request("Tom had a big red ball", 100, &other), Steady::now());  // batched beside it
  run_until_idle(s);
  EXPECT_EQ(out.result.text + "\n", ref);
}

TEST_F(EngineTest, SequencesJoinAndLeaveAtStepBoundaries) {
  EngineScheduler s(*model, EngineOptions{});
  Out a, b;
  s.add(request("Once upon a time", 3, &a), Steady::now());
  StepReport r1 = s.step();  // a: prefill + first token
  EXPECT_EQ(r1.admitted, 1);
  EXPECT_EQ(s.running(), 1u);
  s.add(request("The cat sat", 20, &b), Steady::now());
  StepReport r2 = s.step();  // b joins while a decodes
  EXPECT_EQ(r2.admitted, 1);
  EXPECT_EQ(r2.sequences, 2);
  EXPECT_EQ(r2.decode_tokens, 1);
  StepReport r3 = s.step();  // a's third token: it leaves in this very step
  EXPECT_EQ(r3.finished, 1);
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(a.result.completion_tokens, 3);
  EXPECT_EQ(a.result.finish, FinishReason::kLength);
  EXPECT_EQ(s.running(), 1u);
  run_until_idle(s);
  EXPECT_EQ(b.result.text, alone("The cat sat", 20));
}

TEST_F(EngineTest, ALongPromptIsPrefilledInChunksBetweenDecodeSteps) {
  EngineOptions o;
  o.interleaved_prefill = 16;
  EngineScheduler s(*model, o);
  std::string long_prompt;
  for (int i = 0; i < 12; ++i) long_prompt += "Once upon a time there was a little girl. ";
  Out runner, newcomer;
  s.add(request("The cat sat", 120, &runner), Steady::now());
  s.step();
  s.step();
  s.add(request(long_prompt, 20, &newcomer), Steady::now());
  int chunked_steps = 0;
  for (int i = 0; i < 100; ++i) {
    StepReport r = s.step();
    if (r.prefill_tokens == 0) break;  // the newcomer's prompt is in; it decodes from now on
    EXPECT_LE(r.prefill_tokens, 16);
    EXPECT_EQ(r.decode_tokens, 1) << "the running stream keeps its pace";
    ++chunked_steps;
  }
  EXPECT_GE(chunked_steps, 8);
  run_until_idle(s);
  EXPECT_EQ(newcomer.result.text, alone(long_prompt, 20));
  EXPECT_EQ(runner.result.text, alone("The cat sat", 120));
}

TEST_F(EngineTest, AnUrgentArrivalPreemptsOfflineWorkWhichResumesExactly) {
  EngineOptions o;
  o.max_running = 1;  // one slot: a P0 arrival must take it from the running P2
  EngineScheduler s(*model, o);
  SamplingParams sp;
  sp.temperature = 0.9f;
  sp.seed = 3;
  Out offline, urgent, later;
  s.add(request("Lily and Ben went to the park", 80, &offline, 2, sp), Steady::now());
  for (int i = 0; i < 10; ++i) s.step();
  ASSERT_GT(offline.result.completion_tokens + int(offline.streamed.size()), 0);
  s.add(request("The cat sat", 30, &urgent, 0), Steady::now());
  s.add(request("One day", 10, &later, 2), Steady::now());  // arrives after: must not overtake
  s.step();
  EXPECT_EQ(s.preemptions()[2], 1u);
  run_until_idle(s);
  EXPECT_EQ(offline.result.preemptions, 1);
  EXPECT_EQ(offline.result.text, alone("Lily and Ben went to the park", 80, sp));
  EXPECT_EQ(urgent.result.text, alone("The cat sat", 30));
  EXPECT_EQ(urgent.finish_order, 0);
  EXPECT_EQ(offline.finish_order, 1) << "resumed in its place, before what arrived after it";
  EXPECT_EQ(later.finish_order, 2);
}

TEST_F(EngineTest, RunningOutOfKvBlocksPreemptsTheLeastUrgent) {
  EngineOptions o;
  o.context = 128;
  o.block_size = 16;
  const size_t block_bytes = kv_block_bytes(model->config().n_layers,
                                            model->config().n_kv_heads * model->config().head_dim, 16, o.kv_type);
  o.kv_budget_bytes = 10 * block_bytes;  // 10 blocks: two long sequences cannot both fit
  EngineScheduler s(*model, o);
  Out p2, p0;
  s.add(request("Lily and Ben went to the park", 110, &p2, 2), Steady::now());
  for (int i = 0; i < 5; ++i) s.step();
  s.add(request("Tom had a big red ball", 110, &p0, 0), Steady::now());
  run_until_idle(s);
  EXPECT_GE(s.preemptions()[2], 1u);
  EXPECT_EQ(s.preemptions()[0], 0u);
  EXPECT_EQ(p2.result.text, alone("Lily and Ben went to the park", 110));
  EXPECT_EQ(p0.result.text, alone("Tom had a big red ball", 110));
  EXPECT_EQ(s.kv_stats().in_use, 0);
}

TEST_F(EngineTest, ACachedPrefixSkipsItsPrefillWithoutChangingTheOutput) {
  std::string system;
  for (int i = 0; i < 8; ++i) system += "You are a kind storyteller who tells short stories. ";
  EngineScheduler s(*model, EngineOptions{});
  Out first, second;
  s.add(request(system + "Tell me about a cat.", 30, &first), Steady::now());
  run_until_idle(s);
  s.add(request(system + "Tell me about a dog.", 30, &second), Steady::now());
  run_until_idle(s);
  EXPECT_EQ(first.result.reused_tokens, 0);
  EXPECT_GT(second.result.reused_tokens, 64);
  EXPECT_GT(s.kv_stats().prefix_hits, 0u);
  EXPECT_EQ(second.result.text, alone(system + "Tell me about a dog.", 30));
  // The same prompt again: everything but the last position comes from the cache.
  Out third;
  s.add(request(system + "Tell me about a dog.", 30, &third), Steady::now());
  run_until_idle(s);
  EXPECT_EQ(third.result.reused_tokens, third.result.prompt_tokens - 1);
  EXPECT_EQ(third.result.text, second.result.text);
}

// The prefix cache is scoped by tenant: another tenant's identical prompt is prefilled in full
// (no KV shared, nothing to learn from its timing), the same tenant's reuses it.
TEST_F(EngineTest, ATenantNeverReusesAnotherTenantsPrefix) {
  std::string prompt;
  for (int i = 0; i < 8; ++i) prompt += "You are a kind storyteller who tells short stories. ";
  EngineScheduler s(*model, EngineOptions{});
  Out a1, b1, a2;
  GenerationRequest r = request(prompt, 10, &a1);
  r.tenant = "team-a";
  s.add(std::move(r), Steady::now());
  run_until_idle(s);
  r = request(prompt, 10, &b1);
  r.tenant = "team-b";
  s.add(std::move(r), Steady::now());
  run_until_idle(s);
  r = request(prompt, 10, &a2);
  r.tenant = "team-a";
  s.add(std::move(r), Steady::now());
  run_until_idle(s);
  EXPECT_EQ(b1.result.reused_tokens, 0);
  // Whole blocks (16 tokens by default) of the same tenant's prompt are reused.
  EXPECT_GE(a2.result.reused_tokens, a2.result.prompt_tokens - 16);
  EXPECT_EQ(b1.result.text, a1.result.text);
  EXPECT_EQ(a2.result.text, a1.result.text);
}

TEST_F(EngineTest, ForgedHashCollisionsNeverServeAnotherPromptsKv) {
  EngineScheduler s(*model, EngineOptions{});
  s.set_chain_hash([](uint64_t, const int32_t*, int) { return uint64_t(1); });
  std::string a, b;
  for (int i = 0; i < 6; ++i) a += "The sun was warm and the sky was blue. ", b += "A big dog ran fast in the green park. ";
  Out oa, ob;
  s.add(request(a, 20, &oa), Steady::now());
  run_until_idle(s);
  s.add(request(b, 20, &ob), Steady::now());
  run_until_idle(s);
  EXPECT_GT(s.kv_stats().collisions_refused, 0u);
  // Every block hash collides; only a verified token run (here the shared BOS) may be reused.
  EXPECT_LT(ob.result.reused_tokens, 16);
  EXPECT_EQ(ob.result.text, alone(b, 20));
}

TEST_F(EngineTest, CancellationFreesBlocksAtTheNextStep) {
  EngineScheduler s(*model, EngineOptions{});
  std::atomic<bool> cancel{false};
  Out out;
  GenerationRequest r = request("Once upon a time", 200, &out);
  r.should_stop = [&] { return cancel.load(); };
  s.add(std::move(r), Steady::now());
  for (int i = 0; i < 5; ++i) s.step();
  EXPECT_GT(s.kv_stats().in_use, 0);
  cancel = true;
  s.step();
  EXPECT_TRUE(out.finished);
  EXPECT_EQ(out.result.finish, FinishReason::kCancelled);
  EXPECT_EQ(s.kv_stats().in_use, 0);
  EXPECT_TRUE(s.idle());
}

// Stopped while its prompt was being prefilled (a deadline that passed, a client gone): the
// sequence ends cancelled without its first token, so the client hears a status, not a
// stream that starts and breaks off. The first poll (the step's start) says go on; the one
// before the first token says stop.
TEST_F(EngineTest, ASequenceStoppedDuringItsPrefillGetsNoToken) {
  EngineScheduler s(*model, EngineOptions{});
  Out out;
  std::string streamed;
  GenerationRequest r = request("Once upon a time", 20, &out);
  int polls = 0;
  r.should_stop = [&] { return ++polls > 1; };
  r.on_text = [&](std::string_view t) { streamed += t; };
  s.add(std::move(r), Steady::now());
  s.step();
  EXPECT_EQ(polls, 2);
  EXPECT_TRUE(out.finished);
  EXPECT_EQ(out.result.finish, FinishReason::kCancelled);
  EXPECT_EQ(out.result.completion_tokens, 0);
  EXPECT_EQ(streamed, "");
  EXPECT_TRUE(s.idle());
}

TEST_F(EngineTest, RequestsThatCanNeverFitAreRefusedWithAReason) {
  EngineOptions o;
  o.context = 32;
  EngineScheduler s(*model, o);
  Out out;
  std::string long_prompt(400, 'a');
  const Status refused = s.add(request(long_prompt, 10, &out), Steady::now());
  EXPECT_EQ(refused.code, StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message.find("context holds 32"), std::string::npos) << refused.message;
  EXPECT_FALSE(out.finished);
}

TEST_F(EngineTest, ManyConcurrentSubmittersAllCompleteExactlyOnce) {
  EngineOptions o;
  o.max_running = 8;
  o.class_caps = {4, 4, 8};
  ServingEngine engine(*model, o);
  constexpr int kThreads = 4, kEach = 12;
  std::mutex mu;
  std::map<int, int> finished;
  std::map<int, std::string> texts;
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int id = t * kEach + i;
        GenerationRequest r;
        r.prompt = kPrompts[size_t(id) % kPrompts.size()];
        r.max_tokens = 10 + id % 20;
        r.sampling.temperature = 0;
        r.priority = id % 3;
        r.on_finish = [&, id](const GenerationResult& res) {
          std::lock_guard lock(mu);
          ++finished[id];
          texts[id] = res.text;
        };
        if (!engine.submit(std::move(r)).ok()) ++refused;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < 2000; ++i) {
    {
      std::lock_guard lock(mu);
      if (int(finished.size()) + refused == kThreads * kEach) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  engine.stop();
  EXPECT_EQ(refused, 0);
  ASSERT_EQ(int(finished.size()), kThreads * kEach);
  for (auto& [id, n] : finished) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(texts[5], alone(kPrompts[5], 15));
  EXPECT_EQ(engine.kv_stats().in_use, 0);
}

TEST_F(EngineTest, StopFinishesQueuedAndRunningWorkAsShutdown) {
  ServingEngine engine(*model, EngineOptions{});
  std::atomic<int> shutdown{0}, total{0};
  for (int i = 0; i < 20; ++i) {
    GenerationRequest r;
    r.prompt = "Once upon a time";
    r.max_tokens = 200;
    r.on_finish = [&](const GenerationResult& res) {
      ++total;
      shutdown += res.finish == FinishReason::kShutdown;
    };
    ASSERT_TRUE(engine.submit(std::move(r)).ok());
  }
  engine.stop();
  EXPECT_EQ(total, 20);
  EXPECT_GT(shutdown, 0);
  EXPECT_FALSE(engine.submit(GenerationRequest{}).ok());
}

// rand15M's 48-wide heads exercise the flash-style attention tiles (kernels/cpu/attention_avx2.cc)
// with two-vector feature slices, on F32 and F16 KV pools: a sequence's tokens do not depend on
// its batch mates, on how its prompt was chunked, or on a preemption.
struct TiledAttentionEngineTest : ::testing::Test {
  static std::unique_ptr<LlamaModel> model;
  static void SetUpTestSuite() {
    const std::string path = shared_model("peer/rand15M-q8_0.gguf");
    if (std::filesystem::exists(path)) model = LlamaModel::load(path);
  }
  void SetUp() override {
    if (!model) GTEST_SKIP() << "needs " << shared_model("peer/rand15M-q8_0.gguf") << " (../shared)";
  }
  static std::vector<int32_t> prompt(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t{model->tokenizer().bos()};
    while (int(t.size()) < n) t.push_back(int32_t(3 + rng() % uint32_t(model->config().vocab_size - 3)));
    return t;
  }
  static GenerationRequest request(std::vector<int32_t> tokens, int max_tokens, std::string* text, int priority = 0) {
    GenerationRequest r;
    r.prompt_tokens = std::move(tokens);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    r.priority = priority;
    r.on_finish = [text](const GenerationResult& res) { *text = res.text; };
    return r;
  }
  static std::string alone(std::vector<int32_t> tokens, int max_tokens, kernels::DType kv_type) {
    EngineOptions o;
    o.interleaved_prefill = 512;
    o.kv_type = kv_type;
    EngineScheduler s(*model, o);
    std::string text;
    s.add(request(std::move(tokens), max_tokens, &text), Steady::now());
    while (!s.idle()) s.step();
    return text;
  }
};
std::unique_ptr<LlamaModel> TiledAttentionEngineTest::model;

TEST_F(TiledAttentionEngineTest, BatchedChunkedAndResumedSequencesGetTheirTokensAlone) {
  ASSERT_EQ(model->config().head_dim % 16, 0) << "this test is about the tiled attention path";
  for (kernels::DType kv_type : {kernels::DType::kF32, kernels::DType::kF16}) {
  EngineOptions o;
  o.kv_type = kv_type;
  o.threads = 2;
  o.interleaved_prefill = 7;  // chunks that straddle query tiles and KV blocks
  o.prefill_itl_slack = 0;
  o.max_running = 3;          // the P0 arrival preempts a P2 sequence, which later resumes
  EngineScheduler s(*model, o);
  const std::vector<int> lengths = {45, 70, 100, 37};
  std::vector<std::string> texts(lengths.size());
  for (size_t i = 0; i < 3; ++i) s.add(request(prompt(lengths[i], uint32_t(i)), 24, &texts[i], 2), Steady::now());
  for (int k = 0; k < 12; ++k) s.step();
  s.add(request(prompt(lengths[3], 3), 24, &texts[3], 0), Steady::now());
  while (!s.idle()) s.step();
  EXPECT_GE(s.preemptions()[2], 1u);
  for (size_t i = 0; i < lengths.size(); ++i)
    EXPECT_EQ(texts[i], alone(prompt(lengths[i], uint32_t(i)), 24, kv_type)) << "KV type " << int(kv_type) << " " << i;
  }
}

}  // namespace
}  // namespace sluice::inference
