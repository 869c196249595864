#include "nodes/retrieval/dense/search_coalescer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

namespace sluice::retrieval {

// One batch call's queries: the leader's first, then each joiner's, in the order they came.
struct SearchCoalescer::Group {
  std::vector<float> queries;
  std::size_t nq = 0;
  std::size_t callers = 0;
  std::size_t k = 0;  // the deepest k asked
  bool started = false;
  bool done = false;
  std::vector<std::vector<ScoredDoc>> results;
  std::exception_ptr error;
};

SearchCoalescer::SearchCoalescer(std::size_t dimension, BatchSearch search, CoalescerOptions options)
    : dim_(dimension), search_(std::move(search)), options_(options) {
  if (dim_ == 0) throw std::invalid_argument("SearchCoalescer: dimension 0");
  if (!search_) throw std::invalid_argument("SearchCoalescer: no batch search");
  if (options_.max_queries == 0) throw std::invalid_argument("SearchCoalescer: max_queries 0");
  if (options_.window < 0) throw std::invalid_argument("SearchCoalescer: negative window");
}

SearchCoalescer::~SearchCoalescer() = default;

void SearchCoalescer::report(std::size_t queries, std::size_t callers, std::chrono::steady_clock::time_point t0) const {
  if (!options_.observer) return;
  (*options_.observer)(queries, callers, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

SearchCoalescer::Stats SearchCoalescer::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

std::vector<std::vector<ScoredDoc>> SearchCoalescer::run_alone(const float* queries, std::size_t nq, std::size_t k) {
  std::vector<std::vector<ScoredDoc>> out;
  out.reserve(nq);
  for (std::size_t q0 = 0; q0 < nq; q0 += options_.max_queries) {
    const std::size_t n = std::min(options_.max_queries, nq - q0);
    {
      MutexLock lock(mu_);
      while (running_) changed_.wait(lock);
      running_ = true;
      ++stats_.batches;
      stats_.queries += n;
      stats_.largest = std::max<std::uint64_t>(stats_.largest, n);
    }
    std::vector<std::vector<ScoredDoc>> part;
    std::exception_ptr error;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      part = search_(queries + q0 * dim_, n, k);
    } catch (...) {
      error = std::current_exception();
    }
    report(n, 1, t0);
    {
      MutexLock lock(mu_);
      running_ = false;
    }
    changed_.notify_all();
    if (error) std::rethrow_exception(error);
    for (auto& r : part) out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::vector<ScoredDoc>> SearchCoalescer::search(const float* queries, std::size_t nq, std::size_t k) {
  if (nq == 0) return {};
  {
    MutexLock lock(mu_);
    ++stats_.calls;
  }
  if (nq > options_.max_queries) return run_alone(queries, nq, k);

  MutexLock lock(mu_);
  std::shared_ptr<Group> group;
  std::size_t offset = 0;
  bool leader = false;
  if (open_ && !open_->started && open_->nq + nq <= options_.max_queries) {
    group = open_;
    offset = group->nq;
  } else {
    group = std::make_shared<Group>();
    group->queries.reserve(options_.max_queries * dim_);
    open_ = group;
    leader = true;
  }
  group->queries.insert(group->queries.end(), queries, queries + nq * dim_);
  group->nq += nq;
  ++group->callers;
  group->k = std::max(group->k, k);

  if (!leader) {
    if (group->nq >= options_.max_queries) changed_.notify_all();  // full: the leader need not wait on
    while (!group->done) changed_.wait(lock);
  } else {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(options_.window);
    while (group->nq < options_.max_queries && changed_.wait_until(lock, until) == std::cv_status::no_timeout) {
    }
    while (running_) changed_.wait(lock);
    group->started = true;
    if (open_ == group) open_.reset();
    running_ = true;
    ++stats_.batches;
    stats_.queries += group->nq;
    stats_.largest = std::max<std::uint64_t>(stats_.largest, group->nq);
    const std::size_t batch_queries = group->nq, batch_callers = group->callers;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      group->results = search_(group->queries.data(), group->nq, group->k);
      if (group->results.size() != group->nq) throw std::logic_error("SearchCoalescer: the batch search answered another count");
    } catch (...) {
      group->error = std::current_exception();
    }
    report(batch_queries, batch_callers, t0);
    lock.lock();
    running_ = false;
    group->done = true;
    changed_.notify_all();
  }
  if (group->error) std::rethrow_exception(group->error);
  std::vector<std::vector<ScoredDoc>> out;
  out.reserve(nq);
  for (std::size_t i = 0; i < nq; ++i) {
    std::vector<ScoredDoc> r = std::move(group->results[offset + i]);  // each caller takes only its own
    if (r.size() > k) r.resize(k);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace sluice::retrieval
