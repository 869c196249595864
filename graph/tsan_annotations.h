// Happens-before annotations for ThreadSanitizer at the runtime's hand-offs.
//
// oneTBB's library is not built with TSan, so the synchronisation inside it (task queues,
// work stealing) is invisible and every batch handed from one worker to the next would be
// reported as a race. The runtime marks each hand-off explicitly: the producer releases the
// batch before putting it on an edge, the consumer acquires it before touching it. Outside
// TSan builds these compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define SLUICE_HANDOFF_RELEASE(p) __tsan_release(static_cast<void*>(p))
#define SLUICE_HANDOFF_ACQUIRE(p) __tsan_acquire(static_cast<void*>(p))
#else
#define SLUICE_HANDOFF_RELEASE(p) ((void)0)
#define SLUICE_HANDOFF_ACQUIRE(p) ((void)0)
#endif
