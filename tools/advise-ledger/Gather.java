// Java gather for the advise ledger: a long[] of 2^LOG2 elements (27: 1 GiB), filled in
// order, then GATHERS reads at xorshift-random indices. Run with
// -XX:+UseTransparentHugePages so that the JVM madvises its heap (THP `madvise` mode).
// Usage: java Gather LOG2 GATHERS. SPDX-License-Identifier: MIT OR Apache-2.0
public final class Gather {
    public static void main(String[] args) {
        int lg = args.length > 0 ? Integer.parseInt(args[0]) : 27;
        long k = args.length > 1 ? Long.parseLong(args[1]) : 20_000_000L;
        int n = 1 << lg;
        long[] a = new long[n];
        for (int i = 0; i < n; i++) a[i] = i;
        long mask = n - 1, r = 0x2545F4914F6CDD1DL, sum = 0;
        for (long j = 0; j < k; j++) {
            r ^= r << 13; r ^= r >>> 7; r ^= r << 17;
            sum += a[(int) (r & mask)];
        }
        System.out.println(sum);
    }
}
