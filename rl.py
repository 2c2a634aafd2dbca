"""rl.py: CUDA-L1 (Li et al., arXiv 2507.14111): the Config, the contrastive RL loop, and the stages before it.

--stage collect  sample plain-prompt attempts per task: every attempt and its verdict to OUT/collected.jsonl
--stage sft      fine-tune on the working candidates of --data (the loss on completion tokens only)
--stage ssl      rounds of: sample -> evaluate -> fine-tune on the correct ones (reward 1 or 0) -> the exemplar database
--stage rl       contrastive RL (rl() below); --init-from DIR starts a stage from an earlier one's weights and database
--stage all      sft on the shipped stage-1 data -> ssl -> sftc (sft on plain and contrastive prompts) -> rl (chain.py)
--stage auto     (default) all for a real model on a GPU (no --init-from), else rl (without a GPU: the demo policy)

One RL step: B tasks -> contrastive prompts (the reference + 2 scored variants from the run's exemplar database) -> G
samples each -> one evaluator call (runs.measure: the paper's timer rules) -> log-speedup rewards -> group advantages
-> the GRPO update of the groups with a signal -> correct codes into the database -> a log line -> a checkpoint.

    OMP_NUM_THREADS=1 python rl.py --model tiny --task cpu/relu --steps 2 --max-new-tokens 32  # a CPU smoke run
    python rl.py --task all                       # a GPU: Qwen2.5-Coder-1.5B-Instruct through sft, ssl, sftc, rl
    python rl.py --resume --out runs/DIR          # continue from the last checkpoint (flags given now win)
    torchrun --nproc-per-node N rl.py --task all  # data-parallel RL, one process per GPU (engine.py)

The run folder (--out) is runs.py's. Where this departs from the paper: README.md's "Departures from the paper".
"""
import signal
import sys
import time
import zlib
from collections import Counter
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

import chain
import engine
import evaluator
import runs
import cudal1
from cudal1 import compute_rewards, group_advantages, grpo_loss, is_success, sample_exemplars
from prompts import as_reply, build_prompt, compare_variants, extract_code, render, unlabelled
from runs import ConfigError

# ---------------------------------------------------------------------------- config

@dataclass
class Config:
    stage: str = "auto"               # collect|sft|ssl|rl: one stage; all: sft, ssl, sftc, rl; auto: all if real model
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
    gen_cache: str = "auto"           # auto|dynamic|static|graphs: KV cache (auto: graphs on CUDA: engine.decode)
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
    mask_truncated: bool = True       # leave replies cut at max_new_tokens (no eos) out of the update (DAPO's filter)
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
    """(Config, the flags given) of a command line (runs.parse_flags: a resume reads OUT/config.json under them)."""
    return runs.parse_flags(Config, argv, chain.recipe_help(), PRESETS["demo"])


def parse_config(argv=None):
    """The Config of a command line, as parse_flags reads it (tests and scripts that need not know what was given)."""
    return parse_flags(argv)[0]


# Presets: a preset's value for each field no flag given nor resumed config.json sets (decide_config). chain: --stage
# all's recipe (chain.RECIPE); demo: where no real model runs, the demo policy's own settings (plain prompts: its own).
PRESETS = {"chain": chain.RECIPE["all"],
           "demo": dict(contrastive=False, temperature=0.7, lr=5e-05, mu=2, max_new_tokens=700, eval_time_budget=0.1,
                        gen_batch=1)}
decide_config = partial(runs.decide_config, presets=PRESETS)  # the config that runs, decided there alone


# ---------------------------------------------------------------------------- the RL loop


def rl(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 3, contrastive RL: steps start..steps, each the module docstring's step as one call per stage."""
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
            stats = dict(stats, **runs.group_signal(cfg, adv, results))
            t3 = time.perf_counter()
            record_winners(cfg, db, best, batch, rollouts, results, step)
            runs.log_step(cfg, step, batch, rollouts, raw, results, best, stats, (t0, t1, t2, t3), phases)
            runs.save_checkpoint(cfg, model, opt, step, cfg.steps)

# ---------------------------------------------------------------------------- the step: pick tasks, build prompts


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


def draw_variants(cfg, db, task, seed, below=None, excluding=None):
    """The n_exemplars entries a contrastive prompt shows, by ONE rule for stage 3 and for sft's contrastive prompts
    (so that sft trains the question stage 3 asks): the task's entries scored below `below` (sft: its record's
    speedup; stage 3: target_score, drawn from `seed`), none longer than exemplar_max_chars, drawn by exemplar_mode
    from `seed`, each without its stage-1 intent label (the measured score is what the prompt says of it); excluding:
    a code left out. Below a working variant, never the best: the policy has a faster answer it knows to write.

    Example: scores 1.0 (the reference), 0.7, 1.3, 2.1, below=1.3: drawn from 1.0, 0.7.
    """
    top, n = (cudal1.target_score(db, task, np.random.default_rng([seed, 1]), cfg.n_exemplars) if below is None
              else (below, cfg.n_exemplars))
    pool = [e for e in db.entries(task, excluding=excluding) if e.score < top
            and (not cfg.exemplar_max_chars or len(unlabelled(e.code)) <= cfg.exemplar_max_chars)]
    shown = sample_exemplars(pool, n, bucket_width=cfg.bucket_width, tau=cfg.tau, mode=cfg.exemplar_mode,
                             rng=np.random.default_rng(seed))
    return [replace(e, code=unlabelled(e.code)) for e in shown]

# ---------------------------------------------------------------------------- the step: generate G


def generate_all(cfg, model, tok, batch, prompts, step, phases=None):
    """A rollout per task, in batch order: engine.generate on gen_batch tasks at a time, each call seeded from (seed,
    step, its task names joined by '+'); under torchrun each rank generates its share. phases (a dict): with
    build_ahead, each reply's build starts as its row ends (runs.BuildsAhead); no clock runs beside the decoder."""
    mine = engine.shard(list(zip(batch, prompts)))
    calls, out = [mine[i:i + cfg.gen_batch] for i in range(0, len(mine), cfg.gen_batch)], []
    with runs.builds_ahead(cfg, phases) as builds:  # (None: no builds while decoding)
        for call in tqdm(calls, desc=f"step {step} generate", leave=False, disable=not engine.is_main()):
            seed = seed_for(cfg, step, "+".join(name for (name, _), _ in call))
            ended = builds and (lambda i, j, text, refs=[ref for (_, ref), _ in call]: builds.add(refs[i], text))
            out += engine.generate(cfg, model, tok, [p for _, p in call], seed, on_end=ended)
    return engine.gather(out)

# ---------------------------------------------------------------------------- the step: evaluate, reward, advantages


def evaluate_and_reward(cfg, batch, rollouts, reward_fn=None, phases=None):
    """(results, raw rewards (N,), training rewards (N,)): runs.measure's results, then rewards_of. With a reward_fn
    (toy-reward tests) nothing is evaluated: its rewards are used as they are, and results is []."""
    if reward_fn is not None:
        raw = np.array([x for (name, _), r in zip(batch, rollouts) for x in reward_fn(name, r["texts"])], dtype=float)
        return [], raw, raw
    results = runs.measure(cfg, batch, rollouts, phases=phases)
    return (results, *rewards_of(cfg, results))


def rewards_of(cfg, results):
    """(raw rewards (N,), training rewards (N,)): raw = log speedup, fail_reward or copy_reward; training = raw (with
    group advantages they keep the speed order), or with --reward-normalize the paper's shape (over the step,
    clipped to +-reward_clip of its std: it gave a 0.89x and a 1.19x the same advantage, bench/RESULTS.md).

    Example (groups of 4, the defaults): [fail, 0.89, 1.19, 1.5] -> rewards [-2, -0.117, 0.174, 0.405] ->
    advantages [-1.62, 0.27, 0.56, 0.79]; the paper's shape, beside two groups of failures: 1.19 and 1.5 both 0.72.
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


# ---------------------------------------------------------------------------- the step: the policy update


def update(cfg, model, anchor, opt, rollouts, adv, step=0):
    """GRPO's update, as TRL's _compute_loss reads: the samples of groups with a signal, scheduled into mu passes of
    `minibatches` AdamW steps of grad_accum micro-batches; per micro-batch the chosen tokens' log-probs, the clipped
    ratio to the old log-probs and the KL to the anchor (cudal1.grpo_loss), weighted by its share of its mini-batch's
    one normaliser (tokens: dapo; samples: grpo, drgrpo), so that each AdamW step takes its whole mini-batch's loss.
    With one AdamW step per batch every ratio is 1 and the eps clip cannot act. Under torchrun each rank takes its
    share of each mini-batch, and engine.optimizer_step sums the gradients: those of one process."""
    samples, kept = flat_samples(rollouts), with_signal(cfg, rollouts, adv)
    if not len(kept):  # every sample with a signal was cut at the cap (mask_truncated)
        return dict(NO_UPDATE, trained=0)
    adv, steps = adv.to(cfg.device), schedule(cfg, samples, kept, step)  # steps: [[Micro]], one list per AdamW step
    score_before_update(cfg, model, anchor, samples, steps)
    stats, grad_norm = Counter(), 0.0
    bar = tqdm(total=sum(map(len, steps)), desc="update", leave=False, disable=not engine.is_main())
    for micros in steps:
        opt.zero_grad(set_to_none=True)
        for mb in micros:
            bar.update()
            loss, st = micro_batch_loss(cfg, model, samples, adv, mb)
            stats.update({"loss": loss.item() * mb.weight, **{k: v * mb.weight / len(steps) for k, v in st.items()}})
        grad_norm += engine.optimizer_step(cfg, model, opt) / len(steps)  # of the summed gradient: alike on every rank
    bar.close()
    stats = {k: sum(part.get(k, 0.0) for part in engine.gather([stats])) for k in ("loss", "clip_frac", "kl", "ratio")}
    return dict(stats, loss=stats["loss"] / len(steps), grad_norm=grad_norm, updated=True, trained=len(kept))


NO_UPDATE = dict(loss=None, clip_frac=None, kl=None, ratio=None, grad_norm=None, updated=False)


def flat_samples(rollouts):
    """(prompt ids, completion ids, mask) of every sample, in (B*G) order: what token_logps scores."""
    return [(r["prompt"], c, k) for r in rollouts for c, k in zip(r["ids"], r["mask"])]  # N = B * G


def with_signal(cfg, rollouts, adv):
    """Indices of the samples the update trains: those of groups with a non-zero advantage (a flat group's exact zeros
    would only dilute the mean), every sample with beta > 0 (the KL term acts on all); with mask_truncated, none cut
    at max_new_tokens (under a token mean the longest replies weigh most, and a cut one is a failure of length)."""
    groups = adv.split([len(r["ids"]) for r in rollouts])  # each rollout's group
    kept = np.concatenate([np.full(len(g), bool(g.ne(0).any()) or cfg.beta > 0) for g in groups])  # (N,)
    if cfg.mask_truncated:
        kept &= ~np.concatenate([np.asarray(r.get("cut", np.zeros(len(r["ids"]), bool))) for r in rollouts])
    return np.flatnonzero(kept)


@dataclass
class Micro:
    """One micro-batch of an AdamW step: its samples, its share of its mini-batch's loss, its log-probs before."""
    samples: list       # indices into flat_samples, this rank's
    weight: float       # its tokens / the mini-batch's (dapo), else its samples / the mini-batch's
    old: object = None  # log-probs (m, T) before the first AdamW step; None with one step (the current ones, detached)
    ref: object = None  # the KL anchor's log-probs (m, T); None with beta = 0


def schedule(cfg, samples, kept, step):
    """The update's AdamW steps, each a list of this rank's Micro-batches: mu passes over the kept samples, each split
    into `minibatches` parts, the first pass in (B*G) order, each later one in an order drawn from (seed, step) (PPO's
    reshuffle: the same on every rank); a part's share of this rank (engine.shard) in grad_accum micro-batches."""
    n, m = len(kept), min(cfg.minibatches, len(kept))
    rng = np.random.default_rng(seed_for(cfg, step, "minibatches"))  # (one mini-batch: nothing to reshuffle)
    orders = [kept] + [kept[rng.permutation(n)] if m > 1 else kept for _ in range(cfg.mu - 1)]
    tokens = lambda ids: sum(int(samples[i][2].sum()) for i in ids)  # noqa: E731
    return [[Micro(c, tokens(c) / tokens(part) if cfg.loss_variant == "dapo" else len(c) / len(part))
             for c in micro_batches(cfg, engine.shard(part))]
            for part in (p.tolist() for order in orders for p in np.array_split(order, m))]


def micro_batches(cfg, indices):
    """The indices split into grad_accum nearly equal micro-batches (fewer when there are fewer indices)."""
    if not len(indices):  # a rank's share of a mini-batch smaller than the number of ranks
        return []
    return [c.tolist() for c in np.array_split(np.asarray(indices), min(cfg.grad_accum, len(indices)))]


@torch.no_grad()
def score_before_update(cfg, model, anchor, samples, steps):
    """Each micro-batch's log-probs before the first AdamW step (with several steps: the ratio's denominator) and the
    KL anchor's (beta > 0; engine.kl_anchor), in place."""
    micros = [mb for micros in steps for mb in micros]
    for mb in micros if len(steps) > 1 else ():
        mb.old = engine.token_logps(cfg, model, [samples[i] for i in mb.samples])[0]
    with engine.scored_by(model, anchor) if anchor is not None else nullcontext() as ref_model:
        for mb in micros if ref_model else ():
            mb.ref = engine.token_logps(cfg, ref_model, [samples[i] for i in mb.samples])[0]


def micro_batch_loss(cfg, model, samples, adv, mb):
    """A micro-batch's GRPO loss and stats (cudal1.grpo_loss), its gradient (at its weight) accumulated."""
    with engine.layers_recomputed(cfg, model):
        logp, mask = engine.token_logps(cfg, model, [samples[i] for i in mb.samples])  # (m, T), (m, T)
        old = logp.detach() if mb.old is None else mb.old  # one AdamW step: the ratio is 1, its gradient logp's
        loss, stats = grpo_loss(logp, old, adv[mb.samples], mask, ref_logp=mb.ref, variant=cfg.loss_variant,
                                eps_low=cfg.eps_low, eps_high=cfg.eps_high, beta=cfg.beta,
                                max_tokens=cfg.max_new_tokens)
        (loss * mb.weight).backward()
    return loss, stats


# ---------------------------------------------------------------------------- the step: winners into the database


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

# ---------------------------------------------------------------------------- the stages before: collect, sft, ssl
# each stage is called as stage(cfg, tasks, model, tok, opt, db, best, start, reward_fn) by run()


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
            results = runs.measure(cfg, [task], [rollout])
            runs.append_collected(path, task, prompt, rollout, results)
            record_winners(cfg, db, best, [task], [rollout], results, step)
            tried, ok = tried + n, ok + sum(map(is_success, results))
        runs.append_log(cfg, dict(step=step, task=task[0], attempts=tried, successes=ok,
                                  step_s=time.perf_counter() - t0))
        print(f"collect {task[0]} | {ok} correct of {tried} attempts", flush=True)


def sft(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 1: AdamW steps start..steps on sft_batch records of --data each, epoch after reshuffled epoch; with
    --sft-contrastive each step also trains the same records under contrastive prompts (contrastive_example)."""
    every, records = runs.sft_records(cfg)
    # every working variant, slow ones too, is an exemplar stage 3 (and --sft-contrastive) can show: the speed
    # choices GRPO learns from, whatever sft trains on
    runs.add_measured(cfg, db, every, meta=dict(data=cfg.data))
    examples, eos = sft_examples(cfg, model, tok, records), engine.eos_ids(model, tok)[:1]
    per_epoch = -(-len(examples) // cfg.sft_batch)
    for step in range(start, cfg.steps + 1):
        t0 = time.perf_counter()
        batch = runs.epoch_batches(cfg, len(examples), (step - 1) // per_epoch)[(step - 1) % per_epoch]
        chosen = [examples[i] for i in batch]
        if cfg.sft_contrastive:
            chosen += [e for i in batch for e in contrastive_example(cfg, db, tok, eos, records[i], step, i)]
        with runs.finishing_step():  # a Ctrl-C waits for this step's update, log and checkpoint
            stats = sft_step(cfg, model, opt, chosen)
            runs.append_log(cfg, dict(step=step, **stats, step_s=time.perf_counter() - t0))
            print(f"step {step:4d} | loss {stats['loss']:.4f} | {stats['tokens']} tokens | "
                  f"{time.perf_counter() - t0:.1f} s/step", flush=True)
            runs.save_checkpoint(cfg, model, opt, step, cfg.steps)


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
    compares the shown variants (prompts.compare_variants); [] for a record whose task has no such variant."""
    own = record.get("code") or extract_code(record.get("completion", "")).code
    if not own:
        return []
    target = (record.get("result") or {}).get("speedup")
    if not target:  # no measured speed: no target to show slower variants of
        return []
    shown = draw_variants(cfg, db, record.get("task", ""), seed_for(cfg, step, f"{record.get('task')}#{i}"),
                          below=runs.rounded(cfg, target), excluding=own)
    if not shown:
        return []
    prompt = render(build_prompt(record["ref_code"], shown, device=cfg.device, contrastive=True), tok)
    reply = as_reply(own, prompt, analysis=compare_variants(shown, unlabelled(own)))
    return [tokenized_example(tok, prompt, reply, eos)]


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
    return dict(loss=loss, tokens=tokens, grad_norm=engine.optimizer_step(cfg, model, opt))


def ssl(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 2, rounds start..ssl_rounds: G plain-prompt samples per task (every task, or ssl_tasks of them drawn
    from (seed, round)) -> evaluate (correctness, barely timed; the successes timed again in full) -> one pass of
    sft_steps over the correct ones (reward 1; failures, reward 0, are not trained on) -> database."""
    plain = replace(cfg, contrastive=False)
    for rnd in range(start, cfg.ssl_rounds + 1):
        t0 = time.perf_counter()
        batch = pick_tasks(replace(cfg, tasks_per_step=cfg.ssl_tasks), tasks, rnd) if cfg.ssl_tasks else tasks
        phases = {}
        rollouts = generate_all(cfg, model, tok, batch, build_prompts(plain, db, batch, rnd, tok), rnd, phases)
        t1 = time.perf_counter()
        results = runs.measure(cfg, batch, rollouts, runs.correctness_only(cfg), phases)
        t2 = time.perf_counter()
        wins = [s for s, res in zip(flat_samples(rollouts), results) if is_success(res)]
        with runs.finishing_step():  # a Ctrl-C waits for this round's updates, database, log and checkpoint
            steps = [sft_step(cfg, model, opt, [wins[i] for i in b]) for b in runs.epoch_batches(cfg, len(wins), rnd)]
            stats = dict(loss=float(np.mean([s["loss"] for s in steps])) if steps else None, kept=len(wins),
                         tokens=sum(s["tokens"] for s in steps), updated=bool(steps))
            t3 = time.perf_counter()
            record_winners(cfg, db, best, batch, rollouts, results, rnd)
            raw = np.array([float(is_success(res)) for res in results])  # the reward of stage 2: 1 or 0
            runs.log_step(cfg, rnd, batch, rollouts, raw, results, best, stats, (t0, t1, t2, t3), phases)
            runs.save_checkpoint(cfg, model, opt, rnd, cfg.ssl_rounds)


STAGES = {"collect": collect, "sft": sft, "ssl": ssl, "rl": rl}  # each named as the CLI names it

# ---------------------------------------------------------------------------- run and main


def run(cfg, reward_fn=None, given=None):
    """The whole job: the config decided, tasks, policy, run folder, optimizer, database; then --stage (--stage all:
    each stage of the chain by run()). given: the fields set on purpose (parse_flags; default changed_fields);
    reward_fn(task, completions) -> rewards replaces evaluation in the rl stage (toy-reward tests only)."""
    given = runs.changed_fields(cfg) if given is None else set(given)
    asked, cfg = cfg, decide_config(cfg, given)
    if cfg.stage == "all":
        return chain.run_all(cfg, given, runs.load_tasks(cfg), run, reward_fn)  # the stages in turn, each by run()
    if not cfg.resume and (Path(cfg.out) / "log.jsonl").exists():
        raise ConfigError(f"{cfg.out} already holds a run: --resume to continue it, or pick another --out")
    tasks = runs.load_tasks(cfg)  # a bad --task fails here, before any model download
    cfg, tasks, model, tok = runs.policy_or_demo(cfg, tasks, asked, given, PRESETS)  # (the demo's, if it must)
    opt = torch.optim.AdamW(engine.trainable(model), lr=cfg.lr, weight_decay=cfg.weight_decay)
    start = runs.open_run(cfg, model, opt, asdict(Config()))
    if start is None:  # (finished: its line said so)
        return cfg
    db, best = runs.open_database(cfg, tasks)
    runs.say_start(cfg, tasks, model, start)
    try:
        STAGES[cfg.stage](cfg, tasks, model, tok, opt, db, best, start, reward_fn)
    except KeyboardInterrupt:
        raise runs.Interrupted(runs.checkpoint_interrupted(cfg, model, opt)) from None
    engine.leave_together()
    return cfg


def main(argv=None):
    """The command line: errors and Ctrl-C end in one line on stderr (exit status 1, or 130 for Ctrl-C or SIGTERM)."""
    config, given = parse_flags(argv)
    signal.signal(signal.SIGTERM, runs.stop_as_ctrl_c)
    try:
        run(config, given=given)
        engine.exit_rank()  # (under torchrun: without the interpreter's teardown)
    except (engine.PolicyError, ConfigError, evaluator.TaskError) as err:
        sys.exit(f"cudal1: {err}")
    except KeyboardInterrupt as err:
        print("\n" * sys.stderr.isatty() + f"cudal1: {err or 'interrupted before the first step'}",
              file=sys.stderr, flush=True)  # on a line of its own, not after a progress bar
        sys.exit(130)


if __name__ == "__main__":
    main()

