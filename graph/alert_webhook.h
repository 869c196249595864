// AlertWebhook: posts stage alerts to AlertsSpec.webhook as JSON, on its own thread.
//
// Contract:
//  - notify() never blocks on the network: it records the stage's latest state and wakes the
//    poster;
//  - per stage at most one post per `min_interval`; changes in between collapse into the latest
//    state, posted once the interval has passed since the last post (so the receiver always ends
//    on the current state); a failed post is retried after the same interval; a state equal to
//    the last one delivered is not posted again;
//  - the body is one JSON object: {"alert":"SluiceStageOverBudget","status":"firing"|"resolved",
//    "pipeline","stage","p95_seconds","budget_seconds","window_batches","time" (RFC 3339 UTC)};
//  - bounded: one pending state per stage (a pipeline has a fixed set of stages);
//  - measured: sluice_alert_webhook_posts_total{result="sent"|"failed"} and
//    sluice_alert_webhook_collapsed_total (changes replaced before they were posted); each
//    failure is logged once per outage ("sluice: alert webhook ..."), and the recovery once;
//  - the destructor stops the thread after the post in progress (at most `timeout`); states not
//    yet posted are dropped.
#pragma once

#include <map>
#include <string>
#include <thread>

#include "graph/alert.h"
#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/mutex.h"

namespace sluice {

struct AlertWebhookOptions {
  std::string url;
  Nanos min_interval = 60 * kNanosPerSecond;
  Nanos timeout = 5 * kNanosPerSecond;
};

// The JSON body posted for `alert` at wall-clock `unix_seconds`.
std::string alert_json(const StageAlert& alert, double unix_seconds);

class AlertWebhook final : public AlertSink {
 public:
  AlertWebhook(AlertWebhookOptions options, MetricsRegistry& metrics);
  ~AlertWebhook() override;
  AlertWebhook(const AlertWebhook&) = delete;
  AlertWebhook& operator=(const AlertWebhook&) = delete;

  void notify(const StageAlert& alert) override;

 private:
  struct StageState {
    StageAlert latest;
    bool pending = false;          // `latest` not delivered yet
    bool delivered_firing = false; // the state the receiver has
    bool delivered_any = false;
    Nanos last_post = 0;           // monotonic; 0: never
  };
  void run();

  const AlertWebhookOptions options_;
  Counter* sent_;
  Counter* failed_;
  Counter* collapsed_;
  Mutex mu_;
  CondVar wake_;
  std::map<std::string, StageState> stages_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  bool failing_ = false;  // poster thread only: inside an outage (logged once)
  std::thread poster_;
};

}  // namespace sluice
