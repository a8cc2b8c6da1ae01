/* THP bloat example for mmulab advise (docs/advise.md, Method 6, "Memory and fault time"):
   a 512 MiB malloc whose first half is written one 4 KiB page in four and whose second
   half is written whole, then 30 M random read-modify-writes over the second half.
   Under THP the first half costs ~192 MiB resident that is never touched.
   MIT OR Apache-2.0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    size_t n = (size_t)512 << 20;
    uint8_t *a = malloc(n);
    if (!a)
        return 1;
    for (size_t i = 0; i < n / 2; i += 16384)
        a[i] = 1;
    for (size_t i = n / 2; i < n; i += 4096)
        a[i] = 1;
    uint64_t x = 88172645463325252ull, s = 0;
    for (long k = 0; k < 30000000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = n / 2 + (x % (n / 2));
        a[j] += 1;
        s += a[j];
    }
    printf("%lu\n", (unsigned long)s);
    return 0;
}
