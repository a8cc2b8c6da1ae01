/* Hash join for docs/advise.md: build an open-addressing table of R rows, probe it
   with S rows. Usage: hash_join R S [LOG2_SLOTS] (slots default: the power of two at
   or above 2R; 16 bytes each, so 26 gives a 1 GiB table). MIT OR Apache-2.0. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
static uint64_t s = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
int main(int argc, char **argv) {
    long r = argc > 1 ? atol(argv[1]) : 1000000, n = argc > 2 ? atol(argv[2]) : 4000000;
    long cap = 1; while (cap < 2 * r) cap <<= 1;
    if (argc > 3) { int l = atoi(argv[3]); if (l < 1 || l > 40 || (1L << l) <= r) { fprintf(stderr, "hash_join: LOG2_SLOTS must give more slots than R rows\n"); return 2; } cap = 1L << l; }
    uint64_t *keys = calloc(cap, 8), *vals = calloc(cap, 8);
    if (!keys || !vals) return 1;
    for (long i = 0; i < r; i++) {
        uint64_t k = (uint64_t)i * 2654435761u + 1, h = (k * 0x9E3779B97F4A7C15ULL) & (cap - 1);
        while (keys[h]) h = (h + 1) & (cap - 1);
        keys[h] = k; vals[h] = (uint64_t)i;
    }
    uint64_t sum = 0, hits = 0;
    for (long j = 0; j < n; j++) {
        uint64_t k = (rnd() % (2 * r)) * 2654435761u + 1, h = (k * 0x9E3779B97F4A7C15ULL) & (cap - 1);
        while (keys[h]) { if (keys[h] == k) { sum += vals[h]; hits++; break; } h = (h + 1) & (cap - 1); }
    }
    printf("%lu %lu\n", (unsigned long)hits, (unsigned long)sum);
    return 0;
}
