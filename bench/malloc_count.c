// Counts the heap allocations of a process, for bench/cpu.sh: LD_PRELOAD=malloc_count.so with MALLOC_COUNT_FILE=PATH
// (an existing file of at least 8 bytes) keeps the number of malloc, calloc, realloc (of NULL or to a new size),
// posix_memalign, aligned_alloc and memalign calls so far in that file's first 8 bytes (a little-endian uint64, shared
// memory: read it at any time with `od -An -t u8 -N8 PATH`). Built by bench/cpu.sh with `cc -O2 -shared -fPIC`.
// Counts are exact (an atomic add each); time under it is not representative: bench/cpu.sh measures CPU without it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uint64_t before_mapping;
static uint64_t *counter = &before_mapping;

__attribute__((constructor)) static void map_counter(void) {
  const char *path = getenv("MALLOC_COUNT_FILE");
  if (path == NULL) return;
  int fd = open(path, O_RDWR);
  if (fd < 0) return;
  void *shared = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (shared == MAP_FAILED) return;
  __atomic_store_n((uint64_t *)shared, before_mapping, __ATOMIC_RELAXED);
  counter = shared;
}

static inline void count(void) { __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *old, size_t size) { count(); return __libc_realloc(old, size); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
  count();
  void *p = __libc_memalign(alignment, size);
  if (p == NULL) return 12; // ENOMEM
  *out = p;
  return 0;
}
