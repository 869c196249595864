// Clang thread-safety annotations (-Wthread-safety): which mutex guards which member, and which
// functions must be called with it held. They compile to nothing under GCC; scripts/test runs
// scripts/check-thread-safety, clang -Wthread-safety -Werror=thread-safety over every
// production translation unit, so a member read without its lock fails the tests instead of
// racing in production (docs/testing.md).
//
// Use with sluice::Mutex and sluice::MutexLock (graph/mutex.h): std::mutex carries no
// annotations in libstdc++, so the analysis cannot see it.
#pragma once

#if defined(__clang__)
#define SLUICE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SLUICE_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) SLUICE_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SLUICE_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) SLUICE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) SLUICE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) SLUICE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SLUICE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SLUICE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define RETURN_CAPABILITY(x) SLUICE_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS SLUICE_THREAD_ANNOTATION(no_thread_safety_analysis)
