#include "graph/alert_webhook.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/http_post.h"
#include "graph/monotonic_time.h"

namespace sluice {

std::string alert_json(const StageAlert& alert, double unix_seconds) {
  char time[32];
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::strftime(time, sizeof time, "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::json j{{"alert", "SluiceStageOverBudget"},
                   {"status", alert.firing ? "firing" : "resolved"},
                   {"pipeline", alert.pipeline},
                   {"stage", alert.stage},
                   {"p95_seconds", nanos_to_seconds(alert.p95)},
                   {"budget_seconds", nanos_to_seconds(alert.budget)},
                   {"window_batches", alert.window},
                   {"time", time}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

AlertWebhook::AlertWebhook(AlertWebhookOptions options, MetricsRegistry& metrics)
    : options_(std::move(options)),
      sent_(&metrics.counter("sluice_alert_webhook_posts_total", "Alert posts to alerts.webhook", {{"result", "sent"}})),
      failed_(&metrics.counter("sluice_alert_webhook_posts_total", "Alert posts to alerts.webhook", {{"result", "failed"}})),
      collapsed_(&metrics.counter("sluice_alert_webhook_collapsed_total",
                                  "Alert state changes replaced by a later one before they were posted (min_interval)")) {
  poster_ = std::thread([this] { run(); });
}

AlertWebhook::~AlertWebhook() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  poster_.join();
}

void AlertWebhook::notify(const StageAlert& alert) {
  {
    MutexLock lock(mu_);
    StageState& s = stages_[alert.stage];
    if (s.pending) collapsed_->inc();
    s.latest = alert;
    // Back to what the receiver already has (a flap inside one interval): nothing to say.
    s.pending = !(s.delivered_any && s.delivered_firing == alert.firing);
  }
  wake_.notify_all();
}

void AlertWebhook::run() {
  MutexLock lock(mu_);
  while (!stopping_) {
    // The next stage due: pending, and min_interval past its last post.
    const Nanos now = monotonic_nanos();
    Nanos wait = -1;  // -1: nothing pending
    std::string due;
    for (auto& [stage, s] : stages_) {
      if (!s.pending) continue;
      const Nanos at = s.last_post == 0 ? now : s.last_post + options_.min_interval;
      if (at <= now) {
        due = stage;
        break;
      }
      if (wait < 0 || at - now < wait) wait = at - now;
    }
    if (due.empty()) {
      if (wait < 0) wake_.wait(lock);
      else wake_.wait_for(lock, std::chrono::nanoseconds(wait));
      continue;
    }
    StageState& s = stages_[due];
    const StageAlert alert = s.latest;
    s.pending = false;
    s.last_post = now;
    lock.unlock();  // the post may take up to `timeout`; notify() must not wait for it
    const double unix_now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const Status posted = http_post(options_.url, "application/json", alert_json(alert, unix_now), options_.timeout);
    if (posted.ok()) {
      sent_->inc();
      if (failing_) std::fprintf(stderr, "sluice: alert webhook delivers again\n");
      failing_ = false;
    } else {
      failed_->inc();
      if (!failing_) {
        std::fprintf(stderr, "sluice: alert webhook failed (retried every alerts.min_interval): %s\n",
                     posted.message.c_str());
      }
      failing_ = true;
    }
    lock.lock();
    StageState& after = stages_[due];
    if (posted.ok()) {
      after.delivered_any = true;
      after.delivered_firing = alert.firing;
      // A change that arrived during the post and went back to this state needs no post.
      if (after.pending && after.latest.firing == alert.firing) after.pending = false;
    } else if (!after.pending) {
      after.pending = true;  // retry the same state after min_interval
    }
  }
}

}  // namespace sluice
