"""bench/demo/policy.py: ship a stage's run folder as the demo policy, and report an RL run as a markdown table.

    python bench/demo/policy.py export runs/demo-ssl bench/demo/policy   # weights only (fp32) and config.json
    python bench/demo/policy.py report runs/demo-rl                      # per-step table + best kernel per task
    python bench/demo/policy.py compare bench/demo/policy runs/demo-rl -- --task cpu/relu --device cpu
                                    # the same prompts and seeds through each policy, every sample evaluated
                                    # (--exemplars bench/demo/stage1.jsonl: contrastive prompts showing its codes)

The demo policy is what `python rl.py --task all` starts from on a machine without a GPU or without network (rl.py's
fallback_to_demo, which loads it like --init-from, with the settings of rl.PRESETS["demo"]). `export` keeps ckpt.pt's
weights (no optimizer moments, no RNG states: 1.3 MB instead of 4 MB) and config.json (the model name), not the
exemplar database: the demo runs plain prompts (no exemplars shown), and ssl's speedups, timed over 1-2 rounds, are
too rough to start an RL run's best-so-far; an RL run from the policy starts with the references alone.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for rl.py
import engine  # noqa: E402
import rl  # noqa: E402
import runs  # noqa: E402
from cudal1 import ExemplarDB  # noqa: E402

# ---------------------------------------------------------------------------- export


def export(run, dest):
    """Copy run/config.json and run/ckpt.pt's weights (fp32, contiguous) into dest."""
    run, dest = Path(run), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    state = torch.load(run / "ckpt.pt", map_location="cpu", weights_only=False)  # our own file
    weights = {k: v.float().contiguous().clone() for k, v in state["model"].items()}
    torch.save(dict(step=state["step"], model=weights), dest / "ckpt.pt")
    shutil.copyfile(run / "config.json", dest / "config.json")
    size = sum(f.stat().st_size for f in dest.iterdir()) / 1e6
    print(f"exported {run} (step {state['step']}) to {dest}: {size:.2f} MB")

# ---------------------------------------------------------------------------- report


def pooled_speedup(rec):
    """Mean measured speedup over all correct samples of a step (each task's mean weighted by its correct count)."""
    G = rec["group_size"]
    pairs = [(t["pass"] * G, t["mean_speedup"]) for t in rec["per_task"].values() if t["mean_speedup"] is not None]
    n = sum(k for k, _ in pairs)
    return sum(k * m for k, m in pairs) / n if n else None


def task_mean_speedup(rec):
    """Mean over tasks of each task's mean measured speedup of its correct samples (tasks with none left out)."""
    means = [t["mean_speedup"] for t in rec["per_task"].values() if t["mean_speedup"] is not None]
    return sum(means) / len(means) if means else None


def fmt(x, spec=".2f", suffix="x"):
    return "-" if x is None else f"{x:{spec}}{suffix}"


def report(run):
    """Markdown: one row per RL step (reward, pass rate, mean speedups, each task's mean speedup), then the best."""
    run = Path(run)
    cfg = json.loads((run / "config.json").read_text())
    recs = [dict(r, group_size=cfg["group_size"]) for r in runs.read_jsonl(run / "log.jsonl")]
    tasks = sorted({name for r in recs for name in r["per_task"]})
    short = [t.split("/")[-1] for t in tasks]
    rows = ["| step | mean reward | pass | failed | speedup (pooled) | speedup (task mean) | "
            + " | ".join(short) + " |",
            "|---|---|---|---|---|---|" + "---|" * len(tasks)]
    for r in recs:
        cells = [fmt(r["per_task"][t]["mean_speedup"]) if t in r["per_task"] else "" for t in tasks]
        failed = 1 - r["pass_rate"] - r.get("copies", 0) / (cfg["group_size"] * len(r["tasks"]))  # copies: ok
        rows.append(f"| {r['step']} | {r['mean_reward']:.3f} | {r['pass_rate']:.0%} | {failed:.0%} | "
                    f"{fmt(pooled_speedup(r))} | {fmt(task_mean_speedup(r))} | " + " | ".join(cells) + " |")
    rows += ["", "| task | best speedup | found at step | kernel (first line of forward) |", "|---|---|---|---|"]
    for f in sorted((run / "best").glob("*.py")):
        head, code = f.read_text().split("\n", 1)
        body = code.split("def forward", 1)[-1].splitlines()[1:]
        first = next((line.strip() for line in body if line.strip()), "")
        speed, step = head.split("speedup ")[1].split(",")[0], head.rsplit("step ", 1)[1]
        rows.append(f"| {f.stem.replace('__', '/')} | {speed} | {step} | `{first}` |")
    return "\n".join(rows)

# ---------------------------------------------------------------------------- compare

PAIRED_STEP = 10**6  # compare() samples with this step's seeds: no run gets that far, so training never drew them


def pooled(recs, group_size):
    """Failed share (not ok; copies of the reference are ok) and mean measured speedup of the correct samples (copies
    left out) over records with a per_task field (log.jsonl's steps, or task_stats of paired samples), pooled, and
    each task's mean speedup per record."""
    n = sum(len(r["per_task"]) * group_size for r in recs)
    ok = [(t["pass"] * group_size, t["mean_speedup"]) for r in recs for t in r["per_task"].values() if t["pass"]]
    copies = sum(t.get("copies", 0) for r in recs for t in r["per_task"].values())
    return dict(failed=1 - (sum(k for k, _ in ok) + copies) / n,
                speedup=sum(k * m for k, m in ok) / max(sum(k for k, _ in ok), 1),
                per_task={t.split("/")[1]: [round(r["per_task"][t]["mean_speedup"] or 0, 2) for r in recs]
                          for t in sorted(recs[0]["per_task"])})


def exemplar_db(cfg, path, tasks):
    """An in-memory exemplar database: each task's reference at 1.0 and the working codes of a JSONL of measured
    records (stage-1 data: task, code, result with a speedup), as sft puts them into a run's database."""
    db = ExemplarDB()
    for name, ref in tasks:
        db.seed_reference(name, ref)
    runs.add_measured(cfg, db, runs.read_jsonl(path))
    return db


def compare(cfg, policies, n, exemplars=None):
    """pooled() of n samples per task of each policy (a folder with ckpt.pt), all drawn with PAIRED_STEP's seeds:
    the policies see the same random numbers, so their samples differ only where the policies differ. One evaluator
    call for all: a reply two policies both wrote is evaluated once. exemplars: a JSONL for exemplar_db; then the
    prompts are contrastive (the same variants shown to every policy), else plain."""
    tasks, rollouts = runs.load_tasks(cfg), []
    db = exemplar_db(cfg, exemplars, tasks) if exemplars else None
    for policy in policies:
        c = rl.replace(cfg, init_from=str(policy), group_size=n, contrastive=db is not None)
        model, tok = engine.initial_policy(c)
        prompts = rl.build_prompts(c, db, tasks, PAIRED_STEP, tok)
        rollouts += rl.generate_all(c, model, tok, tasks, prompts, PAIRED_STEP)
    results = runs.evaluate_all(cfg, tasks * len(policies), rollouts)  # (policy, task, sample) order
    m = len(tasks) * n
    return [pooled([{"per_task": runs.task_stats(tasks, results[k * m:(k + 1) * m])}], n) for k in range(len(policies))]


def compare_table(policies, stats):
    """Markdown: one row per policy (failed share, mean speedup of its correct samples, each task's)."""
    tasks = list(stats[0]["per_task"])
    rows = ["| policy | failed | speedup of correct samples | " + " | ".join(tasks) + " |",
            "|---|---|---|" + "---|" * len(tasks)]
    for policy, s in zip(policies, stats):
        cells = [fmt(s["per_task"][t][0] or None) for t in tasks]
        rows.append(f"| {policy} | {s['failed']:.0%} | {fmt(s['speedup'] or None)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)

# ---------------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description="export the demo policy, report an RL run, or compare policies",
                                allow_abbrev=False)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="weights-only copy of a stage's run folder")
    e.add_argument("run")
    e.add_argument("dest", nargs="?", default=str(runs.DEMO_POLICY))
    r = sub.add_parser("report", help="markdown table of an RL run's log.jsonl and best/")
    r.add_argument("run")
    c = sub.add_parser("compare", help="the same prompts and seeds through each policy, every sample evaluated")
    c.add_argument("policies", nargs="+", help="folders with ckpt.pt (a stage's run folder, or bench/demo/policy)")
    c.add_argument("--samples", type=int, default=8, help="samples per task and policy; rl.py's flags follow --")
    c.add_argument("--exemplars", help="JSONL of measured codes (stage-1 data): contrastive prompts showing them")
    argv = sys.argv[1:] + ["--"] * ("--" not in sys.argv)  # compare's rl.py flags (--task, --device ...) after --
    args, flags = p.parse_args(argv[:argv.index("--")]), argv[argv.index("--") + 1:]
    if args.cmd == "export":
        export(args.run, args.dest)
    elif args.cmd == "report":
        print(report(args.run))
    else:
        cfg = rl.decide_config(*rl.parse_flags(flags + ["--init-from", args.policies[0]]))
        print(compare_table(args.policies, compare(cfg, args.policies, args.samples, args.exemplars)))


if __name__ == "__main__":
    main()
