// The alert webhook (graph/alert_webhook.h, graph/http_post.h) against a real HTTP receiver on
// loopback: the JSON posted, one post per stage per min_interval with changes collapsed into
// the latest state, retries after a failed post, an unreachable receiver, and the validator's
// refusal of URLs it could never post to.
#include "graph/alert_webhook.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "graph/http_post.h"
#include "graph/spec_validator.h"
#include "tests/graph/test_support.h"
#include "tests/support/loopback_receiver.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::LoopbackReceiver;
constexpr Nanos kMs = kNanosPerSecond / 1000;

StageAlert alert(const std::string& stage, bool firing) {
  return {"rag", stage, firing, 212 * kMs, 150 * kMs, 256};
}

double counter(MetricsRegistry& m, const std::string& result) {
  return m.counter("sluice_alert_webhook_posts_total", "", {{"result", result}}).value();
}

// The receiver has a body before the poster has read its answer and counted it: wait (up to
// 10 s) for the count.
double counter_reaching(MetricsRegistry& m, const std::string& result, double want) {
  for (int i = 0; i < 1000 && counter(m, result) < want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return counter(m, result);
}

TEST(AlertWebhook, PostsTheAlertAsJson) {
  const json j = json::parse(alert_json(alert("rerank", true), 1796515200.0));
  EXPECT_EQ(j["alert"], "SluiceStageOverBudget");
  EXPECT_EQ(j["status"], "firing");
  EXPECT_EQ(j["pipeline"], "rag");
  EXPECT_EQ(j["stage"], "rerank");
  EXPECT_DOUBLE_EQ(j["p95_seconds"].get<double>(), 0.212);
  EXPECT_DOUBLE_EQ(j["budget_seconds"].get<double>(), 0.150);
  EXPECT_EQ(j["window_batches"], 256);
  EXPECT_EQ(j["time"], "2026-12-06T00:00:00Z");
  EXPECT_EQ(json::parse(alert_json(alert("rerank", false), 0))["status"], "resolved");
}

TEST(AlertWebhook, EachChangeReachesTheReceiverInOrder) {
  LoopbackReceiver receiver;
  MetricsRegistry metrics;
  {
    AlertWebhook hook({receiver.url(), 0, 5 * kNanosPerSecond}, metrics);
    hook.notify(alert("rerank", true));
    ASSERT_EQ(receiver.wait_for(1).size(), 1u);
    hook.notify(alert("rerank", false));
    const auto bodies = receiver.wait_for(2);
    ASSERT_EQ(bodies.size(), 2u);
    EXPECT_EQ(json::parse(bodies[0])["status"], "firing");
    EXPECT_EQ(json::parse(bodies[1])["status"], "resolved");
    EXPECT_NE(receiver.heads()[0].find("POST /hook HTTP/1.1"), std::string::npos) << receiver.heads()[0];
    EXPECT_NE(receiver.heads()[0].find("Content-Type: application/json"), std::string::npos) << receiver.heads()[0];
  }
  EXPECT_EQ(counter(metrics, "sent"), 2);
  EXPECT_EQ(counter(metrics, "failed"), 0);
}

// A flapping stage: within one interval only the latest state is posted, once, when the
// interval ends; a flap back to what the receiver has posts nothing.
TEST(AlertWebhook, ChangesWithinTheIntervalCollapseIntoTheLatest) {
  LoopbackReceiver receiver;
  MetricsRegistry metrics;
  AlertWebhook hook({receiver.url(), 300 * kMs, 5 * kNanosPerSecond}, metrics);
  hook.notify(alert("rerank", true));
  ASSERT_EQ(receiver.wait_for(1).size(), 1u);
  hook.notify(alert("rerank", false));
  hook.notify(alert("rerank", true));   // back to what was delivered: nothing pending
  hook.notify(alert("rerank", false));  // pending again
  hook.notify(alert("generate", true)); // another stage has its own interval: posted at once
  const auto bodies = receiver.wait_for(3);
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(json::parse(bodies[1])["stage"], "generate");
  EXPECT_EQ(json::parse(bodies[2])["stage"], "rerank");
  EXPECT_EQ(json::parse(bodies[2])["status"], "resolved");
  EXPECT_EQ(receiver.wait_for(4, std::chrono::milliseconds(700)).size(), 3u) << "one post per state";
  EXPECT_GE(metrics.counter("sluice_alert_webhook_collapsed_total", "").value(), 1);
}

TEST(AlertWebhook, AFailedPostIsRetriedAfterTheInterval) {
  LoopbackReceiver receiver({500, 503});
  MetricsRegistry metrics;
  AlertWebhook hook({receiver.url(), 100 * kMs, 5 * kNanosPerSecond}, metrics);
  hook.notify(alert("rerank", true));
  const auto bodies = receiver.wait_for(1);
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(json::parse(bodies[0])["status"], "firing");
  EXPECT_EQ(counter(metrics, "failed"), 2);
  EXPECT_EQ(counter_reaching(metrics, "sent", 1), 1);
}

TEST(AlertWebhook, AnUnreachableReceiverCountsFailuresAndNeverBlocksNotify) {
  MetricsRegistry metrics;
  std::string url;
  {
    LoopbackReceiver gone;  // a port that was just closed: connections are refused
    url = gone.url();
  }
  {
    AlertWebhook hook({url, 50 * kMs, kNanosPerSecond}, metrics);
    for (int i = 0; i < 100; ++i) hook.notify(alert("rerank", i % 2 == 0));
    EXPECT_GE(counter_reaching(metrics, "failed", 2), 2);
  }
  EXPECT_EQ(counter(metrics, "sent"), 0);
}

TEST(HttpPost, ErrorsNameTheUrlWithoutItsPassword) {
  LoopbackReceiver receiver({404});
  std::string url = receiver.url();
  url.insert(url.find("//") + 2, "ops:s3cret@");
  const Status s = http_post(url, "application/json", "{}", kNanosPerSecond);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message.find("answered HTTP 404"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("127.0.0.1"), std::string::npos) << s.message;
  EXPECT_EQ(s.message.find("s3cret"), std::string::npos) << s.message;
}

TEST(HttpPost, OnlyAbsoluteHttpUrlsWithAHost) {
  EXPECT_EQ(http_url_problem("https://alerts.example.com/hook"), std::nullopt);
  EXPECT_EQ(http_url_problem("http://127.0.0.1:9/x"), std::nullopt);
  EXPECT_NE(http_url_problem("ftp://example.com/x").value_or("").find("scheme 'ftp'"), std::string::npos);
  EXPECT_NE(http_url_problem("alerts.example.com/hook").value_or("").find("not an absolute URL"), std::string::npos);
  EXPECT_TRUE(http_url_problem("http://").has_value());
  EXPECT_TRUE(http_url_problem("").has_value());
}

TEST(AlertWebhook, TheValidatorNamesABadWebhook) {
  NodeRegistry reg = testing::test_registry();
  std::string what;
  try {
    load_and_validate_text(
        "name: v\nalerts: {webhook: 'ftp://example.com/x'}\nsources: [{name: api, kind: http}]\n"
        "nodes: [{name: a, kind: answer_marks}]\nedges: [{from: api, to: a}]\n",
        "v.yaml", reg);
  } catch (const SpecErrors& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("v.yaml:2:"), std::string::npos) << what;
  EXPECT_NE(what.find("alerts.webhook: scheme 'ftp' is not http or https"), std::string::npos) << what;
}

}  // namespace
}  // namespace sluice
