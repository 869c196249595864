// `template`: a TEST FIXTURE, not a model. It answers every request with a fixed text from the
// pipeline file, streamed word by word, so the HTTP intake, SSE framing, cancellation and
// metrics can be exercised before (and independently of) a real generator.
//
// "{{input}}" in the text is replaced by the request's query (its last user message), with the
// placeholder rules of graph/placeholders.h: any other or an unclosed placeholder is refused at
// construction (std::invalid_argument naming `text`). Each
// streamed piece is a word with its leading whitespace. `max_tokens` truncates the answer
// (finish_reason "length"). With `token_interval` 0 the answer is emitted at once on the
// calling worker; otherwise a single timer thread paces every open stream, so thousands of
// concurrent streams cost no thread each. A cancelled request stops at its next token.
//
// Thread-safety: start_batch may be called concurrently; stop() once, at shutdown.
#pragma once

#include <chrono>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "graph/clock.h"
#include "graph/mutex.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "graph/thread_annotations.h"

namespace sluice {

// Splits text into stream pieces: each word with the whitespace before it.
std::vector<std::string> split_into_pieces(const std::string& text);

class TemplateResponder final : public AsyncNode {
 public:
  TemplateResponder(const TemplateResponderConfig& config, const NodeContext& ctx);
  ~TemplateResponder() override;

  void start_batch(BatchPtr batch, Done done) override EXCLUDES(mu_);
  void stop() override EXCLUDES(mu_);

 private:
  struct Stream;
  struct BatchState;
  void run_timer() EXCLUDES(mu_);
  // Emits the next piece of `s`; returns true when the stream has finished.
  bool step(Stream& s, Nanos now);
  std::shared_ptr<Stream> make_stream(const RequestPtr& r, const std::shared_ptr<BatchState>& batch);
  void finish(Stream& s);

  // Set at construction, read-only after.
  std::string text_;
  Nanos interval_;
  Clock* clock_;

  Mutex mu_;
  CondVar wake_;
  struct Due {
    std::chrono::steady_clock::time_point at;
    std::shared_ptr<Stream> stream;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread timer_;  // not under mu_: started by the constructor, joined only by stop()
};

}  // namespace sluice
