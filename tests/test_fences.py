"""The walls in fences.py and the judge's steps that use them, on the CPU: the memory plan and its one-line refusal,
the charge's tests (the clean-level cap, the bounds' sign test, finite clocks) and the host clock, the tolerance fixed
before the candidate's call, every distribution drawn in timed rounds."""
import random
import time
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
    workers 2 x 2, the oracle on the device in float64 2 x (1 + 1): 6 + 7 + 4 + 4 = 21 GiB; on CUDA one probe's
    copy of the outputs beside a forward (1 more) and the contexts (the comparisons widen a chunk at a time: no
    float64 copy of an answer)."""
    assert fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, 2, "device", cuda=False) == 21 * GIB
    assert fences.evaluation_bytes(GIB, GIB, 0, 2 * GIB, 2, "device") == 22 * GIB + fences.CONTEXT_BYTES
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


def test_median_bounds_by_hand():
    """The sign test's order statistics: k = floor((n - z sqrt(n)) / 2) from each end, at least the ends; z < 0
    turns them round."""
    assert fences.median_bounds(range(100), z=2.5) == (37, 62)   # (100 - 25) / 2 = 37.5
    assert fences.median_bounds(range(10), z=2.5) == (1, 8)      # (10 - 7.9) / 2 = 1.05: 9 of 10 above the lower
    assert fences.median_bounds([5, 1, 3], z=2.5) == (1, 5)      # too few rounds for any test: the ends
    assert fences.median_bounds(range(10), z=-2.5)[0] == 8       # (10 + 7.9) / 2 = 8.95: most lie under it


def test_clean_cap_by_hand():
    """Per clock (parts: precise, then beyond it), the reference's paired rounds are capped at the clean level plus
    the noise only where the test says they ran slower than the clean rounds."""
    clean = [[1.0, 0.5]] * 10
    capped = fences.clean_cap([[2.0, 0.5]] * 20, clean, [0.02, 0.05])  # the precise clock twice as slow, every round
    assert capped == [[pytest.approx(1.02), 0.5]] * 20                  # its overhead as alone: not capped
    assert fences.clean_cap([[2.0, 0.5]] * 20, [], [0.02, 0.05]) == [[2.0, 0.5]] * 20  # no clean rounds: no cap
    # the clean rounds' own spread (0.9-1.8: a busy phase) covers the paired level: no evidence
    spread = [[0.9 + 0.1 * i, 0.5] for i in range(10)]
    assert fences.clean_cap([[1.5, 0.5]] * 20, spread, [0.02, 0.05]) == [[1.5, 0.5]] * 20


def test_a_busy_phase_moves_no_cap_and_no_bound():
    """Identical code on a busy host: the paired rounds alternate 1.0 and 1.3 ms on both sides (the neighbour took
    the CPU in every other round) and the judge's clock of either side jumps by a 4 ms time slice in some rounds;
    alone the reference ran 1.0 ms in every round. Capping the reference by its clean level (1.02) and bounding the
    candidate by its judge's level (a median of a mixture) pays 0.33x. Noise that moves one side in some rounds, or
    one phase, is no evidence: 1.0x."""
    ref = [(x, x + 0.1, x + 0.3) for x in [1.0, 1.3] * 10]
    clean = [(1.0, 1.1, 1.3)] * 10
    spiked = {1, 3, 5, 6, 9, 11, 15, 17, 19}  # 9 of 20 rounds: 8 of the odd calls, 1 of the even calls
    cand = [(x, x + 0.1, x + 0.3 + 4.0 * (i in spiked)) for i, x in enumerate([1.0, 1.3] * 10)]
    ref_ms, cand_ms, *_ = E.charge({"ref": ref, "cand": cand, "clean": clean})
    assert ref_ms == cand_ms == pytest.approx(1.15)


def test_charge_caps_a_reference_slowed_beside_the_candidate_by_its_clean_level():
    """The candidate left GPU work running while the reference was timed: its paired rounds took 2 ms on the
    precise clock and 3 ms on the judge's (1 ms overhead); alone it takes 1 ms and 0.5 ms of overhead."""
    slowed = [(2.0, 2.5, 3.0)] * 5
    cand = [(1.0, 1.5, 2.0)] * 5
    clean = [(1.0, 1.3, 1.5)] * 5
    assert E.charge({"ref": slowed, "cand": cand})[:2] == (2.0, 1.0)  # 2x for nothing
    ref_ms, cand_ms, *_ = E.charge({"ref": slowed, "cand": cand, "clean": clean})
    assert ref_ms == pytest.approx(1.02)              # its clean level plus 2% (slack)
    # the judge's clock: 1.0 + (1.0 - the clean overhead 0.5 x 1.03, capped) - the allowance max(0.0204, 0.03 x 0.515)
    assert cand_ms == pytest.approx(2.0 - 0.515 - 0.0204)


def test_identical_code_pays_nothing_for_the_quieter_host_of_the_clean_rounds():
    """Measured (KernelBench's 12_Matmul_with_diagonal_matrices_, 169 rounds): identical code, 0.061 ms on both
    sides' events, 0.62 ms of the worker's overhead and 0.47 ms of host CPU time paired; alone the reference's
    overheads were 0.53 and 0.34 ms, its events as paired. Its overheads capped alone paid 0.68x; the wider clocks
    are capped only with the precise one."""
    rng = random.Random(1)

    def calls(n, worker, judge, host):
        return [tuple(v * rng.uniform(0.97, 1.03) for v in (0.061, 0.061 + worker, 0.061 + judge, host))
                for _ in range(n)]
    ref, cand, clean = calls(169, 0.62, 2.88, 0.47), calls(169, 0.62, 2.88, 0.47), calls(10, 0.53, 2.66, 0.34)
    ref_ms, cand_ms, *_ = E.charge({"ref": ref, "cand": cand, "clean": clean})
    assert ref_ms / cand_ms == pytest.approx(1.0, abs=0.02)
    assert fences.clean_cap([[1.0, 0.6]] * 20, [[1.0, 0.4]] * 10, [0.02, 0.05]) == [[1.0, 0.6]] * 20
    assert fences.clean_cap([[2.0, 0.6]] * 20, [[1.0, 0.4]] * 10, [0.02, 0.05])[0] == pytest.approx([1.02, 0.42])  # both


def test_charge_counts_cpu_work_the_hold_hides_on_the_host_clock():
    """CUDA: CPU work inside the hold's window is on none of the other clocks: 0.4 ms of host CPU time against the
    reference's 0.02 is charged (less the reference's level and its allowance)."""
    ref = [(1.0, 1.2, 2.0, 0.02)] * 5
    cand = [(0.01, 0.21, 1.01, 0.40)] * 5
    assert E.charge({"ref": ref, "cand": cand})[1] == pytest.approx(0.40 - 0.02 - 0.02)
    assert E.charge({"ref": ref, "cand": [(0.5, 0.7, 1.5, 0.02)] * 5})[1] == 0.5    # launches alone: the events
    assert E.charge({"ref": [x[:3] for x in ref], "cand": [x[:3] for x in cand]})[1] < 0.4  # without it: free


def test_no_single_clock_value_switches_a_bound_off():
    """NaN or infinity anywhere in a timed call's clocks (max and min drop a NaN silently; a sort puts it anywhere),
    or a host clock the candidate's report leaves out where the reference's has one, fails the candidate (`wire`),
    never the reference."""
    ref, cand, clean = [(1.0, 1.2, 2.0, 0.02)] * 5, [(0.01, 0.21, 1.01, 0.40)] * 5, [(1.0, 1.2, 2.0, 0.02)] * 5
    for side in ("ref", "cand", "clean"):
        for c in range(4):
            for bad in (float("nan"), float("inf"), -float("inf")):
                clock = {"ref": list(ref), "cand": list(cand), "clean": list(clean)}
                clock[side][2] = tuple(bad if i == c else v for i, v in enumerate(clock[side][2]))
                with pytest.raises(fences.Verdict) as e:
                    E.charge(clock)
                assert (e.value.status, e.value.check) == ("rejected", "wire"), (side, c, bad)
    no_host = cand[:2] + [(0.01, 0.21, 1.01, None)] + cand[3:]
    with pytest.raises(fences.Verdict, match="wire|not finite"):
        E.charge({"ref": ref, "cand": no_host})


class _FakeSides:
    """The judge's view of one evaluation, in process: the reference is relu; the candidate answers in bf16 and
    then, like a candidate that reaches the judge's memory, overwrites the reference's answer with its own."""

    def __init__(self):
        self.recv = {"ref": [torch.zeros(64, 64)], "cand": [torch.zeros(64, 64)]}
        self.host, self.device, self.idx, self.seen = False, "cpu", [torch.arange(8)], []
        self.stage = {"ref": [[None], [None]], "cand": [[None], [None]]}

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


# ---------------------------------------------------------------------------- the trust boundary

def _calls(path):
    """(enclosing function, call text) of every call in a module, by ast."""
    import ast
    tree, found = ast.parse(path.read_text()), []

    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            name = f"{where}.{child.name}" if isinstance(child, (ast.FunctionDef, ast.ClassDef)) else where
            if isinstance(child, ast.Call):
                found.append((name, ast.unparse(child.func)))
            walk(child, name)
    walk(tree, path.stem)
    return found


# Where a root module may call Connection.recv() (pickle.loads), and why the sender is trusted there
TRUSTED_RECV = {
    "evaluator.judge_main.builds": "the judge reads the caller's answer to a build request",
    "evaluator.judge_main.turn": "the judge reads the caller's word that its turn has come",
    "evaluator.judge_main": "the judge reads the caller's messages",
    "evaluator.worker_main": "a worker reads the judge's (or a build process the caller's) requests",
    "evaluator.Worker.request_build": "a worker reads the judge's answer to its build request",
    "fences.Session._judged": "the caller reads the judge's messages (the judge runs no candidate code)",
    "fences.pch_main": "the shared headers' build process reads the caller's message",
}


def test_no_trusted_process_unpickles_what_a_worker_or_a_build_sent():
    """Every Connection.recv() (pickle.loads) in the root modules is a trusted process's message to its reader
    (TRUSTED_RECV); what workers and builds send is read by fences.recv_data alone; nothing calls pickle.load(s) or
    torch.load on anything."""
    recv, readers = {}, set()
    for module in ("evaluator", "fences", "cudal1", "prompts"):
        for where, call in _calls(ROOT / f"{module}.py"):
            assert not call.endswith(("pickle.loads", "pickle.load", "torch.load", "Unpickler")), (where, call)
            if call.endswith(".recv"):
                recv.setdefault(where, []).append(call)
            if call.endswith("recv_data"):
                readers.add(where)
    assert set(recv) <= set(TRUSTED_RECV), {w: c for w, c in recv.items() if w not in TRUSTED_RECV}
    assert {"fences.Remote.reply", "fences._build_answer"} <= readers


def test_fences_runs_the_entry_points_it_is_given_and_never_reaches_into_evaluator():
    """The import graph tells the truth: fences imports no root module and names none of evaluator's entry points or
    classes (Session and build_all start the functions they are handed; failures come back as data)."""
    import ast
    tree = ast.parse((ROOT / "fences.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not imported & {"evaluator", "rl", "cudal1", "prompts"}, imported
    named = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    named |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    banned = {"worker_main", "judge_main", "Result", "HARNESS"}
    assert not named & banned, named & banned
    assert "HARNESS" not in (ROOT / "evaluator.py").read_text()


class _Evil:
    ran = []

    def __reduce__(self):
        return (_Evil.ran.append, ("unpickled",))


def test_recv_data_refuses_a_pickle_and_never_runs_it():
    import multiprocessing as mp
    a, b = mp.Pipe()
    a.send(["ok", _Evil()])  # what a candidate can write onto its own connection
    with pytest.raises(fences.Verdict) as v:
        fences.recv_data(b, "candidate")
    assert v.value.check == "wire" and _Evil.ran == []
    fences.send_data(a, ("ok", [1.5, None, True]))
    assert fences.recv_data(b, "candidate") == ["ok", [1.5, None, True]]
    a.send_bytes(b"[" * 100_000)  # deeper than the parser recurses
    with pytest.raises(fences.Verdict, match="not data"):
        fences.recv_data(b, "candidate")


def test_a_worker_reports_failures_only_and_never_the_references():
    assert fences.failure(["wrong_output", "values", "off by 1"], "candidate").status == "wrong_output"
    for forged in (["ok", "x", "y"], ["runtime_error", "reference", "blame the task"], ["rejected", "A B", "x"],
                   ["rejected", "x"], ["rejected", "x", 3]):
        assert fences.failure(forged, "candidate").check == "wire", forged


@pytest.mark.parametrize("key, flags, refused", [
    ("extra_cflags", ["-O3", "-DNAME=1", "-ffast-math", "-std=c++17", "-fPIC", "-march=native", "-Wall", "-Iinc"], None),
    ("extra_cuda_cflags", ["--use_fast_math", "-gencode=arch=compute_90,code=sm_90", "-Xptxas=-v", "-Xcompiler=-fopenmp",
                           "-Xcompiler", "-O3,-Wall", "-arch", "sm_80", "--expt-relaxed-constexpr"], None),
    ("extra_ldflags", ["-lcublas", "-lm", "-Wl,-rpath,/opt/x", "-Wl,--no-as-needed"], None),
    ("extra_cflags", ["-O3", "-DX=1;touch /tmp/x"], "-DX=1;touch /tmp/x"), ("extra_cflags", ["$(id)"], "$(id)"),
    ("extra_cflags", ["-O2 -g"], "-O2 -g"), ("extra_cflags", ["-fplugin=/tmp/p.so"], "-fplugin"),
    ("extra_cuda_cflags", ["-Xcompiler=-fplugin=/tmp/p.so"], "-fplugin"), ("extra_cflags", ["-B/tmp"], "-B/tmp"),
    ("extra_cuda_cflags", ["-ccbin=/tmp/cc"], "-ccbin"), ("extra_cflags", ["@/tmp/args"], "@/tmp/args"),
    ("extra_cflags", ["-include", "/tmp/h.h"], "-include"), ("extra_cflags", ["-I/tmp"], "-I/tmp"),
    # the words the tools see: a linker plugin behind -Wl, or -Xlinker, an output file behind an -f option
    ("extra_ldflags", ["-Wl,-plugin,/tmp/p.so"], "'-plugin'"), ("extra_ldflags", ["-Xlinker", "-plugin"], "'-plugin'"),
    ("extra_ldflags", ["-Wl,--plugin=/tmp/p.so"], "--plugin"), ("extra_cflags", ["-fopt-info-all=x.txt"], "-fopt-info"),
    ("extra_cuda_cflags", ["-Xcompiler", "-fdump-tree-all=x"], "-fdump"), ("extra_ldflags", ["-lmine"], "-lmine"),
    ("extra_include_paths", ["../other"], "../other"), ("extra_cflags", ["-Wp,-fplugin=/tmp/p.so"], "-Wp,"),
])
def test_candidate_flags_are_single_harmless_words_of_the_families_a_kernel_needs(key, flags, refused):
    """Every word the compiler or linker would see (a wrapper's parts too) is one of fences.FLAG_RULES' families, or
    the build is refused in one line that names the flag."""
    spec = {"kind": "load_inline", "args": {"name": "ext", "cpp_sources": "", key: flags}}
    if refused is None:
        assert fences.check_spec(spec) is spec
        return
    with pytest.raises(fences.Verdict) as v:
        fences.check_spec(spec)
    assert v.value.status == "compile_error" and v.value.check == "build_flags"
    assert refused in v.value.reason and "\n" not in v.value.reason and key in v.value.reason


def test_check_spec_refuses_objects_names_and_file_names_that_are_not_plain():
    for args in ({"name": "a;b"}, {"name": "ok", "files": [["../x.cpp", ""]]}):
        with pytest.raises(fences.Verdict, match="build_flags"):
            fences.check_spec({"kind": "load_inline", "args": args})
    with pytest.raises(fences.Verdict, match="wire"):
        fences.check_spec({"kind": "load_inline", "args": {"name": "ok", "cpp_sources": {"a": 1}}})
    with pytest.raises(fences.Verdict, match="wire"):
        fences.check_spec({"kind": "exec", "args": {"name": "ok"}})


STRAY = "cudal1-stray-test"  # the marker a test survivor carries in its argv, for /proc scans
ZOMBIE_LEADER = ("import ctypes, threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); "
                 "ctypes.CDLL(None).pthread_exit(None)")  # its leader thread exits, its other thread sleeps on


def _strays():
    """The processes carrying STRAY (read through their threads: a zombie leader's own cmdline reads empty)."""
    found = set()
    for task in Path("/proc").glob("[0-9]*/task/*/cmdline"):
        try:
            if STRAY.encode() in task.read_bytes():
                found.add(task.parts[2])
        except OSError:
            pass
    return found


def test_a_process_whose_leader_thread_exited_is_alive_to_group_pids():
    import os
    p = subprocess.Popen([sys.executable, "-c", ZOMBIE_LEADER, STRAY], process_group=0)
    try:
        deadline = time.time() + 30
        while fences._state(f"/proc/{p.pid}/stat") != "Z" and time.time() < deadline:
            time.sleep(0.02)
        assert fences._state(f"/proc/{p.pid}/stat") == "Z"  # the leader, while its thread runs
        assert fences.group_pids(p.pid) == [str(p.pid)] and fences.alive(p.pid)
        fences.signal_group(p.pid, 9)
        p.wait(10)
        assert not fences.alive(p.pid) and os.waitpid  # reaped: gone
    finally:
        p.kill()


SURVIVOR = f"""
# (load_inline named here: evaluate runs this module in a build process first)
import os, sys
if os.getsid(0) == os.getpid() and os.environ.get("CUDAL1_TEST_STRAY") is None:  # in the build process only
    os.environ["CUDAL1_TEST_STRAY"] = "1"
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)  # a group of its own (a build may: ninja does), then its leader thread exits
        os.execv(sys.executable, [sys.executable, "-c", {ZOMBIE_LEADER!r}, "{STRAY}"])
    for _ in range(2000):  # the build answers once the survivor's leader is a zombie
        if open(f"/proc/{{child}}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
            break
        __import__("time").sleep(0.01)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_a_process_a_build_leaves_running_is_named_and_gone_when_the_evaluation_returns():
    """A build that forks a process into a group of its own whose leader thread then exits (its leader a zombie, its
    other thread running) was invisible to the kill of the build's session and outlived the evaluation."""
    assert not _strays()
    res = E.evaluate((ROOT / "tasks/cpu/relu.py").read_text(), SURVIVOR, "cpu", time_budget_s=0.05)
    assert (res.status, res.check) == ("rejected", "background_process"), res.reason
    assert not _strays()


def test_an_orphan_is_killed_when_the_process_that_started_it_is_stopped():
    """Where nothing keeps a process in its session (no seccomp), an orphan goes to the forkserver (a subreaper),
    where fences.stop's sweep finds it, not to init."""
    import os
    ctx = fences.context()
    p = ctx.Process(target=os.system, args=(f"setsid sh -c 'sleep 60; :' {STRAY} >/dev/null 2>&1 &",))
    fences.start([p])
    p.join(30)
    deadline = time.time() + 10
    while not _strays() and time.time() < deadline:
        time.sleep(0.02)
    assert _strays()  # the orphan lives on after its parent ended
    fences.stop([p])
    deadline = time.time() + 5
    while _strays() and time.time() < deadline:
        time.sleep(0.02)
    assert not _strays()


PROBE = """
# (load_inline named here: a build process runs this module first, then the candidate's worker)
import os
from pathlib import Path

status = dict(line.split(":", 1) for line in open("/proc/self/status"))
held = {k: status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb") if int(status[k], 16)}
if held or status["NoNewPrivs"].strip() != "1":
    raise RuntimeError(f"privileges held: {held}, NoNewPrivs {status['NoNewPrivs'].strip()}")
for path in ["/dev/shm/cudal1-probe", "{pch}/cudal1-probe", "{other}/cudal1-probe"]:
    try:
        open(path, "w").close()
    except OSError:
        continue
    raise RuntimeError(f"wrote {path}")
open("/dev/null", "w").close()
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_workers_and_builds_hold_no_privilege_and_cannot_write_shared_memory_or_anothers_builds():
    """No capability in any set, no new privileges; /dev/shm and the build cache's other folders (another source's
    builds, the shared precompiled headers) not writable, /dev/null writable, in a build process and in the
    candidate's worker."""
    pch, other = fences.build_root() / "pch", fences.build_root() / fences.owner_of("another source")
    for folder in (pch, other):
        folder.mkdir(parents=True, exist_ok=True)
    res = E.evaluate((ROOT / "tasks/cpu/relu.py").read_text(), PROBE.replace("{pch}", str(pch)).replace(
        "{other}", str(other)), "cpu", time_budget_s=0.05)
    assert res.status == "ok", res.reason
    assert not list(fences.build_root().glob("*/cudal1-probe")) and not Path("/dev/shm/cudal1-probe").exists()


def test_the_flag_reader_sees_a_setting_that_is_back_before_forward_returns():
    """fences.FlagReader reads ATen's settings at every op: a toggle between two ops is seen at the second, although
    the setting is back at the end; no toggle, nothing seen; the CUDA runtime is not asked (inside a graph capture)."""
    x = torch.ones(3)
    quiet = fences.FlagReader(fences.global_flags())
    with quiet:
        (x + 1).sum()
    assert quiet.seen is None
    was = torch.backends.cuda.matmul.allow_tf32
    reader = fences.FlagReader(fences.global_flags())
    try:
        with reader:
            y = x + 1
            torch._C._set_cublas_allow_tf32(not was)  # what native code can do: torch's setter, unwrapped
            y.sum()
            torch._C._set_cublas_allow_tf32(was)
    finally:
        torch._C._set_cublas_allow_tf32(was)
    assert reader.seen and reader.seen.startswith("aten.sum") and "cuda.matmul.allow_tf32" in reader.seen
    assert "persisting_l2" not in fences.global_flags(limits=False)
