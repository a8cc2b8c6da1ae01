// node gather for the advise ledger: a Float64Array of 2^LOG2 elements (27: 1 GiB),
// filled in order, then GATHERS reads at xorshift-random indices (V8's typed arrays).
// Usage: node typed_gather.js LOG2 GATHERS. SPDX-License-Identifier: MIT OR Apache-2.0
'use strict';
const lg = process.argv.length > 2 ? parseInt(process.argv[2], 10) : 27;
const k = process.argv.length > 3 ? parseInt(process.argv[3], 10) : 20000000;
const n = 2 ** lg;
const a = new Float64Array(n);
for (let i = 0; i < n; i++) a[i] = i;
const mask = n - 1;
let r = 0x2545f491 | 0, sum = 0;
for (let j = 0; j < k; j++) {
  r ^= r << 13; r ^= r >>> 17; r ^= r << 5;
  // 32-bit xorshift; mask below 2^31 keeps the index a small integer.
  sum += a[(r >>> 0) & mask];
}
console.log(sum);
