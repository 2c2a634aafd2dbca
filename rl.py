"""rl.py: CUDA-L1's three stages: collect and fine-tune on working variants, self-supervise, then contrastive RL.

--stage collect  per task, sample plain-prompt attempts until collect_successes are correct (or collect_attempts
                 are spent); every attempt with its evaluation to OUT/collected.jsonl (stage 1's data)
--stage sft      supervised fine-tuning on the working candidates of --data (loss on completion tokens only)
--stage ssl      ssl_rounds of: G samples per task -> evaluate -> fine-tune on the correct ones only (reward 1 or 0)
                 -> those, timed again in full, into the exemplar database (score = measured speedup) that stage 3 reads
--stage rl       contrastive RL; --init-from DIR starts any stage from an earlier one's weights and database
--stage all      sft on the shipped stage-1 data -> ssl -> sftc (sft on plain and contrastive prompts) -> rl, each in
                 OUT/<its name>, each from the one before, with bench/real/README.md's recipe (chain.py)
--stage auto     (default) all for a real model on a GPU (no --init-from), else rl (without a GPU: the demo policy)

What the RL stage does, each step
    pick tasks -> contrastive prompts (reference + 2 scored variants from the run's exemplar database, below a
    working variant's score: draw_variants) -> G sampled completions per prompt -> ONE evaluator call for all of
    them (speedups above 3x evaluated again, the lower kept; near-1 ones rounded to 1) -> log-speedup rewards ->
    group advantages (and the step's group-variance diagnostic: how many groups carry a signal) -> GRPO update of
    the groups with a signal (mu passes of `minibatches` AdamW steps, each over grad_accum micro-batches) ->
    correct codes into the database (a code seen before: its measurements combined) -> one log line -> checkpoint.
    The run folder (--out) gets config.json,
    log.jsonl, samples.jsonl (every sample: its reply and verdict), exemplars.jsonl, ckpt.pt, best/<task>.py (the
    task's best kernel by combined score, if faster than the reference) and progress.png (when matplotlib is
    installed; after every step). Ctrl-C checkpoints the last finished step; a resume after a crash redoes the steps
    past the checkpoint and keeps what they wrote in redone/.

How to run (python rl.py --help: every flag, its default and meaning; the README: the quick start)
    OMP_NUM_THREADS=1 python rl.py --model tiny --task cpu/relu --steps 2 --max-new-tokens 32  # a CPU smoke run
    python rl.py --task all                      # GPU: Qwen2.5-Coder-1.5B-Instruct through sft, ssl, sftc, rl
    python rl.py --resume --out runs/DIR         # continue a run from its last checkpoint (flags given now win)
    torchrun --nproc-per-node N rl.py --task all  # data-parallel RL, one process per GPU (engine.py: data parallel)
    Any rollout replays: the group of (step, task) is sampled after torch.manual_seed(seed_for(seed, step, task))
    with --gen-batch 1; by default the step's tasks are sampled in one batch, seeded from their names joined by '+'.

Where it departs from the paper (CUDA-L1, arXiv 2507.14111); most are flags whose default is the paper's setting
    1. A far smaller default model (Qwen2.5-Coder-1.5B-Instruct) than the paper's. Stage 1 data come from sampling
       the policy itself (any JSONL of working codes will do); a record with code but no reply is trained as a reply
       with two one-line stock sections. Stage 2 checks correctness with 1-2 timed rounds, then times its successes
       again with the normal budget: only those timings become scores.
    2. Group size, tasks per step, beta, eps, lr, mu, minibatches, grad_accum are not published: the defaults below
       are ours. With one AdamW step per batch (mu = minibatches = 1, the default) every ratio is 1 and the eps clip
       cannot act, so --eps-low/--eps-high are refused there; --minibatches M makes it PPO's mini-batches (every
       pass after the first in a fresh order, drawn from (seed, step)).
    3. Each task's reference seeds its database at score 1.0, so even step 1 prompts are contrastive (a task that
       holds only its reference shows it; otherwise variants below a working one's score: draw_variants).
    4. Rewards are log speedups (at least log 0.25; failures --fail-reward -2); a group's advantages are its rewards
       less their mean, not over their std (Dr. GRPO): among failures a lone 5x gets +2.71, a lone 0.5x +0.98; +-3%
       noise at 3x moves one by 0.03, 1.5x beside 1.0x by 0.20. The loss averages over tokens (DAPO); a fresh AdamW
       warms up over --warmup-steps 5. The paper's shape: --no-log-speedup --fail-reward 0 --std-normalize
       --reward-normalize (--reward-clip 1.5 std over the step gave a 0.89x and a 1.19x the same advantage on a
       small model) --loss-variant grpo (per sequence: long failing replies cost less per token).
    5. Sampling uses temperature/top_p only (the model's own top_k / repetition penalty are switched off) and the
       loss scores tokens under the same temperature, so ratios compare the distribution that was sampled.
    6. Weights stay fp32 with bf16 autocast on CUDA: AdamW steps of lr 1e-6 vanish when added to bf16 weights.
       With --lora-rank R (ours; the paper fine-tunes every weight) the base is frozen in bf16 and only the adapters
       (fp32) train. The KL anchor (beta > 0) is the policy the stage started from: with LoRA its adapters at the
       start, frozen (OUT/anchor.pt), not the base with adapters off (the pre-sft model).
    7. --device cpu runs the whole loop without a GPU: CPU tasks, C++/PyTorch candidates timed by wall clock.
    8. Flat groups (equal rewards) are left out of the update (beta = 0) and counted in the log line; --no-update
       skips every update (rollouts, rewards and the log only: a start's groups checked before steps are spent).
    9. Fine-tuning (sft, ssl) is the mean negative log-likelihood over completion tokens (prompt masked), at
       temperature 1; the records' order is reshuffled per epoch from (seed, epoch). --sft-contrastive (ours, off)
       also trains each record under a contrastive prompt, its variants drawn by stage 3's rule (draw_variants) below
       the record's speedup, its analysis comparing them. Every working record of --data goes into the exemplar
       database, also those --sft-min-speedup leaves out of training. --init-from continues the AdamW moments when
       its stage trained the same objective (sft, ssl: likelihood; rl: policy gradient), else AdamW starts fresh
       (--optimizer-state keep|fresh decides instead).
   10. Identical codes of one step are evaluated once and share that result (a small policy repeats itself).
   11. Speedups are handled as the paper's timer does, before rewards and scores (measure): within --round-to-one
       (0.02: the evaluator's bar for identical code) of 1 they count as 1; above --recheck-above (3.0) the
       candidate is evaluated again and the lower speedup kept. A code the database holds that is measured again is
       combined (score = median of its measurements), and best/ is the best combined score.
   12. A reference copy (same_as_reference) earns --copy-reward, by default --fail-reward (the paper gives no rule;
       at 1.0x it was the best an untrained policy could do); copies stay out of the database, best/, pass_rate and
       the mean speedups (log.jsonl counts them as copies). top_p < 1 is refused in the rl stage (the loss scores
       untruncated distributions) and --log-speedup needs a negative --fail-reward.
"""
import json
import math
import os
import signal
import sys
import time
import zlib
from collections import Counter
from contextlib import nullcontext
from copy import copy
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm import tqdm

import chain
import engine
import evaluator
import runs
from cudal1 import compute_rewards, group_advantages, grpo_loss, is_success, sample_exemplars
from engine import PolicyError
from prompts import as_reply, build_prompt, compare_variants, extract_code, render, unlabelled
from runs import ConfigError

# ---------------------------------------------------------------------------- config


@dataclass
class Config:
    stage: str = "auto"               # collect|sft|ssl|rl one stage; all: sft, ssl, sftc, rl; auto: all for a real model
    init_from: str = ""               # an earlier stage's folder: its weights, AdamW moments, exemplars start this run
    task: str = "all"                 # tasks: 'all', a stem, a glob ('level1/*'), a path, or a comma list of these
    tasks_dir: str = str(evaluator.TASKS_DIR)  # folder of KernelBench-format task files (a KernelBench level works)
    steps: int = 200                  # RL steps (sft: AdamW steps) to run (a resumed run stops at this step too)
    device: str = "auto"              # auto|cpu|cuda: where the policy runs and the candidates are timed
    model: str = ""                   # hub id, local folder, .gguf file or tiny; "" = hub model on GPU, else demo
    out: str = ""                     # run folder; '' = runs/<date>-<time>
    resume: bool = False              # continue the run in --out from its checkpoint
    seed: int = 0                     # every draw (tasks, exemplars, samples) derives from (seed, step, task)
    tasks_per_step: int = 4           # B: prompts per step (capped at the number of tasks)
    group_size: int = 8               # G: samples per prompt, the GRPO group
    gen_batch: int = 8                # tasks per generate call, their groups in one batch (1: each task alone)
    gen_cache: str = "auto"           # auto|dynamic|static|graphs: KV cache (auto: graphs on CUDA); graphs: rl.decode
    temperature: float = 1.0          # sampling temperature (the loss scores tokens at the same temperature)
    top_p: float = 1.0                # nucleus sampling mass (1 = off; rl needs 1: its loss scores no truncation)
    max_new_tokens: int = 2048        # completion length cap (also the Dr. GRPO normaliser)
    contrastive: bool = True          # show scored earlier variants in the prompt (off = plain prompt)
    n_exemplars: int = 2              # N: variants shown per prompt
    bucket_width: float = 0.5         # score bucket width for exemplar sampling
    tau: float = 1.0                  # softmax temperature over bucket mean scores
    exemplar_mode: str = "contrastive"  # contrastive|random|best: how variants are drawn from the database
    exemplar_max_chars: int = 6000    # a variant longer than this is never shown (prompts stay short; 0 = no cap)
    fail_reward: float = -2.0         # reward of a failed candidate (compile/runtime error, wrong, timeout, rejected)
    copy_reward: str = "fail"         # reward of a reference copy (same_as_reference): a number, or fail = fail_reward
    log_speedup: bool = True          # reward log(speedup), at least log(0.25), not speedup (fail_reward below that)
    round_to_one: float = 0.02        # speedups within this of 1 count as 1 (identical code's bar: +-2%)
    recheck_above: float = 3.0        # a speedup above this is evaluated again, the lower of the two kept (0 = off)
    reward_normalize: bool = False    # (r - mean) / std over the step's rewards, then the clip (the paper's shape)
    reward_clip: float = 1.5          # clip normalised rewards to [-k, k] (0 = no clip; acts with --reward-normalize)
    std_normalize: bool = False       # divide group advantages by the group std (off = Dr. GRPO; on = the paper's)
    adv_std_floor: float = 0.05       # group advantages divide by at least this std (rewards' units; 0 = off)
    loss_variant: str = "dapo"        # dapo|grpo|drgrpo: per-token losses averaged over tokens (grpo: per sequence)
    lora_rank: int = 0                # LoRA adapters of this rank on the attention and MLP projections (0 = train all)
    lora_alpha: float = 32.0          # LoRA scale alpha / rank
    lora_targets: str = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"  # the projections LoRA adapts
    lr: float = 1e-6                  # AdamW learning rate
    optimizer_state: str = "auto"     # auto|keep|fresh: --init-from's AdamW moments (auto: kept for the same objective)
    warmup_steps: int = 5             # a fresh AdamW's lr rises linearly over its first steps (0 = off)
    weight_decay: float = 0.0         # AdamW weight decay
    beta: float = 0.0                 # KL penalty to the initial policy (0 = no reference model loaded)
    eps_low: float = 0.2              # ratio clip below: 1 - eps_low
    eps_high: float = 0.2             # ratio clip above: 1 + eps_high (> eps_low = DAPO clip-higher)
    mu: int = 1                       # passes over each batch of rollouts (PPO epochs, reshuffled after the first)
    minibatches: int = 1              # AdamW steps per pass: the batch's samples split in M (old log-probs: before all)
    grad_accum: int = 8               # micro-batches per optimizer step (memory, not maths)
    recompute: str = "auto"           # auto|on|off: layers run again in backward to save memory (auto: on CUDA only)
    max_grad_norm: float = 1.0        # clip the gradient norm (0 = off)
    update: bool = True               # rl: take the GRPO update (off: sample, evaluate, reward and log the steps only)
    eval_timeout: float = 60.0        # seconds one call of a candidate may take before it is a timeout
    eval_build_timeout: float = 900.0  # seconds a candidate's C++/CUDA build may take
    eval_time_budget: float = 1.0     # seconds of timed calls per side, after the evaluator's minimum rounds
    eval_precision: float = 0.0       # ... or fewer: stop once the speedup is known within +-this (0 = off)
    eval_tol: float = 1e-4            # fp32 error floor of the correctness check (x10 the reference's own error above)
    ssl_check_rounds: int = 2         # ssl: timed rounds of its correctness pass (its successes then timed in full)
    eval_jobs: int = 0                # parallel candidate builds (0 = the evaluator's choice)
    build_ahead: str = "auto"         # auto|on|off: a reply's build starts when its row ends (auto: on CUDA's decoder)
    ckpt_every: int = 10              # checkpoint every this many steps (and at the end)
    collect_attempts: int = 16        # collect: samples per task at most
    collect_successes: int = 4        # collect: stop sampling a task after this many correct samples
    data: str = ""                    # sft: JSONL of records with ref_code and completion or code (collected.jsonl)
    sft_batch: int = 16               # sft, ssl: records per AdamW step (split into grad_accum micro-batches)
    sft_min_speedup: float = 0.0      # sft: only records measured at least this fast (0 = every working one)
    sft_contrastive: bool = False     # sft: each record also under a contrastive prompt, exemplars drawn per step
    ssl_rounds: int = 3               # ssl: rounds of sample -> keep the correct -> fine-tune on them
    ssl_tasks: int = 0                # ssl: tasks per round, drawn as rl draws a step's (0 = every task each round)
    sft_steps: int = 200              # all: sft's AdamW steps on --data before ssl (--steps: rl's steps)
    sftc_steps: int = 40              # all: sft steps on plain and contrastive prompts after ssl, before rl (0: none)


def parse_flags(argv=None):
    """(Config, given) from the command line; given names the flags it set, which nothing decide_config decides
    overrides. --resume reads OUT/config.json under the flags given. Unknown flags and bad values exit with one line."""
    p = runs.flag_parser(Config, chain.recipe_help())
    given = vars(p.parse_args(argv))
    try:
        if given.get("resume") and not given.get("out"):
            raise ConfigError("--resume needs --out DIR, the run folder to continue")
        saved = runs.saved_config(Path(given["out"]) / "config.json", Config) if given.get("resume") else {}
        return runs.check_config(Config(**{**saved, **given})), frozenset(given)
    except ConfigError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")  # one line: the usage of 47 flags would bury it


def parse_config(argv=None):
    """The Config of a command line, as parse_flags reads it (tests and scripts that need not know what was given)."""
    return parse_flags(argv)[0]


def decide_config(cfg, given=None):
    """The config that runs, decided here alone: config.json and the printed config lines are what it returns.
    given: the fields set on purpose (the command line's flags, else changed_fields), which nothing here overrides.
    A field's value is the first of: the flags given; a resumed run's config.json (parse_flags); chain.RECIPE, for
    --stage all (here its "all", each stage's own in chain.stage_config); the demo policy's flags.json where no real
    model runs (runs.fallback_to_demo); Config's default. Then what the machine and earlier stages decide, in order:

        stage     auto: all (the chain) for a real model on a GPU without --init-from, else rl
        device    auto: cuda when there is a GPU
        model     "": the model an --init-from stage trained, else the hub's, an offline copy or the demo policy
        LoRA      an --init-from stage's adapters keep their rank, alpha and targets
        AdamW     optimizer_state auto: --init-from's moments kept for the same objective, else fresh
    """
    given = runs.changed_fields(cfg) if given is None else set(given)
    device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda, but this machine has no usable CUDA device (use --device cpu)")
    cfg = replace(runs.check_config(cfg), device=device, out=cfg.out or time.strftime("runs/%Y%m%d-%H%M%S"))
    if cfg.stage == "auto":
        alone = device != "cuda" or cfg.model == "tiny" or cfg.init_from or "RANK" in os.environ
        cfg = replace(cfg, stage="rl" if alone else "all")
    if cfg.stage == "all" and not cfg.model:
        cfg = runs.choose_policy(cfg, given)
        if cfg.init_from == str(runs.DEMO_POLICY):  # no real model here: the demo alone, as its line said
            cfg = replace(cfg, stage="rl")
    if cfg.stage == "all":  # the chain's own config: RECIPE["all"] and split.json's training tasks, unless given
        if not (cfg.resume and (Path(cfg.out) / "config.json").is_file()):  # (a resumed one as it was saved)
            cfg = replace(cfg, **{k: v for k, v in chain.RECIPE["all"].items() if k not in given})
            if cfg.task == "all" and Path(cfg.tasks_dir).resolve() == evaluator.TASKS_DIR.resolve():
                cfg = replace(cfg, task=",".join(json.loads(chain.SPLIT.read_text())["train"]))
        return runs.check_config(cfg)
    cfg = replace(cfg, out=str(Path(cfg.out).absolute()))  # absolute: its resume hint works anywhere
    reads_init_from = engine.needs_init_from(cfg)
    if reads_init_from and not (Path(cfg.init_from) / "ckpt.pt").is_file():
        raise ConfigError(f"--init-from {cfg.init_from}: no ckpt.pt there (a collect folder has none: give its "
                          "collected.jsonl to --stage sft as --data)")
    earlier = json.loads((Path(cfg.init_from) / "config.json").read_text()) if reads_init_from else {}
    cfg = runs.inherit_lora(cfg, earlier, given)
    if "model" in earlier and not cfg.model:  # the model whose weights the earlier stage trained
        cfg = replace(cfg, model=earlier["model"])
    return runs.resolve_optimizer_state(cfg if cfg.model else runs.choose_policy(cfg, given))


# ---------------------------------------------------------------------------- tasks


def load_tasks(cfg):
    """[(name, reference source)] of the selected tasks (evaluator.TaskError when none match)."""
    paths = evaluator.find_tasks(cfg.task, cfg.tasks_dir)
    tasks = [(evaluator.task_name(p, cfg.tasks_dir), evaluator.load_task(p)) for p in paths]
    for name, src in tasks:  # one that cannot fit the device at all is refused in one line, before any work
        evaluator.task_memory(src, cfg.device, name)
    return tasks


# ---------------------------------------------------------------------------- loop: pick tasks, build prompts


def seed_for(cfg, step, task):
    """A 32-bit seed from (seed, step, task name): draws do not depend on what ran before, so runs replay."""
    return int(np.random.SeedSequence([cfg.seed, step, zlib.crc32(task.encode())]).generate_state(1)[0])


def pick_tasks(cfg, tasks, step):
    """The step's B tasks, drawn without replacement from (seed, step) alone."""
    rng = np.random.default_rng([cfg.seed, step])
    return [tasks[i] for i in rng.choice(len(tasks), size=min(cfg.tasks_per_step, len(tasks)), replace=False)]


def build_prompts(cfg, db, batch, step, tok):
    """One rendered prompt per task: reference + n_exemplars variants drawn from the database (or plain)."""
    prompts = []
    for name, ref in batch:
        shown = draw_variants(cfg, db, name, seed_for(cfg, step, name)) if cfg.contrastive else ()
        prompts.append(render(build_prompt(ref, shown, device=cfg.device, contrastive=cfg.contrastive), tok))
    return prompts


def target_score(db, task, rng, n=2):
    """The score a stage-3 prompt's variants stay below, drawn as sft's targets are (a working record's speedup):
    uniformly among the task's scores with n entries below (fewer where it has fewer), the best left out while two
    remain: two known answers (the target, the best) beat what it shows. Only a reference: inf.
    Example: n 2, scores 0.7, 1.0 (the reference), 1.3, 1.9, 2.1 -> 1.3 or 1.9; 0.7, 1.0 -> 1.0; 1.0 -> inf."""
    scores = sorted(e.score for e in db.entries(task))
    fits = [x for x in sorted(set(scores)) if sum(y < x for y in scores) >= min(n, len(scores) - 1)]
    above = fits[:-1] if len(fits) > 1 else fits or scores[-1:]
    return float(rng.choice(above)) if len(set(scores)) > 1 else math.inf


def draw_variants(cfg, db, task, seed, below=None, excluding=None):
    """The n_exemplars entries (Exemplars) a contrastive prompt shows, by ONE rule for stage 3 and for sft's
    contrastive prompts, so that sft trains the question stage 3 asks: the task's entries scored below `below`
    (sft: its record's speedup; stage 3: target_score, drawn from `seed`), none longer than exemplar_max_chars, drawn
    by exemplar_mode from `seed`; excluding: a code left out. Each code comes without its stage-1 intent label: the
    measured score is what the prompt says of it (the 1.5B copied "faster (hoped):" into its designs).
    Why below a working record: the prompt asks for a version faster than all it shows. Shown the best, a policy has
    nothing it knows to write; shown slower ones, the faster variants it learnt in sft answer it, and a group that
    writes several of them gives GRPO a choice of speeds.

    Example: scores 1.0 (the reference), 0.7, 1.3, 2.1, below=1.3: drawn from 1.0, 0.7.
    """
    top = target_score(db, task, np.random.default_rng([seed, 1]), cfg.n_exemplars) if below is None else below
    pool = [e for e in db.entries(task, excluding=excluding) if e.score < top
            and (not cfg.exemplar_max_chars or len(unlabelled(e.code)) <= cfg.exemplar_max_chars)]
    shown = sample_exemplars(pool, cfg.n_exemplars, bucket_width=cfg.bucket_width, tau=cfg.tau,
                             mode=cfg.exemplar_mode, rng=np.random.default_rng(seed))
    return [replace(e, code=unlabelled(e.code)) for e in shown]

# ---------------------------------------------------------------------------- loop: generate G


def generate_all(cfg, model, tok, batch, prompts, step, phases=None):
    """A rollout per task of the batch, in batch order: generate() on gen_batch tasks at a time, each call seeded from
    (seed, step, its task names joined by '+'). Under torchrun each rank generates its share of the tasks.
    phases (a dict: the step's evaluation follows): with build_ahead, each reply's C++/CUDA build starts as soon as
    its row ends (runs.BuildsAhead), while the other rows decode; their count and the wait for the last after
    decoding go into phases. Evaluations (clocks) start after this returns: a clock never runs beside the decoder."""
    mine = engine.shard(list(zip(batch, prompts)))
    calls = [mine[i:i + cfg.gen_batch] for i in range(0, len(mine), cfg.gen_batch)]
    ahead = phases is not None and (cfg.build_ahead == "on" or cfg.build_ahead == "auto" and cfg.device == "cuda")
    builds, out = runs.BuildsAhead(cfg) if ahead else None, []
    try:
        for call in tqdm(calls, desc=f"step {step} generate", leave=False, disable=not engine.is_main()):
            seed = seed_for(cfg, step, "+".join(name for (name, _), _ in call))
            ended = builds and (lambda i, j, text, refs=[ref for (_, ref), _ in call]: builds.add(refs[i], text))
            out += engine.generate(cfg, model, tok, [p for _, p in call], seed, on_end=ended)
    except BaseException:
        if builds:
            builds.wait(cancel=True)
        raise
    if builds:
        phases.update(builds.wait())
    return engine.gather(out)

# ---------------------------------------------------------------------------- loop: evaluate, reward, advantages


def code_pairs(batch, rollouts):
    """(reference, code) of every sample, in (B*G) order ("" for a reply without code)."""
    return [(ref, code or "") for (_, ref), r in zip(batch, rollouts) for code in r["codes"]]


def evaluate_all(cfg, batch, rollouts, timing=None, phases=None):
    """Every rollout's code (extracted into r["codes"]) against its task's reference, in ONE evaluator call; results
    in (B*G) order. timing: evaluator options in place of the eval_time_budget (e.g. correctness_only)."""
    for r in rollouts:
        r["codes"] = [extract_code(t).code for t in r["texts"]]
    return evaluate_pairs(cfg, code_pairs(batch, rollouts), timing, phases)


def evaluate_pairs(cfg, pairs, timing=None, phases=None, on_result=None):
    """Results of (reference, code) pairs in ONE evaluator call, in their order; a repeated pair is evaluated once
    and its samples get copies of that result. Under torchrun each rank evaluates its share of the candidates (on
    its own GPU) and gets back every result. phases: a dict evaluate_many adds its build and evaluation times and
    counts to; on_result(pair, result) as each distinct pair's evaluation ends (on the rank that evaluated it)."""
    unique = list(dict.fromkeys(pairs))  # a repeated code is evaluated once: its samples share the result
    mine = engine.shard(unique)
    device = f"cuda:{torch.cuda.current_device()}" if cfg.device == "cuda" and dist.is_initialized() else cfg.device
    each = (lambda i, res: on_result(mine[i], res)) if on_result else None
    results = engine.gather(evaluator.evaluate_many(mine, device=device, jobs=cfg.eval_jobs or None, on_result=each,
                                             progress=engine.is_main(), call_timeout_s=cfg.eval_timeout,
                                             build_timeout_s=cfg.eval_build_timeout, tol=cfg.eval_tol, phases=phases,
                                             time_copies=False,  # a copy earns copy_reward, whatever its speed
                                             **(timing or dict(time_budget_s=cfg.eval_time_budget,
                                                               precision=cfg.eval_precision))))
    found = dict(zip(unique, results))
    return [copy(found[p]) for p in pairs]


def rounded(cfg, speedup):
    """A measured speedup within round_to_one of 1.0 as exactly 1.0 (the paper's conservative rounding)."""
    return 1.0 if speedup is not None and abs(speedup - 1.0) <= cfg.round_to_one else speedup


def measure(cfg, batch, rollouts, timing=None, phases=None):
    """evaluate_all, then the paper's conservative handling of the speedups, before any becomes a reward or a score:
    with timing (stage 2 times each candidate for 1-2 rounds) the successes are evaluated again with the normal time
    budget, and that result is theirs; a success above recheck_above (0 = off) is evaluated again and the lower of
    the two kept (a failure the second time is the result); then every speedup goes through rounded().

    Example (defaults: recheck_above 3, round_to_one 0.02): 9.0 then 2.5 -> 2.5; 4.0 then 4.4 -> 4.0; 5.0 then
    wrong_output -> wrong_output; 1.015 -> 1.0; 0.97 -> 0.97 (not re-evaluated: 3 or less).
    """
    results = evaluate_all(cfg, batch, rollouts, timing, phases)
    return settle(cfg, code_pairs(batch, rollouts), results, timing, phases)


def settle(cfg, pairs, results, timing=None, phases=None):
    """measure()'s handling of the first results of (reference, code) pairs: re-evaluations, then rounding."""
    if timing is not None:
        for i, res in evaluate_again(cfg, pairs, results, lambda r: True, phases).items():
            results[i] = res
    if cfg.recheck_above:
        for i, res in evaluate_again(cfg, pairs, results, lambda r: r.speedup > cfg.recheck_above, phases).items():
            if not is_success(res) or res.speedup is None or res.speedup < results[i].speedup:
                results[i] = res
    for res in results:
        res.speedup = rounded(cfg, res.speedup) if res.status == "ok" else res.speedup
    return results


def evaluate_again(cfg, pairs, results, which, phases=None):
    """{index: a new result} for the timed successes that which(result) picks, evaluated again with the normal time
    budget (each distinct code once)."""
    picked = [i for i, r in enumerate(results) if is_success(r) and r.speedup is not None and which(r)]
    return dict(zip(picked, evaluate_pairs(cfg, [pairs[i] for i in picked], None, phases))) if picked else {}


def evaluate_and_reward(cfg, batch, rollouts, reward_fn=None, phases=None):
    """(results, raw rewards (N,), training rewards (N,)): results of measure(); raw = speedup, fail_reward or
    copy_reward; training = normalised and clipped, or raw with --no-reward-normalize.

    With a reward_fn (tests) there is no evaluation: its rewards are used as they are, and results is [].
    """
    if reward_fn is not None:
        raw = np.array([x for (name, _), r in zip(batch, rollouts) for x in reward_fn(name, r["texts"])], dtype=float)
        return [], raw, raw
    results = measure(cfg, batch, rollouts, phases=phases)
    return (results, *rewards_of(cfg, results))


def rewards_of(cfg, results):
    """(raw rewards (N,), training rewards (N,)) of results: raw = speedup, fail_reward or copy_reward; training =
    raw (the default: with group advantages they keep the speed order), or the paper's shape with
    --reward-normalize: normalised over the step, then clipped to +-reward_clip of its std.
    Why not normalised by default: over a step and clipped at 1.5 std, the clip bound at 0.75x-1.27x on the 1.5B's
    steps, and a correct 0.89x got the advantage of its group's 1.19x samples: what was trained was the pass rate.

    Example (groups of 4, the defaults: log speedups, fail -2, no std): [fail, 0.89, 1.19, 1.5] -> rewards [-2,
    -0.117, 0.174, 0.405] -> advantages [-1.62, 0.27, 0.56, 0.79]; under the paper's shape, beside two groups of
    failures, 1.19 and 1.5 both get 0.72.
    """
    copy_reward = cfg.fail_reward if cfg.copy_reward == "fail" else float(cfg.copy_reward)
    kw = dict(fail_reward=cfg.fail_reward, copy_reward=copy_reward, log_speedup=cfg.log_speedup)
    clip = cfg.reward_clip if cfg.reward_normalize else None  # k is in units of the step's std: raw ones stay raw
    return (compute_rewards(results, normalize=False, clip=None, **kw),
            compute_rewards(results, normalize=cfg.reward_normalize, clip=clip, **kw))


def advantages_of(cfg, rewards):
    """GRPO's group advantages (B * G,) of the step's training rewards (B * G,)."""
    return group_advantages(torch.tensor(rewards).view(-1, cfg.group_size),  # (B, G)
                            std_normalize=cfg.std_normalize, std_floor=cfg.adv_std_floor).flatten().float()


def group_signal(cfg, adv, results):
    """The step's group-variance diagnostic: groups, those with a non-zero advantage (GRPO learns from them alone),
    those whose correct samples differ in speed by more than the timing noise (round_to_one; None without results),
    and the flat ones, whose zero advantages move nothing (skipped)."""
    groups, G, speed = adv.view(-1, cfg.group_size), cfg.group_size, None  # (B, G)
    signal = int((groups != 0).any(1).sum())
    if results:
        fast = [[r.speedup for r in results[i:i + G] if is_success(r) and r.speedup] for i in range(0, len(results), G)]
        speed = sum(len(s) > 1 and max(s) > min(s) * (1 + cfg.round_to_one) for s in fast)
    return dict(groups=len(groups), groups_signal=signal, groups_speed=speed, groups_flat=len(groups) - signal)

# ---------------------------------------------------------------------------- loop: loss and update


def flat_samples(rollouts):
    """(prompt ids, completion ids, mask) of every sample, in (B*G) order: what token_logps scores."""
    return [(r["prompt"], c, k) for r in rollouts for c, k in zip(r["ids"], r["mask"])]  # N = B * G


def micro_batches(cfg, indices):
    """The indices split into grad_accum nearly equal micro-batches (fewer when there are fewer indices)."""
    if not len(indices):  # a rank's share of a mini-batch smaller than the number of ranks
        return []
    return [c.tolist() for c in np.array_split(np.asarray(indices), min(cfg.grad_accum, len(indices)))]


def optimizer_step(cfg, model, opt):
    """Clip the gradient norm (max_grad_norm; 0 = off), take the AdamW step at lr x min(1, k / warmup_steps), k this
    AdamW's steps from 1 (moments kept from --init-from keep their count); returns the norm before clipping. Why: a
    fresh AdamW's first steps move every weight by about lr (sign descent)."""
    norm = torch.nn.utils.clip_grad_norm_(engine.trainable(model), cfg.max_grad_norm or float("inf"))
    k = 1 + max((int(st["step"]) for st in opt.state.values() if "step" in st), default=0)
    for group in opt.param_groups:
        group["lr"] = cfg.lr * min(1.0, k / cfg.warmup_steps) if cfg.warmup_steps else cfg.lr
    opt.step()
    return float(norm)


def update(cfg, model, anchor, opt, rollouts, adv, step=0):
    """GRPO with PPO's mini-batches: mu passes over the batch, each split into `minibatches` AdamW steps (each over
    grad_accum micro-batches); the first pass takes the samples in (B*G) order, every later one in a fresh order
    drawn from (seed, step) (PPO's reshuffle: the same on every rank). With beta = 0 only the samples of groups with
    a signal take part (a flat group's exact zeros would only dilute the mean). Old
    (and reference) log-probs of every micro-batch come first, no grad. From the second step
    on the weights have moved, so the ratios leave 1 and the eps clip can bind; with one step per batch every ratio
    is 1 (the old log-probs are the current ones, detached) and the clip does nothing.
    Under torchrun each rank takes its share of each mini-batch; the shares of the loss are taken of the whole
    mini-batch, so the gradients summed over the ranks (and the logged stats) are those of one process."""
    groups = adv.split([len(r["ids"]) for r in rollouts])  # each rollout's group
    kept = np.flatnonzero(np.concatenate([np.full(len(g), bool(g.ne(0).any()) or cfg.beta > 0) for g in groups]))
    samples = flat_samples(rollouts)
    n, m = len(kept), min(cfg.minibatches, len(kept))
    rng = np.random.default_rng(seed_for(cfg, step, "minibatches"))  # (one mini-batch: nothing to reshuffle)
    orders = [kept] + [kept[rng.permutation(n)] if m > 1 else kept for _ in range(cfg.mu - 1)]
    parts = [p.tolist() for order in orders for p in np.array_split(order, m)]  # each AdamW step's samples
    chunks = [micro_batches(cfg, engine.shard(part)) for part in parts]  # per step: this rank's micro-batches
    tokens = [sum(int(samples[i][2].sum()) for i in part) for part in parts]
    adv, n_steps = adv.to(cfg.device), len(parts)
    with torch.no_grad():
        old = [[engine.token_logps(cfg, model, [samples[i] for i in c])[0] if n_steps > 1 else None for c in cs]
               for cs in chunks]
        with engine.scored_by(model, anchor) if anchor is not None else nullcontext() as ref_model:  # (kl_anchor)
            ref = [[engine.token_logps(cfg, ref_model, [samples[i] for i in c])[0] if ref_model else None for c in cs]
                   for cs in chunks]
    stats, grad_norm = Counter(), 0.0
    bar = tqdm(total=sum(map(len, chunks)), desc="update", leave=False, disable=not engine.is_main())
    for part, cs, olds, refs, total_tokens in zip(parts, chunks, old, ref, tokens):
        opt.zero_grad(set_to_none=True)
        for c, old_lp, ref_lp in zip(cs, olds, refs):
            bar.update()
            with engine.layers_recomputed(cfg, model):
                logp, mask = engine.token_logps(cfg, model, [samples[i] for i in c])
                old_lp = logp.detach() if old_lp is None else old_lp  # one step: the ratio is 1, its gradient logp's
                loss, st = grpo_loss(logp, old_lp, adv[c], mask, ref_logp=ref_lp, variant=cfg.loss_variant,
                                     eps_low=cfg.eps_low, eps_high=cfg.eps_high, beta=cfg.beta,
                                     max_tokens=cfg.max_new_tokens)
                # weight each micro-batch by its share, so the sum equals the loss of the whole mini-batch
                share = int(mask.sum()) / total_tokens if cfg.loss_variant == "dapo" else len(c) / len(part)
                (loss * share).backward()
            stats.update({"loss": loss.item() * share, **{k: v * share / n_steps for k, v in st.items()}})
        engine.all_reduce_grads(model)
        grad_norm += optimizer_step(cfg, model, opt) / n_steps  # of the summed gradient: the same on every rank
    bar.close()
    stats = {k: sum(part.get(k, 0.0) for part in engine.gather([stats])) for k in ("loss", "clip_frac", "kl", "ratio")}
    return dict(stats, loss=stats["loss"] / n_steps, grad_norm=grad_norm, updated=True, trained=int(n))


NO_UPDATE = dict(loss=None, clip_frac=None, kl=None, ratio=None, grad_norm=None, updated=False)

# ---------------------------------------------------------------------------- loop: winners into the database


def record_winners(cfg, db, best, batch, rollouts, results, step):
    """Correct, non-reference candidates into the database, scored by their measured speedup, each distinct code
    once a step (its samples share one evaluation); a code the database holds is measured again and its scores are
    combined (ExemplarDB.add). A task's best is its highest combined score: OUT/best/ is rewritten when it changes."""
    codes = [(name, code) for (name, _), r in zip(batch, rollouts) for code in r.get("codes", [])]
    added = {}  # (task, code) -> True, in order
    for (name, code), res in zip(codes, results):
        if is_success(res) and res.speedup is not None and (name, code) not in added:
            added[name, code] = True
            db.add(name, code, res.speedup, step=step, meta={"ref_ms": res.ref_ms, "cand_ms": res.cand_ms})
    for name in dict.fromkeys(name for name, _ in added):
        top = runs.task_best(db, name)
        if top != best.get(name):
            best[name] = top
            runs.write_best(cfg, name, *top)


# ---------------------------------------------------------------------------- stages: collect -> sft -> ssl -> rl
# each stage is called as stage(cfg, tasks, model, tok, opt, db, best, start, reward_fn) by run()


def correctness_only(cfg):
    """ssl's evaluator options: checked in full, barely timed (its successes are then timed in full, measure)."""
    return {**evaluator.BARELY_TIMED, "max_rounds": cfg.ssl_check_rounds}


def collect(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 1's data: per task, rounds of plain-prompt samples (never more than the attempts or successes still
    wanted) until collect_successes are correct or collect_attempts are spent; one OUT/collected.jsonl line per
    attempt; the correct ones into the database. A resumed collect starts over (its draws replay)."""
    path, plain = Path(cfg.out) / "collected.jsonl", replace(cfg, contrastive=False)
    path.write_text("")
    for step, task in enumerate(tasks, 1):
        t0, tried, ok, rnd = time.perf_counter(), 0, 0, 0
        prompt = build_prompts(plain, db, [task], step, tok)[0]
        while tried < cfg.collect_attempts and ok < cfg.collect_successes:
            rnd += 1
            n = min(cfg.group_size, cfg.collect_attempts - tried, cfg.collect_successes - ok)
            rollout = engine.generate(replace(cfg, group_size=n), model, tok, [prompt], seed_for(cfg, rnd, task[0]))[0]
            results = measure(cfg, [task], [rollout])
            with open(path, "a") as f:
                for text, code, res in zip(rollout["texts"], rollout["codes"], results):
                    f.write(json.dumps(dict(task=task[0], ref_code=task[1], prompt=prompt, completion=text,
                                            code=code, result=res.to_dict())) + "\n")
            record_winners(cfg, db, best, [task], [rollout], results, step)
            tried, ok = tried + n, ok + sum(map(is_success, results))
        runs.append_log(cfg, dict(step=step, task=task[0], attempts=tried, successes=ok, step_s=time.perf_counter() - t0))
        print(f"collect {task[0]} | {ok} correct of {tried} attempts", flush=True)


def add_measured(cfg, db, records, meta=None):
    """Put the records' measured working codes (task, code, a result with a speedup: collected.jsonl, stage-1 data)
    into the exemplar database, scored by that speedup (rounded(); not re-timed: sft evaluates nothing); copies of
    the reference (same_as_reference) stay out. Records of one code with the same result (collect's samples that
    shared one evaluation) are one measurement."""
    seen = set()
    for r in records:
        res = r.get("result") or {}
        if (r.get("task") and r.get("code") and res.get("speedup") and res.get("status", "ok") == "ok"
                and not res.get("same_as_reference") and (r["task"], r["code"], res["speedup"]) not in seen):
            seen.add((r["task"], r["code"], res["speedup"]))
            db.add(r["task"], r["code"], rounded(cfg, res["speedup"]), meta=meta)


def sft_records(cfg):
    """(every working record of --data, the ones sft trains on: measured at least --sft-min-speedup)."""
    recs = runs.working_records(runs.read_jsonl(cfg.data))
    keep = runs.working_records(recs, cfg.sft_min_speedup)
    at_least = f", measured at least {cfg.sft_min_speedup:g}x" if cfg.sft_min_speedup else ""
    if not keep:
        raise ConfigError(f"--data {cfg.data}: missing, or no record holds ref_code and completion or code "
                          f"without a failed result{at_least}")
    print(f"sft: trains on {len(keep)} records of {cfg.data} that hold a working candidate{at_least}; all "
          f"{len(recs)} working ones go into the exemplar database")
    return recs, keep


def sft_examples(cfg, model, tok, records):
    """(prompt ids (P,), target ids (T,), mask (T,)) per record: the plain prompt; its completion (or code as a
    reply) + eos as the target. The prompt names --device's target (CPU or GPU): train for the device you will use."""
    eos, examples = engine.eos_ids(model, tok)[:1], []
    for r in records:
        prompt = render(build_prompt(r["ref_code"], device=cfg.device, contrastive=False), tok)
        examples.append(tokenized_example(tok, prompt, r.get("completion") or as_reply(r["code"], prompt), eos))
    return examples


def tokenized_example(tok, prompt, target, eos):
    """(prompt ids (P,), target ids + eos (T,), mask (T,)): one sft example."""
    p, c = (tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"][0] for text in (prompt, target))
    c = torch.cat([c, eos])
    return p, c, torch.ones(len(c), dtype=torch.bool)


def contrastive_example(cfg, db, tok, eos, record, step, i):
    """[record i's sft example under a contrastive prompt]: the variants draw_variants shows for a target of the
    record's measured speedup (below it, never its own code: a prompt showing its target teaches copying), drawn
    from (seed, step, i), so each step shows a new pair; the target is the record's code as a reply whose analysis
    compares the shown variants (prompts.compare_variants); [] for a record whose task has no such variant.
    Why: a model as small as --model tiny learns the prompts it saw; trained on plain prompts only it wrote no code
    at all under stage 3's contrastive ones (bench/RESULTS.md)."""
    own = record.get("code") or extract_code(record.get("completion", "")).code
    if not own:
        return []
    target = (record.get("result") or {}).get("speedup")
    if not target:  # no measured speed: no target to show slower variants of
        return []
    shown = draw_variants(cfg, db, record.get("task", ""), seed_for(cfg, step, f"{record.get('task')}#{i}"),
                          below=rounded(cfg, target), excluding=own)
    if not shown:
        return []
    prompt = render(build_prompt(record["ref_code"], shown, device=cfg.device, contrastive=True), tok)
    reply = as_reply(own, prompt, analysis=compare_variants(shown, unlabelled(own)))
    return [tokenized_example(tok, prompt, reply, eos)]


def epoch_batches(cfg, n, epoch):
    """One pass over n examples in an order drawn from (seed, epoch): lists of sft_batch indices (the last shorter)."""
    order = np.random.default_rng([cfg.seed, epoch]).permutation(n).tolist()
    return [order[i:i + cfg.sft_batch] for i in range(0, n, cfg.sft_batch)]


def sft_step(cfg, model, opt, examples):
    """One AdamW step on the mean negative log-likelihood of the examples' completion tokens, at temperature 1.
    Prompt tokens are context only: token_logps scores completion positions alone, so they carry no loss.

    Example: completions of 3 and 1 tokens with log-probs [-1, -2, -3] and [-2] -> loss (1 + 2 + 3 + 2) / 4 = 2.0.
    """
    tokens = sum(int(k.sum()) for _, _, k in examples)
    opt.zero_grad(set_to_none=True)
    loss = 0.0
    for c in micro_batches(cfg, range(len(examples))):
        with engine.layers_recomputed(cfg, model):
            logp, mask = engine.token_logps(cfg, model, [examples[i] for i in c], temperature=1.0)  # (m, T), (m, T)
            nll = -torch.where(mask, logp, torch.zeros_like(logp)).sum() / tokens
            nll.backward()
        loss += nll.item()
    return dict(loss=loss, tokens=tokens, grad_norm=optimizer_step(cfg, model, opt))


def sft(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 1: AdamW steps start..steps on sft_batch records of --data each, epoch after reshuffled epoch; with
    --sft-contrastive each step also trains the same records under contrastive prompts (contrastive_example)."""
    every, records = sft_records(cfg)
    # every working variant, slow ones too, is an exemplar stage 3 (and --sft-contrastive) can show: the speed
    # choices GRPO learns from, whatever sft trains on
    add_measured(cfg, db, every, meta=dict(data=cfg.data))
    examples, eos = sft_examples(cfg, model, tok, records), engine.eos_ids(model, tok)[:1]
    per_epoch = -(-len(examples) // cfg.sft_batch)
    for step in range(start, cfg.steps + 1):
        t0 = time.perf_counter()
        batch = epoch_batches(cfg, len(examples), (step - 1) // per_epoch)[(step - 1) % per_epoch]
        chosen = [examples[i] for i in batch]
        if cfg.sft_contrastive:
            chosen += [e for i in batch for e in contrastive_example(cfg, db, tok, eos, records[i], step, i)]
        with runs.finishing_step():  # a Ctrl-C waits for this step's update, log and checkpoint
            stats = sft_step(cfg, model, opt, chosen)
            runs.append_log(cfg, dict(step=step, **stats, step_s=time.perf_counter() - t0))
            print(f"step {step:4d} | loss {stats['loss']:.4f} | {stats['tokens']} tokens | "
                  f"{time.perf_counter() - t0:.1f} s/step", flush=True)
            runs.save_checkpoint(cfg, model, opt, step, cfg.steps)


def ssl(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 2, rounds start..ssl_rounds: G plain-prompt samples per task (every task, or ssl_tasks of them drawn
    from (seed, round): rounds short enough to checkpoint within a device call) -> evaluate (correctness; barely
    timed; the successes timed again in full) -> one pass of sft_steps over the correct ones (reward 1; failures,
    reward 0, are not trained on) -> database."""
    plain = replace(cfg, contrastive=False)
    for rnd in range(start, cfg.ssl_rounds + 1):
        t0 = time.perf_counter()
        batch = pick_tasks(replace(cfg, tasks_per_step=cfg.ssl_tasks), tasks, rnd) if cfg.ssl_tasks else tasks
        phases = {}
        rollouts = generate_all(cfg, model, tok, batch, build_prompts(plain, db, batch, rnd, tok), rnd, phases)
        t1 = time.perf_counter()
        results = measure(cfg, batch, rollouts, correctness_only(cfg), phases)  # successes timed again in full
        t2 = time.perf_counter()
        wins = [s for s, res in zip(flat_samples(rollouts), results) if is_success(res)]
        with runs.finishing_step():  # a Ctrl-C waits for this round's updates, database, log and checkpoint
            steps = [sft_step(cfg, model, opt, [wins[i] for i in b]) for b in epoch_batches(cfg, len(wins), rnd)]
            stats = dict(loss=float(np.mean([s["loss"] for s in steps])) if steps else None, kept=len(wins),
                         tokens=sum(s["tokens"] for s in steps), updated=bool(steps))
            t3 = time.perf_counter()
            record_winners(cfg, db, best, batch, rollouts, results, rnd)
            raw = np.array([float(is_success(res)) for res in results])  # the reward of stage 2: 1 or 0
            runs.log_step(cfg, rnd, batch, rollouts, raw, results, best, stats, (t0, t1, t2, t3), phases)
            runs.save_checkpoint(cfg, model, opt, rnd, cfg.ssl_rounds)


def rl(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 3, contrastive RL: steps start..steps of the loop in the module docstring."""
    anchor = engine.kl_anchor(cfg, model, start)
    for step in range(start, cfg.steps + 1):
        t0 = time.perf_counter()
        batch = pick_tasks(cfg, tasks, step)
        prompts = build_prompts(cfg, db, batch, step, tok)
        phases = {}
        rollouts = generate_all(cfg, model, tok, batch, prompts, step, phases if reward_fn is None else None)
        t1 = time.perf_counter()
        results, raw, rewards = evaluate_and_reward(cfg, batch, rollouts, reward_fn, phases)
        t2 = time.perf_counter()
        adv = advantages_of(cfg, rewards)  # (B * G,)
        with runs.finishing_step():  # a Ctrl-C waits for this step's update, database, log and checkpoint
            moves = cfg.update and (adv.any() or cfg.beta > 0)
            stats = update(cfg, model, anchor, opt, rollouts, adv, step) if moves else NO_UPDATE
            stats = dict(stats, **group_signal(cfg, adv, results))
            t3 = time.perf_counter()
            record_winners(cfg, db, best, batch, rollouts, results, step)
            runs.log_step(cfg, step, batch, rollouts, raw, results, best, stats, (t0, t1, t2, t3), phases)
            runs.save_checkpoint(cfg, model, opt, step, cfg.steps)


STAGES = {"collect": collect, "sft": sft, "ssl": ssl, "rl": rl}  # each named as the CLI names it

# ---------------------------------------------------------------------------- run


def run(cfg, reward_fn=None, given=None):
    """The whole job: the config decided, tasks, policy, run folder, optimizer, database; then --stage (--stage all:
    each stage of the chain by run()). given: the fields set on purpose (parse_flags; default changed_fields);
    reward_fn(task, completions) -> rewards replaces evaluation in the rl stage (toy-reward tests only)."""
    given = runs.changed_fields(cfg) if given is None else set(given)
    auto_model = not (cfg.model or cfg.init_from)
    cfg = decide_config(cfg, given)
    if cfg.stage == "all":
        return chain.run_all(cfg, given, load_tasks(cfg), run, reward_fn)  # the stages in turn, each by run()
    if "RANK" in os.environ and cfg.stage != "rl":
        raise ConfigError(f"torchrun runs --stage rl only; run --stage {cfg.stage} as one process")
    cfg = engine.init_distributed(cfg)  # under torchrun: before the policy lands on this rank's GPU
    if not cfg.resume and (Path(cfg.out) / "log.jsonl").exists():
        raise ConfigError(f"{cfg.out} already holds a run: --resume to continue it, or pick another --out")
    tasks = load_tasks(cfg)  # a bad --task fails here, before any model download
    if dist.is_initialized() and min(cfg.tasks_per_step, len(tasks)) < dist.get_world_size():
        raise ConfigError(f"torchrun with {dist.get_world_size()} processes needs as many tasks per step, got "
                          f"{min(cfg.tasks_per_step, len(tasks))}: each process generates one task's group or more")
    try:
        model, tok = engine.initial_policy(cfg)
    except PolicyError as e:
        if not auto_model or dist.is_initialized():  # under torchrun the process group is already on cfg.device
            raise
        print(f"cudal1: {str(e).splitlines()[0]}")
        cfg = runs.resolve_optimizer_state(runs.fallback_to_demo(cfg, f"{runs.DEFAULT_MODEL} did not load", given))
        tasks, (model, tok) = load_tasks(cfg), engine.initial_policy(cfg)
    opt = torch.optim.AdamW(engine.trainable(model), lr=cfg.lr, weight_decay=cfg.weight_decay)
    start = runs.open_run(cfg, model, opt, asdict(Config()))
    if start is None:  # (finished: its line said so)
        return cfg
    db, best = runs.open_database(cfg, tasks)
    lora = f" ({sum(p.numel() for p in engine.trainable(model)) / 1e6:.2f}M in LoRA adapters)" * bool(cfg.lora_rank)
    print(f"stage {cfg.stage}: {len(tasks)} tasks, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M "
          f"parameters{lora}, from step {start}, out {cfg.out}")
    try:
        STAGES[cfg.stage](cfg, tasks, model, tok, opt, db, best, start, reward_fn)
    except KeyboardInterrupt:
        raise runs.Interrupted(runs.checkpoint_interrupted(cfg, model, opt)) from None
    if dist.is_initialized():  # leave together: a gloo rank exiting with its group alive can abort (SIGABRT)
        engine.barrier()
        dist.destroy_process_group()
    return cfg


def main(argv=None):
    """The command line: errors and Ctrl-C end in one line on stderr (exit status 1, or 130 for Ctrl-C or SIGTERM)."""
    config, given = parse_flags(argv)
    signal.signal(signal.SIGTERM, runs.stop_as_ctrl_c)
    try:
        run(config, given=given)
        if "RANK" in os.environ:  # a torchrun rank that ran to the end leaves without the interpreter's teardown,
            sys.stdout.flush(), sys.stderr.flush()  # where a gloo rank aborted now and then ("terminate called
            os._exit(0)  # without an active exception", SIGABRT) after its group was destroyed: tests/test_ddp.py
    except (PolicyError, ConfigError, evaluator.TaskError) as err:
        sys.exit(f"cudal1: {err}")
    except KeyboardInterrupt as err:
        print("\n" * sys.stderr.isatty() + f"cudal1: {err or 'interrupted before the first step'}",
              file=sys.stderr, flush=True)  # on a line of its own, not after a progress bar
        sys.exit(130)


if __name__ == "__main__":
    main()
