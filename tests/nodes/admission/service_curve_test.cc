// The service_curve harness under a latency budget's shrink: a shrunk request is answered after
// factor x its batch's time, before the batch's full requests; a batch of only shrunk requests
// takes factor x its time. Checked by order and by the harness's own clock stamps, with a 0.25
// factor on a 200 ms curve so the gaps are far beyond scheduling noise.
#include "nodes/admission/service_curve.h"

#include <gtest/gtest.h>

#include <future>

#include "graph/request.h"

namespace sluice {
namespace {

class Silent : public ResponseSink {
 public:
  void on_token(std::string_view) override {}
  void on_complete(const Request&) override {}
};

RequestPtr request(std::uint64_t id, bool shrunk, std::uint16_t stage) {
  auto r = std::make_shared<Request>(id, RequestInput{}, std::make_shared<Silent>());
  r->trace().start(stage, 0, 0);
  if (shrunk) r->trace().degrade(stage, Degradation::kShrink);
  return r;
}

struct Harness {
  Harness() {
    config.mutable_base_time()->set_nanos(200'000'000);
    config.set_batch_cost(0);
    config.set_slots(1);
    config.set_text("ok");
    ctx.clock = &SteadyClock::instance();
    ctx.stage_index = 3;
    ctx.shrink_factor = 0.25;
    node = std::make_unique<ServiceCurveHarness>(config, ctx);
    node->start();
  }
  // Serves `batch` and returns when it is handed on, with its start time.
  Nanos serve(const BatchPtr& batch) {
    const Nanos start = SteadyClock::instance().now();
    std::promise<void> handed_on;
    node->start_batch(batch, [&](BatchPtr) { handed_on.set_value(); });
    handed_on.get_future().wait();
    return start;
  }
  ServiceCurveConfig config;
  NodeContext ctx;
  std::unique_ptr<ServiceCurveHarness> node;
};

TEST(ServiceCurveShrink, AShrunkRequestLeavesItsBatchEarly) {
  Harness h;
  auto batch = std::make_shared<Batch>();
  batch->requests = {request(1, false, 3), request(2, true, 3)};
  const Nanos start = h.serve(batch);
  const Nanos full = batch->requests[0]->completed_at - start;
  const Nanos shrunk = batch->requests[1]->completed_at - start;
  EXPECT_LT(shrunk, full);
  EXPECT_GE(full, 200'000'000);
  EXPECT_GE(shrunk, 50'000'000);
  EXPECT_LT(shrunk, 190'000'000) << "a quarter of 200 ms, well short of the full 200";
  EXPECT_TRUE(batch->requests[1]->status().ok());
}

TEST(ServiceCurveShrink, ABatchOfShrunkRequestsTakesTheFactorOfItsTime) {
  Harness h;
  auto batch = std::make_shared<Batch>();
  batch->requests = {request(1, true, 3), request(2, true, 3)};
  const Nanos start = h.serve(batch);
  const Nanos took = SteadyClock::instance().now() - start;
  EXPECT_GE(took, 50'000'000);
  EXPECT_LT(took, 190'000'000);
  // A shrink recorded for another stage is not this harness's.
  auto other = std::make_shared<Batch>();
  other->requests = {request(3, true, 2)};
  const Nanos s2 = h.serve(other);
  EXPECT_GE(other->requests[0]->completed_at - s2, 200'000'000);
}

}  // namespace
}  // namespace sluice
