#!/usr/bin/env bash
# The evaluator's checks that need a GPU, each a bench/cuda_corpus.py run with its own time limit:
#   bash bench/gpu_check.sh corpus     # every corpus file's verdict on CUDA (the CUDA half of tests/test_corpus.py)
#   bash bench/gpu_check.sh identity   # identical code over every level task (~1.0x?) + each corpus kernel twice (CV)
#   bash bench/gpu_check.sh mix        # throughput: an RL step's batch, 8 tasks x 8 stage-1 candidates, as rl.py times it
#   bash bench/gpu_check.sh kernelbench  # identical code at KernelBench's own level-1 sizes: KB=DIR (a checkout's
#                                      # level1/, carried in the tree or shared/), else the corpus's huge tasks
#   bash bench/gpu_check.sh            # corpus, identity, mix, in that order (~15 min on one H100 or H200, builds included)
# A sitting of two device calls of at most 10 minutes each, then the tables to commit (bench/RESULTS.md):
#   bash bench/gpu_check.sh sitting1   # the build patterns and the corpus (~9.5 min)
#   bash bench/gpu_check.sh sitting2   # identity over every own task (the corpus's CUDA kernels built and evaluated
#                                      # beside it), the mix, KernelBench level-1 (~9.5 min)
#   bash bench/gpu_check.sh tables     # $OUT/sitting.md: every table the checks wrote, headed date, GPU, commit
# Output: the tables on stdout and in $OUT/<check>.md, full records in $OUT/<check>.json, every evaluation as it
# ends in $OUT/partial.jsonl. LIMIT=SECONDS overrides a check's limit; EXTRA adds cuda_corpus.py flags
# (EXTRA=--no-pin-cpus: the timed rounds unpinned). bench/RESULTS.md records what these printed, by date and commit.
set -u
OUT=${OUT:-/tmp/cudal1_gpu_check}; mkdir -p "$OUT"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # one build target: builds dominate a fresh machine's time

check() {  # NAME LIMIT FLAGS...: one run in a process session of its own, so that its limit ends its workers too
    local name=$1 limit=${LIMIT:-$2} pid rc t0=$SECONDS; shift 2
    echo "### $name ($(date -u +%T), limit $limit s)"
    setsid timeout -k 15 "$limit" python3 bench/cuda_corpus.py "$@" ${EXTRA:-} --out "$OUT/$name.json" \
        > "$OUT/$name.md" 2>> "$OUT/stderr.log" & pid=$!
    wait $pid; rc=$?; pkill -9 -s $pid 2>/dev/null  # whatever outlived the limit (the workers' process groups)
    tail -n 40 "$OUT/$name.md"; echo "[$name: rc $rc in $((SECONDS - t0)) s]"
}

corpus() {  # the build patterns first: their failures are the cheapest to read
    check builds 120 --corpus 'honest/cuda_build_*,honest/cuda_load_*,honest/cuda_two_*,honest/cuda_triton_*' \
        --repeats 0 --identity ''
    check corpus 540 --corpus all --repeats 0 --identity ''
}
corpus_short() {  # the same within one device call of 10 minutes
    LIMIT=100 check builds 100 --corpus 'honest/cuda_build_*,honest/cuda_load_*,honest/cuda_two_*,honest/cuda_triton_*' \
        --repeats 0 --identity ''
    LIMIT=460 check corpus 460 --corpus all --repeats 0 --identity ''
}
identity() { check identity 560 --corpus '' --repeats 2 --identity 'level1/*,level2/*,level3/*'; }
kernelbench() {  # KernelBench's own sizes: the memory plan decides the sets and where the oracle runs
    if [ -n "${KB:-}" ]; then check kernelbench 300 --corpus '' --repeats 0 --tasks-dir "$KB" --identity 'all'
    else check kernelbench 300 --corpus '' --repeats 0 --tasks-dir tests/corpus/tasks --identity 'relu_huge'; fi
}
tables() {  # every table the checks printed, one file to paste into bench/RESULTS.md
    { echo "### $(date -u +%F) · $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) · $(git rev-parse \
        --short HEAD 2>/dev/null || echo '?') · the sitting's checks"
      for f in builds corpus identity mix kernelbench; do
          [ -f "$OUT/$f.md" ] && { echo; echo "#### $f"; echo '```'; tail -n 60 "$OUT/$f.md"; echo '```'; }
      done; } > "$OUT/sitting.md"
    cat "$OUT/sitting.md"
}
mix() {  # bench/real's stage-1 data; copies of the reference barely timed and PRECISION 0.01, as in an RL step
    check mix 540 --corpus '' --identity '' --repeats 0 --mix bench/real/stage1.jsonl --precision "${PRECISION:-0.01}"
}

case ${1:-all} in
    corpus|identity|mix|kernelbench|tables) "$1" ;;
    all) corpus; identity; mix ;;
    sitting1) corpus_short ;;
    sitting2) check identity 220 --corpus '' --repeats 1 --identity 'level1/*,level2/*,level3/*'  # builds beside
              LIMIT=160 mix; LIMIT=170 kernelbench; tables ;;
    *) echo "usage: bash bench/gpu_check.sh [corpus|identity|mix|kernelbench|sitting1|sitting2|tables|all]" >&2
       exit 2 ;;
esac
