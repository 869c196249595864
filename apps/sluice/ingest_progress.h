// IngestProgressBar: `sluice ingest`'s progress on a terminal, one line on stderr redrawn in
// place, for each stage in turn:
//   loading    [########............]   412/1398 files      1210/s
//   chunking   [####################]  1398/1398 documents  5400/s
//   fitting    [....................]  0/1429 chunks (LSA)       (when the embedder is refitted)
//   embedding  [#########...........]   640/1429 chunks      900/s
// The rate is the stage's units per second since it began. Redrawn at most 10 times a second
// (and at each stage's end) so a fast ingest does not spend its time printing. Silent when
// the stream is not a terminal (logs and pipes get only the final summary line), which
// for_stderr() decides with isatty. finish() clears the line.
// Thread-safety: one thread (the ingesting one).
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "nodes/retrieval/kb/knowledge_base.h"

namespace sluice::cli {

class IngestProgressBar {
 public:
  using Seconds = std::function<double()>;  // a monotonic clock, injectable for tests
  IngestProgressBar(std::FILE* out, bool enabled, Seconds now);
  // On stderr, enabled when stderr is a terminal, on the steady clock.
  static IngestProgressBar for_stderr();

  bool enabled() const { return enabled_; }
  void files(std::size_t done, std::size_t total);              // LoaderOptions::on_file
  void ingest(const retrieval::IngestProgress& progress);        // KnowledgeBase's IngestProgressFn
  void finish();

 private:
  void show(const char* stage, std::size_t done, std::size_t total, const char* unit);

  std::FILE* out_;
  bool enabled_;
  Seconds now_;
  std::string stage_;         // the stage being shown
  double stage_started_ = 0;  // when it began
  double last_draw_ = -1;
  bool drawn_ = false;
};

}  // namespace sluice::cli
