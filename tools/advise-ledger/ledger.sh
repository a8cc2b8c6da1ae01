#!/usr/bin/env bash
# The validation ledger of `mmulab advise` (docs/advise.md § The ledger, issue 47 item 7):
# runs advise over 15 programs (12 that mmulab's authors did not write, from Debian
# packages, and 3 of ours), keeps each one's JSON, and renders a table of measured
# against predicted speed-ups with the machine and its load.
# SPDX-License-Identifier: MIT OR Apache-2.0
#
#   bash tools/advise-ledger/ledger.sh [OPTIONS]
#
#   --quick            smaller inputs (a quarter to a third of the work) and --runs 1
#   --only A[,B…]      these programs only (names as --list prints them)
#   --list             list the programs and what they need, then stop
#   --table-only       render the table again from OUT's saved JSON, run nothing
#   --native           time each program once natively (no advise): to size inputs
#   --no-calibrate     keep the cached runtime model (default: `advise --calibrate` first)
#   --no-install       never apt-get install a missing program (skip it instead)
#   --recorder R       advise's recorder (default ptrace; auto, mmtrace, lackey)
#   --nice N           run advise under `nice -n N` (a negative N needs root)
#   --out DIR          where inputs, JSON, logs and the table go (default /tmp/advise-ledger)
#   -h, --help         this text
#
# Environment: ADVISE_ARGS (more arguments for every `mmulab advise`, word-split, e.g.
# "--cache-dir /tmp/c --machine machines/vm/x.toml"), MMULAB (the binary; default
# $CARGO_TARGET_DIR or ./target, release/mmulab, built if missing), LEDGER_PYTHON (a
# python3 with numpy; default Debian's /usr/bin/python3), LEDGER_TIMEOUT (seconds per
# program, default 1200).
#
# Output in OUT: NAME.json (advise --json), NAME.log (advise's stderr: progress, the
# program's own output, errors), NAME.meta.json (command, times, load, status),
# machine.json, calibration.json, ledger.md and summary.json (gen.py), inputs/, bin/;
# --native writes NAME.native.json, NAME.native.log and native-machine.json instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=/tmp/advise-ledger
quick=0 only="" list=0 table_only=0 native=0 calibrate=1 install=1 recorder=ptrace nice_n=""

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "ledger: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --only) [ $# -ge 2 ] || die "--only needs NAME[,NAME…]"; only=$2; shift ;;
        --only=*) only=${1#*=} ;;
        --list) list=1 ;;
        --table-only) table_only=1 ;;
        --native) native=1 ;;
        --no-calibrate) calibrate=0 ;;
        --no-install) install=0 ;;
        --recorder) [ $# -ge 2 ] || die "--recorder needs a value"; recorder=$2; shift ;;
        --recorder=*) recorder=${1#*=} ;;
        --nice) [ $# -ge 2 ] || die "--nice needs a number"; nice_n=$2; shift ;;
        --nice=*) nice_n=${1#*=} ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift ;;
        --out=*) out=${1#*=} ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown option '$1' (--help lists them)" ;;
    esac
    shift
done
case $recorder in auto | ptrace | mmtrace | lackey) ;; *) die "--recorder: auto, ptrace, mmtrace or lackey, not '$recorder'" ;; esac
case $nice_n in "" | -[0-9]* | [0-9]*) ;; *) die "--nice takes a number, not '$nice_n'" ;; esac

# ---------------------------------------------------------------------------------------
# The programs: name | ours or third-party | expected gain ≥ 20 % (large random access) |
# the commands it needs | what it is (at the full size; --quick runs each smaller, a
# quarter to a third). Inputs and arguments are in args() below.
programs=(
    "numpy_gather|third-party|yes|python3 numpy|numpy fancy-index gather: 20 M random reads of a 1 GiB int64 array (numpy_gather.py)"
    "java_gather|third-party|yes|java javac|OpenJDK: 30 M random reads of a 1 GiB long[] (Gather.java, -XX:+UseTransparentHugePages, serial GC)"
    "node_gather|third-party|yes|node|node (V8): 30 M random reads of a 1 GiB Float64Array (typed_gather.js)"
    "py_dict|third-party|no|python3|CPython dict: 600,000 string keys, then 1.5 M random lookups, half absent (dict_lookup.py)"
    "sqlite_index|third-party|no|sqlite3|sqlite3 :memory:: insert 800,000 rows, build two indexes (tools/advise-programs/sqlite_index.sql)"
    "sort|third-party|no|sort|GNU sort --parallel=1 of 3 M random 16-hex-digit lines (LC_ALL=C)"
    "xz|third-party|no|xz|xz -9 -T1 of 2 MB of generated text (a 64 MiB dictionary's match finder)"
    "zstd|third-party|no|zstd|zstd -19 of 2 MB of generated text"
    "gzip|third-party|no|gzip|gzip -9 of 8 MB of generated text"
    "bzip2|third-party|no|bzip2|bzip2 -9 of 18 MB of generated text"
    "cc1|third-party|no|gcc|GCC's compiler proper (cc1 -O2, no driver) on a generated C file of 50 functions"
    "git_pack|third-party|no|git|git pack-objects --no-reuse-delta --window=60 --threads=1 of a generated 300-commit repository"
    "gups|ours|yes|cc|GUPS: 60 M random xor-updates of a 512 MiB table (tools/advise-programs/gups.c)"
    "hash_join|ours|yes|cc|open-addressing hash join, build 8 M rows (256 MiB of keys and values), probe 24 M (hash_join.c)"
    "graph_bfs|ours|yes|cc|two BFS passes over a random graph of 5 M nodes, degree 8 (graph_bfs.c)"
)
# The Debian package that provides a command (or a Python module).
package_of() {
    case $1 in
        python3) echo python3 ;;
        numpy) echo python3-numpy ;;
        java | javac) echo default-jdk-headless ;;
        node) echo nodejs ;;
        sqlite3) echo sqlite3 ;;
        sort) echo coreutils ;;
        xz) echo xz-utils ;;
        zstd) echo zstd ;;
        gzip) echo gzip ;;
        bzip2) echo bzip2 ;;
        gcc | cc) echo gcc ;;
        git) echo git ;;
        *) echo "$1" ;;
    esac
}

field() { # field LINE N: the Nth |-separated field
    local IFS='|'
    # shellcheck disable=SC2206 # splitting on | is the point
    local parts=($1)
    echo "${parts[$2]}"
}

if [ $list = 1 ]; then
    printf '%-13s %-11s %-9s %-22s %s\n' program kind "gain≥20%" needs "what"
    for p in "${programs[@]}"; do
        printf '%-13s %-11s %-9s %-22s %s\n' "$(field "$p" 0)" "$(field "$p" 1)" "$(field "$p" 2)" "$(field "$p" 3)" "$(field "$p" 4)"
    done
    exit 0
fi

# The python3 that runs numpy_gather, dict_lookup, inputs.py and gen.py: Debian's (where
# python3-numpy installs), not a pyenv shim (advise records the program itself, and a
# shim is a shell script).
if [ -n "${LEDGER_PYTHON:-}" ]; then
    py=$LEDGER_PYTHON
elif [ -x /usr/bin/python3 ]; then
    py=/usr/bin/python3
else
    py=$(command -v python3 || true)
    if [ -n "$py" ] && command -v pyenv >/dev/null 2>&1; then py=$(pyenv which python3); fi
fi
if [ -z "$py" ] && [ $table_only = 1 ]; then die "python3 is needed to render the table"; fi

mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ $table_only = 1 ]; then
    exec "$py" "$here/gen.py" "$out"
fi

selected=()
if [ -n "$only" ]; then
    IFS=, read -r -a want <<<"$only"
    for w in "${want[@]}"; do
        found=0
        for i in "${!programs[@]}"; do
            if [ "$(field "${programs[$i]}" 0)" = "$w" ]; then selected+=("$i"); found=1; fi
        done
        [ $found = 1 ] || die "--only: no program '$w' (--list names them)"
    done
else
    selected=("${!programs[@]}")
fi

# ---------------------------------------------------------------------------------------
# Missing commands: installed with apt-get when root (unless --no-install), else skipped.
have() {
    case $1 in
        numpy) [ -n "$py" ] && "$py" -c 'import numpy' 2>/dev/null ;;
        python3) [ -n "$py" ] && [ -x "$py" ] ;;
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}
missing_pkgs=()
for i in "${selected[@]}"; do
    for c in $(field "${programs[$i]}" 3); do
        if ! have "$c"; then missing_pkgs+=("$(package_of "$c")"); fi
    done
done
have python3 || missing_pkgs+=(python3)
if [ ${#missing_pkgs[@]} -gt 0 ]; then
    mapfile -t missing_pkgs < <(printf '%s\n' "${missing_pkgs[@]}" | sort -u)
    if [ $install = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "ledger: installing ${missing_pkgs[*]} with apt-get" >&2
        apt-get update -qq >&2 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" >&2 ||
            echo "ledger: apt-get install failed; the programs that need them are skipped" >&2
        [ -n "$py" ] || py=$(command -v python3 || true)
    else
        echo "ledger: missing ${missing_pkgs[*]} (not installed: $([ $install = 0 ] && echo --no-install || echo 'not root or no apt-get')); the programs that need them are skipped" >&2
    fi
fi
if [ -z "$py" ] || [ ! -x "$py" ]; then die "python3 is needed (inputs.py, gen.py)"; fi

# ---------------------------------------------------------------------------------------
# The binary and the compiled programs.
mmulab=${MMULAB:-${CARGO_TARGET_DIR:-$repo/target}/release/mmulab}
if [ $native = 0 ] && [ ! -x "$mmulab" ]; then
    echo "ledger: building $mmulab (cargo build --release -p mmulab-cli)" >&2
    (cd "$repo" && cargo build --release -p mmulab-cli >&2)
    [ -x "$mmulab" ] || die "no binary at $mmulab after the build (set MMULAB=…)"
fi
if [ $native = 0 ]; then
    newer=$(find "$repo/crates" -name '*.rs' -newer "$mmulab" -print -quit 2>/dev/null || true)
    [ -z "$newer" ] || echo "ledger: warning: $mmulab is older than ${newer#"$repo"/} (cargo build --release -p mmulab-cli)" >&2
fi
bin=$out/bin inputs=$out/inputs
mkdir -p "$bin" "$inputs"
if have cc; then
    for c in gups hash_join graph_bfs; do
        if [ ! -x "$bin/$c" ] || [ "$repo/tools/advise-programs/$c.c" -nt "$bin/$c" ]; then
            cc -O2 -o "$bin/$c" "$repo/tools/advise-programs/$c.c"
        fi
    done
fi
export LC_ALL=C # sort's order, and every program's messages, the same everywhere

# Inputs, made once per size (the name carries it) with fixed seeds.
text_input() { # text_input BYTES: the path of a generated text of BYTES bytes
    local f=$inputs/text-$1.txt
    [ -s "$f" ] || "$py" "$here/inputs.py" text "$1" "$f"
    echo "$f"
}

pick() { if [ $quick = 1 ]; then echo "$1"; else echo "$2"; fi; } # pick QUICK FULL

# args NAME: sets cmd (the program and its arguments) and prepares its inputs. A
# compressor compresses a copy of its own (its output file beside it, overwritten).
args() {
    local n=$1
    case $n in
        numpy_gather) cmd=("$py" "$here/numpy_gather.py" "$(pick 25 27)" "$(pick 6000000 20000000)") ;;
        java_gather)
            if [ ! -s "$bin/Gather.class" ] || [ "$here/Gather.java" -nt "$bin/Gather.class" ]; then
                javac -d "$bin" "$here/Gather.java"
            fi
            cmd=(java -XX:+UseTransparentHugePages -XX:+UseSerialGC -Xms2g -Xmx2g -cp "$bin" Gather
                "$(pick 25 26)" "$(pick 10000000 40000000)") ;;
        node_gather) cmd=(node "$here/typed_gather.js" "$(pick 25 26)" "$(pick 10000000 40000000)") ;;
        py_dict) cmd=("$py" "$here/dict_lookup.py" "$(pick 250000 600000)" "$(pick 600000 1500000)") ;;
        sqlite_index)
            local rows
            rows=$(pick 300000 800000)
            sed "s/x < 400000/x < $rows/" "$repo/tools/advise-programs/sqlite_index.sql" >"$inputs/sqlite_index-$rows.sql"
            cmd=(sqlite3 :memory: ".read $inputs/sqlite_index-$rows.sql") ;;
        sort)
            local lines
            lines=$(pick 1000000 3000000)
            [ -s "$inputs/lines-$lines.txt" ] || "$py" "$here/inputs.py" lines "$lines" "$inputs/lines-$lines.txt"
            cmd=(sort --parallel=1 -o "$inputs/sorted.txt" "$inputs/lines-$lines.txt") ;;
        xz | zstd | gzip | bzip2)
            local bytes src
            case $n in
                xz) bytes=2000000 ;; zstd) bytes=2000000 ;; gzip) bytes=8000000 ;; bzip2) bytes=18000000 ;;
            esac
            [ $quick = 1 ] && bytes=$((bytes / 3))
            src=$(text_input "$bytes")
            cp "$src" "$inputs/$n-in.txt"
            case $n in
                xz) cmd=(xz -9 -T1 -k -f "$inputs/$n-in.txt") ;;
                zstd) cmd=(zstd -19 -T1 -q -f "$inputs/$n-in.txt" -o "$inputs/$n-in.txt.zst") ;;
                gzip) cmd=(gzip -9 -k -f "$inputs/$n-in.txt") ;;
                bzip2) cmd=(bzip2 -9 -k -f "$inputs/$n-in.txt") ;;
            esac ;;
        cc1)
            local funcs
            funcs=$(pick 16 50)
            [ -s "$inputs/cc1-$funcs.c" ] || "$py" "$here/inputs.py" csrc "$funcs" "$inputs/cc1-$funcs.c"
            # cc1 itself: advise (ptrace, Valgrind) follows no child process, and the gcc
            # driver would run cc1 as one.
            cmd=("$(gcc -print-prog-name=cc1)" -quiet -O2 "$inputs/cc1-$funcs.c" -o "$inputs/cc1-$funcs.s") ;;
        git_pack)
            local commits repo_dir
            commits=$(pick 100 300)
            repo_dir=$inputs/git-$commits.git
            if [ ! -s "$repo_dir/packed-refs" ] && [ ! -s "$repo_dir/refs/heads/main" ]; then
                rm -rf "$repo_dir"
                git init -q --bare "$repo_dir"
                "$py" "$here/inputs.py" gitstream "$commits" | git -C "$repo_dir" fast-import --quiet
            fi
            mkdir -p "$inputs/git-pack-out"
            # pack-objects prints the pack's name on stdout; --revs --all reads no revisions
            # from stdin (advise gives /dev/null).
            cmd=(git -C "$repo_dir" pack-objects --revs --all --no-reuse-delta --no-reuse-object
                --threads=1 --window=60 --depth=50 -q "$inputs/git-pack-out/pack") ;;
        gups) cmd=("$bin/gups" "$(pick 25 26)" "$(pick 20000000 60000000)") ;;
        hash_join) cmd=("$bin/hash_join" "$(pick 4000000 8000000)" "$(pick 10000000 24000000)") ;;
        graph_bfs) cmd=("$bin/graph_bfs" "$(pick 2000000 5000000)" 8) ;;
        *) die "no arguments for $n" ;;
    esac
}

# timed NAME WAY CMD…: runs CMD once natively in WAY (4k or thp), prints "user sys wall rc".
timed() {
    local name=$1 way=$2 tf rc=0 u s w
    shift 2
    tf=$(mktemp)
    TIMEFORMAT='%U %S %R'
    if [ "$way" = 4k ]; then
        { time "$py" -c 'import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0) != 0:  # PR_SET_THP_DISABLE
    sys.exit("prctl(PR_SET_THP_DISABLE) failed")
os.execvp(sys.argv[1], sys.argv[1:])' "$@" </dev/null >/dev/null 2>>"$out/$name.native.log"; } 2>"$tf" || rc=$?
    else
        { time env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$@" </dev/null >/dev/null 2>>"$out/$name.native.log"; } 2>"$tf" || rc=$?
    fi
    read -r u s w <"$tf" || true
    rm -f "$tf"
    echo "${u:-0} ${s:-0} ${w:-0} $rc"
}

load1() { cut -d' ' -f1 /proc/loadavg; }
utc() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# meta FILE KEY=VALUE… -- CMD…: a JSON object of the pairs (numbers stay numbers) with
# "command": [CMD…].
meta() {
    local f=$1
    shift
    "$py" - "$@" >"$f" <<'EOF'
import json, sys
a = sys.argv[1:]
i = a.index("--") if "--" in a else len(a)
d = {}
for kv in a[:i]:
    k, _, v = kv.partition("=")
    try:
        d[k] = json.loads(v)
    except ValueError:
        d[k] = v
d["command"] = a[i + 1:]
print(json.dumps(d, indent=1))
EOF
}

# The machine, once per run of the ledger (gen.py prints it above the table).
thp() { sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/kernel/mm/transparent_hugepage/$1" 2>/dev/null || echo "?"; }
mode=full
[ $quick = 1 ] && mode=quick
[ $native = 1 ] && mode=native
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "?")
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
virt=$(systemd-detect-virt --vm 2>/dev/null || true)
if [ -z "$virt" ] || [ "$virt" = none ]; then
    if grep -qw hypervisor /proc/cpuinfo; then virt="a hypervisor (cpuinfo flag)"; else virt=none; fi
fi
container=$(systemd-detect-virt --container 2>/dev/null || true)
if [ -n "$container" ] && [ "$container" != none ]; then virt="$virt, in a $container container"; fi
meta "$out/$([ $native = 1 ] && echo native-machine.json || echo machine.json)" \
    "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
    "cpu_family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
    "cpu_model=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
    "cpus=$(nproc)" \
    "mem_total_kib=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)" \
    "kernel=$(uname -r)" "virtualization=$virt" \
    "thp_enabled=$(thp enabled)" "thp_defrag=$(thp defrag)" \
    "started=$(utc)" "load_1min=$(load1)" \
    "mode=$mode" \
    "recorder=$recorder" "advise_args=${ADVISE_ARGS:-}" "mmulab_commit=$commit" \
    "mmulab_binary=$mmulab" "mmulab_built=$(date -u -r "$mmulab" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo "?")" --

advise_cmd=("$mmulab" advise)
if [ -n "$nice_n" ]; then advise_cmd=(nice -n "$nice_n" "${advise_cmd[@]}"); fi
extra=()
# shellcheck disable=SC2206 # ADVISE_ARGS is word-split on purpose
[ -n "${ADVISE_ARGS:-}" ] && extra=(${ADVISE_ARGS})

if [ $native = 0 ] && [ $calibrate = 1 ]; then
    echo "ledger: calibrating this machine's runtime model (mmulab advise --calibrate; minutes)" >&2
    t0=$(date +%s)
    if "${advise_cmd[@]}" --calibrate --json "${extra[@]}" >"$out/calibration.json" 2>"$out/calibration.log"; then
        echo "ledger: calibrated in $(($(date +%s) - t0)) s" >&2
    else
        echo "ledger: calibration failed (see $out/calibration.log); advise calibrates on first use" >&2
    fi
fi

# ---------------------------------------------------------------------------------------
total=${#selected[@]} k=0 timeout_s=${LEDGER_TIMEOUT:-1200}
for i in "${selected[@]}"; do
    p=${programs[$i]}
    k=$((k + 1))
    name=$(field "$p" 0)
    kind=$(field "$p" 1)
    gain=$(field "$p" 2)
    what=$(field "$p" 4)
    common=("index=$((i + 1))" "name=$name" "kind=$kind" "gain_candidate=$([ "$gain" = yes ] && echo true || echo false)" "what=$what")
    # --native keeps its own files (NAME.native.json, .native.log) beside advise's.
    log=$out/$name.log mf=$out/$name.meta.json
    if [ $native = 1 ]; then log=$out/$name.native.log mf=$out/$name.native.json; else rm -f "$out/$name.json" "$mf"; fi
    lacking=""
    for c in $(field "$p" 3); do have "$c" || lacking="$lacking $c"; done
    if [ -n "$lacking" ]; then
        echo "[$k/$total] $name: skipped (missing:$lacking)" >&2
        meta "$mf" "${common[@]}" status=skipped "reason=missing:$lacking" --
        continue
    fi
    cmd=()
    args "$name"
    printf '[%d/%d] %s … ' "$k" "$total" "$name" >&2
    : >"$log"
    l0=$(load1) s0=$(utc) t0=$(date +%s.%N)
    if [ $native = 1 ]; then
        # One run of each way, as advise makes them (docs/advise.md § Method): THP disabled
        # by prctl(PR_SET_THP_DISABLE) before exec, and malloc's madvise by GLIBC_TUNABLES.
        set -- "$(timed "$name" 4k "${cmd[@]}")" "$(timed "$name" thp "${cmd[@]}")"
        read -r u4 s4 w4 rc4 <<<"$1"
        read -r ut st wt rct <<<"$2"
        c4=$(awk -v u="$u4" -v s="$s4" 'BEGIN {printf "%.2f", u + s}')
        ct=$(awk -v u="$ut" -v s="$st" 'BEGIN {printf "%.2f", u + s}')
        echo "4 KiB ${c4} s CPU (user $u4), THP ${ct} s CPU (user $ut): ratio $(awk -v a="$c4" -v b="$ct" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')$([ "$rc4$rct" = 00 ] || echo ", exit $rc4/$rct")" >&2
        meta "$mf" "${common[@]}" status=native "exit=$rc4" "user_s_4k=$u4" "sys_s_4k=$s4" "wall_s_4k=$w4" \
            "user_s_thp=$ut" "sys_s_thp=$st" "wall_s_thp=$wt" "started=$s0" "load_before=$l0" "load_after=$(load1)" -- "${cmd[@]}"
        continue
    fi
    # ADVISE_ARGS may set --recorder and --runs itself.
    rec=(--recorder "$recorder") runs=(--runs "$(pick 1 auto)")
    for a in "${extra[@]}"; do
        case $a in --recorder | --recorder=*) rec=() ;; --runs | --runs=*) runs=() ;; esac
    done
    rc=0 retried=""
    timeout "$timeout_s" "${advise_cmd[@]}" --json "${runs[@]}" "${rec[@]}" "${extra[@]}" \
        -- "${cmd[@]}" >"$out/$name.json" 2>"$out/$name.log" || rc=$?
    if [ $rc != 0 ] && [ "$recorder" = ptrace ] && [ ${#rec[@]} -gt 0 ] && grep -o 'mmulab: error:.*' "$out/$name.log" | grep -qi 'ptrace\|single-step\|sampler'; then
        # The sampler failed (not the program): once more with advise's own choice.
        retried=auto
        mv "$out/$name.log" "$out/$name.ptrace.log"
        printf '(ptrace failed: see %s; again with --recorder auto) … ' "$name.ptrace.log" >&2
        rc=0
        timeout "$timeout_s" "${advise_cmd[@]}" --json "${runs[@]}" --recorder auto "${extra[@]}" \
            -- "${cmd[@]}" >"$out/$name.json" 2>"$out/$name.log" || rc=$?
    fi
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f", b - a}')
    status=ok reason=""
    if [ $rc = 124 ]; then
        status=failed reason="timed out after $timeout_s s"
    elif [ $rc != 0 ]; then
        reason=$(grep -o 'mmulab: error:.*' "$out/$name.log" | tail -n 1 | cut -c1-400)
        [ -n "$reason" ] || reason=$(grep -v '^\s*$' "$out/$name.log" | tail -n 3 | tr '\n' ' ' | cut -c1-400)
        status=failed
    elif ! "$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$out/$name.json" 2>/dev/null; then
        status=failed reason="advise's stdout is not one JSON object (see $name.log)"
    fi
    [ $status = ok ] || mv -f "$out/$name.json" "$out/$name.stdout" 2>/dev/null || true
    meta "$out/$name.meta.json" "${common[@]}" "status=$status" "reason=$reason" "exit=$rc" \
        "recorder=$([ -n "$retried" ] && echo "auto (ptrace failed)" || echo "${rec[1]:-from ADVISE_ARGS}")" \
        "started=$s0" "ended=$(utc)" "elapsed_s=$dt" "load_before=$l0" "load_after=$(load1)" -- "${cmd[@]}"
    if [ $status = ok ]; then
        "$py" - "$out/$name.json" "$dt" >&2 <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
m, p = a["measured"], a["predicted"]
pred = "withheld" if p.get("withheld") else "%.3f [%.3f–%.3f]" % (p["speedup"], p["low"], p["high"])
print("%s s: measured %.3f (%.3f–%.3f), predicted %s" % (sys.argv[2], m["speedup"], m["low"], m["high"], pred))
EOF
    else
        echo "$dt s: FAILED ($reason)" >&2
    fi
done

if [ $native = 0 ]; then
    "$py" "$here/gen.py" "$out"
    echo "ledger: table in $out/ledger.md, summary in $out/summary.json" >&2
fi
