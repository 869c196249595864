/* C11 threads for ThreadSanitizer builds (-DSLUICE_SANITIZE=thread): linked into every test
 * executable of that build only (tests/CMakeLists.txt), where these definitions take the place
 * of glibc's for the libraries the test loads.
 *
 * Why: librdkafka (Debian's, not instrumented) makes its threads, mutexes and condition
 * variables with C11's thrd_create, mtx_* and cnd_*. glibc implements those by calling its own
 * internal pthread functions, which TSan does not intercept: a librdkafka thread was unknown
 * to TSan, and its first allocation crashed the test inside TSan's allocator (no thread state);
 * and no hand-off through librdkafka's queues was seen, so every record's bytes read on our
 * threads were reported. These call the public pthread functions, which TSan intercepts, so
 * librdkafka's threads are known and its locks order what they guard (docs/testing.md,
 * "ThreadSanitizer"). glibc's C11 types wrap the pthread ones (mtx_t holds a pthread_mutex_t,
 * cnd_t a pthread_cond_t, thrd_t is a pthread_t), so the casts below are glibc's own. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

struct tsan_thrd_start {
  thrd_start_t fn;
  void* arg;
};

static void* tsan_thrd_trampoline(void* p) {
  struct tsan_thrd_start s = *(struct tsan_thrd_start*)p;
  free(p);
  return (void*)(intptr_t)s.fn(s.arg);
}

static int tsan_thrd_result(int r) { return r == 0 ? thrd_success : thrd_error; }

int thrd_create(thrd_t* thr, thrd_start_t fn, void* arg) {
  struct tsan_thrd_start* s = malloc(sizeof *s);
  if (!s) return thrd_nomem;
  s->fn = fn;
  s->arg = arg;
  const int r = pthread_create(thr, NULL, tsan_thrd_trampoline, s);
  if (r != 0) {
    free(s);
    return r == ENOMEM || r == EAGAIN ? thrd_nomem : thrd_error;
  }
  return thrd_success;
}

int thrd_join(thrd_t thr, int* res) {
  void* r = NULL;
  if (pthread_join(thr, &r) != 0) return thrd_error;
  if (res) *res = (int)(intptr_t)r;
  return thrd_success;
}

int thrd_detach(thrd_t thr) { return tsan_thrd_result(pthread_detach(thr)); }

int mtx_init(mtx_t* m, int type) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  const int r = pthread_mutex_init((pthread_mutex_t*)m, &a);
  pthread_mutexattr_destroy(&a);
  return tsan_thrd_result(r);
}
int mtx_lock(mtx_t* m) { return tsan_thrd_result(pthread_mutex_lock((pthread_mutex_t*)m)); }
int mtx_trylock(mtx_t* m) {
  const int r = pthread_mutex_trylock((pthread_mutex_t*)m);
  return r == 0 ? thrd_success : r == EBUSY ? thrd_busy : thrd_error;
}
int mtx_timedlock(mtx_t* restrict m, const struct timespec* restrict t) {
  const int r = pthread_mutex_timedlock((pthread_mutex_t*)m, t);
  return r == 0 ? thrd_success : r == ETIMEDOUT ? thrd_timedout : thrd_error;
}
int mtx_unlock(mtx_t* m) { return tsan_thrd_result(pthread_mutex_unlock((pthread_mutex_t*)m)); }
void mtx_destroy(mtx_t* m) { pthread_mutex_destroy((pthread_mutex_t*)m); }

int cnd_init(cnd_t* c) { return tsan_thrd_result(pthread_cond_init((pthread_cond_t*)c, NULL)); }
int cnd_signal(cnd_t* c) { return tsan_thrd_result(pthread_cond_signal((pthread_cond_t*)c)); }
int cnd_broadcast(cnd_t* c) { return tsan_thrd_result(pthread_cond_broadcast((pthread_cond_t*)c)); }
int cnd_wait(cnd_t* c, mtx_t* m) {
  return tsan_thrd_result(pthread_cond_wait((pthread_cond_t*)c, (pthread_mutex_t*)m));
}
int cnd_timedwait(cnd_t* restrict c, mtx_t* restrict m, const struct timespec* restrict t) {
  const int r = pthread_cond_timedwait((pthread_cond_t*)c, (pthread_mutex_t*)m, t);
  return r == 0 ? thrd_success : r == ETIMEDOUT ? thrd_timedout : thrd_error;
}
void cnd_destroy(cnd_t* c) { pthread_cond_destroy((pthread_cond_t*)c); }
