// `sluice bench --concurrency`: the closed-loop load generator over loopback against real
// pipelines (the `template` fixture with a fixed token interval, and the `generate` node over
// stories260K), its accounting (answers, output tokens, TTFT and inter-token gaps), its
// behaviour when nothing listens, and the flags' validation with their messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "apps/loadgen/load_generator.h"
#include "apps/sluice/commands.h"
#include "nodes/builtin_nodes.h"
#include "tests/connectors/http/served_pipeline.h"

namespace sluice {
void register_basic_nodes(NodeRegistry& registry);
}

namespace sluice::loadgen {
namespace {

using http::testing::loopback_spec_head;
using http::testing::ServedPipeline;
using ::testing::HasSubstr;

// "You asked why and here is the answer": 8 pieces, one every 5 ms.
std::string template_spec() {
  return loopback_spec_head("closed-loop") + R"(nodes:
  - name: answer
    kind: template
    config: {text: "You asked {{input}} and here is the answer", token_interval: 5ms}
edges:
  - {from: api, to: answer}
)";
}

LoadOptions closed_loop(int port, int concurrency, double duration) {
  LoadOptions o;
  o.port = port;
  o.concurrency = concurrency;
  o.duration_seconds = duration;
  o.drain_seconds = 10;
  o.stream = true;
  o.prompt = "why";
  o.classes = {{"P0", 1, 0}};
  return o;
}

TEST(ClosedLoop, KeepsEachClientBusyAndCountsTokensAndGaps) {
  ServedPipeline served(template_spec(), register_basic_nodes);
  LoadResult r = run_closed_loop(closed_loop(served.source->port(), 3, 0.5));
  ASSERT_EQ(r.classes.size(), 1u);
  const ClassResult& c = r.classes[0];
  EXPECT_EQ(r.concurrency, 3);
  // Each answer takes at least 7 intervals of 5 ms, so 3 clients for 0.5 s send at most ~45;
  // back to back they send far more than one round.
  EXPECT_GE(c.ok, 6u);
  EXPECT_LE(c.ok, 50u);
  EXPECT_EQ(c.sent, c.ok);
  EXPECT_EQ(c.failed + c.other_errors + c.rejected_429 + c.timeout_504 + c.unfinished + c.dropped, 0u);
  EXPECT_EQ(c.content_chunks, 8 * c.ok);
  EXPECT_EQ(c.output_tokens, 8 * c.ok);  // the usage chunk agrees with the chunks
  EXPECT_EQ(c.ttft.n, c.ok);
  EXPECT_EQ(c.itl.n, 7 * c.ok);
  EXPECT_GE(c.itl.p50, 0.004);  // the fixture's 5 ms interval, give or take the timer
  EXPECT_LT(c.itl.p50, 0.5);
  EXPECT_GE(c.e2e.p50, 7 * 0.004);
  EXPECT_NEAR(c.throughput, static_cast<double>(c.ok) / r.elapsed_seconds, 1e-9);
  EXPECT_NEAR(c.output_tokens_per_second, 8 * c.throughput, 1e-6);
}

TEST(ClosedLoop, DistinctPromptsPutANumberBeforeEachPrompt) {
  ServedPipeline served(template_spec(), register_basic_nodes);
  LoadOptions o = closed_loop(served.source->port(), 2, 0.2);
  LoadResult same = run_closed_loop(o);
  o.distinct_prompts = true;
  LoadResult distinct = run_closed_loop(o);
  // The fixture counts the prompt's words: "why", then "<tag>: why".
  ASSERT_GT(same.classes[0].ok, 0u);
  ASSERT_GT(distinct.classes[0].ok, 0u);
  EXPECT_EQ(same.classes[0].prompt_tokens, same.classes[0].ok);
  EXPECT_EQ(distinct.classes[0].prompt_tokens, 2 * distinct.classes[0].ok);
}

TEST(ClosedLoop, StreamsFromTheServingEngine) {
  const std::string model = std::string(SLUICE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared)";
  std::string spec = loopback_spec_head("engine") + "nodes:\n  - name: generate\n    kind: generate\n    config: {model: \"" + model +
                     "\", threads: 1, context: 256, max_running: 4}\nedges:\n  - {from: api, to: generate}\n";
  ServedPipeline served(spec, register_builtin_nodes);
  LoadOptions o = closed_loop(served.source->port(), 2, 0.5);
  o.prompt = "Once upon a time";
  o.max_tokens = 8;
  o.temperature = 0;
  LoadResult r = run_closed_loop(o);
  const ClassResult& c = r.classes[0];
  EXPECT_GE(c.ok, 2u);
  EXPECT_EQ(c.failed + c.other_errors + c.rejected_429 + c.timeout_504 + c.unfinished, 0u);
  EXPECT_GT(c.output_tokens, 0u);
  EXPECT_LE(c.output_tokens, 8 * c.ok);
  EXPECT_LE(c.content_chunks, c.output_tokens);  // a chunk carries one token's text or more
  EXPECT_EQ(c.ttft.n, c.ok);
  EXPECT_EQ(c.itl.n, c.content_chunks - c.ok);
}

TEST(ClosedLoop, NothingListeningCountsFailuresWithoutSpinning) {
  int port = 0;
  {
    // A port that was free a moment ago: connections to it are refused.
    ServedPipeline served(template_spec(), register_basic_nodes);
    port = served.source->port();
  }
  LoadResult r = run_closed_loop(closed_loop(port, 2, 0.3));
  const ClassResult& c = r.classes[0];
  EXPECT_EQ(c.ok, 0u);
  EXPECT_GE(c.failed, 2u);
  EXPECT_LE(c.failed, 2u * 5);  // one try per client per 100 ms pause, not a busy loop
}

TEST(ClosedLoop, RefusesOptionsThatCannotWork) {
  LoadOptions o = closed_loop(1, 0, 1);
  EXPECT_THROW(run_closed_loop(o), std::invalid_argument);
  o.concurrency = 1;
  o.stream = false;
  try {
    run_closed_loop(o);
    FAIL() << "a non-streaming closed loop was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("stream"));
  }
}

// The command line: each bad flag is refused with a message naming it.
std::string bench_error(const cli::Args& args) {
  try {
    cli::bench(args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(BenchFlags, RefusesBadConcurrencyLevelsAndMixedModes) {
  EXPECT_THAT(bench_error({"--concurrency", "0"}), HasSubstr("--concurrency: each level must be a whole number from 1"));
  EXPECT_THAT(bench_error({"--concurrency", "1,x"}), HasSubstr("--concurrency: expected a number, got 'x'"));
  EXPECT_THAT(bench_error({"--concurrency", "2.5"}), HasSubstr("got '2.5'"));
  EXPECT_THAT(bench_error({"--concurrency", ""}), HasSubstr("--concurrency: needs at least one level"));
  EXPECT_THAT(bench_error({"--concurrency", "4", "--rates", "10"}), HasSubstr("exclude each other"));
  EXPECT_THAT(bench_error({"--temperature", "3"}), HasSubstr("--temperature: must be between 0 and 2"));
  EXPECT_THAT(bench_error({"--temperature", "hot"}), HasSubstr("--temperature: expected a number, got 'hot'"));
  EXPECT_THAT(bench_error({"--concurrency"}), HasSubstr("--concurrency needs a value"));
}

// A bench against a server that is not there fails at once, saying so, instead of reporting
// every request as an error and exiting 0.
TEST(BenchFlags, AServerThatIsNotThereExitsNonZeroNamingIt) {
  int port = 0;
  {
    ServedPipeline served(template_spec(), register_basic_nodes);
    port = served.source->port();
  }
  ::testing::internal::CaptureStderr();
  const int rc = cli::bench({"--target", "127.0.0.1:" + std::to_string(port), "--rate", "5", "--duration", "1s"});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 2);
  EXPECT_THAT(err, HasSubstr("cannot reach 127.0.0.1:" + std::to_string(port) + ": Connection refused"));
}

TEST(BenchFlags, ClosedLoopLevelsEndUpInTheJson) {
  ServedPipeline served(template_spec(), register_basic_nodes);
  std::string json_path = ::testing::TempDir() + "closed-loop.json";
  int rc = cli::bench({"--target", "127.0.0.1:" + std::to_string(served.source->port()), "--concurrency", "1,2", "--duration",
                       "300ms", "--prompt", "why", "--temperature", "0", "--distinct-prompts", "--label", "t", "--json", json_path});
  ASSERT_EQ(rc, 0);
  std::ifstream f(json_path);
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["label"], "t");
  ASSERT_EQ(j["levels"].size(), 2u);
  EXPECT_EQ(j["levels"][0]["concurrency"], 1);
  EXPECT_EQ(j["levels"][1]["concurrency"], 2);
  const auto& c = j["levels"][1]["classes"][0];
  EXPECT_EQ(c["class"], "P0");  // the closed loop's default mix: one class
  EXPECT_GT(c["ok"].get<int>(), 0);
  // "You asked <tag>: why and here is the answer": 9 pieces, 8 gaps.
  EXPECT_EQ(c["output_tokens"].get<int>(), 9 * c["ok"].get<int>());
  EXPECT_GT(c["output_tokens_per_second"].get<double>(), 0);
  EXPECT_EQ(c["itl"]["n"].get<int>(), 8 * c["ok"].get<int>());
  EXPECT_EQ(c["prompt_tokens"].get<int>(), 2 * c["ok"].get<int>());  // "<tag>: why"
}

}  // namespace
}  // namespace sluice::loadgen
