// return_free_memory: hands the memory the allocator keeps cached for reuse back to the kernel.
//
// Why: freeing is not shrinking. After a burst the pipeline frees its requests' envelopes
// (graph/live_lists.h), but glibc keeps freed chunks in its arenas (returning only the top of
// each heap) and oneTBB's scalable allocator, which the `sluice` command links
// (tbbmalloc_proxy), keeps them in its caches: measured after ten windows of 64 KiB prompts,
// 119 MB (glibc) and 160 MB (tbbmalloc) stayed resident of 150, with nothing held. So the
// pipeline calls this once a burst has ended and nothing is in flight (graph/in_flight.h).
//
// What it does: malloc_trim(0) (every whole free page of every glibc arena), then, when the
// scalable allocator is in the process, scalable_allocation_command(TBBMALLOC_CLEAN_ALL_BUFFERS)
// (looked up with dlsym, so graph/ does not link it). Costs a walk of the heaps, milliseconds
// for hundreds of MB; the next allocations fault their pages in again.
//
// Thread-safety: any thread; both allocators lock what they walk.
#pragma once

namespace sluice {

void return_free_memory();

}  // namespace sluice
