"""The walls in fences.py and the judge's steps that use them, on the CPU: the memory plan and its one-line refusal,
the clean-level cap and the host clock in the charge, the tolerance fixed before the candidate's call, every
distribution drawn in timed rounds."""
import random
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import evaluator as E
import fences

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30

BIG = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x) * x                  # one temporary the size of the output

def get_inputs():
    return [torch.rand({n})]

def get_init_inputs():
    return []
'''


def test_footprint_reads_inputs_outputs_and_forwards_peak_on_the_meta_device():
    ins, outs, params, peak = fences.footprint(BIG.format(n=1 << 40))  # 4 TiB: nothing is allocated
    assert ins == outs == 4 << 40 and params == 0 and peak == 2 * outs  # the sigmoid's temporary and the product
    linear = "import torch\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
             "        self.f = torch.nn.Linear(1000, 10)\n    def forward(self, x):\n        return self.f(x)\n" \
             "def get_inputs():\n    return [torch.rand(4, 1000)]\ndef get_init_inputs():\n    return []\n"
    assert fences.footprint(linear)[:3] == (4 * 1000 * 4, 4 * 10 * 4, (1000 * 10 + 10) * 4)


def test_evaluation_bytes_by_hand():
    """1 GiB in, 1 GiB out, no parameters, forward's peak 2 GiB: shared 2 x (2 + 1), judge max(2.25, 1 + 2 + 1) + 3,
    workers 2 x 2, the oracle on the device 2 x 1 + 6: 6 + 7 + 4 + 8 = 25 GiB, plus the contexts on CUDA."""
    assert fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, 2, "device", cuda=False) == 25 * GIB
    assert fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, 2, "device") == 25 * GIB + fences.CONTEXT_BYTES
    # one input set per side, the oracle and the kept answers on the host: 4 + 4 + 4 = 12 GiB
    assert fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, 1, "host", cuda=False) == 12 * GIB


def test_memory_plan_goes_leaner_step_by_step_then_refuses_in_one_line_with_the_sizes():
    src = BIG.format(n=GIB // 4)  # 1 GiB in, 1 GiB out, peak 2 GiB
    need = lambda sets, where: fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, sets, where)  # noqa: E731
    steps = [(2 * need(2, "device"), (2, "device", 2)), (need(2, "device"), (2, "device", 1)),
             (need(1, "device"), (1, "device", 1)), (need(1, "host"), (1, "host", 1))]
    for budget, want in steps:
        p = fences.memory_plan(src, "cuda", in_flight=2, budget=budget)
        assert (p.sets, p.oracle, p.in_flight) == want and p.need * p.in_flight <= budget
    with pytest.raises(fences.MemoryRefusal) as e:
        fences.memory_plan(src, "cuda", budget=need(1, "host") // 2)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("memory:") and "inputs 1.0 GiB" in msg and "outputs 1.0 GiB" in msg
    assert fences.memory_plan(src, "cpu", budget=need(1, "device")).oracle == "device"  # no host step on the CPU


def test_a_task_that_cannot_fit_the_cpu_is_refused_in_one_line_before_any_work(tmp_path):
    task, cand = tmp_path / "huge.py", tmp_path / "cand.py"
    task.write_text(BIG.format(n=1 << 40))
    cand.write_text(BIG.format(n=1).replace("class Model(", "class ModelNew("))
    out = subprocess.run([sys.executable, str(ROOT / "evaluator.py"), str(task), str(cand), "--device", "cpu"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.count("\n") == 1, out
    assert out.stdout.startswith("runtime_error: memory: the task needs") and "inputs 4096.0 GiB" in out.stdout
    with pytest.raises(E.TaskError, match="^huge: memory:"):
        E.task_memory(task.read_text(), "cpu", "huge")
    assert E.task_memory(BIG.format(n=4), "cpu").sets == 2


def test_clean_cap_by_hand():
    assert fences.clean_cap(2.0, [1.0, 1.0, 1.0]) == pytest.approx(1.02)   # twice the clean level: capped
    assert fences.clean_cap(1.01, [1.0, 1.0, 1.0]) == 1.01                  # within the noise: the paired level
    assert fences.clean_cap(5.0, []) == 5.0                                 # no clean rounds: no cap
    # a noisy clean level allows 3 x IQR / sqrt(n): IQR 0.5 over 4 rounds -> 0.75
    assert fences.clean_cap(3.0, [1.0, 1.0, 1.5, 1.5]) == pytest.approx(1.25 + 0.75)


def test_charge_caps_a_reference_slowed_beside_the_candidate_by_its_clean_level():
    """The candidate left GPU work running while the reference was timed: its paired rounds took 2 ms on the
    precise clock and 3 ms on the judge's (1 ms overhead); alone it takes 1 ms and 0.5 ms of overhead."""
    slowed = [(2.0, 2.5, 3.0)] * 5
    cand = [(1.0, 1.5, 2.0)] * 5
    clean = [(1.0, 1.3, 1.5)] * 5
    assert E.charge({"ref": slowed, "cand": cand})[:2] == (2.0, 1.0)  # 2x for nothing
    ref_ms, cand_ms, *_ = E.charge({"ref": slowed, "cand": cand, "clean": clean})
    assert ref_ms == pytest.approx(1.02)              # its clean level plus 2% (slack)
    # the judge's bound: 2.0 - the clean overhead 0.5 x 1.03 (capped) - the allowance max(0.02, 0.03 x 0.515)
    assert cand_ms == pytest.approx(2.0 - 0.515 - 0.0204)


def test_charge_counts_cpu_work_the_hold_hides_on_the_host_clock():
    """CUDA: CPU work inside the hold's window is on none of the other clocks: 0.4 ms of host CPU time against the
    reference's 0.02 is charged (less the reference's level and its allowance)."""
    ref = [(1.0, 1.2, 2.0, 0.02)] * 5
    cand = [(0.01, 0.21, 1.01, 0.40)] * 5
    assert E.charge({"ref": ref, "cand": cand})[1] == pytest.approx(0.40 - 0.02 - 0.02)
    assert E.charge({"ref": ref, "cand": [(0.5, 0.7, 1.5, 0.02)] * 5})[1] == 0.5    # launches alone: the events
    assert E.charge({"ref": [x[:3] for x in ref], "cand": [x[:3] for x in cand]})[1] < 0.4  # without it: free


class _FakeSides:
    """The judge's view of one evaluation, in process: the reference is relu; the candidate answers in bf16 and
    then, like a candidate that reaches the judge's memory, overwrites the reference's answer with its own."""

    def __init__(self):
        self.recv = {"ref": [torch.zeros(64, 64)], "cand": [torch.zeros(64, 64)]}
        self.host, self.device, self.idx, self.seen = False, "cpu", [torch.arange(8)], []

    def call(self, side, b, xs, where, probe=True):
        if side == "ref":
            self.recv["ref"][0].copy_(torch.relu(xs[0]))
        else:
            self.recv["cand"][0].copy_(torch.relu(xs[0]).bfloat16().float())
            self.recv["ref"][0].copy_(self.recv["cand"][0])  # the judge's answer, overwritten
        return 0

    def verdict_on(self, j, c, want, tol, where, started):
        return E._mismatch(c, want, tol)

    def audit(self):
        pass


def test_the_tolerance_and_the_expected_outputs_are_fixed_before_the_candidates_call():
    """Calibrated after the candidate's call, the overwritten answer calibrated a bf16-wide tolerance and passed."""
    s, gen = _FakeSides(), torch.Generator().manual_seed(0)
    checks = [("task", lambda: [torch.randn(64, 64, generator=gen)])]
    with pytest.raises(E.Verdict) as v:
        E._correctness_gate(s, checks, None, E.Options())
    assert v.value.check == "values" and "tolerance 1.0e-04" in v.value.reason


def test_timed_rounds_draw_every_distribution_and_keep_non_negative_inputs_so():
    mod = types.SimpleNamespace(get_inputs=lambda: [torch.rand(8, 32)])
    s, rng = types.SimpleNamespace(ref_mod=mod, device="cpu"), random.Random(0)
    draws = [E._draw(s, rng)[0] for _ in range(40)]
    assert any(float(x.max()) > 2 for x in draws)                         # wide or edge: large magnitudes
    assert any(bool((x == 0).all(dim=-1).any()) for x in draws)           # edge: a whole row of zeros
    assert any(float(x.max()) < 1 for x in draws)                         # the task's own
    assert all(float(x.min()) >= 0 for x in draws)                        # factors are positive


def test_numeric_flags_see_tf32_and_matmul_precision():
    before = fences.numeric_flags()
    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium" if prev != "medium" else "high")
    try:
        assert fences.numeric_flags() != before
    finally:
        torch.set_float32_matmul_precision(prev)
    assert fences.numeric_flags() == before


def test_arena_bytes_fill_whole_segments():
    assert fences.arena_bytes(1) == 10 << 20 and fences.arena_bytes(10 << 20) == 10 << 20
    assert fences.arena_bytes((10 << 20) + 1) == 12 << 20 and fences.arena_bytes(7 << 30) == 7 << 30


def test_comparisons_in_chunks_agree_with_whole_tensors(monkeypatch):
    """KernelBench's outputs are GBs: _err, _rms and _same work in chunks, with the same answers."""
    o = torch.randn(4001, dtype=torch.float64) * 3
    x, nan = (o + 1e-3 * torch.randn(4001, dtype=torch.float64)).float(), o.clone()
    nan[7] = float("nan")
    whole = (E._err(x, o), float(E._rms(o)))
    monkeypatch.setattr(E, "CHUNK", 1000)
    assert (E._err(x, o), float(E._rms(o))) == pytest.approx(whole, rel=1e-12)
    assert whole[1] == pytest.approx(float(o.pow(2).mean().sqrt()), rel=1e-12)
    assert E._same(nan, nan.clone()) and not E._same(o, nan)
    assert not E._same(x, x.clone().index_fill_(0, torch.tensor([3999]), 0.0))


def test_a_plan_with_the_oracle_on_the_host_keeps_the_timed_rounds_on_the_device_where_they_fit():
    src = BIG.format(n=GIB // 4)  # 1 GiB in, 1 GiB out, peak 2 GiB
    host = fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, 1, "host")
    assert fences.memory_plan(src, "cuda", budget=host + 2 * GIB).rounds == "device"
    assert fences.memory_plan(src, "cuda", budget=host + GIB).rounds == "host"
