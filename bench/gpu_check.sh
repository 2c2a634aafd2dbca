#!/usr/bin/env bash
# The evaluator's checks that need a GPU, each a bench/cuda_corpus.py run under its own time limit. After each check,
# even one its limit ended, its tables from the evaluations it finished: $OUT/<check>.tables.md.
#   bash bench/gpu_check.sh corpus       # every corpus file's verdict on CUDA (the CUDA half of tests/test_corpus.py)
#   bash bench/gpu_check.sh identity     # identical code over every own level task (~1.0x?), each corpus kernel twice
#   bash bench/gpu_check.sh mix          # throughput: an RL step's batch, 8 tasks x 8 stage-1 candidates, timed as
#                                        # rl.py times it
#   bash bench/gpu_check.sh kernelbench  # identical code at KernelBench's own level-1 sizes: KB=DIR (a checkout's
#                                        # level1/, carried in the tree or shared/), else the corpus's huge tasks;
#                                        # SHARD=I/N: every Nth task of the sorted list from the Ith (default
#                                        # all: level 1 takes ~30 min, a third ~9.5 min)
#   bash bench/gpu_check.sh              # corpus, identity, mix, tables (~25 min on one GPU)
# A sitting: three device calls of 10 minutes at most, the limits of each call's checks adding to ~9.5 min, each
# call ending with `tables`. The corpus (147 files) needs ~10 min: the last few may be listed as not reached.
#   bash bench/gpu_check.sh sitting1     # the corpus (limit 560 s)
#   bash bench/gpu_check.sh sitting2     # identity over the 49 own tasks, each corpus kernel once, building in a
#                                        # cold folder beside them (560 s: ~5.5 s a task, nearly one at a time)
#   KB=DIR bash bench/gpu_check.sh sitting3  # the mix (240 s), then KernelBench level 1's first sixth (SHARD=1/6,
#                                        # 300 s): ~5 s a small task, 30-60 s a huge one
#   KB=DIR SHARDS="2/6 3/6" bash bench/gpu_check.sh kb  # later calls: two sixths each (280 s each)
#   bash bench/gpu_check.sh tables       # $OUT/sitting.md: every $OUT/*.tables.md, headed date, GPU, commit
# Per check in $OUT: <check>.md (what it printed; its own tables if it ended in time), <check>.err,
# <check>.partial.jsonl (each evaluation as it ended), <check>.tables.md (the tables from those; their summary lines
# on stdout), <check>.json. LIMIT=SECONDS overrides every check's limit; EXTRA adds cuda_corpus.py flags
# (EXTRA=--no-pin-cpus: the timed rounds unpinned). bench/RESULTS.md records what these printed, by date and commit.
set -u
OUT=${OUT:-/tmp/cudal1_gpu_check}; mkdir -p "$OUT"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # one build target: builds dominate a fresh machine's time

check() {  # NAME LIMIT FLAGS...: one run in a process session of its own, so that its limit ends its workers too
    local name=$1 limit=${LIMIT:-$2} pid rc t0=$SECONDS; shift 2
    echo "### $name ($(date -u +%T), limit $limit s)"
    rm -f "$OUT/$name.partial.jsonl"  # the run appends to it: this run's evaluations only
    setsid timeout -k 15 "$limit" python3 bench/cuda_corpus.py "$@" ${EXTRA:-} --out "$OUT/$name.json" \
        > "$OUT/$name.md" 2> "$OUT/$name.err" & pid=$!
    wait $pid; rc=$?; pkill -9 -s $pid 2>/dev/null  # whatever outlived the limit (the workers' process groups)
    python3 bench/cuda_corpus.py --tables "$OUT/$name.partial.jsonl" > "$OUT/$name.tables.md" 2>> "$OUT/$name.err"
    grep -v '^|' "$OUT/$name.tables.md"; echo "[$name: rc $rc in $((SECONDS - t0)) s]"
}

corpus() { check corpus "${1:-720}" --corpus all --repeats 0 --identity ''; }
identity() {  # LIMIT REPEATS: the corpus's CUDA kernels REPEATS times beside the tasks, built while they run
    check identity "${1:-560}" --corpus '' --repeats "${2:-2}" --identity 'level1/*,level2/*,level3/*'
}
mix() {  # bench/real's stage-1 data; copies of the reference barely timed and PRECISION 0.01, as in an RL step
    check mix "${1:-300}" --corpus '' --identity '' --repeats 0 --mix bench/real/stage1.jsonl \
        --precision "${PRECISION:-0.01}"
}
kernelbench() {  # KernelBench's own sizes: the memory plan decides the sets and where the oracle runs
    local shard=${SHARD:-1/1} name=kernelbench; [ "$shard" = 1/1 ] || name="kernelbench_${shard/\//of}"
    if [ -n "${KB:-}" ]; then
        check "$name" "${1:-1800}" --corpus '' --repeats 0 --tasks-dir "$KB" --identity all --shard "$shard"
    else check "$name" "${1:-300}" --corpus '' --repeats 0 --tasks-dir tests/corpus/tasks --identity relu_huge; fi
}
tables() {  # every check's tables, one file to paste into bench/RESULTS.md
    local gpu; gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    { echo "### $(date -u +%F) · ${gpu:-?} · $(git rev-parse --short HEAD 2>/dev/null || echo '?') · the checks"
      for f in "$OUT"/*.tables.md; do
          [ -f "$f" ] && { echo; echo "#### $(basename "$f" .tables.md)"; sed 's/^## /##### /' "$f"; }
      done; } > "$OUT/sitting.md"
    echo "[tables: $OUT/sitting.md, $(wc -l < "$OUT/sitting.md") lines]"
}

case ${1:-all} in
    corpus|identity|mix|kernelbench|tables) "$1" ;;
    all) corpus; identity; mix; tables ;;
    sitting1) corpus 560; tables ;;
    sitting2) export CUDAL1_BUILD_DIR=${CUDAL1_BUILD_DIR:-$(mktemp -d)}  # cold: the kernels build beside the tasks
              identity 560 1; tables ;;
    sitting3) CUDAL1_BUILD_DIR=$(mktemp -d) mix 240; SHARD=${SHARD:-1/6} kernelbench 300; tables ;;
    kb) for s in ${SHARDS:-2/6 3/6}; do SHARD=$s kernelbench 280; done; tables ;;
    *) echo "usage: [KB=DIR] [SHARD=I/N] bash bench/gpu_check.sh" \
            "[corpus|identity|mix|kernelbench|sitting1|sitting2|sitting3|kb|tables|all]" >&2
       exit 2 ;;
esac
