// LoopMailbox: how other threads hand output to an event loop without blocking.
//
// Engine threads post LoopOps (already-serialised bytes for one connection's response); the
// post takes a short mutex and, when the queue was empty, writes the loop's eventfd once, so
// a burst of tokens costs one wake-up. Posts made on the loop thread itself (a handler that
// answers at once) skip the lock and the eventfd: they go to `local`, which the loop drains
// after every handler call.
//
// Ownership: shared by the loop and every ResponseWriter of its connections, so a writer
// that outlives the server posts into a closed mailbox, which drops the op. The eventfd is
// closed when the last owner lets go. Thread-safety: post/close/open from any thread;
// take/local/bind_to_current_thread only on the loop thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "graph/mutex.h"
#include "graph/thread_annotations.h"

namespace sluice::http {

struct LoopOp {
  enum class Kind {
    kResponse,    // a complete response; finishes the exchange
    kStreamHead,  // the head of a chunked response
    kChunk,       // more body bytes of a streamed response
    kStreamEnd,   // the last chunk; finishes the exchange
  };
  Kind kind = Kind::kResponse;
  std::uint64_t conn_id = 0;
  std::uint64_t seq = 0;      // which exchange on the connection; stale ops are dropped
  std::string bytes;
};

class LoopMailbox {
 public:
  LoopMailbox();
  ~LoopMailbox();
  LoopMailbox(const LoopMailbox&) = delete;
  LoopMailbox& operator=(const LoopMailbox&) = delete;

  void post(LoopOp op) EXCLUDES(mu_);
  // Moves every posted op into `out` (which the caller cleared) and resets the eventfd.
  void take(std::vector<LoopOp>& out) EXCLUDES(mu_);
  // Wakes the loop without an op (control flags changed).
  void wake();
  // From now on posts are dropped (the loop is gone).
  void close() { open_.store(false, std::memory_order_release); }
  bool open() const { return open_.load(std::memory_order_acquire); }

  int fd() const { return event_fd_; }
  void bind_to_current_thread() { loop_thread_ = std::this_thread::get_id(); }
  bool on_loop_thread() const { return std::this_thread::get_id() == loop_thread_; }

  std::vector<LoopOp> local;  // loop thread only

 private:
  int event_fd_ = -1;  // set at construction, read-only after
  std::atomic<bool> open_{true};
  std::thread::id loop_thread_;  // not under mu_: bound when the loop starts, before its connections can post
  Mutex mu_;
  std::vector<LoopOp> queue_ GUARDED_BY(mu_);
};

}  // namespace sluice::http
