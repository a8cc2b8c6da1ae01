/* An allocation loop for mmulab advise (docs/advise.md § Time, "Faults"): 40 times, malloc
   48 MiB, touch it (one write per 4 KiB page, then 400,000 random updates), free it.
   glibc maps and unmaps each block, so every round faults its 48 MiB afresh: 491,520
   small faults at 4 KiB, 960 huge ones under THP. A recording sees the block once.
   MIT OR Apache-2.0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    uint64_t x = 88172645463325252ull, s = 0;
    for (int it = 0; it < 40; it++) {
        size_t n = (size_t)48 << 20;
        uint64_t *a = malloc(n);
        if (!a) return 1;
        for (size_t i = 0; i < n / 8; i += 512) a[i] = i;
        for (long k = 0; k < 400000; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            size_t j = x % (n / 8);
            a[j] += k; s += a[j];
        }
        free(a);
    }
    printf("%lu\n", (unsigned long)s);
    return 0;
}
