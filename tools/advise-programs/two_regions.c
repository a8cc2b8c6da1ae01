/* Two regions for mmulab advise's region table and proposal (docs/advise.md, Method 6,
   "Regions"): a hot 64 MiB table read and written at random (THP shortens its walks),
   and a cold 512 MiB array written one byte per 2 MiB (under THP each byte costs a whole
   2 MiB page: 512 MiB resident for 1 MiB touched). Both are malloc'd (glibc maps each
   with its own mmap); a PROT_NONE page at each end of the hot one keeps the kernel from
   merging the cold mapping into the hot one's VMA whether it lands below (natively, top
   down) or above (under Valgrind, bottom up), as separately mapped arenas and libraries
   stay apart in real programs.
   MIT OR Apache-2.0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(void) {
    size_t hot_n = (size_t)64 << 20, cold_n = (size_t)512 << 20;
    uint8_t *raw = malloc(hot_n + 3 * 4096);
    if (!raw)
        return 1;
    /* The page holding malloc's chunk header and the page after the table become the
       guards (the chunk is never freed). */
    uint8_t *guard = (uint8_t *)((uintptr_t)raw & ~(uintptr_t)4095);
    if (mprotect(guard, 4096, PROT_NONE) != 0 || mprotect(guard + 4096 + hot_n, 4096, PROT_NONE) != 0)
        return 1;
    uint64_t *hot = (uint64_t *)(guard + 4096);
    uint8_t *cold = malloc(cold_n);
    if (!cold)
        return 1;
    for (size_t i = 0; i < hot_n / 8; i++)
        hot[i] = i;
    for (size_t i = 0; i < cold_n; i += (size_t)2 << 20)
        cold[i] = 1;
    uint64_t x = 88172645463325252ull, s = 0;
    for (long k = 0; k < 20000000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = x % (hot_n / 8);
        hot[j] += k;
        s += hot[j];
    }
    for (size_t i = 0; i < cold_n; i += (size_t)2 << 20)
        s += cold[i];
    printf("%lu\n", (unsigned long)s);
    return 0;
}
