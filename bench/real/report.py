"""bench/real/report.py: the proof's table and its targets (issue 22) from summary.json, and one plot of the two RL
arms' logs, for the README and bench/RESULTS.md.

    python bench/real/report.py                                   # the markdown table, then each target met or missed
    python bench/real/report.py --plot bench/real/progress.png    # pass rate and best speedup per step, both arms
"""
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ("base", "sft", "ssl", "rl_contrastive", "rl_plain")  # the stages' order; other labels follow
ARMS = {"rl_contrastive": HERE / "ckpt" / "rl_contrastive", "rl_plain": HERE / "ckpt" / "rl_no-contrastive"}


def pct(x):
    return f"{100 * x:.1f}%"


COLUMNS = [("samples", "samples", str), ("ok", "ok", pct), ("copies", "copies", pct), ("faster", "faster", pct),
           ("fast_1", "fast_1", pct), ("geomean_best", "geomean best", lambda x: f"{x:.2f}x"),
           ("custom_kernel", "custom kernels", str)]


def labels(summary):
    have = summary["checkpoints"]
    return [k for k in ORDER if k in have] + sorted(k for k in have if k not in ORDER)


def table(summary):
    """One row per checkpoint and split (train, heldout), the protocol's numbers as measure.py merged them."""
    rows = ["| checkpoint | tasks | " + " | ".join(title for _, title, _ in COLUMNS) + " |",
            "|---|---|" + "---|" * len(COLUMNS)]
    for label in labels(summary):
        for split, stats in summary["checkpoints"][label].items():
            n = len(summary.get(f"tasks_{split}", []))
            cells = " | ".join(fmt(stats[key]) for key, _, fmt in COLUMNS)
            rows.append(f"| {label} | {split} ({n}) | {cells} |")
    return "\n".join(rows)


def copies(stats):
    """The share of reference copies over both splits."""
    n = sum(s["samples"] for s in stats.values())
    return sum(s["copies"] * s["samples"] for s in stats.values()) / n


def targets(summary):
    """[(target, measured, met)] of issue 22 for each RL arm measured, against the base model."""
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


def plot(path, arms=ARMS):
    """Pass rate and best speedup per step of each RL arm whose folder has a log.jsonl, in one figure at path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for arm, folder in arms.items():
        log = Path(folder) / "log.jsonl"
        recs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
        if not recs:
            continue
        steps = [r["step"] for r in recs]
        axes[0].plot(steps, [r["pass_rate"] for r in recs], marker=".", label=arm)
        axes[1].plot(steps, [max(r["best_speedup"].values(), default=float("nan")) for r in recs], marker=".",
                     label=arm)
    axes[1].axhline(1.0, color="gray", linestyle="--", linewidth=1)  # the reference's speed
    for ax, title in zip(axes, ("pass rate (correct, not copies)", "best speedup so far")):
        ax.set(title=title, xlabel="step")
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("summary", nargs="?", default=str(HERE / "summary.json"))
    p.add_argument("--plot", help="write the two RL arms' figure here (from ckpt/rl_*/log.jsonl)")
    a = p.parse_args(argv)
    if not Path(a.summary).exists():
        raise SystemExit(f"no {a.summary}: measure a checkpoint first (bench/real/measure.py)")
    summary = json.loads(Path(a.summary).read_text())
    print(f"{summary['model']}, {summary['date']}, commit {summary['commit']}\n\n{table(summary)}\n")
    for what, value, met in targets(summary):
        print(f"- {what}: {value}, {'met' if met else 'MISSED'}")
    if a.plot:
        print(f"wrote {plot(a.plot)}")


if __name__ == "__main__":
    sys.exit(main())
