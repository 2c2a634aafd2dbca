#!/usr/bin/env bash
# One device call that measures what the open issues ask for, most important first; each step has its own time
# limit, so a slow one cannot starve the rest. Output: $OUT/*.md (tables), $OUT/*.json, $OUT/runs/ (rl.py folders).
#   bash bench/gpu_session.sh            # on the GPU machine (DEVICE=cpu to try the commands on a CPU box)
set -u
OUT=${OUT:-/tmp/cudal1_session}; DEVICE=${DEVICE:-cuda}; mkdir -p "$OUT/runs"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} NCCL_NVLS_ENABLE=0
step() { local name=$1 limit=$2; shift 2; echo; echo "### $name ($(date -u +%T))"; local t0=$SECONDS
         timeout "$limit" "$@" 2>>"$OUT/stderr.log" | tee "$OUT/$name.md" | tail -n 40
         echo "[$name: rc ${PIPESTATUS[0]} in $((SECONDS - t0)) s]"; }
GE="python3 bench/gpu_evaluator.py --device $DEVICE"
L1=level1/relu_large,level1/elu,level1/gelu_erf,level1/softplus,level1/mean_dim1
TINY="--model tiny --device $DEVICE --task $L1 --max-new-tokens 128 --group-size 4"

# issues 3, 6, 7: identical code over the level tasks not in the N-vs-1 batch below, each CUDA kernel twice (CV)
step identity 200 $GE --corpus '' --repeats 2 --identity 'level1/[g-z]*,level2/*,level3/*' --out $OUT/identity.json
# issue 6: the corpus files whose GPU verdict changed since the last full corpus run
step corpus 50 $GE --corpus 'hacks/flag_*,hacks/dispatch_mode_copy_out,honest/cuda_compile_add_layernorm' \
    --repeats 0 --identity '' --out $OUT/corpus.json
# issue 8: collect -> sft -> ssl -> rl with the tiny model on 5 level-1 tasks
step collect 45 python3 rl.py --stage collect $TINY --collect-attempts 4 --collect-successes 1 --out $OUT/runs/s0
cat $OUT/runs/s0/collected.jsonl bench/demo/stage1.jsonl > $OUT/runs/sft.jsonl 2>/dev/null
step sft 30 python3 rl.py --stage sft $TINY --data $OUT/runs/sft.jsonl --steps 10 --sft-batch 8 --lr 1e-3 \
    --out $OUT/runs/s1
step ssl 45 python3 rl.py --stage ssl $TINY --init-from $OUT/runs/s1 --ssl-rounds 2 --out $OUT/runs/s2
step rl 45 python3 rl.py --stage rl $TINY --init-from $OUT/runs/s2 --steps 3 --tasks-per-step 5 --beta 0.01 \
    --out $OUT/runs/s3
# issue 9: data-parallel RL through torchrun on every GPU (beta > 0: every step updates, so gradients all-reduce)
NGPU=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))")
step torchrun 60 python3 -m torch.distributed.run --nproc-per-node "$NGPU" rl.py $TINY --steps 3 --tasks-per-step 4 \
    --beta 0.01 --out $OUT/runs/ddp
# issue 9: evaluation throughput, one GPU vs all of them, on the same batch
step one_gpu 60 $GE --corpus '' --repeats 0 --identity 'level1/[a-f]*' --devices ${DEVICE/cuda/cuda:0} \
    --out $OUT/one_gpu.json
step all_gpus 40 $GE --corpus '' --repeats 0 --identity 'level1/[a-f]*' --out $OUT/all_gpus.json
for d in s0 s1 s2 s3 ddp; do echo "== $d"; tail -n 4 $OUT/runs/$d/log.jsonl 2>/dev/null | cut -c1-400; done
