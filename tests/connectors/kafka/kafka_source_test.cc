// KafkaSource against librdkafka's mock cluster on loopback TCP: jobs in and results out in both
// encodings, a poison record among good ones, retries with their delays and dead letters after
// max_attempts, the in-flight bound under backpressure, two workers of one group splitting the
// partitions with one stopped mid-run, both stopped at once, and a broker going down and coming back. Every test
// counts: each job's id appears in the results (or the dead letters), none is lost, and
// duplicates are only ever the same job id.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "connectors/kafka/job_codec.h"
#include "connectors/kafka/kafka_source.h"
#include "graph/metrics.h"
#include "graph/node_registry.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"
#include "sluice/jobs.pb.h"
#include "tests/connectors/kafka/kafka_worker.h"
#include "tests/connectors/kafka/mock_kafka.h"
#include "tests/support/loopback_receiver.h"

namespace sluice {

void register_basic_nodes(NodeRegistry& registry);
void register_admission_nodes(NodeRegistry& registry);

namespace kafka {
namespace {

using json = nlohmann::json;
using testing::eventually;
using testing::MockKafka;
using testing::Record;
using std::chrono::milliseconds;

// The pipeline file of a worker: one kafka source in front of a `template` node (with a
// priority router between them when asked).
std::string worker_yaml(const MockKafka& kafka, const std::string& source_extra, const std::string& runtime,
                        const std::string& template_config, bool with_router) {
  std::string yaml = "name: jobs-test\n";
  if (!runtime.empty()) yaml += "runtime: " + runtime + "\n";
  yaml += "sources:\n  - name: jobs\n    kind: kafka\n    config: {bootstrap: \"" + kafka.bootstrap() +
          "\", group: test-group, base_delay: 50ms, max_delay: 400ms" + (source_extra.empty() ? "" : ", " + source_extra) +
          "}\nnodes:\n";
  if (with_router) {
    yaml += "  - {name: admit, kind: priority_router, config: {max_running: 2, classes: [{name: P2, max_queue: 4}]}}\n";
  }
  yaml += "  - {name: answer, kind: template, config: " + template_config + "}\nedges:\n";
  if (with_router) {
    yaml += "  - {from: jobs, to: admit}\n  - {from: admit, to: answer}\n";
  } else {
    yaml += "  - {from: jobs, to: answer}\n";
  }
  return yaml;
}

struct Worker : testing::KafkaWorker {
  Worker(const MockKafka& kafka, const std::string& source_extra, const std::string& runtime = "",
         const std::string& template_config = "{text: hello from the job, token_interval: 0s}",
         bool with_router = false)
      : KafkaWorker(
            [](NodeRegistry& r) {
              register_basic_nodes(r);
              register_admission_nodes(r);
            },
            worker_yaml(kafka, source_extra, runtime, template_config, with_router)) {}
};

std::string chat_line(const std::string& custom_id, const std::string& content = "hi") {
  return json{{"custom_id", custom_id},
              {"method", "POST"},
              {"url", "/v1/chat/completions"},
              {"body", {{"model", "sluice"}, {"messages", {{{"role", "user"}, {"content", content}}}}}}}
      .dump();
}

// The results by job id (a job answered twice appears twice).
std::map<std::string, std::vector<json>> results_by_id(const std::vector<Record>& records) {
  std::map<std::string, std::vector<json>> out;
  for (const auto& r : records) {
    json j = json::parse(r.value);
    out[j["id"].get<std::string>()].push_back(j);
  }
  return out;
}

// Reads the results topic until `jobs` distinct job ids are there (or a minute passes).
std::map<std::string, std::vector<json>> all_results(MockKafka& kafka, int jobs) {
  std::set<std::string> ids;
  const auto records = kafka.read_until("sluice.results", milliseconds(60000), [&](const std::vector<Record>& r) {
    if (!r.empty()) ids.insert(json::parse(r.back().value)["id"].get<std::string>());
    return ids.size() >= static_cast<std::size_t>(jobs);
  });
  return results_by_id(records);
}

TEST(KafkaSource, JsonBatchLinesInResultLinesOut) {
  MockKafka kafka;
  kafka.create_job_topics(3);
  Worker w(kafka, "");
  constexpr int kJobs = 60;
  for (int i = 0; i < kJobs; ++i) kafka.produce("sluice.jobs", "", chat_line("req-" + std::to_string(i)));
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().completed >= kJobs; })) << w.source->counts().completed;
  const auto results = results_by_id(kafka.read("sluice.results", kJobs, milliseconds(10000)));
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) {
    const std::string id = "req-" + std::to_string(i);
    ASSERT_EQ(results.count(id), 1u) << id;
    const json& r = results.at(id).front();
    EXPECT_EQ(r["custom_id"], id);
    EXPECT_TRUE(r["error"].is_null());
    EXPECT_EQ(r["response"]["status_code"], 200);
    EXPECT_EQ(r["response"]["body"]["object"], "chat.completion");
    EXPECT_EQ(r["response"]["body"]["choices"][0]["message"]["content"], "hello from the job");
  }
  // Everything answered is committed: the group's offsets cover every record.
  w.stop();
  std::int64_t committed = 0;
  for (int p = 0; p < 3; ++p) committed += std::max<std::int64_t>(0, kafka.committed("test-group", "sluice.jobs", p));
  EXPECT_EQ(committed, kJobs);
  EXPECT_EQ(kafka.read("sluice.dlq", 1, milliseconds(300)).size(), 0u);
}

// W3C trace context over Kafka: a job's "traceparent" record header (or the line's own field)
// is the parent of its request, and the result record carries it on in its header.
TEST(KafkaSource, TraceparentHeadersCarryTheTraceThroughAJob) {
  MockKafka kafka;
  kafka.create_job_topics(1);
  Worker w(kafka, "");
  const std::string in_header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const std::string in_line = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  kafka.produce("sluice.jobs", "", chat_line("by-header"), -1, in_header);
  json line = json::parse(chat_line("by-field"));
  line["x_sluice"] = {{"traceparent", in_line}};
  kafka.produce("sluice.jobs", "", line.dump());
  kafka.produce("sluice.jobs", "", chat_line("none"));
  kafka.produce("sluice.jobs", "", chat_line("bad-header"), -1, "not a traceparent");
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().completed >= 4; }));
  std::map<std::string, std::string> carried;
  for (const Record& r : kafka.read("sluice.results", 4, milliseconds(10000))) carried[json::parse(r.value)["id"]] = r.traceparent;
  ASSERT_EQ(carried.size(), 4u);
  EXPECT_EQ(carried["by-header"], in_header);  // tracing off: passed on as it came
  EXPECT_EQ(carried["by-field"], in_line);
  EXPECT_EQ(carried["none"], "");
  EXPECT_EQ(carried["bad-header"], "") << "a malformed header is ignored, as the W3C spec says";
}

// With tracing on, the result's header names the job's request span: a child of the incoming
// header's, the root of the spans the collector gets.
TEST(KafkaSource, WithTracingOnResultsNameTheJobsSpan) {
  MockKafka kafka;
  kafka.create_job_topics(1);
  sluice::testing::LoopbackReceiver collector;
  Worker w(kafka, "", "{}\ntracing: {endpoint: '" + collector.url("/v1/traces") + "', sample_ratio: 0, flush_interval: 10ms}");
  const std::string incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  kafka.produce("sluice.jobs", "", chat_line("traced"), -1, incoming);
  kafka.flush();
  const auto results = kafka.read("sluice.results", 1, milliseconds(10000));
  ASSERT_EQ(results.size(), 1u);
  const std::string out = results[0].traceparent;
  ASSERT_EQ(out.size(), 55u) << out;
  EXPECT_EQ(out.substr(3, 32), incoming.substr(3, 32));
  EXPECT_NE(out.substr(36, 16), incoming.substr(36, 16));
  EXPECT_GE(collector.wait_for(1).size(), 1u) << "sampled by its parent";
}

TEST(KafkaSource, ProtobufJobsGetProtobufResults) {
  MockKafka kafka;
  kafka.create_job_topics(1);
  Worker w(kafka, "");
  for (int i = 0; i < 5; ++i) {
    Job job;
    job.custom_id = "pb-" + std::to_string(i);
    job.endpoint = JobEndpoint::kCompletions;
    job.body = R"({"model":"sluice","prompt":"once upon a time"})";
    job.encoding = JobEncoding::kProto;
    kafka.produce("sluice.jobs", "", encode_job(job));
  }
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().completed >= 5; }));
  const auto records = kafka.read("sluice.results", 5, milliseconds(10000));
  ASSERT_EQ(records.size(), 5u);
  std::set<std::string> ids;
  for (const auto& r : records) {
    sluice::jobs::v1::JobResult result;
    ASSERT_TRUE(result.ParseFromString(r.value));
    EXPECT_TRUE(result.ok());
    EXPECT_EQ(result.status_code(), 200);
    EXPECT_EQ(json::parse(result.body())["object"], "text_completion");
    EXPECT_EQ(r.key, result.job_id());
    ids.insert(result.job_id());
  }
  EXPECT_EQ(ids, (std::set<std::string>{"pb-0", "pb-1", "pb-2", "pb-3", "pb-4"}));
}

TEST(KafkaSource, PoisonRecordsAreDeadLetteredAloneAndTheRestAnswered) {
  MockKafka kafka;
  kafka.create_job_topics(1);
  Worker w(kafka, "");
  std::vector<std::string> lines;
  for (int i = 0; i < 10; ++i) lines.push_back(chat_line("ok-" + std::to_string(i)));
  lines[3] = "{this is not json";
  lines[5] = R"({"custom_id":"bad-url","method":"POST","url":"/v2/nope","body":{}})";
  lines[7] = R"({"custom_id":"bad-body","method":"POST","url":"/v1/chat/completions","body":{"model":"sluice","temperature":1e400,"messages":[]}})";
  for (const auto& l : lines) kafka.produce("sluice.jobs", "", l, 0);
  kafka.flush();
  ASSERT_TRUE(eventually([&] {
    auto c = w.source->counts();
    return c.completed + c.dead_lettered >= 10;
  }));
  const auto c = w.source->counts();
  EXPECT_EQ(c.completed, 7u);
  EXPECT_EQ(c.dead_lettered, 3u);
  const auto dead = kafka.read("sluice.dlq", 3, milliseconds(10000));
  ASSERT_EQ(dead.size(), 3u);
  std::map<std::string, json> by_id;
  for (const auto& d : dead) {
    json j = json::parse(d.value);
    // Indexed by where each record came from (the unreadable ones have no custom_id).
    const std::string id = "sluice.jobs-0-" + std::to_string(j["source"]["offset"].get<int>());
    by_id[id] = j;
  }
  ASSERT_TRUE(by_id.count("sluice.jobs-0-3")) << dead[0].value;
  EXPECT_EQ(by_id["sluice.jobs-0-3"]["original"], "{this is not json");
  EXPECT_EQ(by_id["sluice.jobs-0-3"]["reason"]["code"], "invalid_json");
  EXPECT_EQ(by_id["sluice.jobs-0-5"]["reason"]["code"], "unknown_endpoint");
  // Its custom_id was read before the url was refused: the letter and the error answer carry it.
  EXPECT_EQ(by_id["sluice.jobs-0-5"]["custom_id"], "bad-url");
  EXPECT_EQ(by_id["sluice.jobs-0-5"]["id"], "bad-url");
  EXPECT_TRUE(by_id["sluice.jobs-0-3"]["custom_id"].is_null());
  ASSERT_TRUE(by_id.count("sluice.jobs-0-7"));
  EXPECT_NE(by_id["sluice.jobs-0-7"]["reason"]["message"].get<std::string>().find("temperature"), std::string::npos)
      << by_id["sluice.jobs-0-7"].dump();
  // The results topic has one line per job: seven answers, three errors.
  const auto results = results_by_id(kafka.read("sluice.results", 10, milliseconds(10000)));
  EXPECT_EQ(results.size(), 10u);
  ASSERT_TRUE(results.count("bad-url"));
  EXPECT_TRUE(results.at("bad-url").front()["response"].is_null());
  EXPECT_EQ(results.at("bad-url").front()["custom_id"], "bad-url");
  EXPECT_EQ(results.at("bad-url").front()["error"]["code"], "unknown_endpoint");
  ASSERT_TRUE(results.count("sluice.jobs-0-3"));  // unreadable: where it came from
  // Nothing blocked the partition: its offset is committed past all ten.
  w.stop();
  EXPECT_EQ(kafka.committed("test-group", "sluice.jobs", 0), 10);
}

// Every attempt runs past the pipeline's 30 ms default deadline (ten words 10 ms apart): each
// is retried through sluice.retry with a growing delay, then dead-lettered with every error.
TEST(KafkaSource, TimedOutJobsAreRetriedWithBackoffThenDeadLettered) {
  MockKafka kafka;
  kafka.create_job_topics(1);
  Worker w(kafka, "max_attempts: 3", "{default_deadline: 30ms}",
           "{text: one two three four five six seven eight nine ten, token_interval: 10ms}");
  kafka.produce("sluice.jobs", "", chat_line("slow"));
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().dead_lettered >= 1; }));
  const auto c = w.source->counts();
  EXPECT_EQ(c.retried, 2u);
  EXPECT_EQ(c.completed, 0u);
  const auto dead = kafka.read("sluice.dlq", 1, milliseconds(10000));
  ASSERT_EQ(dead.size(), 1u);
  json d = json::parse(dead[0].value);
  EXPECT_EQ(d["id"], "slow");
  EXPECT_EQ(d["attempts"], 3);
  ASSERT_EQ(d["errors"].size(), 3u) << d.dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d["errors"][i]["code"], "deadline_exceeded") << d.dump();
    EXPECT_EQ(d["errors"][i]["attempt"], i + 1);
  }
  // base_delay 50 ms: attempt 2 waits 25-50 ms, attempt 3 50-100 ms (jitter [0.5, 1]), plus the
  // 30 ms attempt, the retry record's round trip through the broker (a fetch waits up to 100 ms)
  // and at most a poll slice (100 ms) late.
  const std::int64_t gap1 = d["errors"][1]["at"].get<std::int64_t>() - d["errors"][0]["at"].get<std::int64_t>();
  const std::int64_t gap2 = d["errors"][2]["at"].get<std::int64_t>() - d["errors"][1]["at"].get<std::int64_t>();
  EXPECT_GE(gap1, 25 + 25);
  EXPECT_LE(gap1, 50 + 30 + 300);
  EXPECT_GE(gap2, 50 + 25);
  EXPECT_LE(gap2, 100 + 30 + 300);
  const auto retries = kafka.read("sluice.retry", 2, milliseconds(10000));
  EXPECT_EQ(retries.size(), 2u);
}

// A priority router of 2 running and 4 queued in front of a slow template: the source is
// refused at intake most of the time. It pauses instead of buffering: in flight never exceeds
// max_in_flight, and every job is answered once the backlog drains.
TEST(KafkaSource, BackpressurePausesAndTheInFlightBoundHolds) {
  MockKafka kafka;
  kafka.create_job_topics(2);
  Worker w(kafka, "max_in_flight: 8", "", "{text: a b c, token_interval: 5ms}", /*with_router=*/true);
  constexpr int kJobs = 80;
  for (int i = 0; i < kJobs; ++i) kafka.produce("sluice.jobs", "", chat_line("bp-" + std::to_string(i)));
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().completed >= kJobs; }, milliseconds(60000)))
      << w.source->counts().completed;
  const auto c = w.source->counts();
  EXPECT_LE(c.in_flight_peak, 8u);
  EXPECT_GT(c.intake_refusals, 0u) << "the router never refused: the test did not exercise backpressure";
  const auto results = results_by_id(kafka.read("sluice.results", kJobs, milliseconds(10000)));
  EXPECT_EQ(results.size(), static_cast<std::size_t>(kJobs));
}

// At max_in_flight the loop stops polling (the bound holds, librdkafka keeps its prefetch);
// when the jobs in flight stay that many past 100 ms (slow jobs here, about 250 ms each) the
// partitions are paused as well, so polling serves rebalances again. Every job is answered.
TEST(KafkaSource, TheInFlightBoundHoldsWithoutARouterAndSlowJobsPause) {
  MockKafka kafka;
  kafka.create_job_topics(2);
  Worker w(kafka, "max_in_flight: 4", "", "{text: a b c d e, token_interval: 50ms}");
  constexpr int kJobs = 12;
  for (int i = 0; i < kJobs; ++i) kafka.produce("sluice.jobs", "", chat_line("if-" + std::to_string(i)));
  kafka.flush();
  bool seen_paused = false;
  ASSERT_TRUE(eventually([&] {
    const auto c = w.source->counts();
    seen_paused = seen_paused || c.paused;
    return c.completed >= kJobs;
  }, milliseconds(60000)))
      << w.source->counts().completed;
  EXPECT_LE(w.source->counts().in_flight_peak, 4u);
  EXPECT_TRUE(seen_paused) << "jobs of 250 ms held the bound past 100 ms: the partitions should have paused";
  EXPECT_EQ(results_by_id(kafka.read("sluice.results", kJobs, milliseconds(10000))).size(), static_cast<std::size_t>(kJobs));
}

// Two workers in one group split four partitions; the first stops mid-run (its partitions move
// to the second). Zero jobs are lost; any job answered twice is recognisable by its id.
TEST(KafkaSource, TwoWorkersSplitTheGroupAndOneLeavingLosesNothing) {
  MockKafka kafka;
  kafka.create_job_topics(4);
  // librdkafka's mock coordinator, after a member leaves, waits session.timeout.ms - 1 s for the
  // others to rejoin before it assigns again (a real broker completes at once when every member
  // rejoined); 6 s instead of the default 45 s keeps the handover short.
  const std::string group = "properties: [\"session.timeout.ms=6000\", \"heartbeat.interval.ms=500\"]";
  auto a = std::make_unique<Worker>(kafka, group, "", "{text: x y, token_interval: 2ms}");
  Worker b(kafka, group, "", "{text: x y, token_interval: 2ms}");
  constexpr int kJobs = 400;
  // Both own partitions before anything is produced: a group's rebalance on a loaded machine
  // (ASan, tests in parallel) can take longer than the first half of the jobs.
  ASSERT_TRUE(eventually([&] { return a->source->counts().assigned_partitions > 0 && b.source->counts().assigned_partitions > 0; },
                         milliseconds(60000)))
      << "assigned partitions: " << a->source->counts().assigned_partitions << " / " << b.source->counts().assigned_partitions;
  for (int i = 0; i < kJobs / 2; ++i) kafka.produce("sluice.jobs", "k" + std::to_string(i), chat_line("g-" + std::to_string(i)));
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return a->source->counts().completed > 0 && b.source->counts().completed > 0; }))
      << "both workers should get partitions: " << a->source->counts().completed << " / " << b.source->counts().completed;
  a->stop();
  for (int i = kJobs / 2; i < kJobs; ++i) kafka.produce("sluice.jobs", "k" + std::to_string(i), chat_line("g-" + std::to_string(i)));
  kafka.flush();
  const auto results = all_results(kafka, kJobs);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kJobs));
  std::size_t duplicates = 0;
  for (int i = 0; i < kJobs; ++i) {
    const std::string id = "g-" + std::to_string(i);
    ASSERT_TRUE(results.count(id)) << id << " was lost";
    duplicates += results.at(id).size() - 1;
  }
  // At-least-once: a handover may answer a job twice (same id); recorded, not asserted.
  RecordProperty("duplicates", static_cast<int>(duplicates));
}

// Both workers of a group stopped at once, as a rolling deploy or `kill` of every worker does:
// each one's stop returns (its consumer leaves the group before it closes, so close runs no
// rebalance callback: librdkafka 2.0 could hang there, kafka_source.cc), and a worker started
// afterwards answers every job the two left. Two rounds, with jobs in flight at each stop.
TEST(KafkaSource, TwoWorkersStoppedAtOnceBothExitAndTheNextWorkerFinishesTheJobs) {
  MockKafka kafka;
  kafka.create_job_topics(4);
  const std::string group = "properties: [\"session.timeout.ms=6000\", \"heartbeat.interval.ms=500\"]";
  const std::string slow = "{text: x y, token_interval: 2ms}";
  constexpr int kRounds = 2, kJobsPerRound = 200;
  for (int round = 0; round < kRounds; ++round) {
    auto a = std::make_unique<Worker>(kafka, group, "", slow);
    auto b = std::make_unique<Worker>(kafka, group, "", slow);
    ASSERT_TRUE(eventually([&] { return a->source->counts().assigned_partitions > 0 && b->source->counts().assigned_partitions > 0; },
                           milliseconds(60000)))
        << "round " << round;
    for (int i = 0; i < kJobsPerRound; ++i) {
      const std::string id = "s-" + std::to_string(round) + "-" + std::to_string(i);
      kafka.produce("sluice.jobs", id, chat_line(id));
    }
    kafka.flush();
    ASSERT_TRUE(eventually([&] { return a->source->counts().completed + b->source->counts().completed > 0; })) << "round " << round;
    // Stopped together; a stop that never returns fails the test here instead of hanging it.
    std::atomic<int> stopped{0};
    std::thread stop_a([&] { a.reset(); stopped.fetch_add(1); });
    std::thread stop_b([&] { b.reset(); stopped.fetch_add(1); });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (stopped.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(milliseconds(20));
    if (stopped.load() < 2) {
      ADD_FAILURE() << "round " << round << ": " << 2 - stopped.load() << " worker stop(s) did not return in 60 s";
      std::fflush(nullptr);
      std::_Exit(1);
    }
    stop_a.join();
    stop_b.join();
  }
  Worker last(kafka, group, "", slow);
  const auto results = all_results(kafka, kRounds * kJobsPerRound);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kRounds * kJobsPerRound));
}

// The broker goes down mid-run and comes back: productions wait or are produced again, the
// consumer reconnects, and every job is answered.
TEST(KafkaSource, BrokerDownAndBackLosesNothing) {
  MockKafka kafka;
  kafka.create_job_topics(2);
  Worker w(kafka, "", "", "{text: x, token_interval: 1ms}");
  constexpr int kJobs = 100;
  for (int i = 0; i < kJobs / 2; ++i) kafka.produce("sluice.jobs", "", chat_line("f-" + std::to_string(i)));
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().completed > 0; }));
  rd_kafka_mock_broker_set_down(kafka.cluster(), 1);
  std::this_thread::sleep_for(milliseconds(1500));
  rd_kafka_mock_broker_set_up(kafka.cluster(), 1);
  for (int i = kJobs / 2; i < kJobs; ++i) kafka.produce("sluice.jobs", "", chat_line("f-" + std::to_string(i)));
  kafka.flush();
  const auto results = all_results(kafka, kJobs);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) EXPECT_TRUE(results.count("f-" + std::to_string(i))) << i;
}

// Request errors injected on the produce path (a leader that is not the leader, then a
// timeout): the idempotent producer retries, and every job is answered exactly once.
TEST(KafkaSource, InjectedProduceErrorsAreRetried) {
  MockKafka kafka;
  kafka.create_job_topics(1);
  Worker w(kafka, "");
  rd_kafka_mock_push_request_errors(kafka.cluster(), /*ApiKey Produce=*/0, 4, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
                                    RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE);
  for (int i = 0; i < 20; ++i) kafka.produce("sluice.jobs", "", chat_line("e-" + std::to_string(i)));
  kafka.flush();
  ASSERT_TRUE(eventually([&] { return w.source->counts().completed >= 20; }, milliseconds(30000)))
      << w.source->counts().completed;
  const auto results = results_by_id(kafka.read("sluice.results", 40, milliseconds(1500)));
  EXPECT_EQ(results.size(), 20u);
  for (const auto& [id, lines] : results) EXPECT_EQ(lines.size(), 1u) << id << " answered twice";
}

TEST(KafkaSource, BadConfigNamesTheField) {
  NodeRegistry registry;
  register_basic_nodes(registry);
  const std::string yaml = R"(name: bad
sources:
  - {name: jobs, kind: kafka, config: {results_topic: sluice.jobs, properties: ["nonsense", "acks=1"]}}
  - {name: api, kind: http, config: {listen: "127.0.0.1:0", async_jobs: {properties: ["group.id=mine"]}}}
nodes: [{name: answer, kind: template, config: {text: x}}]
edges: [{from: jobs, to: answer}, {from: api, to: answer}]
)";
  try {
    load_and_validate_text(yaml, "bad.yaml", registry);
    FAIL() << "accepted";
  } catch (const SpecErrors& e) {
    const std::string all = e.what();
    EXPECT_NE(all.find("bad.yaml:3:"), std::string::npos) << all;
    EXPECT_NE(all.find("results_topic: 'sluice.jobs' is also this source's topic"), std::string::npos) << all;
    EXPECT_NE(all.find("config.properties[0]: 'nonsense' is not name=value"), std::string::npos) << all;
    // What the worker's clients refuse, validate refuses (one rule: graph/kafka_properties.h).
    EXPECT_NE(all.find("bad.yaml:3:93: node 'jobs': config.properties[1]: 'acks' is set by Sluice"), std::string::npos) << all;
    EXPECT_NE(all.find("bad.yaml:4:87: node 'api': config.async_jobs.properties[0]: 'group.id' is set by Sluice"), std::string::npos) << all;
  }
}

}  // namespace
}  // namespace kafka
}  // namespace sluice
