"""Evaluator contracts: static checks, the CLI, the Python API, batches. The hack corpus is in test_corpus.py."""
import dataclasses
import fcntl
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
import sys
from pathlib import Path

import pytest

import evaluator as E
import fences

ROOT = Path(__file__).resolve().parent.parent
RELU = (ROOT / "tasks/cpu/relu.py").read_text()
FAST = dict(time_budget_s=0.05, min_rounds=5, max_rounds=20, warmup=1)

HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
"""

SAME = RELU.replace("class Model(", "class ModelNew(").replace('"""ReLU', '"""Copied: ReLU')


def test_static_syntax_error_names_the_line():
    res, _ = E.static_check(RELU, "import torch\nclass ModelNew(:\n    pass\n")
    assert res.status == "compile_error" and res.check == "syntax" and "line 2" in res.reason


def test_static_missing_modelnew_tells_what_to_define():
    res, _ = E.static_check(RELU, "import torch\nclass Model(torch.nn.Module):\n    pass\n")
    assert res.check == "no_modelnew" and "class ModelNew(nn.Module)" in res.reason


def test_static_signature_mismatch():
    cand = HONEST.replace("def forward(self, x):", "def forward(self, x, y):")
    res, _ = E.static_check(RELU, cand)
    assert res.status == "compile_error" and res.check == "signature" and "forward" in res.reason


def test_static_same_as_reference_ignores_docstrings_and_super_form():
    assert E.static_check(RELU, SAME) == (None, True)
    assert E.static_check(RELU, SAME.replace("super().__init__()", "super(ModelNew, self).__init__()")) == (None, True)
    assert E.static_check(RELU, HONEST) == (None, False)


def test_evaluate_honest_and_identical():
    ok = E.evaluate(RELU, HONEST, "cpu", **FAST)
    assert ok.status == "ok" and ok.correct and not ok.same_as_reference, ok.reason
    assert ok.speedup > 0 and ok.ref_ms > 0 and ok.cand_ms > 0 and ok.rounds >= 5
    assert 0 <= ok.max_err <= 1
    same = E.evaluate(RELU, SAME, "cpu", **FAST)
    assert same.status == "ok" and same.same_as_reference and same.reason.startswith("same_as_reference")


def test_a_forked_copy_of_the_caller_is_told_to_evaluate_from_the_caller():
    """The forkserver forks for the process that started it only (a request from any other is refused and the
    requester killed, hacks/forkserver_escape): a fork of the caller gets a clear error instead."""
    assert E.evaluate(RELU, HONEST, "cpu", **FAST).status == "ok"  # the forkserver runs, started by this process
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy
        try:
            E.evaluate(RELU, HONEST, "cpu", **FAST)
            os.write(w, b"evaluated")
        except RuntimeError as e:
            os.write(w, str(e).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        assert b"forked copy of the process that started its forkserver" in f.read()
    assert E.evaluate(RELU, HONEST, "cpu", **FAST).status == "ok"  # the caller itself still evaluates


def test_an_unread_refusal_note_of_an_older_process_group_never_blames_a_new_candidate():
    """A forkserver's refusal note is keyed by the requester's process group; one left unread (its evaluation ended
    another way) would name whichever worker later gets that number. Notes planted for the next 2,000 pids: an
    honest candidate is still ok."""
    import tempfile
    last, top = (int(Path(f"/proc/sys/kernel/{f}").read_text()) for f in ("ns_last_pid", "pid_max"))
    pids = [300 + (last + 1 + i - 300) % (top - 300) for i in range(2000)]  # the kernel wraps to 300
    notes = [Path(tempfile.gettempdir(), f"cudal1-refused-0-{p}") for p in pids]
    try:
        for note in notes:
            note.touch()
        res = E.evaluate(RELU, HONEST, "cpu", **FAST)
        assert res.status == "ok", res.reason
    finally:
        for note in notes:
            note.unlink(missing_ok=True)


def test_evaluate_many_mixes_static_failures_and_runs():
    """A static failure, a failed C++ build and a run in one call; phases counts the build (failed, not compiled)."""
    broken = (ROOT / "tests/corpus/failures/build_error.py").read_text()
    phases = {}
    res = E.evaluate_many([(RELU, "x = 1"), (RELU, broken), (RELU, HONEST)], "cpu", progress=False, phases=phases,
                          **FAST)
    assert [r.status for r in res] == ["compile_error", "compile_error", "ok"]
    assert res[0].check == "no_modelnew" and res[1].check == "build"
    assert (phases["builds"], phases["build_failed"], phases["compiled"]) == (1, 1, 0)
    assert phases["build_s"] > 0 and phases["evaluate_s"] > 0
    assert phases["build_wait_s"] == phases["build_s"]  # on the CPU the builds end before any evaluation


def test_evaluate_many_evaluates_a_task_s_candidates_against_one_reference_worker():
    """One device thread: each task's candidates in turn (its next ready pair first), one session (judge and
    reference worker) per task; a whole evaluation's timeout ends the session and the next candidate starts another.
    """
    add_mul = (ROOT / "tasks/cpu/add_mul.py").read_text()
    copy = add_mul.replace("class Model(", "class ModelNew(")
    slow = HONEST.replace("        return x.clamp_min(0.0)", "        import time; time.sleep(30)\n        return x")
    order, phases = [], {}
    res = E.evaluate_many([(RELU, HONEST), (add_mul, copy), (RELU, HONEST), (add_mul, copy)], "cpu", progress=False,
                          phases=phases, in_flight=1, on_result=lambda i, r: order.append(i), **FAST)
    assert [r.status for r in res] == ["ok"] * 4 and order == [0, 2, 1, 3] and phases["sessions"] == 2, phases
    phases = {}
    res = E.evaluate_many([(RELU, slow), (RELU, HONEST), (RELU, HONEST)], "cpu", progress=False, phases=phases,
                          in_flight=1, **{**FAST, "call_timeout_s": 60.0, "eval_timeout_s": 4.0})
    assert [r.status for r in res] == ["timeout", "ok", "ok"] and phases["sessions"] == 2, (res, phases)


def test_a_build_leaves_no_temp_folder(tmp_path, monkeypatch):
    """The build processes' log folder (cudal1-build-*) goes when they have ended, here after a failed build."""
    fences.context()  # the forkserver first: its socket's folder stays in the machine's temp dir
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    failed = E.build_all(["from torch.utils.cpp_extension import load_inline\nraise ImportError('no compiler')\n"],
                         "cpu", progress=False)
    assert len(failed) == 1 and not list(tmp_path.iterdir()), list(tmp_path.iterdir())


CTRL_C = """
import sys
sys.path.insert(0, {root!r})
import evaluator
if __name__ == "__main__":
    evaluator.evaluate_many([({ref!r}, {slow!r})] * 2, "cpu", progress=False)
"""


def test_a_ctrl_c_during_evaluate_many_leaves_no_temp_folders(tmp_path):
    """Ctrl-C (SIGINT to the process group) while a candidate runs: the process ends and takes its logs and the
    workers' TMPDIRs (cudal1-eval-*, cudal1-ref-*) with it."""
    slow = HONEST.replace("        return x.clamp_min(0.0)", "        import time; time.sleep(30)\n        return x")
    (tmp_path / "driver.py").write_text(CTRL_C.format(root=str(ROOT), ref=RELU, slow=slow))
    tmp = Path(tempfile.mkdtemp(prefix="c1-"))  # its TMPDIR: short, for the forkserver's socket path (108 bytes)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "driver.py")], env=dict(os.environ, TMPDIR=str(tmp)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 120
        while len(list(tmp.glob("cudal1-eval-*/candidate.log"))) < 1:  # the candidate's worker runs
            assert proc.poll() is None, f"the driver exited: {proc.stderr.read()[-2000:]}"
            assert time.time() < deadline, "the driver did not reach the candidate"
            time.sleep(0.1)
        time.sleep(6)  # into its 30 s call
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = list(tmp.glob("cudal1-*"))
    shutil.rmtree(tmp, ignore_errors=True)
    assert not left, left


def test_evaluate_many_evaluates_a_pair_again_once_its_reference_was_refused(tmp_path):
    """A reference refused on one session's inputs is the task's fault, not the candidate's: the pair is evaluated
    once more in a new session; a task refused twice in a row is not tried again in that call."""
    def task(always):  # forward overflows in fp32 (float64 does not) on the inputs of a refused session
        return f"""
import os
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x)

def get_inputs():
    if torch.empty(0).is_meta:  # the caller's memory plan sizes the task: not a session's draw
        return [torch.full((64,), 100.0)]
    seen = {str(tmp_path / "seen")!r}  # the first session's judge: the first process that draws inputs
    if not os.path.exists(seen):
        open(seen, "w").write(str(os.getpid()))
    first = open(seen).read() == str(os.getpid())
    return [torch.full((64,), 100.0) if first or {always} else 0.01 * torch.rand(64)]

def get_init_inputs():
    return []
"""
    for always, want, sessions in ((False, ["ok"], 2), (True, ["runtime_error"] * 3, 4)):
        (tmp_path / "seen").unlink(missing_ok=True)
        ref, phases = task(always), {}
        cand = ref.replace("class Model(", "class ModelNew(")
        res = E.evaluate_many([(ref, cand)] * len(want), "cpu", progress=False, phases=phases, in_flight=1, **FAST)
        assert [r.status for r in res] == want and phases["sessions"] == sessions, (res, phases)
        assert always == all(r.check == "reference" and "overflows" in r.reason for r in res)


def test_a_session_goes_on_after_its_judge_or_reference_was_stopped_or_killed_between_candidates():
    """A candidate's process may SIGSTOP or SIGKILL the judge or the reference's worker (before Linux 6.12 Landlock
    does not fence signals) as its last act, after the judge's last call: the next candidate of the session still
    gets its verdict, from the same processes (continued) or, where one is gone, from new ones."""
    session = fences.Session(RELU, "cpu", E.worker_main, E.judge_main)
    opts = {**FAST, "call_timeout_s": 5.0, "eval_timeout_s": 20.0}
    try:
        assert E.evaluate(RELU, HONEST, "cpu", session=session, **opts).status == "ok"
        for p in session.procs:
            os.kill(p.pid, signal.SIGSTOP)
        res = E.evaluate(RELU, HONEST, "cpu", session=session, **opts)
        assert res.status == "ok" and session.started == 1, res
        os.kill(session.procs[1].pid, signal.SIGKILL)  # the judge
        session.procs[1].join(5)
        res = E.evaluate(RELU, HONEST, "cpu", session=session, **opts)
        assert res.status == "ok" and session.started == 2, res
    finally:
        session.close()


def test_evaluate_many_with_overlap_evaluates_what_needs_no_build_while_builds_run(monkeypatch):
    """overlap (a GPU's default): the pairs without a build go first, while a build runs (a fresh one: a comment no
    cache has seen), and the built pair gets its verdict after it; the device waited less than the build took; the
    build's processes were stopped during the clocks."""
    fresh = (ROOT / "tests/corpus/failures/build_error.py").read_text().replace(
        "// `src` is never declared", f"// {time.time_ns()}")
    order, phases, seen, clock = [], {}, [], fences.BuildPause.clock

    def noted(self, on):  # the build's processes as each clock starts: all stopped
        clock(self, on)
        seen.extend(fences._state(f"/proc/{p}/stat") for sid in self.pids if on
                    for p in {str(sid), *fences.group_pids(sid, field=3)})
    monkeypatch.setattr(fences.BuildPause, "clock", noted)
    res = E.evaluate_many([(RELU, fresh), (RELU, HONEST), (RELU, SAME)], "cpu", progress=False, phases=phases,
                          overlap=True, on_result=lambda i, r: order.append(i), **FAST)
    assert [r.status for r in res] == ["compile_error", "ok", "ok"] and res[0].check == "build"
    assert order == [1, 2, 0]
    assert (phases["builds"], phases["build_failed"]) == (1, 1)
    assert 0 <= phases["build_wait_s"] < phases["build_s"]
    assert seen and set(seen) <= {"T", "Z", "X", "D"}, seen  # (Z, X: a compiler that had ended; D: one on disk I/O)


def test_build_pause_stops_every_process_of_a_build_while_any_clock_runs():
    """fences.BuildPause: a build's session (its leader and a child in a group of its own, as ninja starts compilers)
    has stopped by the time the first clock starts, stays stopped until the last one ends, then goes on; a build
    that starts during a clock is stopped at once."""
    code = ("import os, subprocess, time; os.setsid(); subprocess.Popen(['sleep', '60'], process_group=0); "
            "time.sleep(60)")
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not all(len(fences.group_pids(p.pid, field=3)) == 2 for p in procs):
            time.sleep(0.05)
        tree = lambda p: [fences._state(f"/proc/{q}/stat") for q in fences.group_pids(p.pid, field=3)]  # noqa: E731
        wait = lambda p, want: any(set(tree(p)) == {want} or time.sleep(0.05) for _ in range(100))  # noqa: E731
        pause = fences.BuildPause()
        pause.started(procs[0].pid)
        assert len(tree(procs[0])) == 2 and wait(procs[0], "S")
        pause.clock(True), pause.clock(True)
        assert set(tree(procs[0])) == {"T"}  # stopped by the time the clock starts
        pause.started(procs[1].pid)  # starts while a clock runs
        assert set(tree(procs[1])) == {"T"}
        pause.clock(False)
        assert set(tree(procs[0])) == {"T"}  # one clock still runs
        pause.clock(False)
        assert wait(procs[0], "S") and wait(procs[1], "S")
        pause.ended(procs[1].pid)
        pause.clock(True)
        assert set(tree(procs[0])) == {"T"} and set(tree(procs[1])) == {"S"}  # an ended build is left alone
        pause.clock(False)
    finally:
        for p in procs:
            for q in fences.group_pids(p.pid, field=3):
                os.kill(int(q), signal.SIGKILL)
            p.wait()


def test_a_build_time_limit_counts_only_the_time_the_build_ran():
    """A build process stopped by fences.BuildPause (a clock beside it) for longer than its limit is not a timeout: the
    limit counts its time running (1.5 s of CPU here against 6 s), not its wall time (~10 s)."""
    src = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5:\n    pass\n"
    pause = fences.BuildPause()

    def clock():  # once the build has started: a clock for 8 s
        deadline = time.time() + 30
        while not pause.pids and time.time() < deadline:
            time.sleep(0.01)
        pause.clock(True), time.sleep(8), pause.clock(False)
    t = threading.Thread(target=clock)
    t.start()
    t0 = time.time()
    failed = fences.run_builds({"a": ("prebuild", src, fences.child_env(), None)}, "cpu", E.worker_main, 1, 6.0,
                                progress=False, pause=pause)
    t.join()
    assert time.time() - t0 > 8 and failed == {}, failed
    assert 8 <= pause.stopped_s() < 9


def test_turns_give_the_clock_only_to_a_device_nobody_shares():
    """fences.Turns: candidate code in one evaluation at a time; the clock waits for the trusted set-up beside it to reach
    its turn, and while the clock runs no other evaluation starts or runs anything on the device."""
    t, a, b, c = fences.Turns(), set(), set(), set()
    t.share(a)
    t.take("go", a)  # A runs candidate code
    t.share(b)  # B sets up its trusted part beside it
    clock, turn, started = threading.Event(), threading.Event(), threading.Event()
    threading.Thread(target=lambda: (t.take("clock", a), clock.set()), daemon=True).start()
    assert not clock.wait(0.3)  # B still sets up: no clock
    threading.Thread(target=lambda: (t.take("go", b), turn.set()), daemon=True).start()
    assert clock.wait(10) and not turn.wait(0.3)  # B is ready: A has the clock, B waits for A's end
    threading.Thread(target=lambda: (t.share(c), started.set()), daemon=True).start()
    assert not started.wait(0.3)  # nothing new starts while the clock runs
    t.leave(a)
    assert turn.wait(10) and started.wait(10) and a == set() and b == {"turn", "device"} and c == {"device"}
    t.leave(b), t.leave(c)
    assert (t.sharing, t.clock, t.waiting, t.turn.locked()) == (0, False, 0, False)


def test_evaluate_many_in_flight_sets_up_the_next_evaluation_while_one_runs(monkeypatch):
    """in_flight=2 (a GPU's default; tried here on the CPU): the same verdicts as one at a time; an evaluation's
    trusted set-up ran while another one ran, so some waited for their turn (phases' wait); from the log of the
    device's turns, candidate code ran in one evaluation at a time, and no evaluation used the device during
    another's clock (a session's end included)."""
    log, lock = [], threading.Lock()
    take, share, unshare, leave = fences.Turns.take, fences.Turns.share, fences.Turns.unshare, fences.Turns.leave

    def note(what):
        with lock:
            log.append((time.monotonic(), threading.current_thread().name, what))
    monkeypatch.setattr(fences.Turns, "take", lambda self, what, held: (take(self, what, held), note(what)))
    monkeypatch.setattr(fences.Turns, "share", lambda self, held: (share(self, held), note("device")))
    monkeypatch.setattr(fences.Turns, "unshare", lambda self, held: (note("-device"), unshare(self, held)))
    monkeypatch.setattr(fences.Turns, "leave",
                        lambda self, held: (note("-" + "-".join(sorted(held))), leave(self, held)))
    wrong = HONEST.replace("x.clamp_min(0.0)", "x.clamp_min(0.0) + 1.0")
    pairs = [(RELU, HONEST), (RELU, wrong), (RELU, SAME), (RELU, HONEST)]
    phases = {}
    res = E.evaluate_many(pairs, "cpu", progress=False, in_flight=2, phases=phases, **FAST)
    assert [r.status for r in res] == ["ok", "wrong_output", "ok", "ok"] and res[2].same_as_reference
    assert all({"warm", "setup", "wait"} <= r.phases.keys() for r in res if r.status == "ok")
    assert sum(r.phases["wait"] for r in res if r.phases) > 0
    state, spans = {}, {}  # what each thread holds; (thread, kind) -> [start, end] of each time it held kind
    for t, who, what in log:
        held = state.get(who, set())
        now = set() if what.startswith("-") and what != "-device" else \
            held - {"device"} if what == "-device" else held | {{"go": "turn"}.get(what, what)}
        for kind in ("device", "turn", "clock"):
            if kind in now and kind not in held:
                spans.setdefault((who, kind), []).append([t, None])
            elif kind in held and kind not in now:
                spans[(who, kind)][-1][1] = t
        state[who] = now
    assert len(state) == 2 and not any(state.values())  # both threads ran evaluations, and let go of everything
    # the wrong one never timed; each session's end (a judge's and a reference worker's) has the device alone too
    assert sum(len(v) for (_, kind), v in spans.items() if kind == "clock") == 3 + phases["sessions"] == 5
    overlap = lambda a, b: a[0] < b[1] and b[0] < a[1]  # noqa: E731
    for (who, kind), mine in spans.items():
        for (other, theirs), ivs in spans.items():
            if other != who and (kind, theirs) in (("turn", "turn"), ("clock", "clock"), ("clock", "device")):
                assert not any(overlap(x, y) for x in mine for y in ivs), (who, kind, other, theirs)


def test_cli_json_contract(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text(HONEST.replace("x.clamp_min(0.0)", "x.clamp_min(0.0) + 1.0"))  # wrong on purpose
    out = subprocess.run([sys.executable, str(ROOT / "evaluator.py"), str(ROOT / "tasks/cpu/relu.py"), str(cand),
                          "--device", "cpu", "--json", "--time-budget-s", "0.05", "--max-rounds", "10"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr  # an evaluation ran: exit 0 whatever the verdict
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"status", "reason", "correct", "speedup", "ref_ms", "cand_ms"} <= rec.keys()
    assert rec["status"] == "wrong_output" and rec["reason"].startswith("values") and rec["correct"] is False
    assert rec["speedup"] is None


def test_cli_escapes_a_reason_the_terminal_cannot_encode(tmp_path):
    """A candidate's own text in its reason ("café") under an ASCII terminal: the summary escapes it instead of
    ending in a traceback, and the --json line is still JSON with the text in it."""
    cand = tmp_path / "cand.py"
    cand.write_text(HONEST.replace("        return x.clamp_min(0.0)", '        raise RuntimeError("café")'))
    out = subprocess.run([sys.executable, str(ROOT / "evaluator.py"), str(ROOT / "tasks/cpu/relu.py"), str(cand),
                          "--device", "cpu", "--json", "--time-budget-s", "0.05", "--max-rounds", "10"],
                         capture_output=True, timeout=300, env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    rec = json.loads(out.stdout.decode("ascii").strip().splitlines()[-1])
    assert rec["status"] == "runtime_error" and "café" in rec["reason"], rec


def test_a_forward_that_fails_under_the_flag_reader_is_ok_with_the_reason_in_one_line():
    """The op reader's call (Worker.watch) runs forward under a dispatch mode; where forward raises there, its settings
    went unread: the result says so in its reason, as data (a lone surrogate escaped, one line), not as a verdict."""
    cand = HONEST.replace("        return x.clamp_min(0.0)", "        if torch._C._len_torch_dispatch_stack():\n"
                          "            raise ValueError('odd \\ud800\\nline')\n        return x.clamp_min(0.0)")
    r = E.evaluate(RELU, cand, "cpu", **FAST)
    assert r.status == "ok", r.reason
    assert "went unread (ValueError: odd \\ud800 line)" in r.reason, r.reason


def test_cli_usage_errors_exit_nonzero(tmp_path):
    bad_task = tmp_path / "task.py"
    bad_task.write_text("def get_inputs():\n    return []\n")
    cand = tmp_path / "cand.py"
    cand.write_text(HONEST)
    for args, words in (([str(bad_task), str(cand)], "Model"),
                        ([str(ROOT / "tasks/cpu/relu.py"), str(tmp_path / "missing.py")], "missing.py")):
        out = subprocess.run([sys.executable, str(ROOT / "evaluator.py"), *args], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("args, words", [(["--time-budget", "1"], "did you mean --time-budget-s?"),
                                         (["--min-rounds", "x"], "argument --min-rounds: invalid int value"),
                                         (["--device", "tpu"], "argument --device: invalid choice")])
def test_cli_usage_errors_are_one_line_naming_the_flag(args, words, capsys, tmp_path):
    """A usage error is one line naming the flag, with a hint; a missing candidate file is one plain line too."""
    relu = str(ROOT / "tasks/cpu/relu.py")
    for argv, said in (([relu, relu, *args], words), ([relu, str(tmp_path / "missing.py")], "missing.py does not exist")):
        with pytest.raises(SystemExit) as e:
            E.main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and len(err) == 1 and said in err[0] and "Errno" not in err[0], err


def test_cli_help_says_every_options_meaning_and_default(capsys):
    with pytest.raises(SystemExit):
        E.main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    for f in dataclasses.fields(E.Options):
        flag = "--" + f.name.replace("_", "-")
        meaning = re.search(rf"{flag}(?: [A-Z_]+|, --no-[\w-]+) (.+?) \(default: ([^)]*)\)", said)
        assert meaning and meaning[1].strip() and meaning[2] == str(f.default), (flag, said[-300:])


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_identical_code_ratio_near_one():
    ref = (ROOT / "tasks/level1/relu_large.py").read_text()  # a task of the batch the contract was measured on
    res = E.evaluate(ref, ref.replace("class Model(", "class ModelNew("), "cuda")
    assert res.status == "ok" and 0.98 <= res.speedup <= 1.02, res  # identical code within +-2% (an H200)


SAME_OPS = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = F.relu(x)  # written differently, but exactly the reference's aten ops
        return y
"""

UNUSED_KERNEL = """
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor twice(torch::Tensor x) { return x * 2; }"
ext = load_inline(name="unused_kernel", cpp_sources=CPP, functions=["twice"], verbose=False)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)  # the extension above is built but never called
"""


def test_copies_are_checked_in_full_and_barely_timed_with_time_copies_off():
    """time_copies=False (rl.py's setting: a copy earns copy_reward whatever its speed): the renamed reference and a
    rewrite running exactly its ops pass every check and are timed 1-2 rounds, said in the reason; a broken copy still
    fails; other candidates and the default keep the full timing (min_rounds 5 here)."""
    opts = dict(FAST, time_copies=False)
    for copy_src in (SAME, SAME_OPS):
        r = E.evaluate(RELU, copy_src, "cpu", **opts)
        assert r.status == "ok" and r.same_as_reference and 1 <= r.rounds <= 2 and "time_copies off" in r.reason
        assert E.evaluate(RELU, copy_src, "cpu", **FAST).rounds >= 5
    assert E.evaluate(RELU, HONEST, "cpu", **opts).rounds >= 5
    broken = SAME + "\nimport types\ntorch = types.SimpleNamespace(relu=lambda x: 2 * x)  # the class is the same\n"
    assert E.static_check(RELU, broken) == (None, True)
    assert E.evaluate(RELU, broken, "cpu", **opts).status == "wrong_output"


def test_speedup_kind_separates_own_kernels_library_ops_and_the_references_ops():
    same_ops = E.evaluate(RELU, SAME_OPS, "cpu", **FAST)
    assert same_ops.status == "ok" and same_ops.speedup_kind == "reference_ops"
    assert same_ops.same_as_reference and "exactly the reference's ops" in same_ops.reason
    library = E.evaluate(RELU, HONEST, "cpu", **FAST)
    assert library.speedup_kind == "framework_ops" and not library.same_as_reference
    unused = E.evaluate(RELU, UNUSED_KERNEL, "cpu", **FAST)
    assert unused.status == "ok" and unused.speedup_kind == "framework_ops"
    assert "never ran" in unused.reason  # (C++ kernels that do run: tests/corpus/honest/cpp_*, kind custom_kernel)


def test_speedup_kind_matches_gpu_kernel_names_from_the_source():
    cuda_src = '__global__ void relu_kernel(const float* x, float* y, long n) {}\n@triton.jit\ndef fused_gelu(x_ptr):'
    ref_prof = {"ops": {"aten::relu": 1}, "kernels": ["vectorized_elementwise_kernel<4, ...>"], "ext_calls": 0}
    mine = {"ops": {}, "kernels": ["relu_kernel(float const*, float*, long)"], "ext_calls": 1}
    assert E.speedup_kind(ref_prof, mine, cuda_src, cuda=True) == "custom_kernel"
    triton = {"ops": {}, "kernels": ["fused_gelu_0d1d"], "ext_calls": 0}  # Triton appends a signature suffix
    assert E.speedup_kind(ref_prof, triton, cuda_src, cuda=True) == "custom_kernel"
    other = {"ops": {}, "kernels": ["fused_gelu_backward"], "ext_calls": 0}  # another kernel, not ours
    assert E.speedup_kind(ref_prof, other, cuda_src, cuda=True) == "framework_ops"
    lib_only = {"ops": {"aten::clamp_min": 1}, "kernels": ["vectorized_elementwise_kernel"], "ext_calls": 1}
    assert E.speedup_kind(ref_prof, lib_only, cuda_src, cuda=True) == "framework_ops"  # a call is not a kernel on GPU
    assert E.speedup_kind(ref_prof, dict(ref_prof), "", cuda=True) == "reference_ops"


def test_rescore_release_file_and_kernelbench_folders(tmp_path):
    """bench/rescore.py --release and --tasks/--candidates: per-task rows, per-level aggregates, missing counted
    as 1.0x."""
    sys.path.insert(0, str(ROOT / "bench"))
    import rescore
    add_mul = (ROOT / "tasks/cpu/add_mul.py").read_text()
    release = tmp_path / "release.jsonl"
    release.write_text("\n".join(json.dumps(r) for r in [
        {"level_id": 1, "task_id": "relu", "ref_code": RELU, "custom_code": HONEST},
        {"level_id": 1, "task_id": "add_mul", "ref_code": add_mul, "custom_code": None}]) + "\n")
    out = tmp_path / "table.md"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "rescore.py"), "--release", str(release),
                          "--device", "cpu", "--out", str(out), "--time-budget-s", "0.05", "--max-rounds", "10"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.with_suffix(".json").read_text())
    assert [(r["task"], r["status"]) for r in rows] == [("relu", "ok"), ("add_mul", "missing")]
    assert rows[0]["speedup"] > 0 and rows[0]["vs_compile"] > 0 and rows[0]["kind"] == "framework_ops"
    table = out.read_text()
    assert "| 1 | eager | 2 |" in table and "| 1 | torch.compile | 2 |" in table and "count as 1.0x" in table

    tasks, cands = tmp_path / "level1", tmp_path / "runs"
    tasks.mkdir(), cands.mkdir()
    (tasks / "19_ReLU.py").write_text(RELU)
    (tasks / "2_AddMul.py").write_text(add_mul)
    (cands / "19_ReLU.py").write_text(HONEST.replace("x.clamp_min(0.0)", "x.clamp_min(0.0) + 1"))  # wrong
    rows, summary = rescore.rescore(rescore.folder_items(tasks, cands), "cpu", compile_baseline=False, progress=False,
                                    **FAST)
    assert {r["task"]: r["status"] for r in rows} == {"19_ReLU": "wrong_output", "2_AddMul": "missing"}
    agg = summary[("level1", "speedup")]
    assert agg["n"] == 2 and agg["mean"] == agg["median"] == agg["geomean"] == 1.0  # failures count as 1.0x
    assert agg["fast_1"] == agg["fast_1_2"] == 0.0


def test_a_forward_that_fails_only_while_profiled_is_a_phase_branch():
    cand = HONEST.replace("        return x.clamp_min(0.0)",
                          "        if torch.autograd.profiler._is_profiler_enabled:\n"
                          "            raise RuntimeError('not while profiled')\n"
                          "        return x.clamp_min(0.0)")
    res = E.evaluate(RELU, cand, "cpu", **FAST)
    assert res.status == "rejected" and res.check == "phase_branch" and "profiled" in res.reason


def test_charge_believes_no_clock_of_the_candidates_below_what_the_judge_saw():
    # per call (precise ms, worker's ms, judge's ms); the reference's overhead beyond its precise clock is 0.1 ms on
    # the worker's clock and 0.3 ms on the judge's, on every call; its level 1.0 ms (the even calls' median 0.9, the
    # odd calls' 1.1), so the slack is 0.02 ms
    ref = [(1.0, 1.1, 1.3), (1.2, 1.3, 1.5), (0.8, 0.9, 1.1), (1.0, 1.1, 1.3)]
    same = [(0.5, 0.62, 0.82), (0.4, 0.5, 0.7), (0.6, 0.7, 0.9), (0.5, 0.6, 0.8)]  # (0.66 + 0.55) / 2 - 0.12 < 0.5
    hidden = [(x / 2, x / 2 + 0.1, x / 2 + 3.3) for x, _, _ in ref]  # half the reference's time; 3 ms more, judged
    forged = [(0.01, 0.01, 1.3)] * 4                              # reports ~0.01 ms; the judge saw 1.3 - 0.3 = 1.0
    ref_ms, cand_ms, ref_spread, cand_spread = E.charge({"ref": ref, "cand": same})
    assert ref_ms == pytest.approx(1.0) and cand_ms == pytest.approx(0.5)
    assert ref_spread == pytest.approx((1.05 - 0.95) / 1.0) and cand_spread == pytest.approx((0.525 - 0.475) / 0.5)
    assert E.charge({"ref": ref, "cand": hidden})[1] == pytest.approx(0.5 + 3.0 - 0.02)
    assert E.charge({"ref": ref, "cand": forged})[1] == pytest.approx(0.98, abs=1e-3)  # (its precise level ~0.0101)
    assert E.charge({"ref": ref, "cand": forged}, slack=0.0, rel=(0.0, 0.0))[1] == pytest.approx(1.0, abs=1e-3)
    assert E.charge({"ref": ref, "cand": forged}, rel=(0.0, 0.5))[1] == pytest.approx(1.3 - 0.3 - 0.15, abs=1e-3)
    in_harness = [(x / 2, x / 2 + 2.6, x / 2 + 2.7) for x, _, _ in ref]  # 2.6 - 0.1 after forward (judge: 2.7 - 0.3)
    assert E.charge({"ref": ref, "cand": in_harness})[1] == pytest.approx(2.98)
    # paired round by round: the reference's overhead on the judge's clock is 0.2, 0.3, 0.4 ms, the candidate's
    # 1.4 ms in each: excesses 1.2, 1.1, 1.0, all beyond the allowance: the median 1.1 - 0.02 is added
    noisy = [(1.0, 1.0, 1.2), (1.0, 1.0, 1.3), (1.0, 1.0, 1.4)]
    assert E.charge({"ref": noisy, "cand": [(0.1, 0.1, 1.5)] * 3})[1] == pytest.approx(0.1 + 1.1 - 0.02)
    assert E.charge({"ref": noisy, "cand": [(0.0, 0.0, 0.2)] * 3})[1] == pytest.approx(1e-4)  # at most 10,000x
    # hidden work in one round of three: no evidence (the sign test asks for it in every round of so few)
    once = [(0.1, 0.1, 1.5), (0.1, 0.1, 0.4), (0.1, 0.1, 0.5)]
    assert E.charge({"ref": noisy, "cand": once})[1] == pytest.approx(0.1)


def test_a_clock_that_alternates_with_the_buffer_sets_is_charged_its_mean_level():
    """Rounds alternate two buffer sets and a side's time can alternate with them (an H200's 7 us reference: 6.8 and
    7.6 us on alternate calls): the median of that mixture jumps between the modes with one call more or less; the
    level (mean of the even and the odd calls' medians) stays in the middle."""
    rng = random.Random(0)
    for n in (99, 100, 101, 160, 161):
        xs = [(8.0 if i % 2 == 0 else 7.2) + rng.uniform(-0.1, 0.1) for i in range(n)]
        assert E._level(xs) == pytest.approx(7.6, abs=0.03)
        assert abs(statistics.median(xs) - 7.6) > 0.25 or n % 2 == 0  # what charging the median would pay
        steady = {"ref": [(x, x + 0.1, x + 0.3) for x in xs], "cand": [(4.0, 4.1, 4.3)] * n}
        assert E.charge(steady)[0] == pytest.approx(7.6, abs=0.03)
    assert E._level([3.0]) == 3.0 and E._level([1.0, 2.0, 4.0]) == 2.25  # (median(1, 4) + 2) / 2


def test_keep_samples_returns_every_timed_call_of_both_sides():
    r = E.evaluate(RELU, HONEST, device="cpu", min_rounds=4, max_rounds=4, warmup=1, keep_samples=True)
    assert r.status == "ok" and r.rounds == 4
    for side in ("ref", "cand"):
        assert len(r.samples[side]) == 4
        for ev, worker, judge, host in r.samples[side]:
            assert ev < worker < judge  # forward alone; then the guard and copy-out; then messaging and input writes
            assert host is None  # the host clock: CUDA only
    assert r.samples["clean"] == []  # no clean rounds on the CPU (the reference alone: CUDA only)


def test_precision_stops_timing_once_the_speedup_is_known_that_well():
    """precision p: timing stops after min_rounds once the 95% interval of the speedup is within +-p (the rule
    replayed on the kept rounds stops where the evaluation did); off (0), the time budget decides."""
    opts = dict(min_rounds=6, max_rounds=200, warmup=1, time_budget_s=0.3, keep_samples=True)
    loose = E.evaluate(RELU, HONEST, "cpu", precision=0.5, **opts)
    off = E.evaluate(RELU, HONEST, "cpu", **opts)

    def stops_at(clock, precision):  # _timed_rounds' rule, round by round
        for n in range(len(clock["ref"]) + 1):
            so_far = {k: clock[k][:n] for k in ("ref", "cand")}  # (clean: the reference's rounds after them)
            spent = min(sum(x[2] for x in v) for v in so_far.values())  # the judge's clock
            if n >= 200 or (n >= 6 and (spent >= 300 or E._precise_enough(so_far, precision))):
                return n
    assert loose.status == off.status == "ok", (loose, off)
    assert stops_at(loose.samples, 0.5) == loose.rounds and stops_at(off.samples, 0.0) == off.rounds > 18
    assert not E._precise_enough(loose.samples, 0.0)
    precise = {k: [(x[0],) * 3 for x in off.samples[k]] for k in ("ref", "cand")}  # charged by the precise clock
    r = [math.log(a[0] / b[0]) for a, b in zip(precise["ref"], precise["cand"])]
    half = 1.96 * statistics.stdev(r) / len(r) ** 0.5  # what the rule computes, by hand
    assert E._precise_enough(precise, math.expm1(half) * 1.01) and not E._precise_enough(precise,
                                                                                      math.expm1(half) * 0.99)


def test_precision_never_stops_early_while_a_wider_clock_decides_the_charge():
    """A candidate charged by the judge's clock (work the precise one missed), or that may yet be, is timed to the
    budget, however tight its precise clock's ratios are: timing stops early only once the rounds show no wider
    clock's excess beyond its allowance (the sign test turned round)."""
    ref = [(1.0 + 0.001 * (i % 3), 1.5, 2.0) for i in range(12)]
    cand = [(0.5 + 0.001 * (i % 2), 1.0, 1.5) for i in range(12)]
    assert E.charge({"ref": ref, "cand": cand})[1] == pytest.approx(0.5, rel=2e-3)  # the precise clocks' ratio
    assert E._precise_enough({"ref": ref, "cand": cand}, 0.01)
    late = [(e, w, 3.0) for e, w, _ in cand]  # the judge saw 1 ms more than its overhead explains
    assert E.charge({"ref": ref, "cand": late})[1] > 1.9
    assert not E._precise_enough({"ref": ref, "cand": late}, 0.01)
    # in 4 rounds of 12 only: no evidence for the charge yet, nor that the rounds to come will not give it
    some = [(e, w, 3.0 if i % 3 == 0 else j) for i, (e, w, j) in enumerate(cand)]
    assert E.charge({"ref": ref, "cand": some})[1] == E.charge({"ref": ref, "cand": cand})[1]
    assert not E._precise_enough({"ref": ref, "cand": some}, 0.01)


def test_evaluate_many_spreads_over_devices_and_keeps_the_order():
    # two names for the CPU stand in for two GPUs: one thread (and one judge at a time) per device
    pairs = [(RELU, HONEST), (RELU, "x = 1"), (RELU, HONEST.replace("clamp_min(0.0)", "clamp_min(1.0)")), (RELU, SAME)]
    res = E.evaluate_many(pairs, "cpu", devices=["cpu", "cpu:0"], progress=False, **FAST)
    assert [r.status for r in res] == ["ok", "compile_error", "wrong_output", "ok"]
    assert res[3].same_as_reference and not res[0].same_as_reference
    assert {r.device for r in res} == {"cpu", "cpu:0"}
    assert fences.gpus("cpu") == ["cpu"] and fences.gpus("cuda:1") == ["cuda:1"]


def test_evaluate_many_raises_what_on_result_raised_and_stops():
    """An exception in on_result (a full disk, a Ctrl-C) reaches the caller, and no further pair is evaluated."""
    seen = []

    def on_result(i, r):
        seen.append(i)
        raise OSError("no space left on device")
    with pytest.raises(OSError, match="no space left"):
        E.evaluate_many([(RELU, "x = 1")] * 3, "cpu", progress=False, on_result=on_result, **FAST)
    assert seen == [0]


def test_an_error_kills_the_builds_still_running():
    """With builds alongside (overlap), an exception (here on_result's; a Ctrl-C the same) stops the builds at once:
    the build of a module that hangs at import (for 120 s) does not hold the caller up."""
    hangs = HONEST + "\nimport time\ntime.sleep(120)  # and load_inline is never called\n"
    t0 = time.time()

    def on_result(i, r):
        raise OSError("no space left on device")
    with pytest.raises(OSError, match="no space left"):
        E.evaluate_many([(RELU, "x = 1"), (RELU, hangs)], "cpu", progress=False, overlap=True, on_result=on_result,
                        **FAST)
    assert time.time() - t0 < 60


SIGTERMED = """
import sys
sys.path.insert(0, {repo!r})
import evaluator

if __name__ == "__main__":  # the evaluator's forkserver re-imports this file
    evaluator.evaluate_many([(open({relu!r}).read(), {cand!r})], "cpu", progress=False, overlap=True)
"""


def test_a_sigterm_kills_the_builds_then_ends_the_process_as_a_sigterm(tmp_path):
    """`timeout` sends SIGTERM to the program alone; a build runs in a session of its own (stopped while a clock
    runs), so by default it outlived the program (on the H200: a cut measure.py's builds, stopped, were still there in
    the next device call). Now the builds are killed first, and the program still ends by the SIGTERM (exit -15).
    The build here: a module that starts a `sleep` (the witness: pgrep finds it) and hangs at import."""
    witness = f"{3000 + os.getpid() % 1000}.{int(time.time() * 1000) % 100000}"
    cand = HONEST + f"\nimport subprocess, time\nsubprocess.Popen(['sleep', '{witness}'])\ntime.sleep(120)  # load_inline\n"
    driver = tmp_path / "driver.py"
    driver.write_text(SIGTERMED.format(repo=str(ROOT), relu=str(ROOT / "tasks/cpu/relu.py"), cand=cand))
    alive = lambda: subprocess.run(["pgrep", "-f", f"sleep {witness}"], capture_output=True).returncode == 0  # noqa
    proc = subprocess.Popen([sys.executable, str(driver)], env=dict(os.environ, OMP_NUM_THREADS="1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not alive():
            assert proc.poll() is None, f"driver exited early: {proc.stderr.read()[-2000:]}"
            assert time.time() < deadline, "the build did not start in time"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGTERM)  # to the program alone, as `timeout` sends it
        proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGTERM, proc.stderr.read()[-2000:]
        deadline = time.time() + 10
        while alive() and time.time() < deadline:
            time.sleep(0.1)
        assert not alive(), "the build's processes outlived the program"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run(["pkill", "-9", "-f", f"sleep {witness}"])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_pinned_timed_rounds_put_every_worker_thread_on_one_cpu_and_the_judge_on_the_next_then_back(tmp_path, monkeypatch):
    """Options.pin_cpus (on by default, for the CV misses at da23197): fences.pin moves every thread of both workers
    onto the first free CPU pair's first CPU and the caller's thread onto its second (one_cpu, the CPU device: onto
    the first too, each evaluation a CPU of its own while one is free, then one shared); a second evaluation timed
    meanwhile does not get the same pair; _unpin puts every thread back as it was and frees the pair."""
    code = "import threading, time; [threading.Thread(target=time.sleep, args=(60,)).start() for _ in range(2)]; " \
           "time.sleep(60)"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the pairs' lock files of this test alone (evaluations
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]  # of other tests may hold the machine's)
    try:
        time.sleep(1.0)
        cpus = lambda tid: os.sched_getaffinity(tid)  # noqa: E731
        tids = [int(t.name) for p in procs for t in Path(f"/proc/{p.pid}/task").iterdir()]
        assert len(tids) == 6
        mine, theirs = cpus(0), {t: cpus(t) for t in tids}
        a, b = sorted(mine)[:2]
        pins = fences.pin([p.pid for p in procs])
        assert pins and all(cpus(t) == {a} for t in tids) and cpus(0) == {b}
        if len(mine) < 4:
            assert fences.pin([procs[0].pid]) is None  # the only pair is taken
        else:  # a second judge thread: affinity is per thread (this one's is {b} now; another judge's, the machine's)
            os.sched_setaffinity(0, mine)
            other = fences.pin([procs[0].pid])
            assert other and cpus(0) not in ({a}, {b})
            fences.unpin(other)  # this thread back on every CPU, procs[0] on {a}
        fences.unpin(pins)
        assert cpus(0) == mine and {t: cpus(t) for t in tids} == theirs
        again = fences.pin([procs[1].pid])
        assert again and cpus(0) == {b}  # the pair is free again
        fences.unpin(again)
        alone = fences.pin([p.pid for p in procs], one_cpu=True)  # the CPU device: the judge on the workers' CPU too
        assert alone and cpus(0) == {a} and all(cpus(t) == {a} for t in tids)
        beside = []  # more evaluations meanwhile, each from a judge with every CPU: each CPU one, then one shared
        for _ in range(len(mine)):
            os.sched_setaffinity(0, mine)
            beside.append(fences.pin([procs[1].pid], one_cpu=True))
        assert all(beside) and [len(cpus(0)), beside[-1][0]] == [1, None] and all(p[0] for p in beside[:-1])
        for p in beside[::-1] + [alone]:
            fences.unpin(p)
        assert cpus(0) == mine and {t: cpus(t) for t in tids} == theirs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_builds_share_one_precompiled_torch_extension_header(tmp_path, monkeypatch):
    """A build's main.cpp gets torch/extension.h from the build cache's .gch (g++ -H marks a header it took from a
    .gch with '!'), made once (fences.make_pch) for each of the harness' own flag sets and reused by every build with
    those flags; other flags build without one, and a build asks for none and never writes pch/. The -O3 set is made
    in the session's build cache, whose .gch the corpus's C++ builds may have made already (one ~790 MB compile a
    session, not two)."""
    import torch.utils.cpp_extension as ce
    for name in ("_import_module_from_library", "_run_ninja_build"):  # _compile patches them; put them back after
        monkeypatch.setattr(ce, name, getattr(ce, name))
    monkeypatch.setattr(fences, "PCH_CFLAGS", (["-O3"],))  # the corpus's set alone: one compile
    root = fences.build_root()
    fences.make_pch("cpu")
    spec = {"kind": "load_inline", "args": {"name": "pch_b", "cpp_sources": "int f(int x) { return x + 1; }",
                                            "functions": ["f"], "extra_cflags": ["-O3"]}}  # the corpus's flags
    fences.compile_spec(spec, tmp_path / "b")
    text = (tmp_path / "b/build.ninja").read_text()
    cflags, cxx = (re.search(rf"^{k} = (.*)$", text, re.M).group(1) for k in ("cflags", "cxx"))
    pch, flags = fences._pch_dir(cxx, cflags.split(" ", 1)[1])
    gch = pch / "torch" / "extension.h.gch"
    assert cflags.startswith(f"-I{pch} ") and gch.exists() and pch.parent == root / "pch"
    made = gch.stat().st_mtime_ns
    fences.make_pch("cpu")
    assert gch.stat().st_mtime_ns == made  # made once
    seen = subprocess.run(f"c++ -H -fsyntax-only {cflags} main.cpp", shell=True, cwd=tmp_path / "b",
                          capture_output=True, text=True)
    assert f"! {gch}" in seen.stderr.splitlines(), seen.stderr[:2000]
    # cpp_sources that include the header again (after load_inline's own line): the copy beside the .gch serves it
    (tmp_path / "b/twice.cpp").write_text("#include <torch/extension.h>\n#include <torch/extension.h>\nint g();\n")
    twice = subprocess.run(f"c++ -H -fsyntax-only {cflags} twice.cpp", shell=True, cwd=tmp_path / "b",
                           capture_output=True, text=True)
    assert twice.returncode == 0 and f"! {gch}" in twice.stderr.splitlines(), twice.stderr[-2000:]
    assert "#include <torch/all.h>" in gch.with_suffix("").read_text()
    # other flags: none (nothing asked for); where make_pch compiles a set's (it holds the lock), main.cpp's compiler
    # waits for it
    monkeypatch.setenv("CUDAL1_BUILD_DIR", str(tmp_path))
    (tmp_path / "d").mkdir()
    (tmp_path / "d/build.ninja").write_text((tmp_path / "b/build.ninja").read_text().replace(
        f"cflags = -I{pch} ", "cflags = ").replace("-O3", "-O2"))
    fences._use_pch(tmp_path / "d")
    other = fences._pch_dir(cxx, flags.replace("-O3", "-O2"))[0]
    assert other.parent == tmp_path / "pch" and other != pch and not other.exists()
    assert "-I" not in (tmp_path / "d/build.ninja").read_text().split("cflags = ")[1].split()[0]
    (other / "torch").mkdir(parents=True)
    with open(other / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fences._use_pch(tmp_path / "d")
        cxx = re.search(r"^cxx = (.*)$", (tmp_path / "d/build.ninja").read_text(), re.M).group(1)
        assert cxx.startswith("flock -s ") and f"-I{other} " in (tmp_path / "d/build.ninja").read_text()
        waiting = subprocess.Popen(f"{cxx} --version", shell=True, stdout=subprocess.DEVNULL)
        time.sleep(1.0)
        assert waiting.poll() is None  # still waiting for the lock
    assert waiting.wait(timeout=30) == 0


def test_a_build_killed_mid_way_does_not_hold_up_the_next_build_of_its_spec(tmp_path):
    """torch's lock file in a build folder outlives a build process that was killed (a cut run, a build's time
    limit), and torch waits for it to go away: the next build of that spec hung to its own limit (6096e20, a
    resumed measurement: 13 honest candidates `timeout`). A live build of the same spec is still waited for."""
    script = f"""
import sys, time
sys.path.insert(0, {str(Path(E.__file__).parent)!r})
import fences
from pathlib import Path
import torch.utils.cpp_extension as ce
folder = Path(sys.argv[1])
def build(**k):  # a build, not compiled here: it says so, and with argv[2] it lasts until that file exists
    with open(folder / "calls", "a") as f:
        f.write("build\\n")
    while sys.argv[2:] and not Path(sys.argv[2]).exists():
        time.sleep(0.05)
ce._write_ninja_file_and_build_library = build
spec = {{"kind": "load_inline", "args": {{"name": "stale", "cpp_sources": "int f();", "functions": ["f"]}}}}
print("start", flush=True)
fences.compile_spec(spec, folder)
print("built" if (folder / "built").exists() else "not built")
"""
    folder, go = tmp_path / "a", tmp_path / "go"
    folder.mkdir()
    (folder / "lock").write_text("")  # what a killed build leaves
    run = [sys.executable, "-c", script, str(folder)]
    done = subprocess.run(run, capture_output=True, text=True, timeout=60)  # it waited forever
    assert done.stdout.split() == ["start", "built"], done.stderr[-2000:]
    assert (folder / "calls").read_text().split() == ["build"]
    (folder / "built").unlink()
    first = subprocess.Popen(run + [str(go)], stdout=subprocess.PIPE, text=True)  # builds until `go` exists
    second = None
    try:
        deadline = time.time() + 60
        while not (folder / "lock").exists() and time.time() < deadline:
            time.sleep(0.05)
        assert (folder / "lock").exists() and first.poll() is None
        second = subprocess.Popen(run, stdout=subprocess.PIPE, text=True)
        assert second.stdout.readline().strip() == "start"
        time.sleep(1.0)
        assert second.poll() is None  # waiting for the first's build
    finally:
        go.write_text("")
    assert first.wait(timeout=60) == 0 and first.stdout.read().split() == ["start", "built"]
    assert second.wait(timeout=60) == 0 and second.stdout.read().split() == ["built"]
    assert (folder / "calls").read_text().split() == ["build"] * 2  # the second found it built: no build of its own
    assert not (folder / "lock").exists()


PEEK = HONEST.replace("class ModelNew", '''import os

def caps(pid):
    return int(open(f"/proc/{pid}/status").read().split("CapEff:")[1].split()[0], 16)

def peek():
    """What this process may do to its siblings (the judge, the reference's worker): one word per sibling."""
    out, me, parent = [], os.getpid(), os.getppid()
    for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != me):
        try:
            if int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]) != parent:
                continue
            open(f"/proc/{pid}/mem", "rb").close()
            out.append("mem")
        except PermissionError:
            out.append("denied")
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out

raise SystemExit(f"SEEN caps={caps(os.getpid())} forkserver={caps(os.getppid())} siblings={','.join(peek())}")

class ModelNew''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc and capabilities")
def test_a_candidate_cannot_open_the_memory_of_the_judge_or_the_reference():
    """fences.seal: the judge and the reference's worker are non-dumpable, and neither the candidate's worker nor the
    forkserver (which forks whatever its socket is asked for) holds CAP_SYS_PTRACE, even when run as root."""
    res = E.evaluate(RELU, PEEK, "cpu", **FAST)
    seen = res.reason[res.reason.index("SEEN "):].split("\n")[0]
    words = dict(w.split("=", 1) for w in seen.split()[1:])
    ptrace = 1 << fences.CAPS["SYS_PTRACE"]
    assert not int(words["caps"]) & ptrace and not int(words["forkserver"]) & ptrace, seen
    assert words["siblings"] == "denied,denied", seen  # the judge and the reference's worker


ESCAPE = HONEST.replace("class ModelNew", '''import os
import signal

def _escapes():
    """What this process managed to do outside its sandbox (an honest forward follows when nothing worked)."""
    done = []
    for what, attempt in (
            ("wrote the repository", lambda: open(os.path.join(REPO, "tasks", ".cudal1_probe"), "w").close()),
            ("pinned its parent to one core", lambda: os.sched_setaffinity(os.getppid(), {0})),
            ("reniced its parent", lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 10)),
            ("signalled its parent", lambda: os.kill(os.getppid(), signal.SIGCONT))):
        try:
            attempt()
            done.append(what)
        except OSError:
            pass
    return done

if _escapes():
    raise RuntimeError("escaped: " + ", ".join(_escapes()))

class ModelNew''').replace("import torch\n", f"import torch\nREPO = {str(ROOT)!r}\n", 1)


@pytest.mark.skipif(sys.platform != "linux", reason="Landlock and seccomp are Linux's")
def test_the_candidate_cannot_write_the_repository_nor_touch_other_processes():
    """Landlock (writes only under a temp dir of its own and /dev, no signal outside its own processes) and seccomp
    (no other process's scheduling): each attempt fails, so the candidate runs honestly; outside it is not fenced."""
    probe, nice, cpus = ROOT / "tasks" / ".cudal1_probe", os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0)
    res = E.evaluate(RELU, ESCAPE, "cpu", **FAST)
    assert res.status == "ok", res.reason
    assert not probe.exists()
    pid = os.fork()  # control: the same attempts from an unconfined process succeed, so the test can fail
    if pid == 0:  # a stand-in parent: the control pins and renices it, not this test process (and what it starts)
        inner = os.fork()
        if inner == 0:
            ns = {}
            exec(ESCAPE.split("if _escapes():")[0], ns)
            os._exit(0 if len(ns["_escapes"]()) == 4 else 1)
        os._exit(os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1]))
    assert os.waitpid(pid, 0)[1] == 0
    assert os.getpriority(os.PRIO_PROCESS, 0) == nice and os.sched_getaffinity(0) == cpus
    probe.unlink()


def test_an_evaluation_ends_within_its_deadline_whatever_the_calls_allow():
    """The caller's clock bounds a whole evaluation (eval_timeout_s), also when each call may take longer."""
    slow = HONEST.replace("        return x.clamp_min(0.0)", "        import time; time.sleep(30)\n        return x")
    t0 = time.time()
    res = E.evaluate(RELU, slow, "cpu", call_timeout_s=60.0, eval_timeout_s=4.0)
    assert res.status == "timeout" and "eval_timeout_s" in res.reason, res.reason
    assert time.time() - t0 < 20
