"""Is identical code paid 1x, and a 2x kernel what it is paid quiet, on a busy CPU? The reward's fidelity, by the CLI.

    python bench/fidelity.py --runs 10                       # this checkout: quiet, then beside a spinning core
    python bench/fidelity.py --runs 10 --repos OLD,.         # two checkouts interleaved run by run (before/after)

Each run is one `python evaluator.py REF CAND --device cpu --json --keep-samples` in the checkout, on two pairs:
identical code (tasks/cpu/linear_relu.py and its copy) and a 2x kernel (a reference that computes its linear layer
twice, (y + y) / 2 == y, against one that computes it once). Conditions alternate run by run: quiet, and beside a
neighbour that spins on one core. It prints, per checkout, condition and pair, the median charged ratio (the
verdict's speedup) beside the median paired one (the level of the rounds' ratios of the precise clocks): what the
bounds and the cap took. Every run's record goes to --out (JSONL). OMP_NUM_THREADS passes through as set.
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TWICE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu((self.lin(x) + self.lin(x)) / 2)

def get_inputs():
    return [torch.randn(256, 512)]

def get_init_inputs():
    return [512]
'''
ONCE = TWICE.replace("class Model(", "class ModelNew(").replace("(self.lin(x) + self.lin(x)) / 2", "self.lin(x)")


@contextlib.contextmanager
def neighbour(on, seconds=900):
    """A process spinning on one core (on: else nothing), in a session of its own, for at most `seconds` (it outlives
    no run, even one killed before its finally), killed with SIGKILL (whatever SIGINT disposition it inherited)."""
    code = f"import time\nt = time.time() + {seconds}\nwhile time.time() < t: pass"
    spin = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdin=subprocess.DEVNULL) if on \
        else None
    try:
        time.sleep(0.3 * on)
        yield
    finally:
        if spin:
            spin.kill()
            spin.wait()


def level(xs):
    """evaluator._level: the mean of the medians of the even and of the odd calls."""
    return statistics.median(xs) if len(xs) < 2 else (statistics.median(xs[0::2]) + statistics.median(xs[1::2])) / 2


def evaluate(repo, ref, cand, extra):
    """One CLI evaluation in the checkout repo: (its result dict, the paired ratio)."""
    out = subprocess.run([sys.executable, "evaluator.py", str(ref), str(cand), "--device", "cpu", "--json",
                          "--keep-samples", *extra], cwd=repo, capture_output=True, text=True, timeout=600)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    s = r.get("samples") or {}
    rounds = [math.log(a[0] / b[0]) for a, b in zip(s["ref"], s["cand"])] if s.get("ref") else None
    paired = math.exp(level(rounds)) if rounds else None
    return r, paired


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10, help="runs per checkout, condition and pair")
    ap.add_argument("--repos", default=".", help="comma list of checkouts, interleaved run by run")
    ap.add_argument("--conditions", default="quiet,spin", help="quiet, spin (a neighbour spinning on one core)")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "cudal1_fidelity.jsonl"))
    ap.add_argument("extra", nargs="*", help="evaluator.py flags after --, e.g. -- --time-budget-s 0.5")
    a = ap.parse_args()
    repos = [str(Path(r).resolve()) for r in a.repos.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="cudal1-fidelity-"))
    relu = Path(repos[-1], "tasks", "cpu", "linear_relu.py").read_text()
    files = {"identity": (relu, relu.replace("class Model(", "class ModelNew(")), "2x": (TWICE, ONCE)}
    pairs = {}
    for name, (ref, cand) in files.items():
        pairs[name] = (folder / f"{name}_ref.py", folder / f"{name}_cand.py")
        pairs[name][0].write_text(ref)
        pairs[name][1].write_text(cand)
    got = {}
    for i in range(a.runs):
        for cond in a.conditions.split(","):
            with neighbour(cond == "spin"):
                for repo in repos:
                    for name, (ref, cand) in pairs.items():
                        r, paired = evaluate(repo, ref, cand, a.extra)
                        got.setdefault((repo, cond, name), []).append((r.get("speedup"), paired))
                        with open(a.out, "a") as f:
                            f.write(json.dumps(dict(run=i, repo=repo, condition=cond, pair=name, paired=paired,
                                                    omp=os.environ.get("OMP_NUM_THREADS"), **r)) + "\n")
                        print(f"run {i} {cond:5s} {name:8s} {repo}: {r['status']} charged "
                              f"{r.get('speedup') or 0:.3f} paired {paired or 0:.3f}", flush=True)
    print("\n| checkout | condition | pair | runs | charged: median (min-max) | paired: median |\n" + "|---" * 6 + "|")
    for (repo, cond, name), xs in got.items():
        charged = [c for c, _ in xs if c is not None]
        print(f"| {repo} | {cond} | {name} | {len(xs)} | {statistics.median(charged):.3f} ({min(charged):.2f}-"
              f"{max(charged):.2f}) | {statistics.median(p for _, p in xs if p is not None):.3f} |")


if __name__ == "__main__":
    main()
