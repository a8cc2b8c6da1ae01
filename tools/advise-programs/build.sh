#!/bin/sh
# Builds the validation programs of docs/advise.md and their input files into $1
# (default /tmp/advise-programs). MIT OR Apache-2.0.
set -e
out=${1:-/tmp/advise-programs}
here=$(dirname "$0")
mkdir -p "$out"
cc -O2 -o "$out/graph_bfs" "$here/graph_bfs.c"
cc -O2 -o "$out/hash_join" "$here/hash_join.c"
cc -O2 -o "$out/gups" "$here/gups.c"
cc -O2 -o "$out/sparse_touch" "$here/sparse_touch.c"
cc -O2 -o "$out/two_regions" "$here/two_regions.c"
cc -O2 -o "$out/alloc_loop" "$here/alloc_loop.c"
cp "$here/dict_workload.py" "$here/sqlite_index.sql" "$out/"
# 2^20 lines of 16 random hex digits (17 MiB) for sort and gzip.
[ -f "$out/lines.txt" ] || od -An -tx8 -N $((8 << 20)) -v /dev/urandom | tr -s ' ' '\n' | sed '/^$/d' > "$out/lines.txt"
echo "built in $out"
