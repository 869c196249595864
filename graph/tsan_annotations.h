// Happens-before annotations for ThreadSanitizer at the runtime's hand-offs.
//
// oneTBB's library is not built with TSan, so the synchronisation inside it (task queues,
// work stealing) is invisible and every batch handed from one worker to the next would be
// reported as a race. The runtime marks each hand-off explicitly: the producer releases the
// batch before putting it on an edge, the consumer acquires it before touching it. Outside
// TSan builds these compile to nothing.
#pragma once

//
// SLUICE_TBB_OWNED_BEGIN/END bracket accesses to memory that oneTBB owns and hands between
// threads itself (the copy of a message inside a task object): TSan does not check them.
// Keep such regions to the copy alone; anything the copy frees or builds is done outside.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#define SLUICE_HANDOFF_RELEASE(p) __tsan_release(static_cast<void*>(p))
#define SLUICE_HANDOFF_ACQUIRE(p) __tsan_acquire(static_cast<void*>(p))
#define SLUICE_TBB_OWNED_BEGIN() (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define SLUICE_TBB_OWNED_END() (AnnotateIgnoreWritesEnd(__FILE__, __LINE__), AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define SLUICE_HANDOFF_RELEASE(p) ((void)(p))  // evaluated, so a captured pointer counts as used
#define SLUICE_HANDOFF_ACQUIRE(p) ((void)(p))
#define SLUICE_TBB_OWNED_BEGIN() ((void)0)
#define SLUICE_TBB_OWNED_END() ((void)0)
#endif
