/* Graph traversal for docs/advise.md: BFS over a random graph in CSR form.
   Usage: graph_bfs NODES DEGREE. MIT OR Apache-2.0. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
static uint64_t s = 88172645463325252ULL;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000, d = argc > 2 ? atol(argv[2]) : 8;
    long m = n * d;
    uint32_t *off = malloc((n + 1) * sizeof *off), *adj = malloc(m * sizeof *adj);
    int32_t *dist = malloc(n * sizeof *dist);
    uint32_t *queue = malloc(n * sizeof *queue);
    if (!off || !adj || !dist || !queue) return 1;
    for (long i = 0; i <= n; i++) off[i] = (uint32_t)(i * d);
    for (long e = 0; e < m; e++) adj[e] = (uint32_t)(rnd() % n);
    long reached = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (long i = 0; i < n; i++) dist[i] = -1;
        long head = 0, tail = 0;
        dist[pass] = 0; queue[tail++] = (uint32_t)pass;
        while (head < tail) {
            uint32_t v = queue[head++];
            for (uint32_t e = off[v]; e < off[v + 1]; e++) {
                uint32_t w = adj[e];
                if (dist[w] < 0) { dist[w] = dist[v] + 1; queue[tail++] = w; }
            }
        }
        reached += tail;
    }
    printf("%ld\n", reached);
    return 0;
}
