// `sluice bench --workload`: a replayed workload over loopback against real pipelines (an exact
// answer cache in front of the `template` fixture), the tally of which stage completed each
// answer, cache hits per kind of line and the two kinds of false hit, the reading of JSON and
// chunked SSE answers, and the workload file's errors with their line numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "apps/loadgen/load_generator.h"
#include "apps/loadgen/workload.h"
#include "apps/sluice/commands.h"
#include "nodes/builtin_nodes.h"
#include "tests/connectors/http/served_pipeline.h"

namespace sluice::loadgen {
namespace {

using http::testing::loopback_spec_head;
using http::testing::ServedPipeline;
using ::testing::HasSubstr;

// "You asked <prompt> and here is the answer", behind an exact cache named `cache`.
std::string cached_template_spec() {
  return loopback_spec_head("workload") + R"(nodes:
  - name: cache
    kind: response_cache
    config: {cache_sampled: true}
  - name: answer
    kind: template
    config: {text: "You asked {{input}} and here is the answer"}
edges:
  - {from: api, to: cache}
  - {from: cache, to: answer}
)";
}

// g1 asked three times (twice verbatim), g2 once reworded, g3 once.
std::vector<WorkloadItem> six_lines() {
  return {{"g1", "first", "alpha"},    {"g2", "first", "beta"},      {"g1", "verbatim", "alpha"},
          {"g3", "first", "gamma"},    {"g2", "reworded", "beta two"}, {"g1", "verbatim", "alpha"}};
}

LoadOptions workload_options(int port, std::vector<WorkloadItem> items) {
  LoadOptions o;
  o.port = port;
  o.concurrency = 1;
  o.duration_seconds = 30;  // the workload ends the run long before
  o.drain_seconds = 10;
  o.stream = true;
  o.classes = {{"P0", 1, 0}};
  o.workload = std::move(items);
  o.cache_stages = {"cache"};
  return o;
}

TEST(Workload, ClosedLoopAsksEachLineOnceAndTalliesHitsPerKind) {
  ServedPipeline served(cached_template_spec(), register_builtin_nodes);
  LoadResult r = run_closed_loop(workload_options(served.source->port(), six_lines()));
  EXPECT_EQ(r.classes[0].sent, 6u);  // one pass over the file, then the run ends
  EXPECT_EQ(r.classes[0].ok, 6u);
  const WorkloadResult& w = r.workload;
  EXPECT_EQ(w.answers, 6u);
  EXPECT_EQ(w.no_timings, 0u);
  EXPECT_EQ(w.answered_by.at("cache"), 2u);  // the verbatim repeats; a reworded line misses an exact cache
  EXPECT_EQ(w.answered_by.at("answer"), 4u);
  EXPECT_EQ(w.hits, 2u);
  EXPECT_EQ(w.kinds.at("verbatim").hits, 2u);
  EXPECT_EQ(w.kinds.at("reworded").answers, 1u);
  EXPECT_EQ(w.kinds.at("reworded").hits, 0u);
  EXPECT_EQ(w.kinds.at("first").answers, 3u);
  EXPECT_EQ(w.false_hits_unasked + w.false_hits_other_text, 0u);
}

TEST(Workload, OpenLoopReadsJsonAnswersAndTheTimingsHeader) {
  ServedPipeline served(cached_template_spec(), register_builtin_nodes);
  LoadOptions o = workload_options(served.source->port(), six_lines());
  o.concurrency = 0;
  o.stream = false;
  o.rate = 20;
  LoadResult r = run_open_loop(o);
  const WorkloadResult& w = r.workload;
  ASSERT_EQ(w.answers, 6u);
  EXPECT_EQ(w.no_timings, 0u);
  EXPECT_EQ(w.answered_by.at("answer") + (w.answered_by.count("cache") ? w.answered_by.at("cache") : 0), 6u);
  EXPECT_LE(w.hits, 2u);  // a repeat sent before its first answer completed misses
  EXPECT_EQ(w.false_hits_unasked + w.false_hits_other_text, 0u);
}

// A "cache" that answers everything with one text: every answer is a hit, and none was asked
// before, so each counts as a false hit. The check can fail.
TEST(Workload, AStageThatAnswersEverythingCountsFalseHits) {
  ServedPipeline served(loopback_spec_head("liar") + R"(nodes:
  - name: cache
    kind: template
    config: {text: "the same answer to everything"}
edges:
  - {from: api, to: cache}
)",
                        register_builtin_nodes);
  LoadResult r = run_closed_loop(workload_options(served.source->port(), six_lines()));
  EXPECT_EQ(r.workload.hits, 6u);
  EXPECT_EQ(r.workload.false_hits_unasked, 6u);  // no group ever had an answer of its own
}

TEST(Workload, AHitWithAnotherQuestionsTextIsAFalseHit) {
  const std::vector<WorkloadItem> items = six_lines();
  WorkloadTally tally(items, {"cache"});
  tally.add(0, {"alpha's answer", "generate"});
  tally.add(1, {"beta's answer", "generate"});
  tally.add(2, {"alpha's answer", "cache"});  // right
  tally.add(4, {"alpha's answer", "recall"});  // not a cache stage here: a generated answer
  tally.add(5, {"beta's answer", "cache"});   // g1 served g2's text
  const WorkloadResult& w = tally.result();
  EXPECT_EQ(w.hits, 2u);
  EXPECT_EQ(w.false_hits_other_text, 1u);
  EXPECT_EQ(w.false_hits_unasked, 0u);
  EXPECT_EQ(w.false_hit_lines, std::vector<std::size_t>{6});
  EXPECT_EQ(w.answered_by.at("generate"), 2u);
}

TEST(Workload, ReadsChunkedStreamsAndJsonBodies) {
  const std::string e1 = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
  const std::string e2 =
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}],"
      "\"sluice_timings\":{\"stages\":[{\"stage\":\"admit\"},{\"stage\":\"recall\"}]}}\n\ndata: [DONE]\n\n";
  auto chunk = [](const std::string& s) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", s.size());
    return size + s + "\r\n";
  };
  // The second event split across two chunks, as a server may write it.
  const std::string stream = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(e1) + chunk(e2.substr(0, 30)) +
                             chunk(e2.substr(30)) + "0\r\n\r\n";
  AnswerReading a = read_answer(stream, true);
  EXPECT_EQ(a.text, "Hello");
  EXPECT_EQ(a.answered_by, "recall");

  const std::string body = R"({"choices":[{"message":{"role":"assistant","content":"Hi"}}]})";
  const std::string json = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nX-Sluice-Timings: {\"stages\":[{\"stage\":\"cache\"}]}\r\n\r\n" + body;
  a = read_answer(json, false);
  EXPECT_EQ(a.text, "Hi");
  EXPECT_EQ(a.answered_by, "cache");
  EXPECT_EQ(read_answer("HTTP/1.1 200 OK\r\n", false).text, "");  // cut off: nothing, no throw
}

std::string load_error(const std::string& text) {
  const std::string path = ::testing::TempDir() + "workload.jsonl";
  std::ofstream(path) << text;
  try {
    load_workload(path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Workload, FileErrorsNameTheLine) {
  EXPECT_THAT(load_error("{\"group\":\"g\",\"kind\":\"first\",\"prompt\":\"a\"}\nnot json\n"), HasSubstr("workload.jsonl:2: not a JSON object"));
  EXPECT_THAT(load_error("{\"group\":\"g\",\"kind\":\"first\"}\n"), HasSubstr(":1: no \"prompt\" string"));
  EXPECT_THAT(load_error("{\"group\":\"g\",\"kind\":\"again\",\"prompt\":\"a\"}\n"), HasSubstr(":1: \"kind\" must be first, verbatim or reworded, got 'again'"));
  EXPECT_THAT(load_error("\n\n"), HasSubstr("has no lines"));
  EXPECT_THAT(load_error(std::string("{\"group\":\"g\",\"kind\":\"first\",\"prompt\":\"a\"}") + std::string(1, '\0') + "x\n"),
              HasSubstr("workload.jsonl:1: a NUL byte at byte 41"));
  EXPECT_EQ(load_error("{\"group\":\"g\",\"kind\":\"first\",\"prompt\":\"a\"}\n"), "");
  try {
    load_workload("/nonexistent/w.jsonl");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read '/nonexistent/w.jsonl'"));
  }
  try {
    cli::bench({"--workload", ::testing::TempDir() + "workload.jsonl", "--distinct-prompts"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("exclude each other"));
  }
}

}  // namespace
}  // namespace sluice::loadgen
