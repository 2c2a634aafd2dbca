"""runs.py: a run's plumbing, kept out of the method's way in rl.py: the command line's help, the config's checks and
the config decided (decide_config), the policy when --model is not given (the hub, bench/fetch_model.py's copy, the demo
policy), the measurement protocol (one evaluator call per step, the paper's re-check and rounding: measure), the run
folder's files (exemplars.jsonl and best/, log.jsonl, samples.jsonl, progress.png, ckpt.pt), builds started while the
policy decodes, Ctrl-C and resume, and stage-1 data (--data's records). (--stage all's chain: chain.py.)

`cfg` is rl.Config. Rank 0 alone writes files under torchrun (engine.is_main).
"""
import argparse
import importlib.util
import inspect
import json
import math
import os
import pickle
import random
import re
import signal
import textwrap
import threading
import time
from collections import Counter
from contextlib import contextmanager
from copy import copy
from dataclasses import asdict, fields, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import cudal1
import engine
import evaluator
from fences import uses_extension
from prompts import extract_code

# ---------------------------------------------------------------------------- files


class ConfigError(ValueError):
    """A config value of the wrong type or out of range, or a file it names that cannot be used as it is."""


def save_json(path, obj):
    """Write JSON atomically (tmp file + os.replace)."""
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def changed_fields(cfg):
    """The fields of a config (a dataclass) that differ from their defaults: what it sets on purpose."""
    return {f.name for f in fields(cfg) if getattr(cfg, f.name) != f.default}


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

# ---------------------------------------------------------------------------- the command line


def field_comments(config_class):
    """{field: its one-line comment} read from the config class's source, so --help shows the same words."""
    return dict(re.findall(r"^    (\w+): [^#\n]*#\s*(.*)$", inspect.getsource(config_class), re.M))


GROUPS = {  # --help's sections, in this order; a field in none is listed under "other"
    "run": "task tasks_dir steps device out resume seed tasks_per_step ckpt_every",
    "model": "model lora_rank lora_alpha lora_targets",
    "sampling": "group_size gen_batch gen_cache temperature top_p max_new_tokens contrastive n_exemplars bucket_width "
                "tau exemplar_mode exemplar_max_chars",
    "reward": "fail_reward copy_reward log_speedup round_to_one recheck_above reward_normalize reward_clip",
    "GRPO and AdamW": "std_normalize adv_std_floor loss_variant mask_truncated lr weight_decay beta eps_low eps_high "
                      "mu minibatches grad_accum recompute max_grad_norm optimizer_state warmup_steps update",
    "evaluation": "eval_timeout eval_build_timeout eval_time_budget eval_precision eval_tol eval_jobs build_ahead",
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


def here_defaults(demo):
    """{field: value} that a run without --model takes on this machine where the default does not apply: the demo
    policy's (demo: its preset) on a machine without a GPU (fallback_to_demo). On a GPU it depends on the hub, which
    --help leaves alone."""
    if torch.cuda.is_available():
        return {}
    return dict(model="tiny", init_from=os.path.relpath(DEMO_POLICY), device="cpu", task="cpu/*", **demo)

def flag_parser(config_class, recipe_text, demo):
    """The command line's parser: a flag per field of config_class (its comment as the help, grouped as GROUPS
    says), the choices, the recipe of --stage all and EXAMPLES below; demo: the demo preset. Flags not given are
    left out of what it parses (argparse.SUPPRESS), so that the caller knows which were given."""
    here = here_defaults(demo)
    note = ("On this machine (no GPU) a run without --model falls back to the demo policy: a flag you do not give "
            "takes its value 'here' where one is shown." if here else "On a GPU without network or offline copy, a "
            "run without --model falls back to the demo policy (rl.PRESETS['demo'] sets flags not given).")
    about = f"CUDA-L1: collect, sft, ssl (self-supervised), rl (contrastive RL). {note} Booleans are --flag / --no-flag."
    p = evaluator.ArgumentParser(description=textwrap.fill(about, 100),
                                 epilog=textwrap.fill(recipe_text, 100) + "\n\n" + EXAMPLES,
                                 usage="%(prog)s [--task T] [--steps N] [--model M] [--out DIR] [--resume] [options]",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
                                 argument_default=argparse.SUPPRESS)
    comments, defaults = field_comments(config_class), config_class()
    grouped = {name: group for group, names in GROUPS.items() for name in names.split()}
    sections = {group: p.add_argument_group(group) for group in [*GROUPS, "other"]}
    for f in fields(config_class):
        kw = dict(action=argparse.BooleanOptionalAction) if f.type is bool else dict(type=f.type)
        value = f"default: {getattr(defaults, f.name)!r}" + (f"; here: {here[f.name]!r}" if f.name in here else "")
        sections[grouped.get(f.name, "other")].add_argument(
            "--" + f.name.replace("_", "-"), choices=CHOICES.get(f.name),
            help=f"{comments.get(f.name, '')} ({value})".replace("%", "%%"),
            **kw)  # (argparse formats help with %: a comment's "2%" would break --help)
    return p


CHOICES = {"stage": ("auto", "all", "collect", "sft", "ssl", "rl"), "device": ("auto", "cpu", "cuda"),
           "loss_variant": ("grpo", "dapo", "drgrpo"), "exemplar_mode": ("contrastive", "random", "best"),
           "gen_cache": ("auto", "dynamic", "static", "graphs"), "optimizer_state": ("auto", "keep", "fresh"),
           "recompute": ("auto", "on", "off"), "build_ahead": ("auto", "on", "off")}


def check_config(cfg):
    """Raise ConfigError unless every field has its declared type and a legal value."""
    for f in fields(cfg):
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
    if cfg.mu * cfg.minibatches == 1 and (cfg.eps_low, cfg.eps_high) != (type(cfg).eps_low, type(cfg).eps_high):
        raise ConfigError("--eps-low/--eps-high cannot act with one AdamW step per batch (--mu 1 --minibatches 1: "
                          "every ratio is 1): give --minibatches M or --mu K > 1")
    if cfg.log_speedup and cfg.fail_reward >= math.log(cudal1.LOG_FLOOR):
        raise ConfigError(f"--log-speedup with fail_reward {cfg.fail_reward} >= log({cudal1.LOG_FLOOR}) ranks a failure with "
                          "a correct code (log rewards are at least that): give --fail-reward below it, e.g. -2, or "
                          "--no-log-speedup")
    if cfg.copy_reward != "fail" and not np.isfinite(as_number(cfg.copy_reward)):
        raise ConfigError(f"copy_reward must be a number or 'fail' (= fail_reward), got {cfg.copy_reward!r}")
    if cfg.stage == "sft" and not cfg.data:
        raise ConfigError("--stage sft needs --data FILE.jsonl (records with ref_code and completion or code)")
    return cfg


def parse_flags(config_class, argv, recipe_text, demo):
    """(config, given) from the command line; given names the flags it set, which nothing decide_config decides
    overrides. --resume reads OUT/config.json under the flags given. Unknown flags and bad values exit with one line."""
    p = flag_parser(config_class, recipe_text, demo)
    given = vars(p.parse_args(argv))
    try:
        if given.get("resume") and not given.get("out"):
            raise ConfigError("--resume needs --out DIR, the run folder to continue")
        saved = saved_config(Path(given["out"]) / "config.json", config_class) if given.get("resume") else {}
        return check_config(config_class(**{**saved, **given})), frozenset(given)
    except ConfigError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")  # one line: the usage of 47 flags would bury it


def as_number(text):
    """float(text), or nan when it is not a number."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def saved_config(path, config_class):
    """{field: value} of a run's config.json, to resume it (ConfigError if missing, not JSON or unknown fields)."""
    if not Path(path).is_file():
        raise ConfigError(f"{path} does not exist: nothing to resume")
    try:
        saved = json.loads(Path(path).read_text())
    except ValueError as e:
        raise ConfigError(f"{path} is not valid JSON ({e}): restore it, or start a new --out") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"{path} holds no config (a JSON object of Config fields): restore it, or start a new --out")
    unknown = set(saved) - {f.name for f in fields(config_class)}
    if unknown:
        raise ConfigError(f"{path}: unknown config fields {sorted(unknown)}")
    return saved

# ---------------------------------------------------------------------------- the policy when --model is not given: the hub, an offline copy, the demo


DEFAULT_MODEL = "Qwen/Qwen2.5-Coder-1.5B-Instruct"


FETCHED = Path.home() / ".cache" / "cudal1" / "models"  # bench/fetch_model.py's offline GGUFs, the preferred first:


OFFLINE_MODELS = ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


DEMO_POLICY = Path(__file__).resolve().parent / "bench" / "demo" / "policy"  # tiny after sft + ssl (bench/demo)
SPLIT = DEMO_POLICY.parents[1] / "real" / "split.json"  # {"train": [30 tasks], "heldout": [13, never trained]}


def choose_policy(cfg, given, demo):
    """The policy when --model is not given, in one place, saying in one line why whenever it is not the default:

        GPU, hub reachable or the model in its cache   DEFAULT_MODEL from the hub
        GPU, no hub, bench/fetch_model.py's copy       that GGUF (the 1.5B first)
        GPU, no hub, no copy                           the demo policy (fallback_to_demo), with how to fetch a copy
        CPU (no GPU, or --device cpu)                  the demo policy
    and in run(): a default that fails to load falls back to the demo policy too."""
    if cfg.device == "cpu":
        return fallback_to_demo(cfg, "--device cpu" if torch.cuda.is_available() else "no GPU", given, demo)
    if engine.hub_reachable() or engine.hub_cached(DEFAULT_MODEL):  # asked at once, not after the hub client's retries
        return replace(cfg, model=DEFAULT_MODEL)
    local = next((FETCHED / f for f in OFFLINE_MODELS if (FETCHED / f).is_file()), None)
    if local:
        print(f"cudal1: no network to the model hub: the policy is {local} (bench/fetch_model.py's copy)")
        return replace(cfg, model=str(local))
    why = "no network to the model hub, no offline copy (bench/fetch_model.py qwen-1.5b)"
    return fallback_to_demo(cfg, why, given, demo)


def fallback_to_demo(cfg, why, given, demo):
    """Say in one line why the default model is not used, and run the shipped demo policy (the tiny model after
    sft + ssl on bench/demo/stage1.jsonl: weights and exemplars as --init-from) on the CPU tasks instead, with the
    demo preset's values (temperature, lr, ...) for every field not in given (set on purpose: given or resumed; the
    config lines after it show them). --task all becomes the CPU tasks, unless --tasks-dir names other tasks.
    --stage sft falls back too (collect's default policy, whose data sft trains on), and says so."""
    task = "cpu/*" if cfg.task == "all" and "tasks_dir" not in given else cfg.task
    flags = {k: v for k, v in demo.items() if k not in given}
    what = f"--stage sft trains it on --data {cfg.data}" if cfg.stage == "sft" else f"--task {task}"
    if cfg.stage != "sft":
        evaluator.find_tasks(task, cfg.tasks_dir)  # a bad --task is said alone, not after this line
    print(f"cudal1: {why}: demo policy bench/demo/policy (+{len(flags)} flags) on cpu, {what}")
    return replace(cfg, model="tiny", init_from=str(DEMO_POLICY), device="cpu", task=task, **flags)


def from_earlier_stage(cfg, given):
    """cfg with what the --init-from stage it starts from decides (when it reads that stage's weights, not a resume's
    own checkpoint): its model, and its LoRA adapters' shape (inherit_lora). ConfigError when it has no ckpt.pt."""
    reads = engine.needs_init_from(cfg)
    if reads and not (Path(cfg.init_from) / "ckpt.pt").is_file():
        raise ConfigError(f"--init-from {cfg.init_from}: no ckpt.pt there (a collect folder has none: give its "
                          "collected.jsonl to --stage sft as --data)")
    earlier = json.loads((Path(cfg.init_from) / "config.json").read_text()) if reads else {}
    cfg = inherit_lora(cfg, earlier, given)
    return replace(cfg, model=earlier["model"]) if "model" in earlier and not cfg.model else cfg


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


def decide_config(cfg, given=None, *, presets, demo_because=""):
    """The config that runs, decided here alone: config.json and the printed config lines are what it returns.
    Each field is the first of: the flags given (given: the fields set on purpose, the command line's or
    changed_fields); a resumed run's config.json; the preset (presets, rl.PRESETS: chain for --stage all, demo
    where no real model runs, said in one line); Config's default. Then what the machine and an earlier stage
    decide, in order:

        stage     auto: all (the chain) for a real model on a GPU without --init-from, else rl
        device    auto: cuda when there is a GPU
        model     "": the model an --init-from stage trained, else the hub's, an offline copy or the demo policy
                  (demo_because: the reason no real model runs, when run() found that the chosen one did not load)
        LoRA      an --init-from stage's adapters keep their rank, alpha and targets
        AdamW     optimizer_state auto: --init-from's moments kept for the same objective, else fresh
        torchrun  the run folder of rank 0 (engine.init_distributed)
    """
    given = changed_fields(cfg) if given is None else set(given)
    saved = Path(cfg.out) / "config.json" if cfg.out else None
    kept = given | (set(saved_config(saved, type(cfg))) if cfg.resume and saved and saved.is_file() else set())
    device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda, but this machine has no usable CUDA device (use --device cpu)")
    cfg = replace(check_config(cfg), device=device, out=cfg.out or time.strftime("runs/%Y%m%d-%H%M%S"))
    if cfg.stage == "auto":
        alone = device != "cuda" or cfg.model == "tiny" or cfg.init_from or "RANK" in os.environ
        cfg = replace(cfg, stage="rl" if alone else "all")
    policy = (lambda c: fallback_to_demo(c, demo_because, kept, presets["demo"])) if demo_because else (
        lambda c: choose_policy(c, kept, presets["demo"]))  # (the demo preset comes with the demo policy)
    if cfg.stage == "all" and not cfg.model:
        cfg = policy(cfg)
        if cfg.init_from == str(DEMO_POLICY):  # no real model here: the demo alone, as its line said
            cfg = replace(cfg, stage="rl")
    if cfg.stage == "all":  # the chain preset, and split.json's training tasks for --task all (not a resumed task)
        cfg = replace(cfg, **{k: v for k, v in presets["chain"].items() if k not in kept})
        default_tasks = Path(cfg.tasks_dir).resolve() == evaluator.TASKS_DIR.resolve()
        if cfg.task == "all" and "task" not in kept - given and default_tasks:
            cfg = replace(cfg, task=",".join(json.loads(SPLIT.read_text())["train"]))
        return check_config(cfg)
    if "RANK" in os.environ and cfg.stage != "rl":
        raise ConfigError(f"torchrun runs --stage rl only; run --stage {cfg.stage} as one process")
    cfg = from_earlier_stage(replace(cfg, out=str(Path(cfg.out).absolute())), given)  # (absolute: for resume)
    cfg = resolve_optimizer_state(cfg if cfg.model else policy(cfg))
    return engine.init_distributed(cfg)  # under torchrun: before the policy lands on this rank's GPU


def policy_or_demo(cfg, tasks, asked, given, presets):
    """(cfg, tasks, model, tok) of the decided config; when the policy chosen for it (asked: the config before
    decide_config; no --model, --init-from or torchrun) fails to load, the config is decided again with the demo
    policy, said in one line."""
    try:
        return (cfg, tasks, *engine.initial_policy(cfg))
    except engine.PolicyError as e:
        if asked.model or asked.init_from or dist.is_initialized():  # (torchrun: the group is on cfg.device)
            raise
        print(f"cudal1: {str(e).splitlines()[0]}")
        cfg = decide_config(replace(asked, out=cfg.out), given, presets=presets,
                            demo_because=f"{DEFAULT_MODEL} did not load")
        return (cfg, load_tasks(cfg), *engine.initial_policy(cfg))


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

# ---------------------------------------------------------------------------- tasks and their measurement: the paper's timer rules


def load_tasks(cfg):
    """[(name, reference source)] of the selected tasks (evaluator.TaskError when none match; ConfigError when torchrun
    has more processes than a step has tasks)."""
    paths = evaluator.find_tasks(cfg.task, cfg.tasks_dir)
    tasks = [(evaluator.task_name(p, cfg.tasks_dir), evaluator.load_task(p)) for p in paths]
    for name, src in tasks:  # one that cannot fit the device at all is refused in one line, before any work
        evaluator.task_memory(src, cfg.device, name)
    if dist.is_initialized() and min(cfg.tasks_per_step, len(tasks)) < dist.get_world_size():
        raise ConfigError(f"torchrun with {dist.get_world_size()} processes needs as many tasks per step, got "
                          f"{min(cfg.tasks_per_step, len(tasks))}: each process generates one task's group or more")
    return tasks


def correctness_only(cfg):
    """ssl's evaluator options: checked in full, barely timed (its successes are then timed in full, measure)."""
    return {**evaluator.BARELY_TIMED, "max_rounds": cfg.ssl_check_rounds}


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
    results = engine.gather(evaluator.evaluate_many(
        mine, device=device, jobs=cfg.eval_jobs or None, on_result=each, progress=engine.is_main(),
        call_timeout_s=cfg.eval_timeout, build_timeout_s=cfg.eval_build_timeout, tol=cfg.eval_tol, phases=phases,
        time_copies=False,  # a copy earns copy_reward, whatever its speed
        **(timing or dict(time_budget_s=cfg.eval_time_budget, precision=cfg.eval_precision))))
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
            if not cudal1.is_success(res) or res.speedup is None or res.speedup < results[i].speedup:
                results[i] = res
    for res in results:
        res.speedup = rounded(cfg, res.speedup) if res.status == "ok" else res.speedup
    return results


def evaluate_again(cfg, pairs, results, which, phases=None):
    """{index: a new result} for the timed successes that which(result) picks, evaluated again with the normal time
    budget (each distinct code once)."""
    picked = [i for i, r in enumerate(results) if cudal1.is_success(r) and r.speedup is not None and which(r)]
    return dict(zip(picked, evaluate_pairs(cfg, [pairs[i] for i in picked], None, phases))) if picked else {}

# ---------------------------------------------------------------------------- the exemplar database and best/


def write_best(cfg, name, speedup, code, step):
    """OUT/best/<task with / as __>.py: the code under a header giving its measured speedup (rank 0 writes it), for
    a kernel faster than the reference only: a task whose best is slower has no file there."""
    if not engine.is_main() or speedup <= 1:
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
    engine.barrier()  # under torchrun: rank 0's restore() has cut the file back to the checkpoint
    db = cudal1.ExemplarDB(Path(cfg.out) / "exemplars.jsonl")
    engine.barrier()  # every rank has read the file; from now on rank 0 alone appends to it
    if not engine.is_main():
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


def say_start(cfg, tasks, model, start):
    """The stage's first line: its tasks, the model's size (and its LoRA adapters'), the step it starts from."""
    lora = f" ({sum(p.numel() for p in engine.trainable(model)) / 1e6:.2f}M in LoRA adapters)" * bool(cfg.lora_rank)
    print(f"stage {cfg.stage}: {len(tasks)} tasks, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M "
          f"parameters{lora}, from step {start}, out {cfg.out}")


# ---------------------------------------------------------------------------- the log: log.jsonl, samples.jsonl, the step's line


def task_stats(batch, results):
    """{task: {"pass": share of its G samples that are successes (ok, not a copy), "copies": how many are copies of
    the reference, "mean_speedup": the successes' mean measured speedup or None}}."""
    G, out = len(results) // len(batch), {}
    for i, (name, _) in enumerate(batch):
        mine = results[i * G:(i + 1) * G]
        ok = [r.speedup for r in mine if cudal1.is_success(r) and r.speedup is not None]
        out[name] = {"pass": len(ok) / G, "copies": sum(map(cudal1.is_copy, mine)),
                     "mean_speedup": float(np.mean(ok)) if ok else None}
    return out


def append_log(cfg, rec):
    """One record as a line of OUT/log.jsonl (rank 0 writes it)."""
    if not engine.is_main():
        return
    with open(Path(cfg.out) / "log.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


def append_samples(cfg, step, batch, rollouts, results):
    """Every sample of the step as a line of OUT/samples.jsonl (rank 0): its task, the reply, its status, speedup,
    speedup kind and the first 300 characters of the reason, so that what the policy wrote, and why it failed,
    can be read after the run (the log holds counts only). ~3 KB a sample of 1,000 tokens."""
    if not engine.is_main() or not results:
        return
    texts = [t for r in rollouts for t in r["texts"]]  # (B*G) order, as results
    G = len(texts) // len(batch)
    with open(Path(cfg.out) / "samples.jsonl", "a") as f:
        for i, (text, res) in enumerate(zip(texts, results)):
            f.write(json.dumps(dict(step=step, task=batch[i // G][0], status=res.status, speedup=res.speedup,
                                    kind=res.speedup_kind, copy=cudal1.is_copy(res), reason=res.reason[:300],
                                    reply=text)) + "\n")


def group_signal(cfg, adv, results):
    """The step's group-variance diagnostic: groups, those with a non-zero advantage (GRPO learns from them alone),
    those whose correct samples differ in speed by more than the timing noise (round_to_one; None without results),
    and the flat ones, whose zero advantages move nothing (skipped)."""
    groups, G, speed = adv.view(-1, cfg.group_size), cfg.group_size, None  # (B, G)
    signal = int((groups != 0).any(1).sum())
    if results:
        fast = [[r.speedup for r in results[i:i + G] if cudal1.is_success(r) and r.speedup]
                for i in range(0, len(results), G)]
        speed = sum(len(s) > 1 and max(s) > min(s) * (1 + cfg.round_to_one) for s in fast)
    return dict(groups=len(groups), groups_signal=signal, groups_speed=speed, groups_flat=len(groups) - signal)


def log_step(cfg, step, batch, rollouts, raw, results, best, stats, clock, phases=None):
    """Append the step's record to OUT/log.jsonl and print the fixed-order line; returns the record.
    clock: time.perf_counter() at the step's start, after generate, after evaluate, after the update; phases: the
    evaluator's build_s, evaluate_s, build_wait_s, builds, build_failed and compiled (evaluate_many), and
    built_ahead and ahead_wait_s (BuildsAhead). The line ends with where the step's time went: generation (its tokens
    per second, every sample's tokens up to its eos; the builds started as rows ended), the builds (on a GPU they run
    alongside the evaluations: the part the GPU waited for), the evaluation, the update.

    mean/max_reward are raw rewards (speedup, fail_reward or copy_reward); pass_rate is the share of successes
    (status ok, not a copy of the reference; with a toy reward_fn: the share of positive rewards); copies is the
    number of samples that are the reference renamed; cut the replies cut at max_new_tokens (no eos); best_speedup
    is each task's best combined score so far and best_step the step that found it (0: carried from --init-from);
    per_task is task_stats of this step's samples.
    """
    t0, t1, t2, t3 = clock
    gen_tokens = sum(int(k.sum()) for r in rollouts for k in r["mask"])
    times = dict(gen_s=t1 - t0, gen_tokens=gen_tokens, gen_tok_s=gen_tokens / max(t1 - t0, 1e-9), eval_s=t2 - t1,
                 **(phases or {}), update_s=t3 - t2, step_s=time.perf_counter() - t0)
    n_ok = sum(map(cudal1.is_success, results)) if results else int((raw > 0).sum())
    tokens = gen_tokens / sum(len(r["mask"]) for r in rollouts)
    rec = dict(step=step, tasks=[name for name, _ in batch], mean_reward=float(raw.mean()),
               max_reward=float(raw.max()), pass_rate=n_ok / len(raw), copies=sum(map(cudal1.is_copy, results)),
               best_speedup={name: b[0] for name, b in sorted(best.items())},
               best_step={name: b[2] for name, b in sorted(best.items())},
               per_task=task_stats(batch, results) if results else {},
               status=dict(Counter(r.status for r in results)), mean_tokens=tokens,
               cut=sum(int(r["cut"].sum()) for r in rollouts if "cut" in r), **stats, **times)
    append_log(cfg, rec)
    append_samples(cfg, step, batch, rollouts, results)
    speedup, _, found = max(best.values(), key=lambda b: b[0]) if best else (None, None, None)
    top = f"{speedup:.2f}x{' from --init-from' * (found == 0)}" if best else "-"  # step 0: the earlier stage's code
    built = (f" (builds {times['build_s']:.1f} s, {times['build_wait_s']:.1f} s of it waited for: {times['builds']}, "
             f"{times['compiled']} compiled, {times['build_failed']} failed, the rest cached)" if times.get("builds")
             else "")
    ahead = (f"; {times['built_ahead']} built as their rows ended, {times['ahead_wait_s']:.1f} s waited for after"
             if times.get("built_ahead") else "")
    groups = (f" | signal {rec['groups_signal']}/{rec['groups']}"
              + (f" ({rec['groups_speed']} by speed)" if rec.get("groups_speed") is not None else "")
              + f", {rec['groups_flat']} flat" if "groups" in rec else "")
    print(f"step {step:4d} | reward {rec['mean_reward']:+.3f} | pass {rec['pass_rate']:6.1%}{groups} | best {top} | "
          f"{times['step_s']:.1f} s/step: generate {times['gen_s']:.1f} s ({times['gen_tok_s']:,.0f} tok/s{ahead}), "
          f"evaluate {times['eval_s']:.1f} s{built}, update {times['update_s']:.1f} s", flush=True)
    return rec

@contextmanager
def builds_ahead(cfg, phases):
    """BuildsAhead for the decoding inside, when phases is a dict (an evaluation follows) and build_ahead is on (auto:
    on CUDA's decoder), else None; after it, the builds' counts and wait into phases (an exception: builds killed)."""
    ahead = phases is not None and (cfg.build_ahead == "on" or cfg.build_ahead == "auto" and cfg.device == "cuda")
    builds = BuildsAhead(cfg) if ahead else None
    try:
        yield builds
    except BaseException:
        if builds:
            builds.wait(cancel=True)
        raise
    if builds:
        phases.update(builds.wait())


class BuildsAhead:
    """A step's builds started while the policy still decodes: add(ref, reply) as each row ends queues the reply's
    code, a thread hands what is queued to evaluator.build_all (on all cores but two, at a lower priority: the
    decoder's host thread keeps its core), and the step's evaluate_many finds those builds in the cache. wait(),
    once decoding is over, lets the last ones finish (two builds of one source must not run at once) and returns
    {"built_ahead": replies with a build, "ahead_wait_s": the seconds waited}. Only builds run beside the decoder:
    no clock does, so no speedup is measured on a GPU that decodes."""

    def __init__(self, cfg):
        self.cfg, self.queued, self.count, self.closed, self.cancelled = cfg, [], 0, False, False
        self.ready = threading.Condition()
        self.thread = threading.Thread(target=self._build, name="cudal1-builds-ahead", daemon=True)
        self.thread.start()

    def add(self, ref, reply):
        code = extract_code(reply).code
        if code and uses_extension(code):
            with self.ready:
                self.queued.append((ref, code))
                self.count += 1
                self.ready.notify()

    def _build(self):
        while True:
            with self.ready:
                self.ready.wait_for(lambda: self.queued or self.closed)
                todo, self.queued = self.queued, []
                if not todo:
                    return
            try:  # (a build that fails here is built again, and its failure named, by evaluate_many)
                evaluator.build_all([code for _, code in todo], self.cfg.device, jobs=self.cfg.eval_jobs or None,
                                    refs={code: ref for ref, code in todo}, progress=False, nice=10,
                                    timeout=self.cfg.eval_build_timeout, cores=max(1, (os.cpu_count() or 2) - 2),
                                    cancel=lambda: self.cancelled)
            except Exception as e:  # the step goes on: evaluate_many builds what is not built
                print(f"cudal1: builds during decoding stopped ({type(e).__name__}: {e})", flush=True)
                return

    def wait(self, cancel=False):
        t0 = time.perf_counter()
        with self.ready:
            self.closed, self.cancelled = True, cancel  # cancel (a Ctrl-C): the running builds are killed
            self.ready.notify()
        self.thread.join()
        return dict(built_ahead=self.count, ahead_wait_s=time.perf_counter() - t0)


# ---------------------------------------------------------------------------- progress.png


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

# ---------------------------------------------------------------------------- checkpoints, Ctrl-C, resume


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


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the run checkpointed its last finished step; the message says so and how to go on."""


def save_checkpoint(cfg, model, opt, step, last):
    """At every ckpt_every-th step and at the last: OUT/ckpt.pt with weights, optimizer, RNG states, step; written to
    a tmp file then renamed (never half-written). After every step: progress.png (save_plot). Rank 0 writes them:
    the ranks' weights are the same."""
    if not engine.is_main():
        return
    due = step == last or bool(cfg.ckpt_every and step % cfg.ckpt_every == 0)
    if due:
        state = dict(step=step, model=engine.saved_weights(model), optim=opt.state_dict(),
                     rng=dict(torch=torch.get_rng_state(), numpy=np.random.get_state(), python=random.getstate(),
                              cuda=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None))
        path = Path(cfg.out) / "ckpt.pt"
        torch.save(state, str(path) + ".tmp")
        os.replace(str(path) + ".tmp", path)
    save_plot(cfg, force=due)


def checkpoint_interrupted(cfg, model, opt):
    """After a Ctrl-C: checkpoint the last logged step (finishing_step keeps the weights in step with the log);
    returns the one line that says what was kept."""
    resume = f"python rl.py --resume --out {cfg.out}"
    if cfg.stage == "collect":
        return f"interrupted in collect, which keeps no checkpoint: {resume} starts it over"
    log = read_jsonl(Path(cfg.out) / "log.jsonl") if engine.is_main() else []
    done = log[-1]["step"] if log else 0
    if not done:
        return f"interrupted in step 1, before any step finished: nothing to keep; {resume} starts it"
    save_checkpoint(cfg, model, opt, done, done)
    return f"interrupted in step {done + 1}: checkpoint saved at step {done}; {resume} continues from step {done + 1}"


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
        engine.load_weights(model, state["model"], out / "ckpt.pt")
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
    if not engine.is_main():
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


def resume_changes(cfg):
    """The line a resume says when flags given with it change config.json (they stay for later resumes: a plain
    --resume after --steps 300 runs to step 300), or ''."""
    path = Path(cfg.out) / "config.json"
    saved = json.loads(path.read_text()) if path.is_file() else {}  # (a Config built in Python may have none)
    changed = [f"{k} {saved[k]!r} -> {v!r}" for k, v in asdict(cfg).items() if k in saved and saved[k] != v and k != "resume"]
    return f"resume: config.json now holds {', '.join(changed)}: later resumes keep them" if changed else ""

def open_run(cfg, model, opt, defaults):
    """The run folder made ready once every check has passed: a resume's checkpoint loaded (read_checkpoint) and its
    records cut back to it (restore), config.json written and printed where it differs from `defaults` (the
    config that runs), --init-from's AdamW moments continued. Returns the first step to run, or None (said in a
    line) when the run has reached its last step."""
    out = Path(cfg.out)
    step, records, torn = read_checkpoint(cfg, model, opt) if cfg.resume else (0, {}, {})
    last, more = (cfg.ssl_rounds, "--ssl-rounds") if cfg.stage == "ssl" else (cfg.steps, "--steps")
    if step >= last:  # (a fresh run starts at step 0)
        print(f"run {out} finished at step {step}; give {more} N to go further", flush=True)
        return None
    if cfg.resume and resume_changes(cfg):  # from here on the folder changes
        print(resume_changes(cfg), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    if engine.is_main():
        save_json(out / "config.json", asdict(cfg))
    print(f"config (every field in {out / 'config.json'}), where it differs from the defaults:\n" +
          "\n".join(f"  {k} = {v!r}" for k, v in asdict(cfg).items() if v != defaults[k]))
    if importlib.util.find_spec("matplotlib") is None:
        print("cudal1: no progress.png in this run: matplotlib is not installed (pip install matplotlib)")
    start = restore(cfg, step, records, torn) + 1 if cfg.resume else 1
    if cfg.init_from and start == 1:  # no checkpoint of this run (a resume before its first): --init-from's moments
        kept = cfg.optimizer_state == "keep" and continue_optimizer(cfg, opt)
        print(f"optimizer: {'AdamW moments of ' if kept else 'a fresh AdamW, not the moments of '}{cfg.init_from} "
              f"(--optimizer-state {cfg.optimizer_state})")
    return start

# ---------------------------------------------------------------------------- stage-1 data


STAGE1_DATA = DEMO_POLICY.parents[1] / "real" / "stage1.jsonl"  # measured working variants of the 30 training tasks


def append_collected(path, task, prompt, rollout, results):
    """collect's records: a line of path per sample (task, ref_code, prompt, completion, code, its result)."""
    with open(path, "a") as f:
        for text, code, res in zip(rollout["texts"], rollout["codes"], results):
            f.write(json.dumps(dict(task=task[0], ref_code=task[1], prompt=prompt, completion=text, code=code,
                                    result=res.to_dict())) + "\n")


def working_records(recs, min_speedup=0.0):
    """The records that hold a working candidate: ref_code, completion or code, and no failed result; with
    min_speedup > 0, only those whose result measured a speedup of at least that."""
    res = [r.get("result") or {} for r in recs]
    return [r for r, x in zip(recs, res) if r.get("ref_code") and (r.get("completion") or r.get("code"))
            and x.get("status", "ok") == "ok" and not x.get("same_as_reference")
            and (x.get("speedup") or 0) >= min_speedup]


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
    recs = working_records(read_jsonl(cfg.data))
    keep = working_records(recs, cfg.sft_min_speedup)
    at_least = f", measured at least {cfg.sft_min_speedup:g}x" if cfg.sft_min_speedup else ""
    if not keep:
        raise ConfigError(f"--data {cfg.data}: missing, or no record holds ref_code and completion or code "
                          f"without a failed result{at_least}")
    print(f"sft: trains on {len(keep)} records of {cfg.data} that hold a working candidate{at_least}; all "
          f"{len(recs)} working ones go into the exemplar database")
    return recs, keep


def epoch_batches(cfg, n, epoch):
    """One pass over n examples in an order drawn from (seed, epoch): lists of sft_batch indices (the last shorter)."""
    order = np.random.default_rng([cfg.seed, epoch]).permutation(n).tolist()
    return [order[i:i + cfg.sft_batch] for i in range(0, n, cfg.sft_batch)]
