#include "graph/thread_names.h"

#include <pthread.h>

namespace sluice {

namespace {
thread_local const char* given_name = nullptr;  // what ArenaThreadNames last named this thread
}  // namespace

void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

ArenaThreadNames::ArenaThreadNames(tbb::task_arena& arena, const char* name)
    : tbb::task_scheduler_observer(arena), name_(name) {
  observe(true);
}

ArenaThreadNames::~ArenaThreadNames() { observe(false); }

void ArenaThreadNames::on_scheduler_entry(bool is_worker) {
  if (!is_worker || given_name == name_) return;
  name_this_thread(name_);
  given_name = name_;
}

}  // namespace sluice
