#include "connectors/http/loop_mailbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sluice::http {

LoopMailbox::LoopMailbox() {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw std::runtime_error(std::string("http: eventfd failed: ") + std::strerror(errno));
}

LoopMailbox::~LoopMailbox() {
  if (event_fd_ >= 0) ::close(event_fd_);
}

void LoopMailbox::post(LoopOp op) {
  if (!open()) return;
  if (on_loop_thread()) {
    local.push_back(std::move(op));
    return;
  }
  bool was_empty;
  {
    MutexLock lock(mu_);
    was_empty = queue_.empty();
    queue_.push_back(std::move(op));
  }
  if (was_empty) wake();
}

void LoopMailbox::wake() {
  std::uint64_t one = 1;
  // A full counter (never in practice) still leaves the fd readable, so the loop wakes.
  [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
}

void LoopMailbox::take(std::vector<LoopOp>& out) {
  std::uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(event_fd_, &count, sizeof count);
  MutexLock lock(mu_);
  out.swap(queue_);
}

}  // namespace sluice::http
