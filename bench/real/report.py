"""bench/real/report.py: the proof's tables, its decision and targets from summary.json, and one plot of the two RL
arms' logs, for the README and bench/RESULTS.md.

    python bench/real/report.py              # the protocol's numbers, its tests (PROTOCOL.md), the decision, targets
    python bench/real/report.py --plot bench/real/progress.png    # per step, both arms: pass rate, mean reward,
                                                                  # best speedup, the variance diagnostic
    python bench/real/report.py --best bench/real/work/sft200 bench/real/best/sft   # each task's fastest kernel
"""
import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE)]
import runs  # noqa: E402
import rl  # noqa: E402  (its rl.extract_code: the code of a reply, as measure.py evaluated it)
ORDER = ("base", "sft", "ssl", "sftc", "start", "rl_contrastive", "rl_plain")  # the stages' order; other labels follow
ARMS = {"rl_contrastive": HERE / "ckpt" / "rl_contrastive", "rl_plain": HERE / "ckpt" / "rl_no-contrastive"}


def pct(x):
    return f"{100 * x:.1f}%"


COLUMNS = [("samples", "samples", str), ("ok", "ok", pct), ("copies", "copies", pct), ("faster", "faster", pct),
           ("fast_1", "fast_1", pct), ("geomean_best", "geomean best", lambda x: f"{x:.2f}x"),
           ("custom_kernel", "custom kernels", str), ("R", "R", lambda x: f"{x:.3f}")]


def labels(summary):
    have = summary["checkpoints"]
    return [k for k in ORDER if k in have] + sorted(k for k in have if k not in ORDER)


def table(summary):
    """One row per checkpoint and split (train, heldout), the protocol's numbers as measure.py merged them ("-" for
    one a summary lacks: R came with the pre-registered protocol)."""
    rows = ["| checkpoint | tasks | " + " | ".join(title for _, title, _ in COLUMNS) + " |",
            "|---|---|" + "---|" * len(COLUMNS)]
    for label in labels(summary):
        for split, stats in summary["checkpoints"][label].items():
            n = len(summary.get(f"tasks_{split}", []))
            cells = " | ".join("-" if stats.get(key) is None else fmt(stats[key]) for key, _, fmt in COLUMNS)
            rows.append(f"| {label} | {split} ({n}) | {cells} |")
    return "\n".join(rows)


def pm(x):
    return "-" if x is None else f"{x:+.3f}"


def tests_table(summary):
    """One row per test measure.py's add_tests made (checkpoint, split, against): R of both, the mean difference
    over tasks with its bootstrap 95% CI, W+, the exact p; then each secondary metric's mean difference and its
    Holm-adjusted p ("-" where no task defines it)."""
    from measure import SECONDARY
    rows = ["| checkpoint | tasks | against | R | R against | mean diff [95% CI] | W+ | p | "
            + " | ".join(f"{key} (p Holm)" for key in SECONDARY) + " |",
            "|---|---|---|" + "---|" * (5 + len(SECONDARY))]
    ck = summary["checkpoints"]
    for label in labels(summary):
        for split, stats in ck[label].items():
            for against, t in stats.get("tests", {}).items():
                ci = "[{:+.3f}, {:+.3f}]".format(*t["ci"]) if t["ci"] else ""
                sec = " | ".join(f"{pm(x['mean_diff'])} ({x['p_holm']:.3g})" if "p_holm" in x else "-"
                                 for x in t["secondary"].values())
                rows.append(f"| {label} | {split} ({t['tasks']}) | {against} ({t['alternative']}) | {stats['R']:.3f} "
                            f"| {ck[against][split]['R']:.3f} | {pm(t['mean_diff'])} {ci} | {t['W']:g} "
                            f"| {t['p']:.4g} | {sec} |")
    return "\n".join(rows) if len(rows) > 2 else ""


def copies(stats):
    """The share of reference copies over both splits."""
    n = sum(s["samples"] for s in stats.values())
    return sum(s["copies"] * s["samples"] for s in stats.values()) / n


def targets(summary):
    """[(target, measured, met)] of the proof for each RL arm measured, against the base model."""
    ck, out = summary["checkpoints"], []
    base = ck.get("base")
    for arm in [a for a in ARMS if a in ck and base]:
        t, b = ck[arm], base
        tf, bf = t["train"]["faster"], b["train"]["faster"]
        out += [(f"{arm}: fast_1 on training tasks >= 50%", pct(t["train"]["fast_1"]), t["train"]["fast_1"] >= 0.5),
                (f"{arm}: faster share on training tasks >= 3x the base's ({pct(bf)}), and above 0", pct(tf),
                 tf >= 3 * bf and tf > 0),
                (f"{arm}: fast_1 on held-out tasks above the base's ({pct(b['heldout']['fast_1'])})",
                 pct(t["heldout"]["fast_1"]), t["heldout"]["fast_1"] > b["heldout"]["fast_1"]),
                (f"{arm}: reference copies below the base's ({pct(copies(b))})", pct(copies(t)),
                 copies(t) < copies(b))]
    return out


DIAGNOSTIC = ("groups_signal", "groups_speed", "groups_flat")  # per step: groups by what their advantages carry


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def arm_steps(arms=ARMS):
    """{arm: {"step", "pass_rate", "mean_reward", "best_speedup", *DIAGNOSTIC: [one per step]}} from each arm folder's
    log.jsonl (arms with none left out). best_speedup: the geomean over the run's tasks of the best so far (it starts
    at what the --init-from database carried, the same for both arms); a diagnostic key an older log lacks is None."""
    logs = {arm: runs.read_jsonl(Path(folder) / "log.jsonl") for arm, folder in arms.items()}  # none: []
    return {arm: {"step": [r["step"] for r in recs], "pass_rate": [r["pass_rate"] for r in recs],
                  "mean_reward": [r["mean_reward"] for r in recs],
                  "best_speedup": [geomean(list(r.get("best_speedup", {}).values())) for r in recs],
                  **{key: [r.get(key) for r in recs] for key in DIAGNOSTIC}}
            for arm, recs in logs.items() if recs}


def plot(path, arms=ARMS):
    """Pass rate, mean reward, best speedup and the variance diagnostic per step of each RL arm whose folder has a
    log.jsonl, in one figure at path (the diagnostic's panel is empty where no log has it)."""
    series = arm_steps(arms)
    if not series:
        raise SystemExit(f"no RL step logged in {', '.join(str(f) for f in arms.values())}: nothing to plot yet")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8), layout="constrained")
    for (arm, s), color in zip(series.items(), ("C0", "C1", "C2", "C3")):
        for ax, key in zip(axes, ("pass_rate", "mean_reward", "best_speedup")):
            ax.plot(s["step"], s[key], marker="o", color=color, label=arm)
        for key, style in zip(DIAGNOSTIC, ("-", "--", ":")):
            steps = [(x, y) for x, y in zip(s["step"], s[key]) if y is not None]
            if steps:
                axes[3].plot(*zip(*steps), linestyle=style, marker="o", color=color, label=f"{arm} {key[7:]}")
    axes[1].axhline(0.0, color="gray", linestyle="--", linewidth=1)  # a failure's reward
    titles = ("pass rate (correct, not copies)", "mean reward of the step's samples",
              "best speedup so far (geomean over tasks)", "groups: with a signal, by speed, flat")
    for ax, title in zip(axes, titles):
        ax.set(title=title, xlabel="step")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        if ax.get_lines():
            ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return path


def best_kernels(work, out):
    """Each task's fastest sample that beats eager (correct, not a reference copy, speedup above 1 as the protocol
    settled it: work/results.jsonl), its code (from work/samples.jsonl) as out/<level>_<task>.py under a comment
    line with its speedup; {task: speedup}. A task with none gets no file."""
    def records(name):
        path = Path(work) / name
        if not path.exists():
            raise SystemExit(f"no {path}: measure.py writes it once every sample is evaluated")
        return {r["task"]: r["items"] for r in runs.read_jsonl(path)}
    texts, best = records("samples.jsonl"), {}
    Path(out).mkdir(parents=True, exist_ok=True)
    for task, results in records("results.jsonl").items():
        faster = [(r["speedup"], i) for i, r in enumerate(results)
                  if rl.is_success(rl.evaluator.Result(**r)) and (r["speedup"] or 0) > 1.0]
        if faster:
            speedup, i = max(faster)
            kind = results[i]["speedup_kind"]
            (Path(out) / f"{task.replace('/', '_')}.py").write_text(
                f"# {task}: {speedup:.2f}x eager ({kind}), sample {i} of {Path(work).name}\n"
                + rl.extract_code(texts[task][i]).code)
            best[task] = speedup
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("summary", nargs="?", default=str(HERE / "summary.json"))
    p.add_argument("--plot", help="write the two RL arms' figure here (from ckpt/rl_*/log.jsonl)")
    p.add_argument("--best", nargs=2, metavar=("WORK", "OUT"),
                   help="write each task's fastest kernel of a measured work folder to OUT, then stop")
    a = p.parse_args(argv)
    if a.best:
        for task, speedup in best_kernels(*a.best).items():
            print(f"{task}: {speedup:.2f}x")
        return
    if not Path(a.summary).exists():
        raise SystemExit(f"no {a.summary}: measure a checkpoint first (bench/real/measure.py)")
    summary = json.loads(Path(a.summary).read_text())
    print(f"{summary['model']}, {summary['date']}, commit {summary['commit']}\n\n{table(summary)}\n")
    if tests_table(summary):
        print(f"{tests_table(summary)}\n")
    if summary.get("machines"):
        print("measured on: " + ", ".join(f"{k} {v}" for k, v in summary["machines"].items()))
    if "decision" in summary:
        d = summary["decision"]
        print(f"- decision ({d['rule']}): W+ = {d['W']:g}, p = {d['p']:.4g}: "
              f"{'beats' if d['beats'] else 'does NOT beat'} the start")
    for what, value, met in targets(summary):
        print(f"- {what}: {value}, {'met' if met else 'MISSED'}")
    if a.plot:
        print(f"wrote {plot(a.plot)}")


if __name__ == "__main__":
    sys.exit(main())
