/* check-kernel's program check (docs/kernel-check.md § A program): blocks mapped, madvised,
   touched and freed in a loop (each one mapped lower than the last, over the freed
   one's range), then an 8 MiB mapping read (the huge zero page), written, cut by
   munmap, and partly discarded by MADV_DONTNEED (64 KiB inside a THP, touched again;
   then a whole THP). Small, so that a recording of every instruction takes seconds.
   MIT OR Apache-2.0. */
#include <stdint.h>
#include <sys/mman.h>

int main(void) {
    long s = 0;
    for (int it = 0; it < 4; it++) {
        size_t n = ((size_t)(6 + it) << 20) + 4096;
        char *a = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED) return 1;
        madvise(a, n, MADV_HUGEPAGE);
        for (size_t i = 0; i < n; i += 4096) a[i] = (char)it;
        s += a[n / 2];
        munmap(a, n);
    }
    size_t m = 8 << 20;
    char *b = mmap(0, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) return 1;
    madvise(b, m, MADV_HUGEPAGE);
    for (size_t i = 0; i < m; i += 4096) s += b[i];
    for (size_t i = 0; i < m; i += 4096) b[i] = 1;
    munmap(b + (1 << 20), 4096);
    munmap(b + (4 << 20), 2 << 20);
    madvise(b + (2 << 20) + 8192, 65536, MADV_DONTNEED);
    b[(2 << 20) + 8192] = 2;
    madvise(b + (6 << 20), 2 << 20, MADV_DONTNEED);
    return (int)(s & 1);
}
