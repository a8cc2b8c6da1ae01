#include <stdlib.h>
#include <string.h>
/* check-kernel's program check (docs/kernel-check.md § A program): N blocks of 3, 4, 5 …
   MiB malloc'd and never freed (above glibc's mmap threshold: each its own mapping, placed
   below the last, so that smaps merges it with its neighbour); with
   GLIBC_TUNABLES=glibc.malloc.hugetlb=1 malloc madvises each MADV_HUGEPAGE.
   Run: env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 ./malloc_blocks 4. MIT OR Apache-2.0. */
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3;
    long sum = 0;
    for (int k = 0; k < n; k++) {
        size_t sz = (size_t)(3 + k) << 20;
        char *p = malloc(sz);
        for (size_t i = 0; i < sz; i += 4096) p[i] = (char)k;
        for (size_t i = 0; i < sz; i += 8192) sum += p[i];
    }
    return (int)(sum & 1);
}
