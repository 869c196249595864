// What a failure inside the serving engine costs: a request's own code (its callbacks) ends
// that request alone; a failed forward pass ends the batch it ran, and the engine serves on.
// Both are bugs, so both are counted and logged with the request ids they end.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>

#include "inference/engine/engine_scheduler.h"
#include "inference/engine/serving_engine.h"
#include "kernels/backend_factory.h"
#include "tests/inference/stories_model_test.h"

namespace sluice::inference {
namespace {

using Steady = std::chrono::steady_clock;

struct EngineFailureTest : testing::StoriesModelTest {
  struct Out {
    std::string streamed;
    GenerationResult result;
    int finishes = 0;
  };
  static GenerationRequest request(const std::string& prompt, int max_tokens, Out* out, std::string id) {
    GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.request_id = std::move(id);
    r.on_text = [out](std::string_view s) { out->streamed += s; };
    r.on_finish = [out](const GenerationResult& res) {
      ++out->finishes;
      out->result = res;
    };
    return r;
  }
};

// Four requests share every step; three of them carry a callback that throws at a different
// point. Each of those ends alone, with kError and the error naming the callback; the healthy
// one gets exactly its tokens alone, and no step throws.
TEST_F(EngineFailureTest, ARequestsThrowingCallbackEndsThatRequestOnly) {
  EngineScheduler s(*model, EngineOptions{});
  std::vector<std::pair<std::string, std::string>> failures;
  s.on_sequence_failure = [&](const std::string& id, const std::string& error) { failures.emplace_back(id, error); };
  Out good, text_bug, stop_bug, finish_bug;
  ASSERT_TRUE(s.add(request("The cat sat", 40, &good, "good"), Steady::now()).ok());
  GenerationRequest a = request("Once upon a time", 40, &text_bug, "text-bug");
  int pieces = 0;
  a.on_text = [&](std::string_view) {
    if (++pieces == 3) throw std::runtime_error("on_text bug");
  };
  ASSERT_TRUE(s.add(std::move(a), Steady::now()).ok());
  GenerationRequest b = request("One day", 40, &stop_bug, "stop-bug");
  int polls = 0;
  b.should_stop = [&] {
    if (++polls == 5) throw std::logic_error("should_stop bug");
    return false;
  };
  ASSERT_TRUE(s.add(std::move(b), Steady::now()).ok());
  GenerationRequest c = request("She was happy", 10, &finish_bug, "finish-bug");
  c.on_finish = [&](const GenerationResult& res) {
    ++finish_bug.finishes;
    finish_bug.result = res;
    throw std::runtime_error("on_finish bug");
  };
  ASSERT_TRUE(s.add(std::move(c), Steady::now()).ok());

  for (int i = 0; i < 1000 && !s.idle(); ++i) ASSERT_NO_THROW(s.step());
  ASSERT_TRUE(s.idle());

  EXPECT_EQ(good.finishes, 1);
  EXPECT_EQ(good.result.finish, FinishReason::kLength);
  EXPECT_EQ(good.result.text, alone("The cat sat", 40));
  EXPECT_EQ(good.streamed, good.result.text);

  EXPECT_EQ(text_bug.finishes, 1);
  EXPECT_EQ(text_bug.result.finish, FinishReason::kError);
  EXPECT_NE(text_bug.result.error.find("on_text callback threw: on_text bug"), std::string::npos) << text_bug.result.error;
  EXPECT_EQ(stop_bug.finishes, 1);
  EXPECT_EQ(stop_bug.result.finish, FinishReason::kError);
  EXPECT_NE(stop_bug.result.error.find("should_stop callback threw: should_stop bug"), std::string::npos)
      << stop_bug.result.error;
  EXPECT_EQ(finish_bug.finishes, 1);
  EXPECT_EQ(finish_bug.result.finish, FinishReason::kLength);  // it had finished: only its report threw

  ASSERT_EQ(failures.size(), 3u);
  std::map<std::string, std::string> by_id(failures.begin(), failures.end());
  EXPECT_NE(by_id["text-bug"].find("on_text bug"), std::string::npos);
  EXPECT_NE(by_id["stop-bug"].find("should_stop bug"), std::string::npos);
  EXPECT_NE(by_id["finish-bug"].find("on_finish callback threw: on_finish bug"), std::string::npos);
  EXPECT_EQ(s.kv_stats().in_use, 0);
}

// The same through the serving engine: the failing request answers with an error, its batch
// mate streams on to its full answer, and the failure is logged by request id and counted as a
// request failure, not a step failure.
TEST_F(EngineFailureTest, TheServingEngineEndsOnlyTheFailingRequestAndCountsIt) {
  MetricsRegistry metrics;
  ServingEngine engine(*model, EngineOptions{}, &metrics);
  std::mutex mu;
  std::condition_variable cv;
  GenerationResult good_result, bad_result;
  int finished = 0;
  auto into = [&](GenerationResult* slot) {
    return [&, slot](const GenerationResult& res) {
      std::lock_guard lock(mu);
      *slot = res;
      ++finished;
      cv.notify_all();
    };
  };
  std::string good_text;
  GenerationRequest good;
  good.prompt = "The cat sat";
  good.sampling.temperature = 0;
  good.max_tokens = 60;
  good.request_id = "chatcmpl-40";
  good.on_text = [&](std::string_view piece) { good_text += piece; };
  good.on_finish = into(&good_result);
  GenerationRequest bad = good;
  bad.prompt = "Once upon a time";
  bad.request_id = "chatcmpl-41";
  bad.on_text = [](std::string_view) { throw std::runtime_error("callback bug"); };
  bad.on_finish = into(&bad_result);
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(engine.submit(std::move(good)).ok());
  ASSERT_TRUE(engine.submit(std::move(bad)).ok());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 2; }));
  }
  engine.stop();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("request chatcmpl-41 ends with an error: sampling or its on_text callback threw: callback bug"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("chatcmpl-40"), std::string::npos) << log;
  EXPECT_EQ(bad_result.finish, FinishReason::kError);
  EXPECT_NE(bad_result.error.find("callback bug"), std::string::npos) << bad_result.error;
  EXPECT_EQ(good_result.finish, FinishReason::kLength);
  EXPECT_EQ(good_text, alone("The cat sat", 60));
  const std::string exposition = metrics.exposition();
  EXPECT_NE(exposition.find("sluice_engine_sequence_failures_total{model=\"\"} 1"), std::string::npos) << exposition;
  EXPECT_NE(exposition.find("sluice_engine_step_failures_total{model=\"\"} 0"), std::string::npos) << exposition;
}

// A CPU backend that fails its matmuls while armed: a fault in the shared forward pass.
class FailingBackend final : public kernels::KernelBackend {
 public:
  std::atomic<bool> armed{false};
  void matmul(const kernels::MatrixView& w, const float* x, int64_t n, float* y) override {
    if (armed) throw std::runtime_error("device fault");
    cpu_->matmul(w, x, n, y);
  }
  void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out) override {
    cpu_->rms_norm(x, weight, n, dim, eps, out);
  }
  void rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base) override {
    cpu_->rope(x, n, n_heads, head_dim, n_rot, pos0, freq_base);
  }
  void swiglu(float* gate, const float* up, int64_t count) override { cpu_->swiglu(gate, up, count); }
  void kv_store(const kernels::KvLayerView& kv, const int32_t* table, int64_t pos0, int64_t n, const float* k,
                const float* v) override {
    cpu_->kv_store(kv, table, pos0, n, k, v);
  }
  void attention(const float* q, const kernels::KvLayerView& kv, const int32_t* table, int64_t pos0, int64_t n,
                 const kernels::AttentionShape& shape, float* out) override {
    cpu_->attention(q, kv, table, pos0, n, shape, out);
  }
  void add(float* x, const float* y, int64_t count) override { cpu_->add(x, y, count); }
  void get_row(const kernels::MatrixView& w, int64_t row, float* out) override { cpu_->get_row(w, row, out); }

 private:
  std::unique_ptr<kernels::KernelBackend> cpu_ = kernels::make_backend(kernels::BackendOptions{});
};

// A forward pass that throws fails the batch it ran (it cannot be pinned on one request): each
// of its requests ends with kError, their ids are logged, the step failure is counted, and the
// engine serves the next request normally once the fault is gone.
TEST_F(EngineFailureTest, AFailedForwardPassEndsItsBatchAndTheEngineServesOn) {
  MetricsRegistry metrics;
  FailingBackend backend;
  backend.armed = true;
  ServingEngine engine(*model, EngineOptions{}, backend, &metrics);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<GenerationResult> results;
  auto collect = [&](const GenerationResult& res) {
    std::lock_guard lock(mu);
    results.push_back(res);
    cv.notify_all();
  };
  GenerationRequest r;
  r.prompt = "Once upon a time";
  r.sampling.temperature = 0;
  r.max_tokens = 12;
  r.request_id = "chatcmpl-41";
  r.on_finish = collect;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(engine.submit(r).ok());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return results.size() == 1; }));
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("a step failed: device fault"), std::string::npos) << log;
  EXPECT_NE(log.find("end with an error: chatcmpl-41"), std::string::npos) << log << "(the log names the request)";
  EXPECT_EQ(results[0].finish, FinishReason::kError);
  EXPECT_NE(results[0].error.find("device fault"), std::string::npos) << results[0].error;

  backend.armed = false;
  std::string text;
  r.request_id = "chatcmpl-42";
  r.prompt = "The cat sat";
  r.on_text = [&](std::string_view piece) { text += piece; };
  ASSERT_TRUE(engine.submit(r).ok());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return results.size() == 2; }));
  }
  engine.stop();
  EXPECT_EQ(results[1].finish, FinishReason::kLength);
  EXPECT_EQ(text, alone("The cat sat", 12));
  EXPECT_EQ(engine.kv_stats().in_use, 0);
  EXPECT_NE(metrics.exposition().find("sluice_engine_step_failures_total{model=\"\"} 1"), std::string::npos)
      << metrics.exposition();
}

}  // namespace
}  // namespace sluice::inference
