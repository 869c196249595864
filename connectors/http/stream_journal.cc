#include "connectors/http/stream_journal.h"

#include <algorithm>

namespace sluice::http {
namespace {

// A block of SSE lines (without its blank line) is a comment when every line starts with ':'
// (": ping", ": progress ...").
bool is_comment(std::string_view block) {
  std::size_t pos = 0;
  while (pos < block.size()) {
    if (block[pos] != ':') return false;
    std::size_t nl = block.find('\n', pos);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return true;
}

}  // namespace

StreamJournal::StreamJournal(std::string id, std::string tenant, std::size_t max_bytes, Nanos keep_running,
                             std::shared_ptr<JournalBudget> budget, const Clock& clock,
                             std::shared_ptr<ResponseWriter> writer)
    : id_(std::move(id)), tenant_(std::move(tenant)), max_bytes_(max_bytes), keep_running_(keep_running),
      budget_(std::move(budget)), clock_(clock), attached_(std::move(writer)) {}

StreamJournal::~StreamJournal() { release_locked(bytes_); }

void StreamJournal::release_locked(std::size_t bytes) {
  if (bytes == 0) return;
  budget_->total_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  if (budget_->bytes_gauge) budget_->bytes_gauge->add(-static_cast<double>(bytes));
}

void StreamJournal::set_cancel(std::function<void()> cancel) {
  std::lock_guard lock(mu_);
  cancel_ = std::move(cancel);
}

void StreamJournal::start(int status, std::vector<HttpHeader> headers) {
  std::lock_guard lock(mu_);
  if (started_) return;
  started_ = true;
  status_ = status;
  headers_ = std::move(headers);
  if (attached_) attached_->start_stream(status_, "text/event-stream", headers_);
}

void StreamJournal::keep_locked(std::string event) {
  if (!keeping_) return;
  const std::size_t n = event.size();
  if (budget_->total_bytes.load(std::memory_order_relaxed) + n > budget_->max_total_bytes) {
    // Every journal together is over budget: this one stops keeping (its stream goes on) and
    // gives back what it held, rather than one stream's size deciding another's resumability.
    keeping_ = false;
    release_locked(bytes_);
    bytes_ = 0;
    events_.clear();
    if (budget_->total_overflows) budget_->total_overflows->inc();
    return;
  }
  bool dropped = false;
  while (!events_.empty() && bytes_ + n > max_bytes_) {
    bytes_ -= events_.front().size();
    release_locked(events_.front().size());
    events_.pop_front();
    ++first_kept_id_;
    dropped = true;
  }
  if (dropped && budget_->stream_overflows) budget_->stream_overflows->inc();
  if (n > max_bytes_) {  // one event larger than the whole allowance: nothing before it can be resumed either
    first_kept_id_ = next_id_;
    if (budget_->stream_overflows && !dropped) budget_->stream_overflows->inc();
    return;
  }
  bytes_ += n;
  budget_->total_bytes.fetch_add(n, std::memory_order_relaxed);
  if (budget_->bytes_gauge) budget_->bytes_gauge->add(static_cast<double>(n));
  events_.push_back(std::move(event));
}

void StreamJournal::write(std::string_view sse) {
  std::function<void()> cancel;
  {
    std::lock_guard lock(mu_);
    if (ended_) return;
    partial_.append(sse);
    std::string out;
    std::size_t pos = 0, end;
    while ((end = partial_.find("\n\n", pos)) != std::string::npos) {
      std::string_view block(partial_.data() + pos, end + 2 - pos);
      const bool comment = is_comment(block.substr(0, block.size() - 2));
      pos = end + 2;
      if (comment) {
        out.append(block);
        continue;
      }
      std::string event = "id: " + std::to_string(next_id_) + "\n";
      event.append(block);
      out += event;
      keep_locked(std::move(event));
      ++next_id_;
    }
    partial_.erase(0, pos);
    if (attached_) {
      attached_->write_chunk(out);
    } else if (!cancelled_ && cancel_ && keep_running_ > 0 && clock_.now() - detached_at_ > keep_running_) {
      cancelled_ = true;
      cancel = cancel_;
    }
  }
  if (cancel) cancel();
}

void StreamJournal::end() {
  std::lock_guard lock(mu_);
  if (ended_) return;
  ended_ = true;
  ended_at_ = clock_.now();
  if (attached_) attached_->end_stream();
  attached_.reset();
}

bool StreamJournal::client_attached() const {
  std::lock_guard lock(mu_);
  return attached_ != nullptr;
}

void StreamJournal::detach(const ResponseWriter* writer) {
  std::function<void()> cancel;
  {
    std::lock_guard lock(mu_);
    if (!attached_ || attached_.get() != writer) return;
    attached_.reset();
    detached_at_ = clock_.now();
    if (ended_ || keep_running_ > 0 || cancelled_) return;
    cancelled_ = true;
    cancel = cancel_;
  }
  if (cancel) cancel();
}

StreamJournal::Attach StreamJournal::attach(const std::shared_ptr<ResponseWriter>& writer, std::uint64_t after_id) {
  std::lock_guard lock(mu_);
  if (!keeping_) return Attach::kNotKept;
  if (after_id >= next_id_) return Attach::kUnknownEvent;
  if (after_id + 1 < first_kept_id_) return Attach::kGone;
  if (attached_ && attached_ != writer) attached_->end_stream();  // one reader at a time
  writer->start_stream(status_, "text/event-stream", headers_);
  std::string replay;
  for (std::size_t i = static_cast<std::size_t>(after_id + 1 - first_kept_id_); i < events_.size(); ++i) {
    replay += events_[i];
  }
  writer->write_chunk(replay);
  if (ended_) {
    writer->end_stream();
    attached_.reset();
  } else {
    attached_ = writer;
    detached_at_ = 0;
  }
  return Attach::kResumed;
}

bool StreamJournal::expired(Nanos now, Nanos grace) const {
  std::lock_guard lock(mu_);
  if (!ended_) return false;  // the request runs: a client reads it, or keep_running (or the cancel) ends it soon
  return now - std::max(ended_at_, detached_at_) > grace;
}

bool StreamJournal::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

Nanos StreamJournal::ended_at() const {
  std::lock_guard lock(mu_);
  return ended_at_;
}

void StreamJournal::forget() {
  std::lock_guard lock(mu_);
  keeping_ = false;
  release_locked(bytes_);
  bytes_ = 0;
  events_.clear();
}

}  // namespace sluice::http
