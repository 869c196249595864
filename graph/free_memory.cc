#include "graph/free_memory.h"

#include <dlfcn.h>
#include <malloc.h>

namespace sluice {
namespace {

using AllocationCommand = int (*)(int, void*);
constexpr int kTbbmallocCleanAllBuffers = 0;  // TBBMALLOC_CLEAN_ALL_BUFFERS, oneapi/tbb/scalable_allocator.h

// oneTBB's scalable_allocation_command, when libtbbmalloc is loaded; nullptr otherwise.
AllocationCommand scalable_allocation_command() {
  static const auto command = reinterpret_cast<AllocationCommand>(::dlsym(RTLD_DEFAULT, "scalable_allocation_command"));
  return command;
}

}  // namespace

void return_free_memory() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
  if (AllocationCommand command = scalable_allocation_command()) command(kTbbmallocCleanAllBuffers, nullptr);
}

}  // namespace sluice
