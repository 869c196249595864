// StreamJournal: one streamed answer's SSE events, numbered and kept, so a client that lost
// its connection can reconnect (GET /v1/streams/{id} with Last-Event-ID) and read on from the
// next event without the answer being generated again.
//
// The answer's sink writes SSE text through the journal instead of straight to the client:
// every event (a block ending in a blank line that is not a comment) gets an `id: N` line,
// N = 1, 2, ..., is kept, and is forwarded to the client attached at the time, if any.
// Comments (heartbeats, progress) are forwarded but not kept: they say nothing a resumed
// client needs. Kept events are bounded by `max_bytes` (the oldest are dropped first, and a
// resume from before them is refused as "gone") and by a budget shared by every journal of
// the source (JournalBudget: past it, the journal stops keeping events and cannot be resumed;
// the stream itself goes on).
//
// Connections: the request's own connection is attached at construction. When it closes,
// detach() cancels the request unless the client asked, with X-Sluice-Resume, for generation
// to go on without it (`keep_running`). While detached, the
// next write past keep_running cancels it (the cancel callback); the heartbeats of a queued
// request count as writes, so even a request that waits is caught. attach() replays the kept
// events after a given id to a new connection and makes it the attached one (a previous one
// still open is ended: one reader at a time); when the stream has ended, the new connection
// gets the replay and its end.
//
// Thread-safety: every method from any thread; one mutex orders the writes and the
// attaching, so a resumed client never misses or repeats an event. Writer calls made under
// it only post to an event loop (they never block).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_response.h"
#include "connectors/http/response_writer.h"
#include "graph/clock.h"
#include "graph/metrics.h"

namespace sluice::http {

// The bytes every journal of one source may keep together, and what they keep now.
struct JournalBudget {
  std::size_t max_total_bytes = 0;
  std::atomic<std::size_t> total_bytes{0};
  Gauge* bytes_gauge = nullptr;         // sluice_http_stream_journal_bytes
  Counter* stream_overflows = nullptr;  // a journal dropped its oldest events (max_stream_bytes)
  Counter* total_overflows = nullptr;   // a journal stopped keeping events (max_total_bytes)
};

class StreamJournal {
 public:
  StreamJournal(std::string id, std::string tenant, std::size_t max_bytes, Nanos keep_running,
                std::shared_ptr<JournalBudget> budget, const Clock& clock, std::shared_ptr<ResponseWriter> writer);
  ~StreamJournal();
  StreamJournal(const StreamJournal&) = delete;
  StreamJournal& operator=(const StreamJournal&) = delete;

  const std::string& id() const { return id_; }
  const std::string& tenant() const { return tenant_; }

  // ---- the answer's side (its sink) ----
  // The stream's head: sent to the attached client now, and to every resumed one.
  void start(int status, std::vector<HttpHeader> headers);
  // SSE text: whole events (each ending in "\n\n"), possibly several.
  void write(std::string_view sse);
  // The answer is complete: the attached client's stream ends; the journal is kept `grace`.
  void end();
  // Whether a client is attached now (a cancelled request's answer reaches nobody when not).
  bool client_attached() const;

  // ---- the connections' side ----
  // The connection `writer` closed: detaches it if it is the attached one, and then cancels
  // the request (the cancel callback) unless it ended or keep_running asks it to go on.
  void detach(const ResponseWriter* writer);
  enum class Attach { kResumed, kGone, kUnknownEvent, kNotKept };
  // Replays the events after `after_id` (0: all) to `writer` and attaches it. kGone: events
  // after after_id were dropped (max_stream_bytes); kUnknownEvent: after_id was never sent;
  // kNotKept: the journal stopped keeping events (max_total_bytes). Nothing is written then.
  Attach attach(const std::shared_ptr<ResponseWriter>& writer, std::uint64_t after_id);
  // Cancels the request: on a detach without keep_running, or when a detached stream outlives
  // keep_running. Called without the journal's lock, at most once.
  void set_cancel(std::function<void()> cancel);

  // ---- the registry's side ----
  // When the journal may be forgotten: `grace` after its stream ended, or after its last
  // client left, whichever is later; never while the request runs with a client attached.
  bool expired(Nanos now, Nanos grace) const;
  bool ended() const;
  Nanos ended_at() const;
  // Drops every kept event (the registry evicts this journal); later writes are not kept.
  void forget();

 private:
  void keep_locked(std::string event);  // mu_ held
  void release_locked(std::size_t bytes);

  const std::string id_;
  const std::string tenant_;
  const std::size_t max_bytes_;
  const Nanos keep_running_;
  const std::shared_ptr<JournalBudget> budget_;
  const Clock& clock_;

  mutable std::mutex mu_;
  std::shared_ptr<ResponseWriter> attached_;  // null while no client reads
  int status_ = 200;
  std::vector<HttpHeader> headers_;
  bool started_ = false;
  bool ended_ = false;
  bool keeping_ = true;         // false once over the shared budget, or forgotten
  Nanos ended_at_ = 0;
  Nanos detached_at_ = 0;       // when the last client left; 0 while one is attached
  std::uint64_t next_id_ = 1;
  std::uint64_t first_kept_id_ = 1;
  std::deque<std::string> events_;  // framed ("id: N\n" + event), ids first_kept_id_...
  std::size_t bytes_ = 0;
  std::string partial_;         // an event not yet complete ("\n\n" not yet written)
  std::function<void()> cancel_;
  bool cancelled_ = false;
};

}  // namespace sluice::http
