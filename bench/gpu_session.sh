#!/usr/bin/env bash
# One device call that measures what the open issues ask for, most important first; each step has its own time
# limit, so a slow one cannot starve the rest. Output: $OUT/<step>.md, $OUT/*.json, $OUT/partial.jsonl (every
# evaluation as it finished) and $OUT/runs_logs.txt (the rl.py runs' logs; the run folders stay in $RUNS: the device
# tool brings back only a few files).
#   bash bench/gpu_session.sh corpus      # one device call (~9 min): every corpus file (first after evaluator changes)
#   bash bench/gpu_session.sh evaluator   # one device call (~9 min): identity + CV, then the changed corpus files
#   bash bench/gpu_session.sh training    # another (~8 min): stages 1-3 (issue 8), torchrun and 1 vs N GPUs (9)
#   bash bench/gpu_session.sh baselines   # eager and torch.compile time of every level task (issue 7)
#   bash bench/gpu_session.sh demo        # issue 10 on the GPU: bench/demo_cuda data, sft, ssl, rl plain vs
#                                         # contrastive (written 2026-11-29, not yet run; sizes are guesses)
set -u
OUT=${OUT:-/tmp/cudal1_session}; DEVICE=${DEVICE:-cuda}; RUNS=${RUNS:-/tmp/cudal1_runs}; mkdir -p "$OUT" "$RUNS"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} NCCL_NVLS_ENABLE=0
step() { local name=$1 limit=$2; shift 2; echo; echo "### $name ($(date -u +%T))"; local t0=$SECONDS
         timeout "$limit" "$@" 2>>"$OUT/stderr.log" | tee "$OUT/$name.md" | tail -n 40
         echo "[$name: rc ${PIPESTATUS[0]} in $((SECONDS - t0)) s]"; }
GE="python3 bench/gpu_evaluator.py --device $DEVICE"
L1=level1/relu_large,level1/elu,level1/gelu_erf,level1/softplus,level1/mean_dim1
TINY="--model tiny --device $DEVICE --task $L1 --max-new-tokens 128 --group-size 4"

corpus() {
# issue 6: every corpus file on the GPU (the evaluator's process sealing, _seal, changed every evaluation's setup)
step corpus 540 $GE --corpus all --repeats 0 --identity '' --out $OUT/corpus.json
}

evaluator() {
# issues 3, 6, 7: identical code over every level task, each CUDA kernel of the corpus twice (CV)
step identity 360 $GE --corpus '' --repeats 2 --identity 'level1/*,level2/*,level3/*' --out $OUT/identity.json
# issue 6: the corpus files whose GPU verdict changed since the last full corpus run
step corpus 50 $GE --corpus 'hacks/cuda_persisting_l2,hacks/cuda_graph_stale_replay,hacks/proc_read_expected' \
    --repeats 0 --identity '' --out $OUT/corpus.json
}

training() {
# issue 8: collect -> sft -> ssl -> rl with the tiny model on 5 level-1 tasks
step collect 90 python3 rl.py --stage collect $TINY --collect-attempts 4 --collect-successes 1 --out $RUNS/s0
cat $RUNS/s0/collected.jsonl bench/demo/stage1.jsonl > $RUNS/sft.jsonl 2>/dev/null
step sft 30 python3 rl.py --stage sft $TINY --data $RUNS/sft.jsonl --steps 10 --sft-batch 8 --lr 1e-3 \
    --out $RUNS/s1
step ssl 45 python3 rl.py --stage ssl $TINY --init-from $RUNS/s1 --ssl-rounds 2 --out $RUNS/s2
step rl 90 python3 rl.py --stage rl $TINY --init-from $RUNS/s2 --steps 3 --tasks-per-step 5 --beta 0.01 \
    --out $RUNS/s3
# issue 9: data-parallel RL through torchrun on every GPU (beta > 0: every step updates, so gradients all-reduce)
NGPU=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))")
step torchrun 60 python3 -m torch.distributed.run --nproc-per-node "$NGPU" rl.py $TINY --steps 3 --tasks-per-step 4 \
    --beta 0.01 --out $RUNS/ddp
# issue 9: evaluation throughput, one GPU vs all of them, on the same batch
step one_gpu 90 $GE --corpus '' --repeats 0 --identity 'level1/[a-f]*' --devices ${DEVICE/cuda/cuda:0} \
    --out $OUT/one_gpu.json
step all_gpus 60 $GE --corpus '' --repeats 0 --identity 'level1/[a-f]*' --out $OUT/all_gpus.json
for d in s0 s1 s2 s3 ddp; do echo "== $d"; cat $RUNS/$d/log.jsonl 2>/dev/null; done > $OUT/runs_logs.txt
}

baselines() {
step baselines 580 python3 bench/time_tasks.py --compile --task 'level1/*,level2/*,level3/*' --out $OUT/baselines.md
}

demo() {
local T=level1/relu_large,level1/gelu_erf,level1/elu,level1/softplus,level1/sum_lastdim,level1/mean_dim1
local D="--model tiny --device $DEVICE --task $T"
step data 200 python3 bench/demo_cuda/build_data.py --out $RUNS/cuda_stage1.jsonl
cp $RUNS/cuda_stage1.jsonl $OUT/ 2>/dev/null
step sft 150 python3 rl.py --stage sft $D --data $RUNS/cuda_stage1.jsonl --steps 600 --sft-batch 8 --lr 1e-3 \
    --ckpt-every 100 --out $RUNS/d1
step ssl 90 python3 rl.py --stage ssl $D --init-from $RUNS/d1 --ssl-rounds 1 --group-size 8 --temperature 0.7 \
    --max-new-tokens 3000 --lr 3e-4 --out $RUNS/d2
for c in no-contrastive contrastive; do  # the ablation: same seed, same steps
    step rl_$c 150 python3 rl.py $D --init-from $RUNS/d2 --steps 4 --tasks-per-step 6 --group-size 8 \
        --temperature 0.7 --max-new-tokens 3000 --lr 1e-4 --mu 2 --$c --out $RUNS/rl_$c
    python3 bench/demo/policy.py report $RUNS/rl_$c > $OUT/report_$c.md 2>&1
done
}

"${1:?usage: bash bench/gpu_session.sh corpus|evaluator|training|baselines|demo}"
