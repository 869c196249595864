#include "apps/sluice/ingest_progress.h"

#include <unistd.h>

#include <chrono>

namespace sluice::cli {
namespace {

constexpr double kRedrawInterval = 0.1;  // seconds; a terminal line needs no more than 10 Hz
constexpr std::size_t kBarWidth = 20;

}  // namespace

IngestProgressBar::IngestProgressBar(std::FILE* out, bool enabled, Seconds now)
    : out_(out), enabled_(enabled), now_(std::move(now)) {}

IngestProgressBar IngestProgressBar::for_stderr() {
  return IngestProgressBar(stderr, ::isatty(STDERR_FILENO) == 1, [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  });
}

void IngestProgressBar::files(std::size_t done, std::size_t total) { show("loading", done, total, "files"); }

void IngestProgressBar::ingest(const retrieval::IngestProgress& p) {
  if (p.fitting_chunks > 0) {
    show("fitting", 0, p.fitting_chunks, "chunks (LSA)");  // one step: no progress inside the fit
  } else if (p.chunks_to_embed == 0) {
    show("chunking", p.documents_done, p.documents_total, "documents");
  } else {
    show("embedding", p.chunks_embedded, p.chunks_to_embed, "chunks");
  }
}

void IngestProgressBar::show(const char* stage, std::size_t done, std::size_t total, const char* unit) {
  if (!enabled_) return;
  const double now = now_();
  const bool new_stage = stage_ != stage;
  if (new_stage) {
    stage_ = stage;
    stage_started_ = now;
  }
  const bool last = done >= total;
  if (!new_stage && !last && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  const std::size_t filled = total == 0 ? kBarWidth : done * kBarWidth / total;
  std::string bar(filled > kBarWidth ? kBarWidth : filled, '#');
  bar.resize(kBarWidth, '.');
  const double elapsed = now - stage_started_;
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  // \r and "erase line" redraw in place; the rate is shown once there is time to measure.
  std::fprintf(out_, "\r\033[K%-10s [%s] %zu/%zu %s", stage, bar.c_str(), done, total, unit);
  if (elapsed > 0) std::fprintf(out_, "  %.0f/s", rate);
  std::fflush(out_);
  drawn_ = true;
}

void IngestProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  std::fputs("\r\033[K", out_);
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace sluice::cli
