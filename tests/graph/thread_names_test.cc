// Thread names (graph/thread_names.h): a thread that runs a node body is named "sluice-graph";
// one that only visits (waiting for the graph) and one that submits keep their names.
#include "graph/thread_names.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <string>
#include <thread>

#include "tests/graph/test_support.h"

namespace sluice {
namespace {

std::string this_thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

TEST(ThreadNames, AThreadThatRunsANodeBodyIsNamedAndAVisitorKeepsItsName) {
  std::string worker, visitor, after_visit;
  std::thread([&] {
    name_this_thread("some-thread");
    name_graph_worker();
    worker = this_thread_name();
  }).join();
  std::thread([&] {
    name_this_thread("pipeline-owner");
    {
      GraphVisit visit;
      name_graph_worker();
      visitor = this_thread_name();
    }
    after_visit = this_thread_name();
  }).join();
  EXPECT_EQ(worker, "sluice-graph");
  EXPECT_EQ(visitor, "pipeline-owner");
  EXPECT_EQ(after_visit, "pipeline-owner");
}

// The sink's on_complete runs where the answering node completed the request: on a graph worker.
class NameRecordingSink : public testing::RecordingSink {
 public:
  void on_complete(const Request& r) override {
    completed_on = this_thread_name();
    testing::RecordingSink::on_complete(r);
  }
  std::string completed_on;
};

TEST(ThreadNames, ThePipelinesNodesRunOnThreadsNamedSluiceGraphAndTheSubmitterKeepsItsName) {
  std::string submitter, completed_on;
  std::thread([&] {
    name_this_thread("submitter");
    testing::PipelineHarness h(R"(name: names
sources: [{name: api, kind: http}]
nodes: [{name: m, kind: mark}, {name: after, kind: answer_marks}]
edges: [{from: api, to: m}, {from: m, to: after}]
)");
    auto sink = std::make_shared<NameRecordingSink>();
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = "q";
    ASSERT_TRUE(h.pipeline->submit("api", std::make_shared<Request>(h.pipeline->next_request_id(), in, sink)).ok());
    ASSERT_TRUE(sink->wait());
    completed_on = sink->completed_on;
    submitter = this_thread_name();
  }).join();
  EXPECT_EQ(completed_on, "sluice-graph");
  EXPECT_EQ(submitter, "submitter") << "the thread that built, fed and stopped the pipeline";
}

}  // namespace
}  // namespace sluice
