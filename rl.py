"""rl.py: CUDA-L1's three stages: collect and fine-tune on working variants, self-supervise, then contrastive RL.

--stage collect  per task, sample plain-prompt attempts until collect_successes are correct (or collect_attempts
                 are spent); every attempt with its evaluation to OUT/collected.jsonl (stage 1's data)
--stage sft      supervised fine-tuning on the working candidates of --data (loss on completion tokens only)
--stage ssl      ssl_rounds of: G samples per task -> evaluate -> fine-tune on the correct ones only (reward 1 or 0)
                 -> those, timed again in full, into the exemplar database (score = measured speedup) that stage 3 reads
--stage rl       contrastive RL; --init-from DIR starts any stage from an earlier one's weights and database
--stage all      sft on the shipped stage-1 data -> ssl -> sftc (sft on plain and contrastive prompts) -> rl, each in
                 OUT/<its name>, each from the one before, with bench/real/README.md's recipe (run_all)
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

How to run
    OMP_NUM_THREADS=1 python rl.py --model tiny --task cpu/relu,cpu/add_mul --steps 2 --group-size 2 \
        --max-new-tokens 32                      # CPU smoke run (on a CPU, one OpenMP thread per process is faster)
    python rl.py --task all                      # GPU: Qwen2.5-Coder-1.5B-Instruct through sft, ssl, sftc, rl
    python rl.py --task all --model M.gguf --sft-steps 20 --ssl-rounds 1 --sftc-steps 4 --steps 1  # a short chain
    python rl.py --task all                      # no GPU or no network: the demo policy (bench/demo) on cpu/*
    python rl.py --resume --out runs/DIR         # continue a run from its last checkpoint (flags given now win)
    torchrun --nproc-per-node N rl.py --task all  # data-parallel RL, one process per GPU (see "data parallel" below)
    python rl.py --help                          # every flag, its default and its one-line meaning
    python rl.py --stage collect --task 'cpu/*' --out runs/s0     # then: --stage sft --data runs/s0/collected.jsonl
    python rl.py --stage ssl --init-from runs/s1 --out runs/s2    # then: --stage rl --init-from runs/s2 --out runs/s3
    Booleans are --flag / --no-flag. Any rollout replays: the group of (step, task) is sampled after
    torch.manual_seed(seed_for(seed, step, task)) with --gen-batch 1; by default the step's tasks are sampled in
    one batch (on a GPU about one task's time for all), seeded from their names joined by '+'.

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
import argparse
import gc
import importlib.util
import inspect
import json
import math
import os
import pickle
import random
import re
import signal
import sys
import textwrap
import threading
import time
import zlib
from collections import Counter
from contextlib import contextmanager, nullcontext
from copy import copy
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint
from tqdm import tqdm

import evaluator
from cudal1 import LOG_FLOOR, ExemplarDB, compute_rewards, group_advantages, grpo_loss, sample_exemplars
from prompts import ANSWER_CUE, build_prompt, compare_variants, extract_code, render

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


CHOICES = {"stage": ("auto", "all", "collect", "sft", "ssl", "rl"), "device": ("auto", "cpu", "cuda"),
           "loss_variant": ("grpo", "dapo", "drgrpo"), "exemplar_mode": ("contrastive", "random", "best"),
           "gen_cache": ("auto", "dynamic", "static", "graphs"), "optimizer_state": ("auto", "keep", "fresh"),
           "recompute": ("auto", "on", "off")}
DEFAULT_MODEL = "Qwen/Qwen2.5-Coder-1.5B-Instruct"
FETCHED = Path.home() / ".cache" / "cudal1" / "models"  # bench/fetch_model.py's offline GGUFs, the preferred first:
OFFLINE_MODELS = ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
DEMO_POLICY = Path(__file__).resolve().parent / "bench" / "demo" / "policy"  # tiny after sft + ssl (bench/demo)


class ConfigError(ValueError):
    """A config value of the wrong type or out of range, or a file it names that cannot be used as it is."""


def check_config(cfg):
    """Raise ConfigError unless every field has its declared type and a legal value."""
    for f in fields(Config):
        v = getattr(cfg, f.name)
        ok = isinstance(v, f.type) and not (f.type is int and isinstance(v, bool))
        if not ok and not (f.type is float and isinstance(v, int) and not isinstance(v, bool)):
            raise ConfigError(f"{f.name} must be {f.type.__name__}, got {v!r}")
        if f.name in CHOICES and v not in CHOICES[f.name]:
            raise ConfigError(f"{f.name} must be one of {'|'.join(CHOICES[f.name])}, got {v!r}")
    for name in ("steps", "tasks_per_step", "group_size", "max_new_tokens", "n_exemplars", "mu", "minibatches",
                 "grad_accum", "gen_batch", "collect_attempts", "collect_successes", "sft_batch", "ssl_rounds",
                 "ssl_check_rounds", "sft_steps"):
        if getattr(cfg, name) < 1:
            raise ConfigError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    if cfg.temperature <= 0 or not 0 < cfg.top_p <= 1:
        raise ConfigError("temperature must be > 0 and top_p in (0, 1]")
    for name in ("lora_rank", "lr", "weight_decay", "beta", "eps_low", "eps_high", "max_grad_norm", "reward_clip",
                 "round_to_one", "eval_time_budget", "eval_precision", "eval_jobs", "ssl_tasks",
                 "ckpt_every", "sft_min_speedup", "exemplar_max_chars", "warmup_steps",
                 "sftc_steps"):  # checked here, before the run folder exists
        if getattr(cfg, name) < 0:
            raise ConfigError(f"{name} must be >= 0, got {getattr(cfg, name)}")
    for name in ("bucket_width", "tau", "eval_timeout", "eval_build_timeout", "lora_alpha", "eval_tol"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(cfg, name)}")
    if cfg.stage in ("rl", "auto", "all") and cfg.top_p < 1:  # (auto and all run rl)
        raise ConfigError(f"top_p {cfg.top_p} samples a truncated distribution that the GRPO loss does not score "
                          "(its ratios compare whole distributions): use --top-p 1 with --stage rl")
    if cfg.mu * cfg.minibatches == 1 and (cfg.eps_low, cfg.eps_high) != (Config.eps_low, Config.eps_high):
        raise ConfigError("--eps-low/--eps-high cannot act with one AdamW step per batch (--mu 1 --minibatches 1: "
                          "every ratio is 1): give --minibatches M or --mu K > 1")
    if cfg.log_speedup and cfg.fail_reward >= math.log(LOG_FLOOR):
        raise ConfigError(f"--log-speedup with fail_reward {cfg.fail_reward} >= log({LOG_FLOOR}) ranks a failure with "
                          "a correct code (log rewards are at least that): give --fail-reward below it, e.g. -2, or "
                          "--no-log-speedup")
    if cfg.copy_reward != "fail" and not np.isfinite(as_number(cfg.copy_reward)):
        raise ConfigError(f"copy_reward must be a number or 'fail' (= fail_reward), got {cfg.copy_reward!r}")
    if cfg.stage == "sft" and not cfg.data:
        raise ConfigError("--stage sft needs --data FILE.jsonl (records with ref_code and completion or code)")
    return cfg


def as_number(text):
    """float(text), or nan when it is not a number."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def field_comments():
    """{field: its one-line comment} read from the Config source, so --help shows the same words."""
    return dict(re.findall(r"^    (\w+): [^#\n]*#\s*(.*)$", inspect.getsource(Config), re.M))


GROUPS = {  # --help's sections, in this order; a field in none is listed under "other"
    "run": "task tasks_dir steps device out resume seed tasks_per_step ckpt_every",
    "model": "model lora_rank lora_alpha lora_targets",
    "sampling": "group_size gen_batch gen_cache temperature top_p max_new_tokens contrastive n_exemplars bucket_width "
                "tau exemplar_mode exemplar_max_chars",
    "reward": "fail_reward copy_reward log_speedup round_to_one recheck_above reward_normalize reward_clip",
    "GRPO and AdamW": "std_normalize adv_std_floor loss_variant lr weight_decay beta eps_low eps_high mu minibatches "
                      "grad_accum recompute max_grad_norm optimizer_state warmup_steps update",
    "evaluation": "eval_timeout eval_build_timeout eval_time_budget eval_precision eval_tol eval_jobs",
    "stages": "stage init_from collect_attempts collect_successes data sft_batch sft_min_speedup sft_contrastive "
              "ssl_rounds ssl_tasks ssl_check_rounds sft_steps sftc_steps",
}
EXAMPLES = """examples:
  OMP_NUM_THREADS=1 python rl.py --task all --steps 8       # no GPU: the demo policy on tasks/cpu
  python rl.py --task all --out runs/chain                  # a GPU: sft -> ssl -> sftc -> rl, Qwen2.5-Coder-1.5B
  python rl.py --tasks-dir KernelBench/KernelBench/level1 --task '1*' --device cuda  # KernelBench's own tasks
  python rl.py --resume --out runs/DIR --steps 300          # go on to step 300 (config.json keeps the new target)
  python rl.py --stage collect --task all --out runs/s1     # stage 1's data; then --stage sft --data runs/s1/...
  python rl.py --model tiny --task cpu/relu --steps 2 --max-new-tokens 32   # a random model: a smoke test"""


def here_defaults():
    """{field: value} that a run without --model takes on this machine where the default does not apply: the demo
    policy's on a machine without a GPU (fallback_to_demo). On a GPU it depends on the hub, which --help leaves alone."""
    if torch.cuda.is_available():
        return {}
    demo = json.loads((DEMO_POLICY / "flags.json").read_text())
    return dict(model="tiny", init_from=os.path.relpath(DEMO_POLICY), device="cpu", task="cpu/*", **demo)


def parse_config(argv=None):
    """Config from flags (unknown flags and bad values exit with one line); --resume: OUT/config.json + flags given.
    cfg.given (not a field) names the flags the command line set: the fallback to the demo policy leaves them alone."""
    here = here_defaults()
    note = ("On this machine (no GPU) a run without --model falls back to the demo policy: a flag you do not give "
            "takes its value 'here' where one is shown." if here else "On a GPU without network or offline copy, a "
            "run without --model falls back to the demo policy (bench/demo/policy/flags.json sets flags not given).")
    about = f"CUDA-L1: collect, sft, ssl (self-supervised), rl (contrastive RL). {note} Booleans are --flag / --no-flag."
    p = evaluator.ArgumentParser(description=textwrap.fill(about, 100),
                                 epilog=textwrap.fill(recipe_help(), 100) + "\n\n" + EXAMPLES,
                                 usage="%(prog)s [--task T] [--steps N] [--model M] [--out DIR] [--resume] [options]",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
                                 argument_default=argparse.SUPPRESS)
    comments, defaults = field_comments(), Config()
    grouped = {name: group for group, names in GROUPS.items() for name in names.split()}
    sections = {group: p.add_argument_group(group) for group in [*GROUPS, "other"]}
    for f in fields(Config):
        kw = dict(action=argparse.BooleanOptionalAction) if f.type is bool else dict(type=f.type)
        value = f"default: {getattr(defaults, f.name)!r}" + (f"; here: {here[f.name]!r}" if f.name in here else "")
        sections[grouped.get(f.name, "other")].add_argument(
            "--" + f.name.replace("_", "-"), choices=CHOICES.get(f.name),
            help=f"{comments.get(f.name, '')} ({value})".replace("%", "%%"),
            **kw)  # (argparse formats help with %: a comment's "2%" would break --help)
    given = vars(p.parse_args(argv))
    try:
        if given.get("resume") and not given.get("out"):
            raise ConfigError("--resume needs --out DIR, the run folder to continue")
        cfg = check_config(replace(load_config(Path(given["out"]) / "config.json"), **given) if given.get("resume")
                           else Config(**given))
    except ConfigError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")  # one line: the usage of 47 flags would bury it
    cfg.given = frozenset(given)
    return cfg


def given_fields(cfg):
    """The fields set on purpose: the command line's flags (parse_config's cfg.given), or for a Config built in
    Python, the fields that differ from their defaults."""
    if hasattr(cfg, "given"):
        return cfg.given
    return {f.name for f in fields(Config) if getattr(cfg, f.name) != getattr(Config(), f.name)}


def load_config(path):
    """The Config saved in a run's config.json (ConfigError if missing, unknown or mistyped fields)."""
    if not Path(path).is_file():
        raise ConfigError(f"{path} does not exist: nothing to resume")
    try:
        saved = json.loads(Path(path).read_text())
    except ValueError as e:
        raise ConfigError(f"{path} is not valid JSON ({e}): restore it, or start a new --out") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"{path} holds no config (a JSON object of Config fields): restore it, or start a new --out")
    unknown = set(saved) - {f.name for f in fields(Config)}
    if unknown:
        raise ConfigError(f"{path}: unknown config fields {sorted(unknown)}")
    return check_config(Config(**saved))


def resolve_config(cfg, given=None):
    """Fill the automatic fields (device, out, model) so that config.json holds the values actually used.
    given: the fields set on purpose (default given_fields(cfg)), which the fallback to the demo policy keeps."""
    given = given_fields(cfg) if given is None else given
    cfg = replace(cfg, stage="rl") if cfg.stage == "auto" else cfg  # one stage resolved here (run() chains in run_all)
    device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda, but this machine has no usable CUDA device (use --device cpu)")
    out = Path(cfg.out or time.strftime("runs/%Y%m%d-%H%M%S")).absolute()  # absolute: its resume hint works anywhere
    cfg = replace(cfg, device=device, out=str(out))
    reads_init_from = needs_init_from(cfg)
    if reads_init_from and not (Path(cfg.init_from) / "ckpt.pt").is_file():
        raise ConfigError(f"--init-from {cfg.init_from}: no ckpt.pt there (a collect folder has none: give its "
                          "collected.jsonl to --stage sft as --data)")
    earlier = json.loads((Path(cfg.init_from) / "config.json").read_text()) if reads_init_from else {}
    cfg = inherit_lora(cfg, earlier, given)
    if "model" in earlier and not cfg.model:  # the model whose weights the earlier stage trained
        cfg = replace(cfg, model=earlier["model"])
    return resolve_optimizer_state(cfg if cfg.model else choose_policy(cfg, given))


OBJECTIVES = {"collect": "likelihood", "sft": "likelihood", "ssl": "likelihood", "rl": "policy gradient"}


def resolve_optimizer_state(cfg):
    """optimizer_state 'auto' decided, so that config.json says what happened: AdamW's moments carry over from
    --init-from ('keep') when its stage trained the same objective as this one (OBJECTIVES), else AdamW starts
    'fresh'; with no --init-from, 'fresh'. Why: within one objective the moments are the step sizes the weights were
    trained with; across objectives the first moment points the old objective's way (bench/RESULTS.md)."""
    if not cfg.init_from:
        return replace(cfg, optimizer_state="fresh") if cfg.optimizer_state == "auto" else cfg
    if cfg.optimizer_state != "auto":
        return cfg
    path = Path(cfg.init_from) / "config.json"
    earlier = json.loads(path.read_text()).get("stage") if path.is_file() else None
    same = earlier is None or OBJECTIVES.get(earlier) == OBJECTIVES[cfg.stage]  # (no stage known: as before)
    return replace(cfg, optimizer_state="keep" if same else "fresh")


def needs_init_from(cfg):
    """Does this run read --init-from's weights? Not once it has a checkpoint of its own to resume: that holds
    them (and their moments) as trained since, so the earlier stage's ckpt.pt may be gone by then."""
    return bool(cfg.init_from) and not (cfg.resume and (Path(cfg.out) / "ckpt.pt").is_file())


def choose_policy(cfg, given):
    """The policy when --model is not given, in one place, saying in one line why whenever it is not the default:

        GPU, hub reachable or the model in its cache   DEFAULT_MODEL from the hub
        GPU, no hub, bench/fetch_model.py's copy       that GGUF (the 1.5B first)
        GPU, no hub, no copy                           the demo policy (fallback_to_demo), with how to fetch a copy
        CPU (no GPU, or --device cpu)                  the demo policy
    and in run(): a default that fails to load falls back to the demo policy too."""
    if cfg.device == "cpu":
        return fallback_to_demo(cfg, "--device cpu" if torch.cuda.is_available() else "no GPU", given)
    if hub_reachable() or hub_cached(DEFAULT_MODEL):  # asked at once, not after the hub client's retries
        return replace(cfg, model=DEFAULT_MODEL)
    local = next((FETCHED / f for f in OFFLINE_MODELS if (FETCHED / f).is_file()), None)
    if local:
        print(f"cudal1: no network to the model hub: the policy is {local} (bench/fetch_model.py's copy)")
        return replace(cfg, model=str(local))
    return fallback_to_demo(cfg, "no network to the model hub, no offline copy (bench/fetch_model.py qwen-1.5b)", given)


def inherit_lora(cfg, earlier, given):
    """An --init-from folder trained with LoRA holds adapters only: this run keeps training them, at their rank,
    alpha and targets (taken from its config.json unless given; another rank cannot load them). From full weights,
    any rank."""
    rank = earlier.get("lora_rank", 0)
    if not rank:
        return cfg
    if "lora_rank" in given and cfg.lora_rank != rank:
        raise ConfigError(f"--init-from {cfg.init_from} holds LoRA adapters of rank {rank}: run with --lora-rank "
                          f"{rank} (they cannot load at rank {cfg.lora_rank})")
    return replace(cfg, lora_rank=rank, **{k: earlier[k] for k in ("lora_alpha", "lora_targets")
                                           if k not in given and k in earlier})


def hub_reachable(timeout=3.0):
    """Can this machine open a connection to the Hugging Face hub?"""
    import socket
    from urllib.parse import urlparse
    from huggingface_hub import constants
    if constants.HF_HUB_OFFLINE:
        return False
    try:
        socket.create_connection((urlparse(constants.ENDPOINT).hostname, 443), timeout).close()
        return True
    except OSError:
        return False


def hub_cached(model_id):
    """Is a copy of model_id in the local hub cache (usable offline)?"""
    from huggingface_hub import try_to_load_from_cache
    return isinstance(try_to_load_from_cache(model_id, "config.json"), str)


def fallback_to_demo(cfg, why, given):
    """Say in one line why the default model is not used, and run the shipped demo policy (the tiny model after
    sft + ssl on bench/demo/stage1.jsonl: weights and exemplars as --init-from) on the CPU tasks instead, with the
    settings of DEMO_POLICY/flags.json (temperature, lr, ...) for every field not in given (the flags set on purpose;
    the config lines after it show them). --task all becomes the CPU tasks, unless --tasks-dir names other tasks.
    --stage sft falls back too (collect's default policy, whose data sft trains on), and says so."""
    task = "cpu/*" if cfg.task == "all" and "tasks_dir" not in given else cfg.task
    flags = {k: v for k, v in json.loads((DEMO_POLICY / "flags.json").read_text()).items() if k not in given}
    what = f"--stage sft trains it on --data {cfg.data}" if cfg.stage == "sft" else f"--task {task}"
    if cfg.stage != "sft":
        evaluator.find_tasks(task, cfg.tasks_dir)  # a bad --task is said alone, not after this line
    print(f"cudal1: {why}: demo policy bench/demo/policy (+{len(flags)} flags) on cpu, {what}")
    return replace(cfg, model="tiny", init_from=str(DEMO_POLICY), device="cpu", task=task, **flags)


def save_json(path, obj):
    """Write JSON atomically (tmp file + os.replace)."""
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)

# ---------------------------------------------------------------------------- tasks


def load_tasks(cfg):
    """[(name, reference source)] of the selected tasks (evaluator.TaskError when none match)."""
    paths = evaluator.find_tasks(cfg.task, cfg.tasks_dir)
    tasks = [(evaluator.task_name(p, cfg.tasks_dir), evaluator.load_task(p)) for p in paths]
    for name, src in tasks:  # one that cannot fit the device at all is refused in one line, before any work
        evaluator.task_memory(src, cfg.device, name)
    return tasks

# ---------------------------------------------------------------------------- policy


class PolicyError(RuntimeError):
    """A model that cannot be loaded."""


def tiny_policy(seed):
    """A random ~330K-parameter Llama and a byte-level tokenizer, built offline (for tests and the CPU fallback)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}  # one token per byte
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    raw.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|endoftext|>", pad_token="<|pad|>")
    config = LlamaConfig(vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config), tok


def load_policy(cfg):
    """(model, tokenizer) for --model: 'tiny', a .gguf file, a local folder or a hub id; PolicyError if it won't load.

    Weights are fp32 (bf16 compute comes from autocast on CUDA); the tokenizer pads on the left for generation.
    """
    if cfg.model == "tiny":
        model, tok = tiny_policy(cfg.seed)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: evaluator workers re-import rl.py
        path = Path(cfg.model).expanduser()
        gguf = dict(gguf_file=path.name) if path.suffix == ".gguf" else {}
        where = str(path.parent) if gguf else str(path)
        try:
            if (gguf or cfg.model.startswith((".", "/", "~"))) and not path.exists():
                raise OSError(f"{path} does not exist")  # a path, not a hub id: don't ask the hub
            if not path.exists() and not hub_cached(cfg.model) and not hub_reachable():  # (the hub client retries
                raise OSError(f"no network to the model hub and no cached copy of {cfg.model}")  # for ~50 s)
            tok = AutoTokenizer.from_pretrained(where, **gguf)
            model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **gguf)
        except (OSError, ValueError, ImportError) as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise PolicyError(f"cannot load model {cfg.model!r}: {why}\n  Offline or no such model? Use --model "
                              "tiny (random, offline) or --model PATH (a local folder or a .gguf file).") from None
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    use_packed_attention(model)
    return model.to(cfg.device).eval(), tok


def initial_policy(cfg):
    """The policy before this run's first step: --model (with LoRA adapters at --lora-rank), with the weights of
    --init-from's checkpoint when given (all of them, or its adapters)."""
    model, tok = load_policy(cfg)
    if cfg.lora_rank:
        add_lora(model, cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.lora_targets,
                 base_dtype=torch.bfloat16 if cfg.device == "cuda" else torch.float32)
    if needs_init_from(cfg):  # (a resume's restore() loads its own checkpoint over these weights)
        state = torch.load(Path(cfg.init_from) / "ckpt.pt", map_location=cfg.device, weights_only=False)  # ours
        load_weights(model, state["model"], Path(cfg.init_from) / "ckpt.pt")
    return model, tok

# LoRA (Hu et al. 2021) on the attention and MLP projections (--lora-targets, by their names in Llama and Qwen2;
# attention alone, q_proj,k_proj,v_proj,o_proj, is a quarter of the adapters): each adapted nn.Linear W keeps its
# weights, frozen, and gains lora_a (r, in) and lora_b (out, r), trained in fp32: y = W x + (alpha / r) B A x. B starts
# at zero, so a fresh adapter changes nothing. A forward hook adds the term, so the weights keep their names (a full
# state still loads) and a checkpoint holds only the adapters and their AdamW moments (rank 16 on every projection of
# Qwen2.5-Coder-0.5B: 8.8M parameters, a 106 MB ckpt.pt). With adapters off, the model is its base: the KL anchor.


def lora_term(linear, args, out):
    if not linear.lora_on:
        return out
    x = args[0]
    if x.dtype != linear.lora_a.dtype and not torch.is_autocast_enabled(x.device.type):
        x = x.to(linear.lora_a.dtype)  # (under autocast the matmuls take bf16 as they are: no cast kernels)
    return out + (((x @ linear.lora_a.T) * linear.lora_scale) @ linear.lora_b.T).to(out.dtype)


def add_lora(model, rank, alpha, seed, targets, base_dtype=torch.float32):
    """Freeze the model (its weights cast to base_dtype; buffers stay as they are: RoPE's inv_freq in bf16 would be
    0.4% off, radians off at position 4,000) and give every projection named in targets (comma-separated) an
    adapter; A is drawn like nn.Linear's weights from a generator seeded with `seed` (the global RNG is left alone)."""
    targets = targets.split(",")
    for p in model.requires_grad_(False).parameters():  # (tied weights are one parameter: they stay tied)
        p.data = p.data.to(base_dtype)
    g = torch.Generator().manual_seed(seed)
    adapted = [m for name, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in targets]
    if not adapted:
        raise PolicyError(f"no projection named {'/'.join(targets)} in this model: LoRA has nothing to adapt")
    for m in adapted:
        bound = 1 / m.in_features ** 0.5  # nn.Linear's init: kaiming_uniform with a = sqrt(5)
        a = torch.empty(rank, m.in_features).uniform_(-bound, bound, generator=g)
        m.lora_a = torch.nn.Parameter(a.to(m.weight.device))
        m.lora_b = torch.nn.Parameter(torch.zeros(m.out_features, rank, device=m.weight.device))
        m.lora_scale, m.lora_on = alpha / rank, True
        m.register_forward_hook(lora_term)
    return model


def kl_anchor(cfg, model, start):
    """The KL term's reference (beta > 0): the policy this stage started from, frozen; None when beta = 0.
    With LoRA, a copy of the adapters at the stage's start ({name: tensor}, kept in OUT/anchor.pt so that a resume
    anchors to the same start); the base with adapters off would be the pre-sft model, which writes no working code.
    With full weights, a second model with the starting weights (--init-from's checkpoint, else --model's)."""
    if cfg.beta == 0:
        return None
    if not cfg.lora_rank:
        anchor = load_policy(cfg)[0].requires_grad_(False)
        if cfg.init_from:
            where = Path(cfg.init_from) / "ckpt.pt"
            load_weights(anchor, torch.load(where, map_location=cfg.device, weights_only=False)["model"], where)
        return anchor
    path = Path(cfg.out) / "anchor.pt"
    if start > 1 and path.is_file():
        return torch.load(path, map_location=cfg.device, weights_only=True)
    adapters = {k: v.detach().clone() for k, v in saved_weights(model).items()}
    if is_main():
        torch.save(adapters, path)
    return adapters


@contextmanager
def scored_by(model, anchor):
    """The model that scores the KL reference: `anchor` itself (full weights), or `model` with the anchor's adapters
    swapped in for the time inside (LoRA: no second copy of the base)."""
    if not isinstance(anchor, dict):
        yield anchor
        return
    params = dict(model.named_parameters())
    own = {k: params[k].data for k in anchor}
    for k, v in anchor.items():
        params[k].data = v
    try:
        yield model
    finally:
        for k, v in own.items():
            params[k].data = v


@contextmanager
def layers_recomputed(cfg, model):
    """A gradient pass (forward and backward inside) in which each decoder layer keeps only its input and runs again
    in backward (activation checkpointing, torch.utils.checkpoint on each layer of a transformers model's decoder).
    Without it an RL micro-batch of the 1.5B (8 samples of a 5,000-token prompt and 3,200 new tokens) would hold
    ~130 GB in bf16; with it the 28 layers' inputs, ~6 GB, and one layer's activations at a time. Costs one more
    forward. The layer runs again in backward, outside the forward's autocast(cfg): it gets autocast(cfg) again, so
    it picks the same attention backend (else checkpoint stops the update: bench/RESULTS.md).
    --recompute auto turns it on for CUDA only: on the CPU (the demo's 0.33M policy) memory is not what limits a
    step, and the extra forward would only lengthen the update."""
    on = cfg.recompute == "on" or cfg.recompute == "auto" and str(cfg.device).startswith("cuda")
    layers = getattr(model.get_decoder(), "layers", None) if on and hasattr(model, "get_decoder") else None
    for layer in layers or []:
        layer.forward = partial(checkpoint, layer.forward, use_reentrant=False,
                                context_fn=lambda: (nullcontext(), autocast(cfg)))
    try:
        yield
    finally:
        for layer in layers or []:
            del layer.forward  # the class's forward again


def trainable(model):
    """The parameters AdamW steps: all of them, or with LoRA the adapters."""
    return [p for p in model.parameters() if p.requires_grad]


def saved_weights(model):
    """What a checkpoint keeps of the policy: every weight, or with LoRA its adapters (the base is --model's)."""
    state = model.state_dict()
    return {k: v for k, v in state.items() if ".lora_" in k} if any(".lora_" in k for k in state) else state


def load_weights(model, state, where):
    """saved_weights' state into the model: a full state (any adapters keep their start) or adapters alone (then
    the model must have those adapters). ConfigError when they do not fit."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    adapters_only = all(".lora_" in k for k in state)
    if unexpected or any((".lora_" in k) == adapters_only for k in missing):  # the part the state holds is missing
        what = "LoRA adapters" if adapters_only else "full weights"
        raise ConfigError(f"{where} holds {what} that do not fit this policy ({len(unexpected)} unexpected, "
                          f"{len(missing)} missing keys): use its --model and --lora-rank")


def continue_optimizer(cfg, opt):
    """With --init-from and optimizer_state 'keep': AdamW's moments from its checkpoint (when it kept them;
    bench/demo/policy keeps weights only), at this run's lr and weight decay; returns whether they were loaded.
    A fresh AdamW's first step moves every weight by lr whatever its gradient (bench/RESULTS.md on the demo)."""
    # mmap: only the moments are read (initial_policy read the weights); load_state_dict moves them to the weights'
    state = torch.load(Path(cfg.init_from) / "ckpt.pt", map_location="cpu", mmap=True, weights_only=False)  # ours
    if "optim" in state and len(state["optim"]["param_groups"][0]["params"]) == len(opt.param_groups[0]["params"]):
        opt.load_state_dict(state["optim"])  # (fresh adapters on an earlier stage's full weights start afresh)
        for group in opt.param_groups:
            group.update(lr=cfg.lr, weight_decay=cfg.weight_decay)
        return True
    return False


@contextmanager
def autocast(cfg):
    """bf16 compute on CUDA (fp32 weights), attention by any backend but cuDNN's; plain fp32 on CPU.
    cuDNN's attention builds a plan for each new sequence length, and a generate meets a new length every token
    (10x slower generation: bench/RESULTS.md)."""
    if cfg.device != "cuda":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with torch.autocast("cuda", dtype=torch.bfloat16), \
            sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        yield


def packed_attention(module, query, key, value, attention_mask, scaling=None, **kw):
    """transformers' sdpa attention, but for one new token the query heads that share a key/value head attend as that
    head's queries, (B, H, 1, D) -> (B, H_kv, H / H_kv, D), so the KV cache is read as it is; transformers' sdpa
    copies every key/value head H / H_kv times first under torch.compile (Qwen2.5-0.5B: 14 query heads over 2 KV
    heads, so 7 copies of the cache per layer and token). Several tokens (prefill, training) go to its sdpa as they
    are; the sampling-vs-loss log-prob tests hold with it (tiny has 4 query heads over 2)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    r = getattr(module, "num_key_value_groups", 1)
    if query.shape[2] != 1 or r == 1:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kw)
    b, h, _, d = query.shape
    out = torch.nn.functional.scaled_dot_product_attention(  # (B, H_kv, r, D): query head g * r + i is row i of g
        query.view(b, h // r, r, d), key, value, attn_mask=attention_mask, scale=scaling)
    return out.reshape(b, 1, h, d), None


def use_packed_attention(model):
    """A model on transformers' sdpa attention gets packed_attention instead (its masks stay sdpa's)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    AttentionInterface.register("cudal1_sdpa", packed_attention)
    AttentionMaskInterface.register("cudal1_sdpa", sdpa_mask)
    if model.config._attn_implementation == "sdpa":
        model.set_attn_implementation("cudal1_sdpa")

# ---------------------------------------------------------------------------- data parallel (torchrun)
# Every rank holds the whole policy and makes the same draws (they come from (seed, step, task)). Per step each rank
# generates for its share of the tasks and evaluates its share of the candidates; all_gather then gives every rank
# all rollouts and results, so rewards (normalised over the step), advantages and the exemplar database are the same
# everywhere. Each rank backpropagates its share of the samples with the whole batch's normalisers, and summing the
# gradients over the ranks (before clipping) gives exactly the one-process gradient. Rank 0 alone writes files.


def init_distributed(cfg):
    """Under torchrun (RANK, WORLD_SIZE, LOCAL_RANK set): join the process group (nccl and GPU LOCAL_RANK on CUDA,
    gloo on the CPU), keep stdout for rank 0; returns cfg with rank 0's run folder. A plain run: cfg unchanged."""
    if "RANK" not in os.environ or dist.is_initialized():
        return cfg
    if cfg.stage != "rl":
        raise ConfigError(f"torchrun runs --stage rl only; run --stage {cfg.stage} as one process")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off: it can take shared GPUs out of service
    if cfg.device == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # "cuda" now means this rank's GPU
    dist.init_process_group("nccl" if cfg.device == "cuda" else "gloo")
    if dist.get_rank() > 0:
        sys.stdout = open(os.devnull, "w")  # one copy of the config and the step lines (errors still reach stderr)
    out = [cfg.out]  # rank 0's: a default runs/<date>-<time> may differ by a second between ranks
    dist.broadcast_object_list(out, src=0)
    return replace(cfg, out=out[0])


def is_main():
    """Does this process write the run folder (rank 0, or the only process)?"""
    return not dist.is_initialized() or dist.get_rank() == 0


def barrier():
    if dist.is_initialized():
        dist.barrier()


def shard(items):
    """This rank's contiguous share of a list or range (shares differ by at most one); all of it in one process."""
    if not dist.is_initialized():
        return items
    rank, world = dist.get_rank(), dist.get_world_size()
    return items[len(items) * rank // world:len(items) * (rank + 1) // world]


def gather(items):
    """Every rank's list concatenated in rank order: the inverse of shard(); the list itself in one process."""
    if not dist.is_initialized():
        return items
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, items)
    return [x for part in parts for x in part]


def all_reduce_grads(model):
    """Sum every parameter's gradient over the ranks (one all_reduce per tensor: plain, not bucketed like DDP)."""
    if not dist.is_initialized():
        return
    for p in trainable(model):
        if p.grad is None:  # a parameter this rank's samples did not reach still joins the sum
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad)

# ---------------------------------------------------------------------------- loop: pick tasks, build prompts


def seed_for(cfg, step, task):
    """A 32-bit seed from (seed, step, task name): draws do not depend on what ran before, so runs replay."""
    return int(np.random.SeedSequence([cfg.seed, step, zlib.crc32(task.encode())]).generate_state(1)[0])


def pick_tasks(cfg, tasks, step):
    """The step's B tasks, drawn without replacement from (seed, step) alone."""
    rng = np.random.default_rng([cfg.seed, step])
    return [tasks[i] for i in rng.choice(len(tasks), size=min(cfg.tasks_per_step, len(tasks)), replace=False)]


def write_best(cfg, name, speedup, code, step):
    """OUT/best/<task with / as __>.py: the code under a header giving its measured speedup (rank 0 writes it), for
    a kernel faster than the reference only: a task whose best is slower has no file there."""
    if not is_main() or speedup <= 1:
        return
    path = Path(cfg.out) / "best" / (name.replace("/", "__") + ".py")
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"# cudal1 best for task {name}: speedup {speedup:.3f}x, status ok, found at step {step}\n{code}\n")


def task_best(db, name):
    """(combined score, code, step first measured) of the task's highest-scored entry but the reference, or None."""
    e = max((e for e in db.entries(name) if not e.meta.get("reference")), key=lambda e: e.score, default=None)
    return (e.score, e.code, e.step) if e else None


def open_database(cfg, tasks):
    """The run's exemplar database (references seeded at 1.0, --init-from's codes merged in) and the best correct
    code per task in it."""
    barrier()  # under torchrun: rank 0's restore() has cut the file back to the checkpoint
    db = ExemplarDB(Path(cfg.out) / "exemplars.jsonl")
    barrier()  # every rank has read the file; from now on rank 0 alone appends to it
    if not is_main():
        db.path = None  # the other ranks add the same entries (gathered results), in memory only
    for name, ref in tasks:
        db.seed_reference(name, ref)
    carried = read_jsonl(Path(cfg.init_from) / "exemplars.jsonl") if cfg.init_from else []
    for e in [e for e in carried if not db.holds(e["task"], e["code"])]:  # a resume holds them: not measured again
        # stored as step 0, so that a resume (which cuts entries past its checkpoint) keeps them
        db.add(e["task"], e["code"], e["score"], step=0, meta=dict(e.get("meta", {}), init_step=e.get("step", 0)))
    # task -> (combined speedup, code, step), over this run's tasks (--init-from may carry others' codes)
    best = {name: task_best(db, name) for name, _ in tasks if task_best(db, name)}
    for name, b in best.items():  # a resumed run rewrites OUT/best/ from what the database kept
        write_best(cfg, name, *b)
    return db, best


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


def eos_ids(model, tok):
    ids = model.generation_config.eos_token_id
    ids = ids if isinstance(ids, list) else [ids if ids is not None else tok.eos_token_id]
    return torch.tensor(ids)


# unset fields would be filled from the model's generation_config (e.g. Qwen's top_k=20, repetition_penalty=1.05),
# which would sample from a distribution the loss does not score: switch them off explicitly
PURE_SAMPLING = dict(top_k=0, min_p=0.0, typical_p=1.0, repetition_penalty=1.0, no_repeat_ngram_size=0)


@torch.no_grad()
def generate(cfg, model, tok, prompts, seed):
    """G samples of each prompt in one batch (KV-cached, prompts left-padded), after torch.manual_seed(seed); per
    prompt a rollout: its prompt ids (P,), completion ids (G, T), mask (G, T), texts. --gen-cache: graphs (auto's
    choice on CUDA, the fastest: bench/RESULTS.md) is decode's CUDA-graphed loop, static transformers' generate with
    a compiled decoding step; both sample the dynamic cache's tokens on the CPU. On CUDA compiled kernels round bf16
    their own way, and the loss scores the samples with the eager forward (the old log-probs too), as RL on a
    separate inference engine does."""
    from transformers import GenerationConfig
    graphs = cfg.gen_cache == "graphs" or (cfg.gen_cache == "auto" and cfg.device == "cuda")
    static = graphs or cfg.gen_cache == "static"
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    if static:  # left-padded further, to one of a few lengths
        enc = tok.pad(enc, padding="max_length", max_length=static_length(enc["input_ids"].shape[1]),
                      return_tensors="pt")
    enc = enc.to(cfg.device)
    eos = eos_ids(model, tok)
    gen = GenerationConfig(do_sample=True, temperature=cfg.temperature, top_p=cfg.top_p,
                           max_new_tokens=cfg.max_new_tokens, num_return_sequences=cfg.group_size,
                           eos_token_id=eos.tolist(), pad_token_id=tok.pad_token_id, **PURE_SAMPLING,
                           cache_implementation="static" if static else None)  # (graphs: decode's own)
    torch.manual_seed(seed)
    P, G = enc["input_ids"].shape[1], cfg.group_size
    with autocast(cfg):
        if graphs and cfg.top_p == 1:
            ids = decode(cfg, model, enc, eos, seed).cpu()            # (n * G, T): prompt i's samples are rows iG..
        else:
            ids = model.generate(**enc, generation_config=gen).cpu()[:, P:]
    ended = torch.isin(ids, eos).long()                          # (n * G, T)
    mask = (ended.cumsum(1) - ended) == 0                         # (n * G, T): tokens up to and including the first eos
    texts = [tok.decode(row[:m.sum()], skip_special_tokens=True) for row, m in zip(ids, mask)]
    real = enc["attention_mask"].bool().cpu()                     # (n, P): False on the left padding
    return [dict(prompt=enc["input_ids"][i].cpu()[real[i]], ids=ids[i * G:(i + 1) * G], mask=mask[i * G:(i + 1) * G],
                 texts=texts[i * G:(i + 1) * G]) for i in range(len(prompts))]


def static_length(n):
    """The length a static cache pads n prompt tokens to: 512, 1024, 2048, ... One cache shape, so one compile, per
    length: contrastive prompts move by thousands of tokens from step to step (their exemplars' code), and finer
    buckets (256 tokens) would recompile nearly every step, until dynamo's recompile limit."""
    return 512 << max(0, math.ceil(math.log2(n / 512)))


DECODERS = {}  # decode's static cache and compiled forward, kept while the model and the batch's rows stay and its
#               prompts fit (they hold the model: DECODERS.clear() lets it go)


def decode(cfg, model, enc, eos, seed, check_every=64):
    """--gen-cache graphs: G samples of each left-padded prompt of enc without transformers' generate loop; (n * G, T)
    token ids. A static KV cache (kept while the rows stay and the prompts fit: DECODERS; shorter prompts are padded
    further, so a step whose prompts are shorter than the last one's compiles nothing), one forward of the prompts,
    then one forward per token, compiled on CUDA into CUDA graphs (torch.compile's reduce-overhead mode: one graph
    replay per token, the mask and cache at fixed addresses); each token drawn from softmax(logits / temperature)
    by the Gumbel-max trick, argmax(logits / t - log E) with E ~ Exp(1) from a generator seeded with seed; the loop
    ends once every row has an eos (looked at every check_every tokens: one synchronisation each)."""
    from transformers import StaticCache
    G, T = cfg.group_size, cfg.max_new_tokens
    ids, mask = enc["input_ids"].repeat_interleave(G, 0), enc["attention_mask"].repeat_interleave(G, 0)  # (N, P)
    (N, P), dev = ids.shape, ids.device
    kept = DECODERS.get("model") is model and DECODERS["shape"][0] == N and DECODERS["shape"][1] >= P + T
    if kept:  # the kept cache is longer: pad on the left up to it (masked, so the samples' distribution is the same)
        more = DECODERS["shape"][1] - T - P
        pad = torch.nn.functional.pad
        ids, mask, P = pad(ids, (more, 0)), pad(mask, (more, 0)), P + more
    else:  # a new cache and a new compile
        DECODERS.update(model=model, shape=(N, P + T), cache=StaticCache(config=model.config, max_cache_len=P + T),
                        step=torch.compile(model, mode="reduce-overhead") if cfg.device == "cuda" else model)
    cache, step = DECODERS["cache"], DECODERS["step"]
    cache.reset()
    mask = torch.cat([mask, mask.new_ones(N, T)], 1)                 # (N, P + T): every new token is attended to
    pos = (mask[:, :P].cumsum(1) - 1).clamp(min=0)                  # (N, P): positions skip the left padding
    g, kv = torch.Generator(dev).manual_seed(seed), cache_arg(model, cache)
    # the prompts' forward keeps the last position's logits alone: all of them, for 64 rows of 4,000 tokens, ~150 GB
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, **kv, logits_to_keep=1,
                   cache_position=torch.arange(P, device=dev)).logits[:, -1]
    out = ids.new_empty(N, T)
    for t in range(T):
        noise = torch.empty(logits.shape, device=dev).exponential_(generator=g)  # (N, V)
        out[:, t] = (logits.float() / cfg.temperature - noise.log()).argmax(-1)
        if (t + 1) % check_every == 0 and bool(torch.isin(out[:, :t + 1], eos.to(dev)).any(1).all()):
            return out[:, :t + 1]
        logits = step(input_ids=out[:, t:t + 1], attention_mask=mask, position_ids=pos[:, P - 1:P] + 1 + t,
                      **kv, cache_position=torch.full((1,), P + t, device=dev)).logits[:, -1]
    return out


def cache_arg(model, cache):
    """The KV cache as forward's keyword: `cache` in newer transformers (`past_key_values` is deprecated there and
    goes in 5.40), `past_key_values` in older ones (5.17)."""
    return {"cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values": cache}


def generate_all(cfg, model, tok, batch, prompts, step):
    """A rollout per task of the batch, in batch order: generate() on gen_batch tasks at a time, each call seeded from
    (seed, step, its task names joined by '+'). Under torchrun each rank generates its share of the tasks."""
    mine = shard(list(zip(batch, prompts)))
    calls = [mine[i:i + cfg.gen_batch] for i in range(0, len(mine), cfg.gen_batch)]
    out = []
    for call in tqdm(calls, desc=f"step {step} generate", leave=False, disable=not is_main()):
        seed = seed_for(cfg, step, "+".join(name for (name, _), _ in call))
        out += generate(cfg, model, tok, [p for _, p in call], seed)
    return gather(out)

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
    mine = shard(unique)
    device = f"cuda:{torch.cuda.current_device()}" if cfg.device == "cuda" and dist.is_initialized() else cfg.device
    each = (lambda i, res: on_result(mine[i], res)) if on_result else None
    results = gather(evaluator.evaluate_many(mine, device=device, jobs=cfg.eval_jobs or None, on_result=each,
                                             progress=is_main(), call_timeout_s=cfg.eval_timeout,
                                             build_timeout_s=cfg.eval_build_timeout, tol=cfg.eval_tol, phases=phases,
                                             time_copies=False,  # a copy earns copy_reward, whatever its speed
                                             **(timing or dict(time_budget_s=cfg.eval_time_budget,
                                                               precision=cfg.eval_precision))))
    found = dict(zip(unique, results))
    return [copy(found[p]) for p in pairs]


def is_success(res):
    """A correct candidate that is not the reference renamed: what the database keeps and stage 2 trains on."""
    return res.status == "ok" and not res.same_as_reference


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


def token_logps(cfg, model, samples, temperature=None):
    """Log-probs (m, T) of each sample's completion under `model` at the sampling temperature (or the one given), and
    the mask (m, T).

    Samples are (prompt (P_i,), completion (T_i,), mask (T_i,)); prompts are left-padded to one length, positions
    counted over real tokens only, so the numbers match what generate() saw.
    """
    P = max(len(p) for p, _, _ in samples)
    T = max(int(k.sum()) for _, _, k in samples)
    ids = torch.zeros(len(samples), P + T, dtype=torch.long)     # (m, P + T)
    attn = torch.zeros(len(samples), P + T, dtype=torch.long)    # (m, P + T)
    mask = torch.zeros(len(samples), T, dtype=torch.bool)        # (m, T)
    for i, (p, c, k) in enumerate(samples):
        n = int(k.sum())
        ids[i, P - len(p):P], ids[i, P:P + n] = p, c[:n]
        attn[i, P - len(p):P + n], mask[i, :n] = 1, True
    pos = (attn.cumsum(1) - 1).clamp(min=0)                      # (m, P + T)
    dev = cfg.device
    with autocast(cfg):
        logits = model(input_ids=ids.to(dev), attention_mask=attn.to(dev), position_ids=pos.to(dev),
                       logits_to_keep=T + 1, use_cache=False).logits[:, :-1]  # (m, T, V): P-1+t predicts token t
    logp = torch.log_softmax(logits.float().div_(temperature or cfg.temperature), dim=-1)  # (one fp32 copy: m*T*V)
    return logp.gather(-1, ids[:, P:].to(dev).unsqueeze(-1)).squeeze(-1), mask.to(dev)  # (m, T), (m, T)


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
    norm = torch.nn.utils.clip_grad_norm_(trainable(model), cfg.max_grad_norm or float("inf"))
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
    chunks = [micro_batches(cfg, shard(part)) for part in parts]  # per step: this rank's micro-batches
    tokens = [sum(int(samples[i][2].sum()) for i in part) for part in parts]
    adv, n_steps = adv.to(cfg.device), len(parts)
    with torch.no_grad():
        old = [[token_logps(cfg, model, [samples[i] for i in c])[0] if n_steps > 1 else None for c in cs]
               for cs in chunks]
        with scored_by(model, anchor) if anchor is not None else nullcontext() as ref_model:  # (kl_anchor)
            ref = [[token_logps(cfg, ref_model, [samples[i] for i in c])[0] if ref_model else None for c in cs]
                   for cs in chunks]
    stats, grad_norm = Counter(), 0.0
    bar = tqdm(total=sum(map(len, chunks)), desc="update", leave=False, disable=not is_main())
    for part, cs, olds, refs, total_tokens in zip(parts, chunks, old, ref, tokens):
        opt.zero_grad(set_to_none=True)
        for c, old_lp, ref_lp in zip(cs, olds, refs):
            bar.update()
            with layers_recomputed(cfg, model):
                logp, mask = token_logps(cfg, model, [samples[i] for i in c])
                old_lp = logp.detach() if old_lp is None else old_lp  # one step: the ratio is 1, its gradient logp's
                loss, st = grpo_loss(logp, old_lp, adv[c], mask, ref_logp=ref_lp, variant=cfg.loss_variant,
                                     eps_low=cfg.eps_low, eps_high=cfg.eps_high, beta=cfg.beta,
                                     max_tokens=cfg.max_new_tokens)
                # weight each micro-batch by its share, so the sum equals the loss of the whole mini-batch
                share = int(mask.sum()) / total_tokens if cfg.loss_variant == "dapo" else len(c) / len(part)
                (loss * share).backward()
            stats.update({"loss": loss.item() * share, **{k: v * share / n_steps for k, v in st.items()}})
        all_reduce_grads(model)
        grad_norm += optimizer_step(cfg, model, opt) / n_steps  # of the summed gradient: the same on every rank
    bar.close()
    stats = {k: sum(part.get(k, 0.0) for part in gather([stats])) for k in ("loss", "clip_frac", "kl", "ratio")}
    return dict(stats, loss=stats["loss"] / n_steps, grad_norm=grad_norm, updated=True, trained=int(n))


NO_UPDATE = dict(loss=None, clip_frac=None, kl=None, ratio=None, grad_norm=None, updated=False)

# ---------------------------------------------------------------------------- loop: log and checkpoint


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
        top = task_best(db, name)
        if top != best.get(name):
            best[name] = top
            write_best(cfg, name, *top)


def append_log(cfg, rec):
    """One record as a line of OUT/log.jsonl (rank 0 writes it)."""
    if not is_main():
        return
    with open(Path(cfg.out) / "log.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


def append_samples(cfg, step, batch, rollouts, results):
    """Every sample of the step as a line of OUT/samples.jsonl (rank 0): its task, the reply, its status, speedup,
    speedup kind and the first 300 characters of the reason, so that what the policy wrote, and why it failed,
    can be read after the run (the log holds counts only). ~3 KB a sample of 1,000 tokens."""
    if not is_main() or not results:
        return
    texts = [t for r in rollouts for t in r["texts"]]  # (B*G) order, as results
    G = len(texts) // len(batch)
    with open(Path(cfg.out) / "samples.jsonl", "a") as f:
        for i, (text, res) in enumerate(zip(texts, results)):
            f.write(json.dumps(dict(step=step, task=batch[i // G][0], status=res.status, speedup=res.speedup,
                                    kind=res.speedup_kind, copy=is_copy(res), reason=res.reason[:300],
                                    reply=text)) + "\n")


def is_copy(res):
    """A correct candidate that is the reference renamed (or runs exactly its ops): ok, but no work of the policy's."""
    return res.status == "ok" and res.same_as_reference


def task_stats(batch, results):
    """{task: {"pass": share of its G samples that are successes (ok, not a copy), "copies": how many are copies of
    the reference, "mean_speedup": the successes' mean measured speedup or None}}."""
    G, out = len(results) // len(batch), {}
    for i, (name, _) in enumerate(batch):
        mine = results[i * G:(i + 1) * G]
        ok = [r.speedup for r in mine if is_success(r) and r.speedup is not None]
        out[name] = {"pass": len(ok) / G, "copies": sum(map(is_copy, mine)),
                     "mean_speedup": float(np.mean(ok)) if ok else None}
    return out


def log_step(cfg, step, batch, rollouts, raw, results, best, stats, clock, phases=None):
    """Append the step's record to OUT/log.jsonl and print the fixed-order line; returns the record.
    clock: time.perf_counter() at the step's start, after generate, after evaluate, after the update; phases: the
    evaluator's build_s, evaluate_s, build_wait_s, builds, build_failed and compiled (evaluate_many). The line ends with
    where the step's time went: generation (and its tokens per second, every sample's tokens up to its eos), the
    builds (on a GPU they run alongside the evaluations: the part the GPU waited for), the evaluation, the update.

    mean/max_reward are raw rewards (speedup, fail_reward or copy_reward); pass_rate is the share of successes
    (status ok, not a copy of the reference; with a toy reward_fn: the share of positive rewards); copies is the
    number of samples that are the reference renamed; best_speedup is each task's best combined score so far and
    best_step the step that found it (0: carried from --init-from); per_task is task_stats of this step's samples.
    """
    t0, t1, t2, t3 = clock
    gen_tokens = sum(int(k.sum()) for r in rollouts for k in r["mask"])
    times = dict(gen_s=t1 - t0, gen_tokens=gen_tokens, gen_tok_s=gen_tokens / max(t1 - t0, 1e-9), eval_s=t2 - t1,
                 **(phases or {}), update_s=t3 - t2, step_s=time.perf_counter() - t0)
    n_ok = sum(map(is_success, results)) if results else int((raw > 0).sum())
    tokens = gen_tokens / sum(len(r["mask"]) for r in rollouts)
    rec = dict(step=step, tasks=[name for name, _ in batch], mean_reward=float(raw.mean()),
               max_reward=float(raw.max()), pass_rate=n_ok / len(raw), copies=sum(map(is_copy, results)),
               best_speedup={name: b[0] for name, b in sorted(best.items())},
               best_step={name: b[2] for name, b in sorted(best.items())},
               per_task=task_stats(batch, results) if results else {},
               status=dict(Counter(r.status for r in results)), mean_tokens=tokens, **stats, **times)
    append_log(cfg, rec)
    append_samples(cfg, step, batch, rollouts, results)
    speedup, _, found = max(best.values(), key=lambda b: b[0]) if best else (None, None, None)
    top = f"{speedup:.2f}x{' from --init-from' * (found == 0)}" if best else "-"  # step 0: the earlier stage's code
    built = (f" (builds {times['build_s']:.1f} s, {times['build_wait_s']:.1f} s of it waited for: {times['builds']}, "
             f"{times['compiled']} compiled, {times['build_failed']} failed, the rest cached)" if times.get("builds")
             else "")
    groups = (f" | signal {rec['groups_signal']}/{rec['groups']}"
              + (f" ({rec['groups_speed']} by speed)" if rec.get("groups_speed") is not None else "")
              + f", {rec['groups_flat']} flat" if "groups" in rec else "")
    print(f"step {step:4d} | reward {rec['mean_reward']:+.3f} | pass {rec['pass_rate']:6.1%}{groups} | best {top} | "
          f"{times['step_s']:.1f} s/step: generate {times['gen_s']:.1f} s ({times['gen_tok_s']:,.0f} tok/s), "
          f"evaluate {times['eval_s']:.1f} s{built}, update {times['update_s']:.1f} s", flush=True)
    return rec


PLOT_EVERY_S = 10.0  # between checkpoints, progress.png is redrawn after a step at most this often (~0.5 s a plot)


def found_best(rec):
    """A log record's best speedup over its tasks, of codes this run found (not those --init-from carried, step 0:
    with them the curve is the earlier stage's best from step 1 on); NaN while there is none."""
    return best_found(rec)[0]


def best_found(rec):
    """(found_best(rec), the task it is of), or (NaN, '')."""
    found = rec.get("best_step", {})  # (older logs lack it: every best counts)
    return max(((v, k) for k, v in rec["best_speedup"].items() if found.get(k, 1) > 0), default=(float("nan"), ""))


def progress_figure(recs, title=""):
    """The figure of progress.png from log records, 2x2 panels: mean reward, pass rate, the best speedup this run
    found (its task named) and each task's mean speedup of its correct samples, a marker at each step that sampled
    it (speedups against a dashed line at 1.0x, the reference); an sft run: its loss. A panel with nothing to draw
    says so. title: the run's name and step, above the panels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
    steps = [r["step"] for r in recs]
    nan = float("nan")
    if "mean_reward" not in recs[0]:  # an sft run logs a loss per step
        panels = [("sft loss", "loss (mean per completion token)", {"": (steps, [r["loss"] for r in recs])})]
    else:
        per_task = {}  # task -> ([step it was sampled at], [mean speedup of its correct samples there, or NaN])
        for r in recs:
            for name, t in r.get("per_task", {}).items():
                xs, ys = per_task.setdefault(name, ([], []))
                xs.append(r["step"])
                ys.append(nan if t["mean_speedup"] is None else t["mean_speedup"])
        speedup, task = best_found(recs[-1])
        named = f": {speedup:.2f}x, {task}" if task else ""
        panels = [("mean reward", "reward (mean of the step's samples)",
                   {"": (steps, [r["mean_reward"] for r in recs])}),
                  ("pass rate", "correct samples (%)", {"": (steps, [100 * r["pass_rate"] for r in recs])}),
                  (f"best speedup found in this run{named}", "speedup (x, vs the reference)",
                   {"": (steps, [found_best(r) for r in recs])}),
                  ("mean speedup of correct samples", "speedup (x, log scale)", per_task)]
    rows, cols = (2, 2) if len(panels) > 1 else (1, 1)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols + 1.6, 4.0 * rows + 0.4), layout="constrained",
                             squeeze=False)
    fig.suptitle(title, fontsize=13)
    for ax, (name, ylabel, lines) in zip(axes.flat, panels):
        drawn = {label: (xs, ys) for label, (xs, ys) in sorted(lines.items()) if any(math.isfinite(y) for y in ys)}
        for label, (xs, ys) in drawn.items():
            many = len(lines) > 1  # per task: markers alone, no line across the steps that did not sample it
            ax.plot(xs, ys, marker="o" if many or len(xs) < 30 else None, markersize=5 if many else 4,
                    linestyle="none" if many else "-", label=label or None)
        if "speedup" in name:
            ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)  # the reference's speed
        ax.set_title(name, fontsize=11)
        ax.set(xlabel="step", ylabel=ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # steps are whole numbers
        ax.set_xlim(min(steps) - 0.5, max(steps) + 0.5)
        if not drawn:
            ax.text(0.5, 0.5, "no correct samples yet" if "speedup" in name else "nothing logged yet",
                    transform=ax.transAxes, ha="center", va="center", fontsize=12, color="gray")
            ax.set_yticks([])
        elif len(lines) > 1:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))  # 0.5x 1x 2x 5x: labelled within a decade too
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))  # not 10^0
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)  # beside the panel
    return fig


def save_plot(cfg, force=True):
    """OUT/progress.png from the log, titled with the run's folder and step; skipped without matplotlib and, unless
    forced, when drawn less than PLOT_EVERY_S ago."""
    png = Path(cfg.out) / "progress.png"
    if importlib.util.find_spec("matplotlib") is None or (
            not force and png.exists() and time.time() - png.stat().st_mtime < PLOT_EVERY_S):
        return
    recs = read_jsonl(Path(cfg.out) / "log.jsonl")
    if recs:
        import matplotlib.pyplot as plt
        last = cfg.ssl_rounds if cfg.stage == "ssl" else cfg.steps
        fig = progress_figure(recs, f"{Path(cfg.out).name}: {cfg.stage}, step {recs[-1]['step']} of {last}")
        fig.savefig(png, dpi=100)
        plt.close(fig)


STOPS = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C, and what `timeout`, `kill` and batch schedulers send


@contextmanager
def finishing_step():
    """Hold Ctrl-C (and SIGTERM) back while a step changes the weights, the database, the log and the checkpoint;
    raise it after. An interrupt then lands in generate or evaluate, never half-way through an update: the weights
    are always those of the last logged step, which is what run() checkpoints on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread handles signals
        yield
        return
    held = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in STOPS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if held and callable(previous[held[0]]):
        previous[held[0]](held[0], None)  # e.g. Python's own for SIGINT: raises KeyboardInterrupt
    elif held and previous[held[0]] == signal.SIG_DFL:
        signal.raise_signal(held[0])  # SIGTERM with no handler: the process ends as it would have


def stop_as_ctrl_c(signum, frame):
    """main()'s SIGTERM handler: the run stops as on Ctrl-C (its last finished step checkpointed)."""
    raise KeyboardInterrupt


def save_checkpoint(cfg, model, opt, step, last):
    """At every ckpt_every-th step and at the last: OUT/ckpt.pt with weights, optimizer, RNG states, step; written to
    a tmp file then renamed (never half-written). After every step: progress.png (save_plot). Rank 0 writes them:
    the ranks' weights are the same."""
    if not is_main():
        return
    due = step == last or bool(cfg.ckpt_every and step % cfg.ckpt_every == 0)
    if due:
        state = dict(step=step, model=saved_weights(model), optim=opt.state_dict(),
                     rng=dict(torch=torch.get_rng_state(), numpy=np.random.get_state(), python=random.getstate(),
                              cuda=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None))
        path = Path(cfg.out) / "ckpt.pt"
        torch.save(state, str(path) + ".tmp")
        os.replace(str(path) + ".tmp", path)
    save_plot(cfg, force=due)


def read_jsonl(path, torn=None):
    """Records of a JSONL file; a torn last line (crash mid-write) is dropped (and appended to the list torn, when
    given), a corrupt line amid valid ones is a ConfigError (dropping it, or everything after it, would lose records
    without a word)."""
    lines = Path(path).read_text().splitlines() if Path(path).exists() else []
    recs = []
    for i, line in enumerate(lines):
        try:
            recs.append(json.loads(line))
        except json.JSONDecodeError as e:
            if any(rest.strip() for rest in lines[i + 1:]):
                raise ConfigError(f"{path}:{i + 1}: not a JSON record, amid valid ones ({e.msg}): repair or delete "
                                  "that line, then try again") from None
            if torn is not None and line.strip():
                torn.append(line)
            break
    return recs


RECORDS = ("log.jsonl", "exemplars.jsonl", "collected.jsonl", "samples.jsonl")  # what a resume cuts back


def read_checkpoint(cfg, model, opt):
    """The first half of a resume, which changes nothing in the folder: load OUT/ckpt.pt if there is one (weights,
    AdamW moments, RNG states) and read the records. A corrupt record amid them or an unreadable ckpt.pt is a
    ConfigError. Returns (the checkpoint's step, {file: records}, {file: its torn last line})."""
    out, step, torn = Path(cfg.out), 0, {name: [] for name in RECORDS}
    records = {name: read_jsonl(out / name, torn[name]) for name in RECORDS}
    if (out / "ckpt.pt").exists():
        try:
            state = torch.load(out / "ckpt.pt", map_location=cfg.device, weights_only=False)  # our own file
        except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as e:
            raise ConfigError(f"{out / 'ckpt.pt'} cannot be read ({type(e).__name__}: {str(e)[:60]}; truncated?): "
                              "restore it, or delete it to redo the run from step 1") from None
        load_weights(model, state["model"], out / "ckpt.pt")
        opt.load_state_dict(state["optim"])
        for group in opt.param_groups:  # the state holds the run's old lr: the flags given now win
            group.update(lr=cfg.lr, weight_decay=cfg.weight_decay)
        torch.set_rng_state(state["rng"]["torch"].cpu())  # map_location moved it to the device
        np.random.set_state(state["rng"]["numpy"])
        random.setstate(state["rng"]["python"])
        if state["rng"]["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([r.cpu() for r in state["rng"]["cuda"]])
        step = state["step"]
    return step, records, {name: lines[0] for name, lines in torn.items() if lines}


def restore(cfg, step, records, torn):
    """The second half, once every check has passed: cut log, database (and collect's records: collect keeps no
    checkpoint) back to the checkpoint's step: the steps a crash ran past it are redone, and what they wrote is
    appended to OUT/redone/, said in one line (a torn last line, too: as OUT/redone/NAME.torn). Under torchrun
    every rank has loaded the checkpoint, rank 0 alone cuts."""
    out = Path(cfg.out)
    if not is_main():
        return step
    cut = {name: [r for r in recs if r.get("step", step + 1) > step]  # collected.jsonl's records have no step
           for name, recs in records.items()}
    with finishing_step():  # a Ctrl-C here would leave records in neither place
        if any(cut.values()) or torn:
            (out / "redone").mkdir(exist_ok=True)
        for name, line in torn.items():
            with open(out / "redone" / f"{name}.torn", "a") as f:
                f.write(line + "\n")
        for name in [name for name, recs in cut.items() if recs]:
            with open(out / "redone" / name, "a") as f:
                f.write("".join(json.dumps(r) + "\n" for r in cut[name]))
        for name, recs in records.items():
            if (out / name).exists():  # rewritten also when nothing is cut: a torn last line goes
                (out / name).write_text("".join(json.dumps(r) + "\n" for r in recs if r.get("step", step + 1) <= step))
    if any(cut.values()):
        steps = sorted({r["step"] for r in cut["log.jsonl"]}) or [step + 1]
        print(f"resume: {f'checkpoint at step {step}' if step else 'no checkpoint yet'}: redoing step"
              f"{f's {steps[0]}-{steps[-1]}' if len(steps) > 1 else f' {steps[0]}'}; what they wrote first "
              f"({len(cut['log.jsonl'])} log records, {len(cut['exemplars.jsonl'])} exemplars) is kept in "
              f"{out / 'redone'}/", flush=True)
    if torn:
        print(f"resume: a crash tore the last line of {', '.join(torn)}: it is kept in "
              f"{', '.join(str(out / 'redone' / f'{name}.torn') for name in torn)}", flush=True)
    for f in (out / "best").glob("*.py"):  # may hold winners of steps past the checkpoint: open_database rewrites it
        f.unlink()
    return step

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
            rollout = generate(replace(cfg, group_size=n), model, tok, [prompt], seed_for(cfg, rnd, task[0]))[0]
            results = measure(cfg, [task], [rollout])
            with open(path, "a") as f:
                for text, code, res in zip(rollout["texts"], rollout["codes"], results):
                    f.write(json.dumps(dict(task=task[0], ref_code=task[1], prompt=prompt, completion=text,
                                            code=code, result=res.to_dict())) + "\n")
            record_winners(cfg, db, best, [task], [rollout], results, step)
            tried, ok = tried + n, ok + sum(map(is_success, results))
        append_log(cfg, dict(step=step, task=task[0], attempts=tried, successes=ok, step_s=time.perf_counter() - t0))
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


def working_records(recs, min_speedup=0.0):
    """The records that hold a working candidate: ref_code, completion or code, and no failed result; with
    min_speedup > 0, only those whose result measured a speedup of at least that."""
    res = [r.get("result") or {} for r in recs]
    return [r for r, x in zip(recs, res) if r.get("ref_code") and (r.get("completion") or r.get("code"))
            and x.get("status", "ok") == "ok" and not x.get("same_as_reference")
            and (x.get("speedup") or 0) >= min_speedup]


def sft_records(cfg):
    """(every working record of --data, the ones sft trains on: measured at least --sft-min-speedup)."""
    recs = working_records(read_jsonl(cfg.data))
    keep = working_records(recs, cfg.sft_min_speedup)
    at_least = f", measured at least {cfg.sft_min_speedup:g}x" if cfg.sft_min_speedup else ""
    if not keep:
        raise ConfigError(f"--data {cfg.data}: missing, or no record holds ref_code and completion or code "
                          f"without a failed result{at_least}")
    print(f"sft: trains on {len(keep)} records of {cfg.data} that hold a working candidate{at_least}; all "
          f"{len(recs)} working ones go into the exemplar database")
    return recs, keep


# a code's module docstring, less a stage-1 intent label ("slower:", "faster (hoped):", "wrong:", "broken:")
DOCSTRING = re.compile(r'\A\s*"""\s*(?:(?:faster|slower|wrong|broken)\b[^:\n]{0,40}:\s*)?(.*?)\s*"""[ \t]*\n?', re.S)


def unlabelled(code):
    """The code with its module docstring's intent label (if any) taken out."""
    m = DOCSTRING.match(code)
    if not m:
        return code
    return (f'"""{m.group(1)}"""\n' if m.group(1) else "") + code[m.end():]


STOCK_ANALYSIS = "The reference runs one PyTorch op after another."


def as_reply(code, prompt, analysis=STOCK_ANALYSIS):
    """A bare working code as the three-section reply the prompt asks for: the analysis given (a plain prompt's: a
    stock sentence), the code's module docstring (less its intent label) as the design, the rest as the code. Why:
    trained on the stage-1 files as they are, the 0.5B began most replies with an intent label (bench/RESULTS.md)."""
    m = DOCSTRING.match(code)
    design, code = (m.group(1), code[m.end():]) if m else ("The same outputs, computed with less work.", code)
    reply = (f"### Performance analysis\n{analysis}\n### Algorithm design\n"
             f"{design}\n### Code\n```python\n{code.strip()}\n```\n")
    return reply.removeprefix(ANSWER_CUE.lstrip()) if prompt.endswith(ANSWER_CUE) else reply


def sft_examples(cfg, model, tok, records):
    """(prompt ids (P,), target ids (T,), mask (T,)) per record: the plain prompt; its completion (or code as a
    reply) + eos as the target. The prompt names --device's target (CPU or GPU): train for the device you will use."""
    eos, examples = eos_ids(model, tok)[:1], []
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
        with layers_recomputed(cfg, model):
            logp, mask = token_logps(cfg, model, [examples[i] for i in c], temperature=1.0)  # (m, T), (m, T)
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
    examples, eos = sft_examples(cfg, model, tok, records), eos_ids(model, tok)[:1]
    per_epoch = -(-len(examples) // cfg.sft_batch)
    for step in range(start, cfg.steps + 1):
        t0 = time.perf_counter()
        batch = epoch_batches(cfg, len(examples), (step - 1) // per_epoch)[(step - 1) % per_epoch]
        chosen = [examples[i] for i in batch]
        if cfg.sft_contrastive:
            chosen += [e for i in batch for e in contrastive_example(cfg, db, tok, eos, records[i], step, i)]
        with finishing_step():  # a Ctrl-C waits for this step's update, log and checkpoint
            stats = sft_step(cfg, model, opt, chosen)
            append_log(cfg, dict(step=step, **stats, step_s=time.perf_counter() - t0))
            print(f"step {step:4d} | loss {stats['loss']:.4f} | {stats['tokens']} tokens | "
                  f"{time.perf_counter() - t0:.1f} s/step", flush=True)
            save_checkpoint(cfg, model, opt, step, cfg.steps)


def ssl(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 2, rounds start..ssl_rounds: G plain-prompt samples per task (every task, or ssl_tasks of them drawn
    from (seed, round): rounds short enough to checkpoint within a device call) -> evaluate (correctness; barely
    timed; the successes timed again in full) -> one pass of sft_steps over the correct ones (reward 1; failures,
    reward 0, are not trained on) -> database."""
    plain = replace(cfg, contrastive=False)
    for rnd in range(start, cfg.ssl_rounds + 1):
        t0 = time.perf_counter()
        batch = pick_tasks(replace(cfg, tasks_per_step=cfg.ssl_tasks), tasks, rnd) if cfg.ssl_tasks else tasks
        rollouts = generate_all(cfg, model, tok, batch, build_prompts(plain, db, batch, rnd, tok), rnd)
        t1 = time.perf_counter()
        phases = {}
        results = measure(cfg, batch, rollouts, correctness_only(cfg), phases)  # successes timed again in full
        t2 = time.perf_counter()
        wins = [s for s, res in zip(flat_samples(rollouts), results) if is_success(res)]
        with finishing_step():  # a Ctrl-C waits for this round's updates, database, log and checkpoint
            steps = [sft_step(cfg, model, opt, [wins[i] for i in b]) for b in epoch_batches(cfg, len(wins), rnd)]
            stats = dict(loss=float(np.mean([s["loss"] for s in steps])) if steps else None, kept=len(wins),
                         tokens=sum(s["tokens"] for s in steps), updated=bool(steps))
            t3 = time.perf_counter()
            record_winners(cfg, db, best, batch, rollouts, results, rnd)
            raw = np.array([float(is_success(res)) for res in results])  # the reward of stage 2: 1 or 0
            log_step(cfg, rnd, batch, rollouts, raw, results, best, stats, (t0, t1, t2, t3), phases)
            save_checkpoint(cfg, model, opt, rnd, cfg.ssl_rounds)


def rl(cfg, tasks, model, tok, opt, db, best, start, reward_fn=None):
    """Stage 3, contrastive RL: steps start..steps of the loop in the module docstring."""
    anchor = kl_anchor(cfg, model, start)
    for step in range(start, cfg.steps + 1):
        t0 = time.perf_counter()
        batch = pick_tasks(cfg, tasks, step)
        prompts = build_prompts(cfg, db, batch, step, tok)
        rollouts = generate_all(cfg, model, tok, batch, prompts, step)
        t1 = time.perf_counter()
        phases = {}
        results, raw, rewards = evaluate_and_reward(cfg, batch, rollouts, reward_fn, phases)
        t2 = time.perf_counter()
        adv = advantages_of(cfg, rewards)  # (B * G,)
        with finishing_step():  # a Ctrl-C waits for this step's update, database, log and checkpoint
            moves = cfg.update and (adv.any() or cfg.beta > 0)
            stats = update(cfg, model, anchor, opt, rollouts, adv, step) if moves else NO_UPDATE
            stats = dict(stats, **group_signal(cfg, adv, results))
            t3 = time.perf_counter()
            record_winners(cfg, db, best, batch, rollouts, results, step)
            log_step(cfg, step, batch, rollouts, raw, results, best, stats, (t0, t1, t2, t3), phases)
            save_checkpoint(cfg, model, opt, step, cfg.steps)


STAGES = {"collect": collect, "sft": sft, "ssl": ssl, "rl": rl}  # each named as the CLI names it

# ---------------------------------------------------------------------------- run


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the run checkpointed its last finished step; the message says so and how to go on."""


def checkpoint_interrupted(cfg, model, opt):
    """After a Ctrl-C: checkpoint the last logged step (finishing_step keeps the weights in step with the log);
    returns the one line that says what was kept."""
    resume = f"python rl.py --resume --out {cfg.out}"
    if cfg.stage == "collect":
        return f"interrupted in collect, which keeps no checkpoint: {resume} starts it over"
    log = read_jsonl(Path(cfg.out) / "log.jsonl") if is_main() else []
    done = log[-1]["step"] if log else 0
    if not done:
        return f"interrupted in step 1, before any step finished: nothing to keep; {resume} starts it"
    save_checkpoint(cfg, model, opt, done, done)
    return f"interrupted in step {done + 1}: checkpoint saved at step {done}; {resume} continues from step {done + 1}"


def resume_changes(cfg):
    """The line a resume says when flags given with it change config.json (they stay for later resumes: a plain
    --resume after --steps 300 runs to step 300), or ''."""
    path = Path(cfg.out) / "config.json"
    saved = json.loads(path.read_text()) if path.is_file() else {}  # (a Config built in Python may have none)
    changed = [f"{k} {saved[k]!r} -> {v!r}" for k, v in asdict(cfg).items() if k in saved and saved[k] != v and k != "resume"]
    return f"resume: config.json now holds {', '.join(changed)}: later resumes keep them" if changed else ""


def run(cfg, reward_fn=None):
    """The whole job: config, tasks, policy, run folder, optimizer, database; then --stage.
    reward_fn(task, completions) -> rewards replaces evaluation in the rl stage (toy-reward tests only)."""
    if cfg.stage in ("auto", "all"):
        cfg = stage_or_chain(cfg)
        if cfg.stage == "all":
            return run_all(cfg, reward_fn)  # the stages one after another, each by run()
    auto_model, given = not (cfg.model or cfg.init_from), given_fields(cfg)
    cfg = resolve_config(check_config(cfg), given)
    cfg = init_distributed(cfg)  # under torchrun: before the policy lands on this rank's GPU
    out = Path(cfg.out)
    if not cfg.resume and (out / "log.jsonl").exists():
        raise ConfigError(f"{out} already holds a run: --resume to continue it, or pick another --out")
    tasks = load_tasks(cfg)  # a bad --task fails here, before any model download
    if dist.is_initialized() and min(cfg.tasks_per_step, len(tasks)) < dist.get_world_size():
        raise ConfigError(f"torchrun with {dist.get_world_size()} processes needs as many tasks per step, got "
                          f"{min(cfg.tasks_per_step, len(tasks))}: each process generates one task's group or more")
    try:
        model, tok = initial_policy(cfg)
    except PolicyError as e:
        if not auto_model or dist.is_initialized():  # under torchrun the process group is already on cfg.device
            raise
        print(f"cudal1: {str(e).splitlines()[0]}")
        cfg = resolve_optimizer_state(fallback_to_demo(cfg, f"{DEFAULT_MODEL} did not load", given))
        tasks, (model, tok) = load_tasks(cfg), initial_policy(cfg)
    opt = torch.optim.AdamW(trainable(model), lr=cfg.lr, weight_decay=cfg.weight_decay)
    step, records, torn = read_checkpoint(cfg, model, opt) if cfg.resume else (0, {}, {})
    last, more = (cfg.ssl_rounds, "--ssl-rounds") if cfg.stage == "ssl" else (cfg.steps, "--steps")
    if step >= last:  # (a fresh run starts at step 0)
        print(f"run {out} finished at step {step}; give {more} N to go further", flush=True)
        return cfg
    if cfg.resume and resume_changes(cfg):  # every check has passed: from here on the folder changes
        print(resume_changes(cfg), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    if is_main():
        save_json(out / "config.json", asdict(cfg))
    defaults = asdict(Config())
    print(f"config (every field in {out / 'config.json'}), where it differs from the defaults:\n" +
          "\n".join(f"  {k} = {v!r}" for k, v in asdict(cfg).items() if v != defaults[k]))
    if importlib.util.find_spec("matplotlib") is None:
        print("cudal1: no progress.png in this run: matplotlib is not installed (pip install matplotlib)")
    start = restore(cfg, step, records, torn) + 1 if cfg.resume else 1
    if cfg.init_from and start == 1:  # no checkpoint of this run (a resume before its first): --init-from's moments
        kept = cfg.optimizer_state == "keep" and continue_optimizer(cfg, opt)
        print(f"optimizer: {'AdamW moments of ' if kept else 'a fresh AdamW, not the moments of '}{cfg.init_from} "
              f"(--optimizer-state {cfg.optimizer_state})")
    db, best = open_database(cfg, tasks)
    lora = f" ({sum(p.numel() for p in trainable(model)) / 1e6:.2f}M in LoRA adapters)" * bool(cfg.lora_rank)
    print(f"stage {cfg.stage}: {len(tasks)} tasks, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M "
          f"parameters{lora}, from step {start}, out {out}")
    try:
        STAGES[cfg.stage](cfg, tasks, model, tok, opt, db, best, start, reward_fn)
    except KeyboardInterrupt:
        raise Interrupted(checkpoint_interrupted(cfg, model, opt)) from None
    if dist.is_initialized():  # leave together: a gloo rank exiting with its group alive can abort (SIGABRT)
        barrier()
        dist.destroy_process_group()
    return cfg

# ---------------------------------------------------------------------------- all: sft -> ssl -> sftc -> rl

STAGE1_DATA = DEMO_POLICY.parents[1] / "real" / "stage1.jsonl"  # measured working variants of the 30 training tasks
SPLIT = DEMO_POLICY.parents[1] / "real" / "split.json"  # {"train": [30 tasks], "heldout": [13 tasks, never trained]}
# --stage all: the recipe of the proof (bench/real/README.md), for each field not given; "all" for every stage
RECIPE = {"all": dict(lora_rank=8, lora_targets="q_proj,v_proj", max_new_tokens=3200, temperature=0.7,
                      data=str(STAGE1_DATA), ssl_rounds=4, ssl_tasks=8),  # sft: every working variant
          "sft": dict(lr=2e-4), "ssl": dict(lr=1e-4, ckpt_every=1),
          "sftc": dict(lr=1e-4, grad_accum=16, sft_contrastive=True),
          "rl": dict(lr=5e-5, tasks_per_step=8, grad_accum=16, ckpt_every=1, eval_precision=0.01)}
CHAIN = {"sft": "sft", "ssl": "ssl", "sftc": "sft", "rl": "rl"}  # folder -> the stage run there, in this order
# seconds per step (ssl: per round; ssl and rl: 8 tasks x 8 samples) of Qwen2.5-Coder-1.5B with the recipe, lowest
# and highest, as bench/RESULTS.md's entries of these dates and GPUs record them (the plan's time estimates)
MEASURED_S = {"sft": (0.6, 2.2, "H200, 2026-12-03/04"), "ssl": (104, 196, "H200, 2026-12-04"),
              "sftc": (2.4, 6.8, "H200, 2026-12-05"), "rl": (120, 233, "H100 and H200, 2026-12-05")}


def recipe_help():
    """RECIPE as flags, for --help's last paragraph."""
    def flags(values):
        return " ".join(f"--{k.replace('_', '-')}" + (f" {v}" if not isinstance(v, bool) else "")
                        for k, v in values.items()).replace(str(STAGE1_DATA), "bench/real/stage1.jsonl")
    steps = {"sft": " (--steps: --sft-steps)", "sftc": " (--steps: --sftc-steps)"}
    return (f"--stage all (auto with a real model on a GPU) sets each flag not given as bench/real/README.md's recipe: "
            f"every stage {flags(RECIPE['all'])}, and --task all is bench/real/split.json's 30 training tasks (never "
            f"its 13 held out); " + "; ".join(f"{name}{steps.get(name, '')} {flags(RECIPE[name])}"
                                              for name in CHAIN) + ".")


def keep_given(cfg, given):
    """cfg with given (the fields set on purpose, given_fields) attached: replace() builds a Config without it."""
    cfg.given = frozenset(given)
    return cfg


def stage_or_chain(cfg):
    """--stage auto or all resolved: 'all' (run_all) for --stage all, and for auto with a real model on a GPU;
    auto otherwise (no GPU, --model tiny, --init-from, torchrun) is 'rl'. Without --model the chain takes
    choose_policy's model; where that is the demo policy (no network, no copy), its fallback runs rl alone."""
    given = given_fields(cfg)
    device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if cfg.stage == "auto" and (device != "cuda" or cfg.model == "tiny" or cfg.init_from or "RANK" in os.environ):
        return keep_given(replace(cfg, stage="rl"), given)
    if not cfg.model:
        cfg = choose_policy(replace(cfg, device=device), given)
        if cfg.init_from == str(DEMO_POLICY):  # no real model here: the demo, as its line said
            return keep_given(replace(cfg, stage="rl"), given)
    return keep_given(replace(cfg, stage="all", device=device), given)


def model_origin(model, given):
    """Where the model comes from, in words, for the plan."""
    if "model" not in given and model == DEFAULT_MODEL:
        return "the default, from the hub"
    if "model" not in given and model.startswith(str(FETCHED)):
        return "the default's offline copy, bench/fetch_model.py's"
    path = Path(model).expanduser()
    return ("random and offline: for tests" if model == "tiny" else "--model, a GGUF file transformers dequantises"
            if path.suffix == ".gguf" else "--model, a local folder" if path.is_dir() else "--model, from the hub")


def chain_config(cfg, given):
    """(the chain's config, saved as OUT/config.json with stage 'all', the fields that count as chosen). A new chain
    takes RECIPE['all'] for each field not given, and with --task all from this repo's tasks/ the training tasks of
    bench/real/split.json; a resumed one reads them back as saved. Chosen: the fields given, or different from
    Config's default (a resumed chain's flags of before); RECIPE's per-stage values fill the others."""
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda, but this machine has no usable CUDA device (use --device cpu)")
    cfg = replace(cfg, stage="all", out=cfg.out or time.strftime("runs/%Y%m%d-%H%M%S"))
    if not (cfg.resume and (Path(cfg.out) / "config.json").is_file()):
        cfg = replace(cfg, **{k: v for k, v in RECIPE["all"].items() if k not in given})
        if cfg.task == "all" and Path(cfg.tasks_dir).resolve() == evaluator.TASKS_DIR.resolve():
            cfg = replace(cfg, task=",".join(json.loads(SPLIT.read_text())["train"]))
    check_config(cfg)
    chosen = set(given) | {f.name for f in fields(Config) if getattr(cfg, f.name) != getattr(Config(), f.name)}
    return cfg, chosen


def stage_config(cfg, chosen, name, init_from):
    """The Config of the chain's stage `name`: the chain's, RECIPE[name] for the fields not chosen, its steps
    (sft: --sft-steps, sftc: --sftc-steps, rl: --steps), its folder OUT/name, from init_from."""
    recipe = {k: v for k, v in RECIPE[name].items() if k not in chosen}
    steps = {"sft": cfg.sft_steps, "sftc": cfg.sftc_steps}.get(name, cfg.steps)
    stage = replace(cfg, **recipe, stage=CHAIN[name], steps=steps, init_from=init_from, resume=False,
                    out=str(Path(cfg.out) / name))
    return keep_given(stage, chosen | set(recipe) | {"stage", "steps", "init_from", "out"})


def stage_length(stage):
    """(the last step of a stage, what its steps are called)."""
    return (stage.ssl_rounds, "rounds") if stage.stage == "ssl" else (stage.steps, "steps")


def print_plan(cfg, chosen, tasks, folders, origin):
    """The chain's first lines: model, tasks (training and held out), stage-1 data and what it leaves out, then per
    stage its length, its settings and the time it took for the 1.5B on a GPU (MEASURED_S)."""
    heldout = (json.loads(SPLIT.read_text())["heldout"]
               if cfg.task == ",".join(json.loads(SPLIT.read_text())["train"]) else [])
    path = Path(cfg.data)
    if not path.is_file():
        raise ConfigError(f"--data {cfg.data}: no such file (one JSON line per measured variant: README, the stages)")
    every = working_records(read_jsonl(path))
    trained = working_records(every, cfg.sft_min_speedup)
    without = [t for t in tasks if t not in {r.get("task") for r in trained}]
    held = (f"{len(heldout)} held out (bench/real/split.json), never trained: {', '.join(heldout)}" if heldout
            else "held out: none (--task chose the tasks)")
    print(f"plan: {' -> '.join(folders)}, each in its folder of {cfg.out}, each from the one before; "
          f"`python rl.py --resume --out {cfg.out}` continues a cut one, then runs the rest\n"
          f"  model {cfg.model} ({origin}), LoRA rank {cfg.lora_rank} on {cfg.lora_targets}, on {cfg.device}\n"
          f"  {len(tasks)} training tasks: {', '.join(tasks)}\n  {held}\n"
          f"  stage-1 data {cfg.data}: {len(every)} working variants, sft trains on the {len(trained)} measured at "
          f"least {cfg.sft_min_speedup:g}x; training tasks with none of them (ssl and rl alone train them): "
          f"{', '.join(without) if without else 'none'}")
    for name in folders:
        stage, (low, high, where) = stage_config(cfg, chosen, name, ""), MEASURED_S[name]
        n, unit = stage_length(stage)
        if stage.stage == "sft":
            what = f"{n} AdamW steps of {stage.sft_batch} records" + " (+ contrastive prompts)" * stage.sft_contrastive
        else:
            per = min((stage.ssl_tasks if stage.stage == "ssl" else stage.tasks_per_step) or len(tasks), len(tasks))
            what = f"{n} {unit} of {per} tasks x {stage.group_size} samples"
        when = (f"~{duration(low * n)} to {duration(high * n)} ({low:g}-{high:g} s a {unit[:-1]} for the 1.5B, "
                f"{where}, bench/RESULTS.md)" if cfg.device == "cuda" else "time: not measured on a CPU")
        print(f"  {name:<5} {what}, lr {stage.lr:g}: {when}", flush=True)


def duration(seconds):
    return (f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min" if seconds < 5400
            else f"{seconds / 3600:.1f} h")


def shares(samples):
    """(pass rate: successes, ok and not a reference copy; the share faster than eager: successes above 1.0x)."""
    ok = [s for s in samples if s["status"] == "ok" and not s.get("copy")]
    return len(ok) / max(len(samples), 1), sum((s.get("speedup") or 0) > 1 for s in ok) / max(len(samples), 1)


def stage_numbers(stage):
    """Per logged step of a stage: (loss,) for sft, shares() of its samples for ssl and rl."""
    log = read_jsonl(Path(stage.out) / "log.jsonl")
    samples = read_jsonl(Path(stage.out) / "samples.jsonl")
    return [(r["loss"],) if stage.stage == "sft" else shares([s for s in samples if s["step"] == r["step"]])
            for r in log]


def beating_eager(stage, n_tasks):
    """'K of N (F found here)': the tasks whose best code in the stage's database at its end is faster than eager,
    and how many of those this stage found (not --init-from's, nor the stage-1 data's)."""
    log = read_jsonl(Path(stage.out) / "log.jsonl")[-1:] or [{}]
    faster = [name for name, speedup in log[0].get("best_speedup", {}).items() if speedup > 1]
    return f"{len(faster)} of {n_tasks} ({sum(log[0]['best_step'].get(name, 0) > 0 for name in faster)} found here)"


def stage_summary(name, stage, n_tasks):
    """One line at a stage's end: sft's loss; ssl's and rl's shares() over all its samples, and beating_eager."""
    numbers, unit = stage_numbers(stage), stage_length(stage)[1]
    if stage.stage == "sft":
        return f"{name} done: {len(numbers)} steps, loss {numbers[0][0]:.3f} -> {numbers[-1][0]:.3f} (no samples)"
    samples = read_jsonl(Path(stage.out) / "samples.jsonl")
    return (f"{name} done: {len(numbers)} {unit}, {len(samples)} samples: pass {shares(samples)[0]:.1%}, faster than "
            f"eager {shares(samples)[1]:.1%}; tasks with a code faster than eager: {beating_eager(stage, n_tasks)}")


def chain_table(stages, n_tasks):
    """The run's last lines: per stage ({name: its Config}) its first and last step (sft: loss; ssl, rl: pass rate,
    share faster than eager) and beating_eager."""
    rows = ["stage  steps  first step -> last step                      tasks faster than eager"]
    for name, stage in stages.items():
        numbers = stage_numbers(stage)
        if not numbers:
            continue
        first, last = numbers[0], numbers[-1]
        if stage.stage == "sft":
            change, beat = f"loss {first[0]:.3f} -> {last[0]:.3f}", "-"
        else:
            change = f"pass {first[0]:.1%} -> {last[0]:.1%}, faster {first[1]:.1%} -> {last[1]:.1%}"
            beat = beating_eager(stage, n_tasks)
        rows.append(f"{name:<6} {len(numbers):>5}  {change:<44} {beat}")
    return "\n".join(rows)



def run_all(cfg, reward_fn=None):
    """--stage all: sft on --data (the shipped stage-1 data by default) -> ssl -> sftc (sft on plain and contrastive
    prompts: stage 3's question, bench/RESULTS.md) -> rl, each by run() in its folder OUT/<name>, each from the one
    before (--init-from). A stage whose log reached its steps is not run again; a cut one needs --resume, which
    continues it and runs the rest."""
    given = given_fields(cfg)
    origin = model_origin(cfg.model, given)
    cfg, chosen = chain_config(cfg, given)
    tasks = load_tasks(cfg)  # a bad --task fails here, before anything is written
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    save_json(Path(cfg.out) / "config.json", asdict(cfg))
    folders = [name for name in CHAIN if name != "sftc" or cfg.sftc_steps]
    print_plan(cfg, chosen, [name for name, _ in tasks], folders, origin)
    init_from, stages = cfg.init_from, {}
    for name in folders:
        stage = stages[name] = stage_config(cfg, chosen, name, init_from)
        log = read_jsonl(Path(stage.out) / "log.jsonl")
        done, started = (log[-1]["step"] if log else 0), (Path(stage.out) / "log.jsonl").exists()
        last, unit = stage_length(stage)
        if done >= last:
            print(f"{name}: finished in {stage.out} ({done} {unit}): not run again")
        elif started and not cfg.resume:
            raise ConfigError(f"{stage.out} holds {done} of {name}'s {last} {unit}: "
                              f"`python rl.py --resume --out {cfg.out}` continues it, then runs the rest")
        else:
            try:
                run(keep_given(replace(stage, resume=started), stage.given), reward_fn=reward_fn)
            except Interrupted as e:  # its line names the stage's folder: the chain's own goes on from there
                rest = folders[folders.index(name) + 1:]
                raise Interrupted(f"{e}".replace(f"--out {stage.out} ", f"--out {cfg.out} ").replace(
                    "interrupted in", f"interrupted in {name}", 1) + f", then runs {' and '.join(rest)}" * bool(rest)
                    ) from None
            finally:  # the next stage loads its own policy: decode's cache must not keep this one's on the GPU
                DECODERS.clear()
                gc.collect()  # whatever cycles still hold this stage's policy
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            print(stage_summary(name, stage, len(tasks)), flush=True)
        init_from = stage.out
    print(chain_table(stages, len(tasks)), flush=True)
    return cfg

def main(argv=None):
    """The command line: errors and Ctrl-C end in one line on stderr (exit status 1, or 130 for Ctrl-C or SIGTERM)."""
    config = parse_config(argv)
    signal.signal(signal.SIGTERM, stop_as_ctrl_c)
    try:
        run(config)
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
