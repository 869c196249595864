#include "nodes/basic/template_responder.h"

#include <atomic>
#include <cctype>

#include "graph/placeholders.h"

namespace sluice {

std::vector<std::string> split_into_pieces(const std::string& text) {
  std::vector<std::string> pieces;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    pieces.push_back(text.substr(start, i - start));
  }
  return pieces;
}

namespace {

std::size_t count_words(const std::string& s) {
  std::size_t n = 0;
  bool in_word = false;
  for (char c : s) {
    bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

}  // namespace

struct TemplateResponder::BatchState {
  BatchPtr batch;
  Done done;
  std::atomic<std::size_t> open{0};
};

struct TemplateResponder::Stream {
  RequestPtr request;
  std::shared_ptr<BatchState> batch;
  std::vector<std::string> pieces;
  std::size_t next = 0;
  bool truncated = false;
};

TemplateResponder::TemplateResponder(const TemplateResponderConfig& config, const NodeContext& ctx)
    : text_(config.text()),
      interval_(static_cast<Nanos>(config.token_interval().seconds()) * kNanosPerSecond + config.token_interval().nanos()),
      clock_(ctx.clock) {
  check_placeholders("text", text_, {{"input", ""}});
  if (interval_ > 0) timer_ = std::thread([this] { run_timer(); });
}

TemplateResponder::~TemplateResponder() { stop(); }

std::shared_ptr<TemplateResponder::Stream> TemplateResponder::make_stream(const RequestPtr& r,
                                                                          const std::shared_ptr<BatchState>& batch) {
  auto s = std::make_shared<Stream>();
  s->request = r;
  s->batch = batch;
  std::string query = r->input().query();
  std::string text;
  fill_placeholders(text_, {{"input", query}}, text);  // checked at construction
  s->pieces = split_into_pieces(text);
  int max_tokens = r->input().max_tokens;
  if (max_tokens >= 0 && static_cast<std::size_t>(max_tokens) < s->pieces.size()) {
    s->pieces.resize(static_cast<std::size_t>(max_tokens));
    s->truncated = true;
  }
  r->usage.prompt_tokens = static_cast<int>(count_words(query));
  return s;
}

bool TemplateResponder::step(Stream& s, Nanos now) {
  Request& r = *s.request;
  if (r.done()) return true;
  if (r.cancelled()) {
    r.complete(Status::Error(StatusCode::kCancelled, "request cancelled while streaming", r.cancel_cause()), now);
    return true;
  }
  if (r.expired(now)) {
    r.complete(Status::Error(StatusCode::kDeadlineExceeded, "request deadline passed while streaming", AbortCause::kTimeout), now);
    return true;
  }
  if (s.next < s.pieces.size()) {
    r.emit_token(s.pieces[s.next++], now);
    r.usage.completion_tokens = static_cast<int>(s.next);
  }
  if (s.next < s.pieces.size()) return false;
  r.finish_reason = s.truncated ? "length" : "stop";
  r.complete(Status::Ok(), now);
  return true;
}

void TemplateResponder::finish(Stream& s) {
  if (s.batch->open.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    Done done = std::move(s.batch->done);
    BatchPtr batch = std::move(s.batch->batch);
    done(std::move(batch));
  }
}

void TemplateResponder::start_batch(BatchPtr batch, Done done) {
  auto state = std::make_shared<BatchState>();
  state->batch = batch;
  state->done = std::move(done);
  std::vector<std::shared_ptr<Stream>> streams;
  for (const auto& r : batch->requests) {
    if (!r->active()) continue;
    if (Status refused = refuse_structured_output(r->input(), "template"); !refused.ok()) {
      r->complete(std::move(refused), clock_->now());
      continue;
    }
    streams.push_back(make_stream(r, state));
  }
  // One extra count held while streams are being set up, so the batch cannot finish early.
  state->open.store(streams.size() + 1, std::memory_order_release);
  bool stopped = false;  // stopping_ as seen under the lock: decides both abandoning and finishing
  if (interval_ == 0) {
    for (auto& s : streams) {
      while (!step(*s, clock_->now())) {
      }
      finish(*s);
    }
  } else {
    MutexLock lock(mu_);
    stopped = stopping_;
    auto now = std::chrono::steady_clock::now();
    for (auto& s : streams) {
      if (stopped) {
        s->request->complete(Status::Error(StatusCode::kUnavailable, "template responder stopped", AbortCause::kShutdown),
                             clock_->now());
        continue;
      }
      due_.push(Due{now, s});
    }
    wake_.notify_one();
  }
  // Streams abandoned because of stopping_ finish here.
  if (stopped) {
    for (auto& s : streams) finish(*s);
  }
  Stream holder;
  holder.batch = state;
  finish(holder);
}

void TemplateResponder::run_timer() {
  MutexLock lock(mu_);
  while (true) {
    if (stopping_ && due_.empty()) return;
    if (due_.empty()) {
      wake_.wait(lock);
      continue;
    }
    auto at = due_.top().at;
    if (!stopping_ && std::chrono::steady_clock::now() < at) {
      wake_.wait_until(lock, at);
      continue;
    }
    Due d = due_.top();
    due_.pop();
    const bool stopping = stopping_;
    lock.unlock();
    bool finished;
    if (stopping) {
      d.stream->request->complete(
          Status::Error(StatusCode::kUnavailable, "template responder stopped", AbortCause::kShutdown), clock_->now());
      finished = true;
    } else {
      finished = step(*d.stream, clock_->now());
    }
    if (finished) finish(*d.stream);
    lock.lock();
    if (!finished) {
      due_.push(Due{d.at + std::chrono::nanoseconds(interval_), std::move(d.stream)});
    }
  }
}

void TemplateResponder::stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (timer_.joinable()) timer_.join();
}

}  // namespace sluice
