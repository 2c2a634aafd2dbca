"""chain.py: --stage all, CUDA-L1's stages one after another: sft on stage-1 data -> ssl -> sftc -> rl, each in its
folder OUT/<name>, each from the one before, with the recipe of bench/real/README.md (RECIPE) for every flag not
given. Its first lines (the plan: model, tasks, data, each stage's length and measured time) and its last (a table of
each stage's first and last step) are here too. rl.run runs each stage; run_all is handed it (rl imports this module).
"""
import gc
import json
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path

import torch

import engine
import runs
from runs import ConfigError, Interrupted, changed_fields, read_jsonl, save_json, working_records

# --stage all: the recipe of the proof (bench/real/README.md), for each field not given; "all" for every stage
RECIPE = {"all": dict(lora_rank=8, lora_targets="q_proj,v_proj", max_new_tokens=3200, temperature=0.7,
                      data=str(runs.STAGE1_DATA), ssl_rounds=4, ssl_tasks=8),  # sft: every working variant
          "sft": dict(lr=2e-4), "ssl": dict(lr=1e-4, ckpt_every=1),
          "sftc": dict(lr=1e-4, grad_accum=16, sft_contrastive=True),
          "rl": dict(lr=5e-5, tasks_per_step=8, grad_accum=16, ckpt_every=1, eval_precision=0.01)}
CHAIN = {"sft": "sft", "ssl": "ssl", "sftc": "sft", "rl": "rl"}  # folder -> the stage run there, in this order


SPLIT = runs.SPLIT


# seconds per step (ssl: per round; ssl and rl: 8 tasks x 8 samples) of Qwen2.5-Coder-1.5B with the recipe, lowest
# and highest, as bench/RESULTS.md's entries of these dates and GPUs record them (the plan's time estimates)
MEASURED_S = {"sft": (0.6, 2.2, "H200, 2026-12-03/04"), "ssl": (104, 196, "H200, 2026-12-04"),
              "sftc": (2.4, 6.8, "H200, 2026-12-05"), "rl": (120, 233, "H100 and H200, 2026-12-05")}


def stage_config(cfg, chosen, name, init_from):
    """(the Config of the chain's stage `name`, the fields it sets on purpose): the chain's, RECIPE[name] for the
    fields not chosen, its steps (sft: --sft-steps, sftc: --sftc-steps, rl: --steps), its folder OUT/name, from
    init_from."""
    recipe = {k: v for k, v in RECIPE[name].items() if k not in chosen}
    steps = {"sft": cfg.sft_steps, "sftc": cfg.sftc_steps}.get(name, cfg.steps)
    stage = replace(cfg, **recipe, stage=CHAIN[name], steps=steps, init_from=init_from, resume=False,
                    out=str(Path(cfg.out) / name))
    return stage, chosen | set(recipe) | {"stage", "steps", "init_from", "out"}


def run_all(cfg, given, tasks, run, reward_fn=None):
    """--stage all: sft on --data (the shipped stage-1 data by default) -> ssl -> sftc (sft on plain and contrastive
    prompts: stage 3's question) -> rl, each by run() in its folder OUT/<name>, each from the one before
    (--init-from). A stage whose log reached its steps is not run again; a cut one needs --resume, which continues
    it and runs the rest. Chosen, which RECIPE's stage values leave alone: the fields given, and those that differ
    from Config's defaults (a resumed chain's flags of before). tasks: runs.load_tasks's; run: rl.run."""
    chosen = set(given) | changed_fields(cfg)
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    save_json(Path(cfg.out) / "config.json", asdict(cfg))
    stages = {}  # name -> (its Config, the fields it sets on purpose)
    for name in [name for name in CHAIN if name != "sftc" or cfg.sftc_steps]:  # each from the one before
        stages[name] = stage_config(cfg, chosen, name, list(stages.values())[-1][0].out if stages else cfg.init_from)
    configs = {name: stage for name, (stage, _) in stages.items()}
    print_plan(cfg, configs, [name for name, _ in tasks], model_origin(cfg.model, given))
    for name, (stage, stage_given) in stages.items():
        started = stage_started(cfg, name, stage)
        if started is not None:  # (None: finished, not run again)
            with chain_stage(cfg, name, stage, list(stages)):
                run(replace(stage, resume=started), reward_fn, stage_given)
            print(stage_summary(name, stage, len(tasks)), flush=True)
    print(chain_table(configs, len(tasks)), flush=True)
    return cfg


def recipe_help():
    """RECIPE as flags, for --help's last paragraph."""
    def flags(values):
        return " ".join(f"--{k.replace('_', '-')}" + (f" {v}" if not isinstance(v, bool) else "")
                        for k, v in values.items()).replace(str(runs.STAGE1_DATA), "bench/real/stage1.jsonl")
    steps = {"sft": " (--steps: --sft-steps)", "sftc": " (--steps: --sftc-steps)"}
    return (f"--stage all (auto with a real model on a GPU) sets each flag not given as bench/real/README.md's recipe: "
            f"every stage {flags(RECIPE['all'])}, and --task all is bench/real/split.json's 30 training tasks (never "
            f"its 13 held out); " + "; ".join(f"{name}{steps.get(name, '')} {flags(RECIPE[name])}"
                                              for name in CHAIN) + ".")


def model_origin(model, given):
    """Where the model comes from, in words, for the plan."""
    if "model" not in given and model == runs.DEFAULT_MODEL:
        return "the default, from the hub"
    if "model" not in given and model.startswith(str(runs.FETCHED)):
        return "the default's offline copy, bench/fetch_model.py's"
    path = Path(model).expanduser()
    return ("random and offline: for tests" if model == "tiny" else "--model, a GGUF file transformers dequantises"
            if path.suffix == ".gguf" else "--model, a local folder" if path.is_dir() else "--model, from the hub")


def stage_length(stage):
    """(the last step of a stage, what its steps are called)."""
    return (stage.ssl_rounds, "rounds") if stage.stage == "ssl" else (stage.steps, "steps")


def stage_started(chain, name, stage):
    """Whether the chain's stage has steps logged already (True: run() resumes it), or None when it reached its
    last step (said in a line: not run again); ConfigError when it started and the chain was not resumed."""
    log = read_jsonl(Path(stage.out) / "log.jsonl")
    done, started = (log[-1]["step"] if log else 0), (Path(stage.out) / "log.jsonl").exists()
    last, unit = stage_length(stage)
    if done >= last:
        print(f"{name}: finished in {stage.out} ({done} {unit}): not run again")
        return None
    if started and not chain.resume:
        raise ConfigError(f"{stage.out} holds {done} of {name}'s {last} {unit}: "
                          f"`python rl.py --resume --out {chain.out}` continues it, then runs the rest")
    return started


@contextmanager
def chain_stage(chain, name, stage, names):
    """One stage of the chain: a Ctrl-C's line names the chain's folder and the stages it runs next; the stage's
    policy is let go after (decode's cache would keep it on the GPU while the next stage loads its own)."""
    try:
        yield
    except Interrupted as e:
        rest = names[names.index(name) + 1:]
        raise Interrupted(f"{e}".replace(f"--out {stage.out} ", f"--out {chain.out} ").replace(
            "interrupted in", f"interrupted in {name}", 1) + f", then runs {' and '.join(rest)}" * bool(rest)) from None
    finally:
        engine.DECODERS.clear()
        gc.collect()  # whatever cycles still hold this stage's policy
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def print_plan(cfg, stages, tasks, origin):
    """The chain's first lines: model, tasks (training and held out), stage-1 data and what it leaves out, then per
    stage ({name: its Config}) its length, its settings and the time it took for the 1.5B on a GPU (MEASURED_S)."""
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
    print(f"plan: {' -> '.join(stages)}, each in its folder of {cfg.out}, each from the one before; "
          f"`python rl.py --resume --out {cfg.out}` continues a cut one, then runs the rest\n"
          f"  model {cfg.model} ({origin}), LoRA rank {cfg.lora_rank} on {cfg.lora_targets}, on {cfg.device}\n"
          f"  {len(tasks)} training tasks: {', '.join(tasks)}\n  {held}\n"
          f"  stage-1 data {cfg.data}: {len(every)} working variants, sft trains on the {len(trained)} measured at "
          f"least {cfg.sft_min_speedup:g}x; training tasks with none of them (ssl and rl alone train them): "
          f"{', '.join(without) if without else 'none'}")
    for name, stage in stages.items():
        low, high, where = MEASURED_S[name]
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
