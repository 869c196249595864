// Thread names: the workers that join the arena carry its name; the thread that calls into
// the arena (not a oneTBB worker) keeps its own.
#include "graph/thread_names.h"

#include <gtest/gtest.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <pthread.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace sluice {
namespace {

std::string this_thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

TEST(ArenaThreadNames, WorkersThatJoinTheArenaCarryItsNameAndTheCallerKeepsItsOwn) {
  if (tbb::info::default_concurrency() < 2) GTEST_SKIP() << "one CPU: oneTBB starts no worker to name";
  const std::string was = this_thread_name();
  pthread_setname_np(pthread_self(), "names-caller");
  tbb::task_arena arena(2, /*reserved_for_masters=*/0);
  ArenaThreadNames names(arena, "sluice-test");
  const auto caller = std::this_thread::get_id();
  std::mutex mu;
  std::set<std::string> worker_names;
  std::string caller_name_inside;
  // Tasks long enough that the arena's worker takes some; a loaded machine may take a while.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (worker_names.empty() && std::chrono::steady_clock::now() < give_up) {
    arena.execute([&] {
      tbb::parallel_for(0, 64, [&](int) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::lock_guard<std::mutex> lock(mu);
        if (std::this_thread::get_id() == caller) {
          caller_name_inside = this_thread_name();
        } else {
          worker_names.insert(this_thread_name());
        }
      });
    });
  }
  ASSERT_FALSE(worker_names.empty()) << "no task ran on a oneTBB worker in 20 s";
  EXPECT_EQ(worker_names, std::set<std::string>{"sluice-test"});
  if (!caller_name_inside.empty()) EXPECT_EQ(caller_name_inside, "names-caller");
  EXPECT_EQ(this_thread_name(), "names-caller");
  pthread_setname_np(pthread_self(), was.c_str());
}

}  // namespace
}  // namespace sluice
