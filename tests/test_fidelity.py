"""Is the reward a fair ratio of two clocks on a busy machine? In an RL step the host is never quiet (the policy, the
judge, the workers and the builds share it). Identical code beside a neighbour that spins on one core is paid ~1x,
and a real 2x kernel beside it what it is paid quiet. Each run prints its paired ratio (the level of the rounds'
ratios of the two precise clocks) beside the charged one, so a reader sees what the bounds and the cap took."""
import math
import statistics
import sys
from pathlib import Path

import evaluator as E

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from fidelity import ONCE, TWICE, neighbour  # noqa: E402  (bench/fidelity.py: the 2x kernel and the spinning core)

LINEAR_RELU = (ROOT / "tasks" / "cpu" / "linear_relu.py").read_text()
IDENTITY = LINEAR_RELU.replace("class Model(", "class ModelNew(")
RUNS = 3
OPTIONS = dict(time_budget_s=0.5, keep_samples=True)


def paid(ref, cand, label):
    """(charged, paired) ratio of RUNS evaluations of one pair, against one judge and reference worker; printed."""
    out = []
    for r in E.evaluate_many([(ref, cand)] * RUNS, "cpu", progress=False, **OPTIONS):
        assert r.status == "ok", r.reason
        paired = math.exp(E._level([math.log(a[0] / b[0]) for a, b in zip(r.samples["ref"], r.samples["cand"])]))
        out.append((r.speedup, paired))
        print(f"{label}: charged {r.speedup:.3f}  paired {paired:.3f}  ({r.rounds} rounds)")
    return out


def test_identical_code_and_a_2x_kernel_are_paid_alike_beside_a_busy_core():
    """Beside a core-spinning neighbour: identical code's median within 10% of 1x; the 2x kernel's median within 15%
    of its quiet median (both medians of RUNS evaluations). Honest code gives a wider clock no evidence: at most one
    run of the 3 x RUNS is charged more than 3% below its paired ratio (a bound biting on noise, ~1 in 160 a clock)."""
    quiet = paid(TWICE, ONCE, "2x kernel, quiet")
    with neighbour(True, seconds=120):
        same = paid(LINEAR_RELU, IDENTITY, "identical code, a neighbour spinning")
        busy = paid(TWICE, ONCE, "2x kernel, a neighbour spinning")
    median = lambda xs: statistics.median(x[0] for x in xs)  # noqa: E731
    said = f"identity {same}; 2x quiet {quiet}; 2x busy {busy} (charged, paired)"
    assert 0.9 <= median(same) <= 1.1, said
    assert abs(median(busy) / median(quiet) - 1) <= 0.15, said
    assert median(quiet) > 1.5, said  # it is a real 2x kernel here
    assert sum(charged < 0.97 * ratio for charged, ratio in quiet + same + busy) <= 1, said
