/* mmulab advise's third way (issue 50 item 3): THP on the proposed regions only.
 *
 * An LD_PRELOAD library. It reads MMULAB_THP_REGIONS, a comma-separated list of the
 * proposal's regions: `heap` for the brk heap, or a size in bytes for an anonymous
 * mapping, and calls madvise(MADV_HUGEPAGE) (THP `madvise` mode's opt-in) on
 *
 * - each anonymous writable mmap() the program calls whose length matches a listed size,
 * - each malloc/calloc/realloc/memalign/posix_memalign/aligned_alloc block whose size
 *   matches one (glibc maps a large block with its own mmap, which it calls inside libc,
 *   past any preloaded mmap), narrowed to the whole pages inside the block,
 * - the brk heap, when `heap` is listed, each time it has grown (checked after each
 *   allocation), with glibc's top pad raised to 8 MiB so that each growth is untouched
 *   but for its first bytes when it is madvised: a fault then maps its whole 2 MiB
 *   pages huge (with a 2 MiB pad every aligned page straddled two growths, and its first
 *   half was faulted small before the second was madvised: no huge page at all). glibc's own
 *   `glibc.malloc.hugetlb=1` does the same in sysmalloc, before the growth is used.
 *
 * A size matches when the page-rounded length is within 1/64 of it, 64 KiB at least:
 * the recorded region is the kernel's VMA, which is the block plus malloc's header
 * rounded to pages, less a page the program protected, or more where it merged.
 * A block of 2 MiB or more that matches no size is looked up in /proc/self/maps: when
 * the VMA holding it matches one, the whole VMA is madvised. That is a region made of
 * several allocations the kernel merged into one VMA (two equal callocs mapped one
 * below the other, vma_merge_new_range): it matches once its last block is mapped, and
 * the pages its earlier blocks faulted before that stay small (khugepaged may collapse
 * them later).
 * Limits: an allocation of another purpose but the same size is madvised too; a static
 * binary, a setuid one, or a program that calls the mmap system call directly is not
 * reached. advise checks what the kernel gave (AnonHugePages) and says so when nothing.
 *
 * It allocates nothing itself and forwards every call to the next definition
 * (RTLD_NEXT), so a program's own allocator (jemalloc, tcmalloc) stays in use; while
 * dlsym resolves, a small static arena answers (dlsym may allocate on some glibcs).
 *
 * Written here rather than taken from a library: no maintained preload library
 * madvises by allocation size. MIT OR Apache-2.0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SIZES 64
#define PAGE 4096UL
#define HUGE (2UL << 20)

static size_t sizes[MAX_SIZES];
static int n_sizes = -1; /* -1: not parsed yet */
static int heap_listed;
static uintptr_t heap_start, heap_done;

static void *(*next_mmap)(void *, size_t, int, int, int, off_t);
static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void *(*next_memalign)(size_t, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void (*next_free)(void *);

static char arena[8192];
static size_t arena_used;
static int resolving;

static int in_arena(const void *p) {
    return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

static void *from_arena(size_t n) {
    size_t at = (arena_used + 15) & ~(size_t)15;
    if (at + n > sizeof arena)
        return NULL;
    arena_used = at + n;
    return arena + at;
}

/* Parses the list without allocating (getenv and strtoul do not). */
static void parse(void) {
    const char *s = getenv("MMULAB_THP_REGIONS");
    int n = 0;
    while (s && *s && n < MAX_SIZES) {
        if (strncmp(s, "heap", 4) == 0) {
            heap_listed = 1;
            s += 4;
        } else {
            char *end;
            unsigned long v = strtoul(s, &end, 10);
            if (end == s)
                break;
            sizes[n++] = v;
            s = end;
        }
        if (*s == ',')
            s++;
    }
    n_sizes = n;
    if (heap_listed) {
        heap_start = (uintptr_t)sbrk(0);
        mallopt(M_TOP_PAD, (int)(4 * HUGE));
    }
}

static void resolve(void) {
    if (next_malloc || resolving)
        return;
    resolving = 1;
    next_mmap = dlsym(RTLD_NEXT, "mmap");
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
    next_memalign = dlsym(RTLD_NEXT, "memalign");
    next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    next_free = dlsym(RTLD_NEXT, "free");
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    resolving = 0;
    if (n_sizes < 0)
        parse();
}

__attribute__((constructor)) static void init(void) { resolve(); }

static int listed(size_t len) {
    size_t n = (len + PAGE - 1) & ~(PAGE - 1);
    for (int i = 0; i < n_sizes; i++) {
        size_t s = sizes[i], tol = s / 64 > (64UL << 10) ? s / 64 : (64UL << 10);
        if (n + tol >= s && n <= s + tol)
            return 1;
    }
    return 0;
}

/* The VMA of /proc/self/maps that holds address p, in *lo and *hi; 0 when none or the
 * file cannot be read. Parsed as it streams through a stack buffer: no allocation (this
 * runs inside malloc), and a line of any length (only its first field is read). */
static int vma_of(uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    int field = 0, found = 0; /* field 0: start, 1: end, 2: the rest of the line */
    uintptr_t v[2] = {0, 0};
    ssize_t n;
    while (!found && (n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n && !found; i++) {
            char c = buf[i];
            if (c == '\n') {
                field = 0;
                v[0] = v[1] = 0;
            } else if (field < 2) {
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                if (d >= 0) {
                    v[field] = v[field] << 4 | (uintptr_t)d;
                } else if (field == 0 && c == '-') {
                    field = 1;
                } else {
                    field = 2;
                    if (v[0] <= p && p < v[1]) {
                        *lo = v[0];
                        *hi = v[1];
                        found = 1;
                    }
                }
            }
        }
    }
    close(fd);
    return found;
}

static void advise_range(uintptr_t a, uintptr_t b) {
    if (b > a)
        madvise((void *)a, b - a, MADV_HUGEPAGE);
}

/* madvise the whole pages of [p, p + len) when len matches a listed size, or the whole
 * VMA holding the block when the VMA's size matches one (allocations merged). */
static void advise_block(void *p, size_t len) {
    if (!p || n_sizes <= 0 || len < HUGE)
        return;
    uintptr_t a = ((uintptr_t)p + PAGE - 1) & ~(PAGE - 1), b = ((uintptr_t)p + len) & ~(PAGE - 1);
    if (listed(len)) {
        advise_range(a, b);
        return;
    }
    uintptr_t lo, hi;
    if (vma_of((uintptr_t)p, &lo, &hi) && hi - lo > len && listed(hi - lo))
        advise_range(lo, hi);
}

static void advise_heap(void) {
    if (!heap_listed)
        return;
    uintptr_t end = (uintptr_t)sbrk(0);
    uintptr_t done = __atomic_load_n(&heap_done, __ATOMIC_RELAXED);
    if (end <= heap_start || end <= done)
        return;
    if (!__atomic_compare_exchange_n(&heap_done, &done, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    uintptr_t a = (heap_start + PAGE - 1) & ~(PAGE - 1);
    madvise((void *)a, (end & ~(PAGE - 1)) - a, MADV_HUGEPAGE);
}

static void *after(void *p, size_t len) {
    advise_block(p, len);
    advise_heap();
    return p;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    resolve();
    if (!next_mmap)
        return MAP_FAILED;
    void *p = next_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && (prot & PROT_WRITE))
        advise_block(p, len);
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

void *malloc(size_t n) {
    if (!next_malloc) {
        if (resolving)
            return from_arena(n);
        resolve();
    }
    return after(next_malloc(n), n);
}

void *calloc(size_t k, size_t n) {
    if (!next_calloc) {
        if (resolving) {
            void *p = n && k > SIZE_MAX / n ? NULL : from_arena(k * n);
            return p; /* the arena is zeroed static memory, never reused */
        }
        resolve();
    }
    return after(next_calloc(k, n), k * n);
}

void *realloc(void *p, size_t n) {
    resolve();
    if (in_arena(p)) { /* a block dlsym took: moved to the real allocator */
        void *q = next_malloc(n);
        size_t left = (size_t)(arena + sizeof arena - (char *)p);
        if (q)
            memcpy(q, p, n < left ? n : left);
        return after(q, n);
    }
    return after(next_realloc(p, n), n);
}

void free(void *p) {
    if (!p || in_arena(p))
        return;
    resolve();
    if (next_free)
        next_free(p);
}

void *memalign(size_t al, size_t n) {
    resolve();
    return after(next_memalign(al, n), n);
}

void *aligned_alloc(size_t al, size_t n) {
    resolve();
    return after(next_aligned_alloc(al, n), n);
}

int posix_memalign(void **out, size_t al, size_t n) {
    resolve();
    int r = next_posix_memalign(out, al, n);
    if (r == 0)
        after(*out, n);
    return r;
}
