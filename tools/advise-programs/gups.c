/* GUPS (random read-modify-write updates) for the advise ledger (tools/advise-ledger):
   a table of 2^LOG2 64-bit words, initialised in order, then UPDATES xor-updates at
   xorshift-random indices. Usage: gups LOG2 UPDATES (default 27 = 1 GiB, 40000000).
   SPDX-License-Identifier: MIT OR Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
int main(int argc, char **argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 27;
    long n = argc > 2 ? atol(argv[2]) : 40000000;
    if (lg < 10 || lg > 36 || n < 0) { fprintf(stderr, "usage: gups LOG2 UPDATES\n"); return 2; }
    uint64_t size = 1ULL << lg, mask = size - 1;
    uint64_t *t = malloc(size * sizeof *t);
    if (!t) { fprintf(stderr, "gups: cannot allocate %llu bytes\n", (unsigned long long)(size * 8)); return 1; }
    for (uint64_t i = 0; i < size; i++) t[i] = i;
    uint64_t r = 0x2545F4914F6CDD1DULL;
    for (long j = 0; j < n; j++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        t[r & mask] ^= r;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < size; i += 4099) sum += t[i];
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
