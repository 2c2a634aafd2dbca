"""evaluator.py: compile, check and time ONE candidate against its reference, honestly.

    python evaluator.py tasks/cpu/relu.py my_relu.py --device cpu --json
    python -c "import evaluator as e; print(e.evaluate(open(ref).read(), open(cand).read(), device='cuda'))"

The candidate is adversarial code written by a policy that is paid for speed. One evaluation, in order:
 1. static checks: the candidate parses and defines ModelNew with the reference's signatures (static_check);
 2. builds: its load_inline / load calls are compiled outside the sandbox, ahead or when asked (fences: builds);
 3. the caller starts the processes and bounds their time (fences.Session): the *judge* (trusted, never runs
    candidate code) loads the reference, makes every input from secret seeds, computes a float64 oracle, owns the
    clock and gives the verdict; two *workers* run the same harness (Worker), one the reference's Model, one the
    candidate's ModelNew, each with buffers it shares with the judge alone (judge, _set_up);
 4. the correctness gate: 4 input sets of 3 distributions, within a tolerance calibrated against float64;
 5. the timed rounds: paired in random order, fresh inputs every call, every output checked; then the reference
    alone (clean rounds) and the charge;
 6. a Result with a named status, its reason starting with the check that fired (llm.c's discipline: reference
    first, correctness gate, then timing); an `ok` only with a speedup a clock can give (_measured), and an exception
    the evaluation raised as the candidate's verdict (_raised).
The walls (sandbox, processes, audits, the L2 flush, the GPU hold) live in fences.py, called here by name.
THREATS.md says what is protected, by which check and where, what is not, and where this departs from CUDA-L1's
evaluator; tests/corpus holds one file per attack. Sections: Result and Options; the API and the caller's side;
static checks; the judge's steps; numerics (tolerance, oracle, charge); the worker; tasks; the CLI.
"""
import argparse
import ast
import contextlib
import copy
import difflib
import fnmatch
import gc
import hashlib
import inspect
import json
import linecache
import math
import os
import random
import re
import secrets
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
import types
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch
import torch.multiprocessing  # noqa: F401  (registers the reductions that share tensors through pipes)
import multiprocessing.connection as _mpc

import fences
from fences import Verdict, short

_perf = time.perf_counter          # captured before any candidate code runs in this process
_cuda_sync = torch.cuda.synchronize
_cuda_stream = torch.cuda.current_stream
_empty_cache = torch.cuda.empty_cache
_Event = getattr(torch._C, "_CudaEventBase", None)  # CUDA events, without torch.cuda.Event's Python layer
_record, _elapsed = getattr(_Event, "record", None), getattr(_Event, "elapsed_time", None)  # None: CPU-only torch
_sigmask, _gc_on, _gc_enable, _gc_disable = signal.pthread_sigmask, gc.isenabled, gc.enable, gc.disable
_cpu, _thread_cpu = time.process_time, time.thread_time  # every thread's CPU time; the calling thread's
_SIGNALS = signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}


# ---------------------------------------------------------------------------- the result of an evaluation, its options

STATUSES = ("ok", "compile_error", "runtime_error", "wrong_output", "timeout", "rejected")


@dataclass
class Result:
    status: str                      # one of STATUSES
    reason: str = ""                 # human-readable; starts with the check's name when one fired
    check: str = ""                  # the check that fired ("" when ok)
    correct: bool = False
    speedup: float | None = None     # ref_ms / cand_ms (levels over the paired rounds: charge)
    ref_ms: float | None = None
    cand_ms: float | None = None
    ref_spread: float | None = None  # (p75 - p25) / median of the timed rounds
    cand_spread: float | None = None
    same_as_reference: bool = False  # the reference's code renamed, or exactly its ops: no speedup credit
    speedup_kind: str = ""           # custom_kernel | framework_ops | reference_ops (see speedup_kind)
    max_err: float | None = None     # worst error / tolerance seen on the correctness sets (<= 1 passes)
    rounds: int = 0
    seconds: float = 0.0
    phases: dict | None = None       # seconds per phase: the judge's warm (harness, reference side), setup (the
                                     # candidate's: builds, imports), check, profile, time, wait (for the device:
                                     # evaluate_many's turns); the caller's spawn (3 processes) and exit (their end)
    device: str = ""                 # where it was evaluated (evaluate_many spreads over every visible GPU)
    samples: dict | None = None      # with keep_samples: {"ref"|"cand": [(events', worker's, judge's ms), ...]}

    def to_dict(self):
        return asdict(self)


@dataclass
class Options:
    tol: float = 1e-4            # fp32 error floor, relative to the output's RMS (fp16/bf16: LOW_PRECISION_TOL)
    tol_slack: float = 10.0      # tolerance = max(floor, slack x the reference's own error against float64)
    warmup: int = 3              # untimed (but checked) calls per side before timing
    min_rounds: int = 10         # paired timed rounds, at least
    max_rounds: int = 200        # ... and at most
    time_budget_s: float = 1.0   # stop adding rounds after min_rounds once each side has run this long
    precision: float = 0.0       # ... or once the speedup is known within +-this (95%; 0 = off: the budget decides)
    tol_ceiling: float = 0.05    # ... and at most this (a zero output is ~0.5 off)
    clock_slack: float = 0.02    # hidden work under this share of the reference's time is not charged (charge),
    worker_overhead_slack: float = 0.05  # ... nor under this share of the reference's overhead on the worker's
    judge_overhead_slack: float = 0.03   # ... and on the judge's clock
    call_timeout_s: float = 60.0   # seconds one call of the candidate may take before it is a timeout
    build_timeout_s: float = 900.0  # seconds a C++/CUDA build may take
    eval_timeout_s: float = 600.0  # a whole evaluation, builds not counted: then everything is killed
    keep_samples: bool = False   # Result.samples: every timed call's (events', worker's, judge's) ms per side
    pin_cpus: bool = True        # the timed rounds of both sides on one CPU, the judge on the next (CPU: the same;
                                 # unpinned, two processes' clocks differ by where the scheduler puts them)
    host_clock: bool = True      # CUDA: charge CPU time in the call beyond the reference's (work the hold would hide)
    clean_rounds: int = 10       # CUDA: rounds of the reference alone once the candidate's processes ended, which cap
                                 # its paired rounds where a test says they ran slower (work left on the GPU)
    time_copies: bool = True     # time a reference copy in full (off: checked in full, timed 1-2 rounds, as it
                                 # earns no speedup credit; a quarter of an untrained model's samples are copies)


LOW_PRECISION_TOL = {torch.float16: 1e-2, torch.bfloat16: 2e-2}
BARELY_TIMED = dict(min_rounds=1, max_rounds=2, time_budget_s=0.0, precision=0.0)  # checked in full, timed 1-2 rounds


# ---------------------------------------------------------------------------- evaluate: the API, the caller's side

# The caller's processes start in fences (Session: a judge and the reference's worker, then a worker per candidate;
# build_all: the build processes), handed the entry points they run, as multiprocessing.Process(target=...) is:
# worker_main and judge_main are steps of this procedure, and fences never imports this module. What fences reports
# back is data (a build's Verdict, the judge's Result as a dict), which becomes a Result here.

def evaluate(ref_src, cand_src, device="cpu", *, built=False, turns=None, session=None, **opts):
    """Evaluate one candidate against its reference; returns a Result (never raises for a bad candidate).
    built: build_all has built both sources (else they are built here first, in a build process); turns: the device's
    fences.Turns, shared with the evaluations beside this one (evaluate_many); session: a fences.Session for this
    reference and device, whose judge and reference worker this evaluation uses and leaves running for the next
    (default: a session of its own, closed at the end).

    >>> r = evaluate(open("tasks/cpu/relu.py").read(), relu_candidate_src, device="cpu")
    >>> r.status, r.correct, round(r.speedup, 2)      # e.g. ('ok', True, 1.31)
    >>> evaluate(ref, "print(1)").reason               # 'no_modelnew: the candidate defines no top-level class ...'
    """
    t0, o = time.time(), Options(**opts)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no CUDA GPU (no GPU, or a CPU-only torch build)")
    res, same = static_check(ref_src, cand_src)
    o = o if o.time_copies or not same else replace(o, **BARELY_TIMED)
    own = session is None
    if res is None and own:
        try:
            session = fences.Session(ref_src, device, worker_main, judge_main, turns)
        except fences.MemoryRefusal as e:  # before any process or build: the task cannot fit this device at all
            res = Result("runtime_error", reason=str(e), check="memory")
    if res is None and not built:  # the workers cannot run ninja (it needs setpgid, fences.stay_in_group)
        res = _build_failure(ref_src, cand_src, build_all([ref_src, cand_src], device, timeout=o.build_timeout_s,
                                                          progress=False, refs={cand_src: ref_src}))
    if res is None:
        if session.ref_src != ref_src or session.device != device:
            raise ValueError("evaluate: the session is for another reference or device")
        logdir = fences.temp_dir("cudal1-eval-")
        try:
            res = _measured(Result(**session.evaluate(cand_src, o, logdir)))
            log = Path(logdir, "candidate.log")
            if res.status in ("runtime_error", "timeout") and res.check != "reference" and log.exists():
                tail = short(log.read_text(errors="replace"), lines=6, width=800)
                res.reason += f"\ncandidate output (tail):\n{tail}" if tail else ""
        finally:
            if own:
                session.close()
            fences.remove_temp_dir(logdir)
    if res.status == "ok" and (same or res.same_as_reference):
        why = "the model class is the reference's, renamed" if same else "it runs exactly the reference's ops"
        timed = "" if o.time_copies else f" (timed {res.rounds} rounds only: time_copies off)"
        res.reason = f"same_as_reference: {why}; no speedup credit{timed}. " + res.reason
    res.same_as_reference = same or res.same_as_reference
    res.seconds, res.device = round(time.time() - t0, 3), device
    return res


MAX_SPEEDUP = 1e4  # charge charges a candidate at least 1e-4 of the reference's time


def _measured(res):
    """res, if an `ok` one has numbers the judge's clocks can give (a finite speedup in (0, MAX_SPEEDUP], finite
    positive times, finite spreads); else a candidate's reports broke them on the way, which is `rejected wire`."""
    nums = (res.speedup, res.ref_ms, res.cand_ms, res.ref_spread, res.cand_spread)
    if res.status != "ok" or (all(type(x) in (int, float) and math.isfinite(x) for x in nums)
                              and 0 < res.speedup <= MAX_SPEEDUP and min(res.ref_ms, res.cand_ms) > 0):
        return res
    return Result("rejected", reason=f"wire: the clocks gave speedup {res.speedup!r} (reference {res.ref_ms!r} ms, "
                  f"candidate {res.cand_ms!r} ms): not a finite speedup up to {MAX_SPEEDUP:g}x", check="wire")


def evaluate_many(pairs, device="cpu", *, jobs=None, progress=True, devices=None, on_result=None, phases=None,
                  overlap=None, in_flight=None, **opts):
    """Evaluate (ref_src, cand_src) pairs; Results in the order of pairs, on_result(i, result) called as each ends
    (from the device threads: e.g. to save partial work). Builds run in parallel; evaluations over `devices`
    (default: fences.gpus(device)), in_flight at a time per device (default: 2 on CUDA, 1 on the CPU), taking turns
    (fences.Turns): while one runs candidate code the next sets up its trusted part, and a clock has the device alone.
    A device thread evaluates a task's candidates in turn against one judge and reference worker (fences.Session):
    the task's next ready pair first, then one of a task no other thread is on.
    overlap (default: on CUDA): evaluations start while the builds run, each pair once its own builds have ended; the
    builds then run niced on all cores but 3 per device and stop while a clock runs (fences.BuildPause). On the CPU
    the builds end first: a compiler would take the cores its clock measures.
    A pair whose reference was refused (check "reference") is evaluated once more, on a new session's inputs: a
    reference that fails on some random inputs would otherwise score the candidate for the task's fault.
    Memory (fences.memory_plan): a task too large for two evaluations at once brings in_flight to 1 for the call; one
    that cannot fit the device at all is `runtime_error` (check `memory`), with no process started.
    phases (a dict) gets: build_s (wall seconds to the last build's end), evaluate_s (from the first evaluation's
    start to the last one's end), build_wait_s (a device thread's mean wait for builds), builds (sources with an
    extension), build_failed, compiled (built by the compiler, not found in the build cache), sessions (judges with a
    reference worker started)."""
    o, devices, t0 = Options(**opts), devices or fences.gpus(device), time.time()
    overlap = device.startswith("cuda") if overlap is None else overlap
    in_flight = (2 if device.startswith("cuda") else 1) if in_flight is None else in_flight
    plans = fences.plans({r for r, _ in pairs}, devices[0], in_flight)
    in_flight = min([in_flight] + [p.in_flight for p in plans.values() if isinstance(p, fences.MemoryPlan)])
    pause = fences.BuildPause() if overlap else None
    turns, slots = {d: fences.Turns(pause) for d in devices}, [(d, k) for d in devices for k in range(in_flight)]
    ok_so_far = [src for r, c in pairs if static_check(r, c)[0] is None for src in (c, r)]
    q, built = fences.Queue(pairs, {src for src in ok_so_far if fences.uses_extension(src)}, slots, t0), {}
    spare = dict(cores=max(1, (os.cpu_count() or 2) - 3 * len(devices)), nice=10, pause=pause) if overlap else {}

    builds_ended = threading.Event()  # (not the thread's join: a join that a signal interrupted marks it ended)

    def build():
        try:
            fences.build_all(ok_so_far, device, worker_main, jobs, o.build_timeout_s, progress, times=built,
                             refs={c: r for r, c in pairs}, on_done=lambda src, v: q.built(src, v and _failed(v)),
                             cancel=lambda: bool(q.errors), **spare)
        except BaseException as e:
            q.fail(e)
        finally:
            q.builds_over()  # whatever is left pending will not be built
            builds_ended.set()

    def drain(dev, k):  # in_flight threads per device, each with a session for the task it is on
        session = None
        while (i := q.take((dev, k), session and session.ref_src)) is not None:
            ref_src, cand_src = pairs[i]
            try:
                if not isinstance(plans[ref_src], fences.MemoryPlan):  # the task cannot fit the device at all
                    results[i] = Result("runtime_error", reason=str(plans[ref_src]), check="memory", device=dev)
                    if on_result:
                        on_result(i, results[i])
                    bar.update(1)
                    continue
                if session is None or session.ref_src != ref_src:
                    if session:
                        session.close()
                    session = fences.Session(ref_src, dev, worker_main, judge_main, turns[dev], plans[ref_src])
                    sessions.append(session)
                run = lambda: _raised(evaluate, ref_src, cand_src, dev, built=True, session=session, **opts)
                results[i] = _build_failure(ref_src, cand_src, q.failed) or run()
                # a refused reference is the task's fault on this session's inputs: once more, on a new session's;
                # a task refused twice in a row is not tried again in this call
                if results[i].check == "reference" and ref_src not in refused:
                    results[i] = run()
                    if results[i].check == "reference":
                        refused.add(ref_src)
                if on_result:
                    on_result(i, results[i])
            except BaseException as e:
                q.fail(e)
            q.last = time.time()
            bar.update(1)
        if session:
            session.close()
    sessions, refused = [], set()
    fences.context()  # the forkserver, set up once before any thread uses it
    results, bar = [None] * len(pairs), fences.progress_bar(len(pairs), "evaluate", progress)
    threads = [threading.Thread(target=build, name="cudal1-builds")] + [
        threading.Thread(target=drain, args=(d, k), name=f"cudal1-{d}-{k}") for d, k in slots]
    try:
        with fences.sigterm_as_interrupt():
            threads[0].start()
            if not overlap:
                threads[0].join()
            for t in threads[1:]:
                t.start()
            for t in threads:
                t.join()
    except BaseException as e:  # Ctrl-C: the builds are killed, each device thread stops after its evaluation
        q.fail(e)
        if threads[0].ident is not None:
            builds_ended.wait(30)  # the builds' thread kills them within a poll (0.05 s a running build)
        if isinstance(e, fences.Terminated):
            signal.raise_signal(signal.SIGTERM)  # now the process ends as the SIGTERM would have ended it
        raise
    bar.close()
    if q.errors:
        raise q.errors[0]
    if phases is not None:
        compiled = sum(f.stat().st_mtime >= t0 for f in fences.build_root().glob("*/*/built"))  # written in this call
        wait = sum(q.waited.values()) / len(q.waited) if overlap else q.builds_end - t0  # mean over the threads
        for k, v in dict(build_s=q.builds_end - t0, evaluate_s=q.last - (q.first or q.last), build_wait_s=wait,
                         builds=len(built), build_failed=len(q.failed), compiled=compiled,
                         sessions=sum(x.started for x in sessions)).items():
            phases[k] = phases.get(k, 0) + v
    return results


def _raised(fn, *args, **kwargs):
    """fn(...)'s Result, or an exception it raised (a candidate's data that broke the caller's side) as that
    candidate's `runtime_error` (check `harness`): one evaluation's exception never ends a batch or the CLI."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        return Result("runtime_error", reason=f"harness: {_describe(e)}", check="harness")


def build_all(srcs, device="cpu", **kw):
    """Compile the sources' builds ahead of their evaluation (fences.build_all, in build processes that run
    worker_main): {src: Result for a failed build}."""
    return {src: _failed(v) for src, v in fences.build_all(srcs, device, worker_main, **kw).items()}


def _failed(v):
    """The Result that a Verdict (a check that fired, a failed build) ends an evaluation with."""
    return Result(v.status, reason=f"{v.check}: {v.reason}", check=v.check)


def _build_failure(ref_src, cand_src, failed):
    """The Result for a pair whose build failed ({src: Result} from build_all), or None."""
    if cand_src in failed:
        return copy.copy(failed[cand_src])
    if ref_src in failed:
        return Result("runtime_error", reason=f"reference: {failed[ref_src].reason}", check="reference")
    return None


# ---------------------------------------------------------------------------- static checks (no process needed)

def _top_class(tree, name):
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _arity(cls, method):
    """(number of positional parameters after self, takes *args) of cls.method; (0, False) if not defined."""
    fn = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method), None)
    if fn is None:
        return 0, False
    a = fn.args
    return len(a.posonlyargs) + len(a.args) - 1, a.vararg is not None


class _Normalise(ast.NodeTransformer):
    """Rename ModelNew to Model and drop docstrings, so a renamed copy of the reference compares equal."""

    def visit_Name(self, node):
        if node.id == "ModelNew":
            node.id = "Model"
        return node

    def visit_Call(self, node):  # super(ModelNew, self) -> super()
        if isinstance(node.func, ast.Name) and node.func.id == "super":
            node.args = []
        return self.generic_visit(node)

    def generic_visit(self, node):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return super().generic_visit(node)


def _class_fingerprint(cls):
    cls = _Normalise().visit(copy.deepcopy(cls))
    cls.name = "Model"
    return ast.dump(cls, annotate_fields=False, include_attributes=False)


def static_check(ref_src, cand_src):
    """(failure Result or None, same_as_reference) from parsing alone."""
    try:
        tree = ast.parse(cand_src)
    except SyntaxError as e:
        return Result("compile_error", reason=f"syntax: line {e.lineno}: {e.msg}: {(e.text or '').strip()}",
                      check="syntax"), False
    cls = _top_class(tree, "ModelNew")
    assigned = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "ModelNew" for t in n.targets)
                   for n in tree.body)
    if cls is None and not assigned:
        return Result("compile_error", reason="no_modelnew: the candidate defines no top-level class ModelNew; define "
                      "class ModelNew(nn.Module) with the same __init__ and forward signature as Model",
                      check="no_modelnew"), False
    ref = _top_class(ast.parse(ref_src), "Model")
    if cls is None or ref is None:
        return None, False
    for method in ("__init__", "forward"):
        (n_ref, var_ref), (n_cand, var_cand) = _arity(ref, method), _arity(cls, method)
        if n_ref != n_cand and not var_cand and not var_ref:
            return Result("compile_error", reason=f"signature: ModelNew.{method} takes {n_cand} positional parameters, "
                          f"Model.{method} takes {n_ref}; keep the reference's signature", check="signature"), False
    return None, _class_fingerprint(cls) == _class_fingerprint(ref)


# ---------------------------------------------------------------------------- judge: one evaluation, step by step

def judge_main(out, ref_conn, ref_src, device, env, logdir):
    """The judge: evaluate the candidates the caller sends, one at a time, against one reference worker (a session,
    fences.Session), until the caller ends it or the reference fails. Each candidate comes with its own worker's
    connection (a file descriptor passed over `out`) and its own options and log folder."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a terminal's Ctrl-C reaches the judge too: end without a traceback
    fences.seal(secret=True)
    sys.excepthook = fences.quiet_broken_pipes
    torch.set_grad_enabled(False)
    if device.startswith("cuda") and torch.device(device).index is not None:
        torch.cuda.set_device(torch.device(device))  # no context on any other GPU
    from multiprocessing.reduction import recv_handle

    def builds(spec, role):  # a worker's build request (checked data): the caller runs it outside the sandbox
        out.send(("build", spec, fences.owner_of(ref_src if role == "reference" else cand_src)))
        return out.recv()

    def turn(what):  # "go" (candidate code may run) or "clock" (the device alone): the caller says when; seconds waited
        _device_sync(device)  # nothing of this process's left running on the device meanwhile
        t = _perf()
        out.send((what,))
        out.recv()
        return _perf() - t
    ref, known, cand_src = fences.Remote(ref_conn, "reference", Options.call_timeout_s, builds, REPLIES), {}, ""
    while (msg := out.recv())[0] == "candidate":
        _, cand_src, opts, cand_logdir, plan = msg
        o = Options(**opts)
        cand = fences.Remote(_mpc.Connection(recv_handle(out)), "candidate", o.call_timeout_s, builds, REPLIES)
        ref.timeout = o.call_timeout_s
        try:
            res = judge(ref, cand, ref_src, cand_src, device, o, env, (logdir, cand_logdir), turn, known, plan)
        except Verdict as v:
            res = _failed(v)
        except Exception as e:  # a broken task file or a harness bug: say so, do not blame the candidate
            res = Result("runtime_error", reason=f"reference: {_describe(e)}", check="reference")
        cand.conn.close()
        out.send(("result", res.to_dict(), res.check != "reference"))  # after a reference failure: a new session
        if res.check == "reference":
            break
    ref_conn.close()


def judge(ref, cand, ref_src, cand_src, device, o, env, logdirs, turn, known, plan):
    """One evaluation, in the judge process: both sides set up (the reference first, and run once here), the
    correctness gate, the phase probe, the profile, the timed rounds, the reference's clean rounds, the charge; a
    Result, or Verdict raised. turn(what) waits for the caller's word before any candidate code runs ("go") and
    before the profile and the clock ("clock"). logdirs: (the session's, the candidate's); known: the session's
    reference side (_set_up); plan: the task's fences.memory_plan, as a dict."""
    phases, t0 = {"wait": 0.0}, _perf()

    def lap(name, waited=0.0):  # seconds spent in each phase of the evaluation, for the caller's breakdown
        nonlocal t0
        phases[name], t0 = round(_perf() - t0 - waited, 3), _perf()
        phases["wait"] = round(phases["wait"] + waited, 3)
    s, checks, model64 = _set_up(ref, cand, ref_src, cand_src, device, o, env, logdirs,
                                 lambda: lap("warm", turn("go")), known, plan)
    lap("setup")
    tols, worst = _correctness_gate(s, checks, model64, o)
    del model64
    _phase_probe(s, checks[-1][1](), tols)
    lap("check")
    waited = turn("clock")
    kind, note = _profile(s, cand_src, known)
    lap("profile", waited)
    pins = fences.pin(s.pid.values(), one_cpu=not s.device.startswith("cuda")) if o.pin_cpus else None
    try:
        clock = _timed_rounds(s, o if o.time_copies or kind != "reference_ops" else replace(o, **BARELY_TIMED),
                              tols, len(checks))
        unread = s.w["cand"]("watch", 0)  # settings read at every op of one more call: changed and put back inside
        note += f"the settings inside forward went unread ({unread}); " if unread else ""
        s.audit()
        clock["clean"] = _clean_rounds(s, o, min(len(clock["ref"]), o.clean_rounds) * s.device.startswith("cuda"))
    finally:
        fences.unpin(pins)
    ref_ms, cand_ms, *spread = charge(clock, o.clock_slack, (o.worker_overhead_slack, o.judge_overhead_slack))
    paired = _level([x[0] for x in clock["ref"]])
    if plan["sets"] < 2 or plan["oracle"] == "host":
        note += (f"memory plan: {plan['sets']} input set(s) per side, the oracle on the {plan['oracle']}; ")
    if ref_ms < paired / 1.05:
        note += (f"the reference ran {paired / ref_ms - 1:.0%} slower beside the candidate than alone: charged at its "
                 "level alone; ")
    lap("time")
    return Result("ok", reason=note, correct=True, speedup=ref_ms / cand_ms, ref_ms=ref_ms, cand_ms=cand_ms,
                  ref_spread=spread[0], cand_spread=spread[1], same_as_reference=kind == "reference_ops",
                  speedup_kind=kind, max_err=worst, rounds=len(clock["ref"]),
                  samples=clock if o.keep_samples else None, phases=phases)


@dataclass
class _Sides:
    """What the judge holds of one evaluation: both workers with their process groups, input buffers (two sets per
    side) and output buffers, the audits' baselines, and what the checks learn on the way."""
    w: dict                  # {"ref": fences.Remote, "cand": fences.Remote}
    pid: dict                # process-group leaders
    stage: dict              # per side: its two input buffer sets
    recv: dict               # per side: its output buffers
    digest: str              # the candidate's harness baselines, taken before any task code
    ref_mod: types.ModuleType
    device: str
    hold: bool = False       # every call behind a GPU hold (both sides) or none
    host: bool = False       # the oracle and the correctness sets' comparisons on the host (fences.memory_plan)
    rounds_host: bool = False  # ... and the timed rounds' too
    idx: list = field(default_factory=list)   # per output: positions its fingerprints sample
    seen: list = field(default_factory=list)  # fingerprints of every answer so far (output_replay)

    def timed(self, side, b, xs, probe=False, alone=False):
        """((precise ms, worker's ms, judge's ms, host ms), output aliases an input, threads it left running) for one
        call of side on its buffer set b, the other side stopped (alone: it has ended). The side is stopped too while
        the judge sends the call and writes its inputs (nothing of them existed anywhere before), so the call is
        waiting when it resumes: a thread of the side sees the inputs only as its worker starts forward. The judge's
        clock runs from before the send to the answer, when the output is checked and in the judge's buffers.
        probe: a checked call's after-the-answer probe (fences.background_probe)."""
        w, pgid, other = self.w[side], self.pid[side], None if alone else self.pid["cand" if side == "ref" else "ref"]
        if other:
            fences.signal_group(other, signal.SIGSTOP)
        try:
            if self.device.startswith("cuda"):
                w("prep")  # L2 flush, untimed: the buffers still hold the last call's inputs
            t0 = _perf()
            fences.stop_group(pgid)
            w.send("run", b, probe, self.hold)
            for t, x in zip(self.stage[side][b], xs):
                if isinstance(t, torch.Tensor):
                    t.copy_(x)
            _device_sync(self.device)
            fences.signal_group(pgid, signal.SIGCONT)
            precise, ms, host, alias, started = w.reply()
            judged = (_perf() - t0) * 1e3
        finally:
            if other:
                fences.signal_group(other, signal.SIGCONT)
        return (precise, ms, judged, host), alias, started

    def call(self, side, b, xs, where, probe=True):
        """One checked call, made exactly as a timed one is (timed), so that no call tells the candidate it is timed
        or checked; then the judge checks the inputs are intact."""
        w, is_ref = self.w[side], side == "ref"
        _, alias, started = self.timed(side, b, xs, probe)
        if not _intact(self.stage[side][b], xs):
            who = "the reference modifies its inputs; fix the task" if is_ref else "the candidate modified its inputs"
            raise Verdict("runtime_error" if is_ref else "rejected", "reference" if is_ref else "input_mutation",
                          f"{who} ({where})")
        if alias:
            raise w._fail("rejected", "output_storage", "the output shares storage with an input; return a new tensor")
        return started

    def verdict_on(self, j, c, want, tol, where, started):
        """The miss of output j against want (None if it matches); raise if the miss is an earlier call's answer or
        comes with threads the call left running (work meant to finish in the background)."""
        bad = _mismatch(c, want, tol)
        if bad and bad[0] == "values" and _replays(c, want, self.idx[j], [fp[j] for fp in self.seen], tol):
            raise Verdict("rejected", "output_replay", f"{where} got the answer of an earlier call")
        if bad and started:
            raise Verdict("rejected", "background_thread", f"{where}: the output was incomplete when forward returned "
                          f"({bad[1]}) and {started} thread(s) forward started were still running")
        return bad

    def audit(self):
        if self.w["cand"]("audit") != self.digest:
            raise Verdict("rejected", "monkeypatch", "the harness' baselines in the candidate's process were changed")
        fences.audit_processes(self.pid["cand"])


def _set_up(ref, cand, ref_src, cand_src, device, o, env, logdirs, go, known, plan):
    """(_Sides, the correctness gate's input sets (kind, make), the float64 reference or None). The workers prepare
    their harness while the judge runs the reference once itself (its output spec, its determinism); then each side
    gets its buffers, the reference builds its model, go() waits for the turn of candidate code, the candidate builds
    its model, and a first audit follows. known: the session's reference side (its module here, its worker's process
    group, both sides' buffers), filled by the first candidate; each candidate still gets its own seeds, inputs,
    reference model and worker. plan: how many input sets stay resident and where the oracle runs (the correctness
    sets are made one at a time, again from their seeds)."""
    first = not known
    if first:
        known.update(mod=_exec_module(ref_src, "reference", Path(logdirs[0]) / "reference_judge.py"), pid=ref("pid"))
    ref_mod = known["mod"]
    init_args, init_seed = ref_mod.get_init_inputs(), secrets.randbits(62)
    consts = {k: v for k, v in vars(ref_mod).items() if not k.startswith("_") and _is_const(v)}
    cand.pid = cand("pid")  # its process-group leader, asked before any task code runs
    fences.refusal(cand.pid)  # a note for this group from before its leader existed is stale (pids are reused)
    cand.send("prepare", env)  # the workers start their harness while the judge works
    if first:
        ref.send("prepare", env)
    torch.manual_seed(init_seed)
    model = ref_mod.Model(*init_args).to(device)
    gen = torch.Generator(device=device).manual_seed(secrets.randbits(62))
    seeds, host = [secrets.randbits(62) for _ in range(4)], plan["oracle"] == "host"
    first_set = _make_inputs(ref_mod, device, seeds[0])
    spec = _check_reference(model, first_set, o)
    try:
        model64 = (model.to("cpu") if host else model).double()
    except RuntimeError:
        model64 = None
    checks = [(kind, lambda i=i, kind=kind: _vary(_make_inputs(ref_mod, device, seeds[i % 2]), kind, seeds[i]))
              for i, kind in enumerate(INPUT_KINDS)]
    digest = cand.reply()  # the audit's baseline, taken before any task code
    # both sides' buffers are the session's: a killed worker never gives back shared CUDA memory, which torch then
    # keeps (GBs after a few candidates of a big task); the caller hands over a candidate only once the last one's
    # processes are all gone
    if first:
        ref.reply()
        known["bufs"] = {k: fences.side_buffers(first_set, spec, device, plan["sets"]) for k in ("ref", "cand")}
        fences.send_buffers(ref, *known["bufs"]["ref"][2:])
    bufs = known["bufs"]
    s = _Sides(w={"ref": ref, "cand": cand}, pid={"ref": known["pid"], "cand": cand.pid},
               stage={k: b[0] for k, b in bufs.items()}, recv={k: b[1] for k, b in bufs.items()},  # own memory
               digest=digest, ref_mod=ref_mod, device=device, host=host, rounds_host=plan["rounds"] == "host")
    del first_set
    fences.send_buffers(cand, *bufs["cand"][2:])
    ref("setup", ref_src, "Model", init_args, init_seed, {}, env, logdirs[0], False)
    go()  # no candidate code has run so far
    cand("setup", cand_src, "ModelNew", init_args, init_seed, consts, env, logdirs[1], True, timeout=o.build_timeout_s)
    s.audit()  # what importing and constructing the candidate changed, before it is ever called
    s.hold = ref("held") and cand("held")  # every call behind a GPU hold on both sides or on neither
    s.idx = [torch.randint(0, max(r.numel(), 1), (64,), generator=gen, device=device) for r in s.recv["ref"]]
    return s, checks, model64


def _correctness_gate(s, checks, model64, o):
    """(tolerance per output, worst error in units of it) after 4 input sets of 3 distributions, the tolerance
    calibrated against float64 and capped; a miss is wrong_output (or a named cheat). Each set's expected outputs
    and tolerance are fixed from the reference alone, before the candidate's call, in the judge's own memory (no
    buffer the candidate maps covers them: fences.shared_arena), on the host if the plan says so."""
    recv = s.recv
    tols, worst = [0.0] * len(recv["ref"]), 0.0
    for i, (kind, make) in enumerate(checks):
        where, xs, b = f"input set {i + 1}", make(), i % len(s.stage["ref"])  # both buffer sets, as timed rounds
        s.call("ref", b, xs, where)
        refs = [_keep(r, s.host) for r in recv["ref"]]
        want = _oracle(model64, xs, "cpu" if s.host else s.device) or [r.double() for r in refs]
        fixed = [_tolerance(r, w, o, where) for r, w in zip(refs, want)]
        started = s.call("cand", b, xs, where)
        del xs
        for j, (r, c, w, tol) in enumerate(zip(refs, recv["cand"], want, fixed)):
            c = _keep(c, s.host)  # the answer as it stood at the reply: the candidate's memory may change later
            tols[j] = max(tols[j], tol)
            exact = not c.is_floating_point()
            bad = s.verdict_on(j, c, r if exact else w, tol, where, started)  # compared in float64 chunk by chunk
            if bad:
                s.audit()  # a wrong answer after changing global flags or patching torch is named for that
                raise Verdict("wrong_output", bad[0], f"{bad[1]} on {where} ({kind} distribution)"
                              + (f", output {j}" if len(recv["ref"]) > 1 else ""))
            worst = max(worst, _err(c, w) / tol if tol else 0.0)
        s.seen.append(_fingerprint(refs, s.idx))
    s.audit()
    return tols, worst


def _phase_probe(s, xs, tols):
    """In eval mode the candidate must still match where the reference does not care about the mode."""
    ref, cand, recv = s.w["ref"], s.w["cand"], s.recv
    train_out = [_keep(r, s.host) for r in recv["ref"]]
    ref("mode", False), s.call("ref", 0, xs, "eval mode")
    if all(_mismatch(a.to(b.device), b, t) is None for a, b, t in zip(recv["ref"], train_out, tols)):
        cand("mode", False), s.call("cand", 0, xs, "eval mode")
        bad = next((m for c, w, t in zip(recv["cand"], train_out, tols) if (m := _mismatch(_keep(c, s.host), w, t))),
                   None)
        if bad:
            raise Verdict("rejected", "phase_branch", f"output depends on self.training although the reference's does "
                          f"not: {bad[1]} in eval mode")
        cand("mode", True)
    ref("mode", True)


def _profile(s, cand_src, known):
    """(speedup kind, the result's note): the candidate's own kernel, library calls, or the reference's own ops.
    The reference's ops are the same for every candidate: it is profiled once a session (known), so that each side
    is timed after exactly one profile (a profile moves the level of the calls after it)."""
    cuda = s.device.startswith("cuda")
    if "profile" not in known:
        known["profile"] = s.w["ref"]("profile", 0)
    profs = known["profile"], s.w["cand"]("profile", 0)
    if "error" in profs[1] and "error" not in profs[0]:
        raise Verdict("rejected", "phase_branch", f"forward failed only while profiled: {profs[1]['error']}")
    errors = [p["error"] for p in profs if "error" in p]
    kind = f"unknown ({errors[0]})" if errors else speedup_kind(*profs, cand_src, cuda)
    note = ("custom kernel built but never ran; " if profs[1]["has_ext"] and kind != "custom_kernel" else "")
    if cuda and not s.hold:
        note += "timed without the GPU hold (no Triton?): the CPU's launch latency is included; "
    return kind, note


def _draw(s, rng):
    """A timed round's inputs: a fresh draw of the task's get_inputs() from a secret seed, of a distribution drawn
    from INPUT_KINDS (so a timed call's inputs are no easier than a checked call's)."""
    xs = _make_inputs(s.ref_mod, s.device, secrets.randbits(62))
    return _vary(xs, rng.choice(INPUT_KINDS), secrets.randbits(62))


def _timed_rounds(s, o, tols, n_checks):
    """{side: [(precise, worker's, judge's, host ms)]}: warm-up, then paired rounds in random order, each with inputs
    drawn afresh (_draw), written into the side's own buffers inside its clock, while the other side is stopped;
    every output checked."""
    rng, recv = random.Random(secrets.randbits(64)), s.recv
    clock, k = {"ref": [], "cand": []}, 0
    while True:
        timed = k >= o.warmup
        n = len(clock["ref"])
        spent = min(sum(x[2] for x in c) for c in clock.values())
        if n >= o.max_rounds or (n >= o.min_rounds and (spent >= o.time_budget_s * 1e3 or
                                                         _precise_enough(clock, o.precision))):
            return clock
        b, xs = k % len(s.stage["ref"]), _draw(s, rng)
        got, flags = {}, {}
        for side in rng.sample(["ref", "cand"], 2):
            ms, *flags[side] = s.timed(side, b, xs)
            got[side] = [_keep(r, s.rounds_host) for r in recv[side]]  # the answer as it stood when the clock stopped
            if timed:
                clock[side].append(ms if o.host_clock else ms[:3])
        where = f"{'timed' if timed else 'warm-up'} call {k + 1}"
        if not (_intact(s.stage["cand"][b], xs) and _intact(s.stage["ref"][b], xs)):  # the reference was checked
            raise Verdict("rejected", "input_mutation", f"the candidate modified its inputs ({where})")
        (alias, started), ref_alias = flags["cand"], flags["ref"][0]
        if alias or ref_alias:
            raise s.w["cand" if alias else "ref"]._fail("rejected", "output_storage", "the output shares storage with "
                                                        "an input; return a new tensor")
        if not all(_same(a, r.to(a.device)) for a, r in zip(got["cand"], recv["cand"])):
            raise Verdict("rejected", "background_thread", f"the output changed after the call answered ({where})")
        for j, (c, r, t) in enumerate(zip(got["cand"], got["ref"], tols)):
            bad = s.verdict_on(j, c, r, 2 * t, where, started)
            if bad:
                raise Verdict("rejected", "phase_branch", f"correct on the {n_checks} correctness calls but wrong "
                              f"on {where} ({bad[1]}): phase-dependent output or a race")
        s.seen.append(_fingerprint(got["ref"], s.idx))
        del xs, got  # before the next draw: a big task's memory plan has room for one round's inputs and answers
        k += 1


def _clean_rounds(s, o, n):
    """The reference's clock with no candidate process left (its group killed, its CUDA contexts and kernels with it):
    n rounds of it alone, which cap the paired rounds where a test says they ran slower (fences.clean_cap). n = 0 on
    the CPU: nothing of a stopped candidate runs there, and alone the reference has the caches to itself."""
    fences.signal_group(s.pid["cand"], signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while fences.group_pids(s.pid["cand"]) and time.monotonic() < deadline:
        time.sleep(0.002)
    rng, clean = random.Random(secrets.randbits(64)), []
    for k in range(n):
        b = k % len(s.stage["ref"])
        ms, *_ = s.timed("ref", b, _draw(s, rng), alone=True)
        clean.append(ms if o.host_clock else ms[:3])
    return clean


def _precise_enough(clock, precision):
    """Is the speedup known within +-precision (0: never asked)? 95% confidence from the rounds' paired log ratios of
    the precise clocks, once the rounds show no wider clock can add to the charge (its sign test turned round)."""
    if not precision or len(clock["ref"]) < 2:
        return False
    r = [math.log(max(a[0], 1e-9) / max(b[0], 1e-9)) for a, b in zip(clock["ref"], clock["cand"])]
    return (1.96 * statistics.stdev(r) / len(r) ** 0.5 <= math.log1p(precision)
            and charge(clock, z=-fences.Z)[1] <= charge(clock)[1])


def _make_inputs(mod, device, seed):
    """The task's own inputs from a secret seed, made on the device (factory calls inside get_inputs go there)."""
    torch.manual_seed(seed)
    with torch.device(device):
        xs = mod.get_inputs()
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


INPUT_KINDS = ("task", "task", "wide", "edge")  # the correctness sets' distributions, which a timed round draws from


def _vary(xs, kind, seed):
    """The inputs of a distribution, in place (xs is a fresh draw of the judge's own): 'task' (as drawn), 'wide'
    (each float x4..x16), 'edge' (5% zeros, 1% x64, and one whole row of zeros, where a missing eps shows). Factors
    are positive: non-negative inputs stay so. Peak memory: the inputs and one more input-sized tensor."""
    if kind == "task":
        return xs
    for x in xs:
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            continue
        gen = torch.Generator(device=x.device).manual_seed(seed)
        u = torch.rand(x.shape, generator=gen, device=x.device, dtype=x.dtype)
        if kind == "wide":
            x.mul_(u.mul_(12).add_(4))
            continue
        x[u > 0.99] *= 64
        x.masked_fill_(u < 0.05, 0)
        if x.dim() >= 2 and x.shape[-1] > 1:
            rows = x.view(-1, x.shape[-1])  # zero one row along the last dim
            rows[int(torch.randint(0, rows.shape[0], (1,), generator=gen, device=x.device))] = 0
    return xs


def _intact(stage, xs):
    return all(_same(s, x) for s, x in zip(stage, xs) if isinstance(s, torch.Tensor))


# ---------------------------------------------------------------------------- numerics: tolerance, oracle, the charge

def _err(x, want):
    """Worst |x - want| / (rms(want) + |want|) over the finite entries of want, in the wider of their dtypes (fp32 at
    least: near values subtract exactly, so fp32 is enough against an fp32 answer; a float64 oracle stays float64)."""
    fin = torch.isfinite(want)
    if not fin.all():  # masking copies: only when some entry is not finite
        if not fin.any():
            return 0.0
        x, want = x[fin], want[fin]
    dtype = torch.promote_types(torch.promote_types(x.dtype, want.dtype), torch.float32)
    x, want = x.flatten(), want.flatten()
    rms = _rms(want).to(dtype)
    return max((_rel_err(x[i:i + CHUNK].to(dtype), want[i:i + CHUNK].to(dtype), rms)
                for i in range(0, want.numel(), CHUNK)), default=0.0)


CHUNK = 1 << 26  # elements compared at a time: temporaries stay small beside KernelBench's multi-GB outputs


def _rel_err(x, want, rms):
    return float(((x - want).abs() / (rms + want.abs() + 1e-30)).max())


def _rms(t):
    """The RMS of t, in chunks, scaled (squares of huge fp32 values would overflow), accumulated in float64."""
    t = t.flatten()
    if not t.numel():
        return torch.zeros((), dtype=t.dtype, device=t.device)
    big = torch.maximum(t.amax().abs(), t.amin().abs()).double().clamp_min(1e-30)
    squares = sum(float((t[i:i + CHUNK].double() / big).pow(2).sum()) for i in range(0, t.numel(), CHUNK))
    return (big * math.sqrt(squares / t.numel())).to(t.dtype)


def _mismatch(c, want, tol):
    """None if c matches want within tol, else (check, description). NaN/Inf must sit where want has them."""
    if not want.is_floating_point():
        return None if torch.equal(c, want) else ("values", f"{int((c != want).sum())} of {want.numel()} entries "
                                                  "differ")
    fw, fc = torch.isfinite(want), torch.isfinite(c)
    if not torch.equal(fw, fc) or (not fw.all() and not _same(c[~fw], want[~fw])):
        return ("nonfinite", f"NaN/Inf at {int((fw != fc).sum())} positions where the reference differs")
    err = _err(c, want)
    return None if err <= tol else ("values", f"max error {err:.2e} > tolerance {tol:.1e} (relative to RMS + |ref|)")


def _keep(t, host):
    """A copy of an answer that no worker can write: in the judge's device memory, or on the host (the plan's)."""
    return t.to("cpu", copy=True) if host else t.clone()


def _oracle(model64, xs, device):
    """The reference in float64 on device (None if the model cannot run in float64)."""
    if model64 is None:
        return None
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        out = model64(*[(x.to(device, torch.float64) if x.is_floating_point() else x.to(device))
                        if isinstance(x, torch.Tensor) else x for x in xs])
        return [y.double() for y in _flatten(out)]
    except RuntimeError:
        return None
    finally:
        torch.set_default_dtype(prev)


def _check_reference(model, xs, o):
    """The reference's output spec [(shape, dtype)], after two calls on the same inputs gave the same outputs: a
    stochastic reference (dropout in training mode, random ops) would calibrate any tolerance, so it is refused."""
    a, b = (_flatten(model(*xs)) for _ in range(2))
    for x, y in zip(a, b):
        floor = LOW_PRECISION_TOL.get(x.dtype, o.tol)
        if not (torch.equal(x, y) if not x.is_floating_point() else _mismatch(y, x, floor) is None):
            raise Verdict("runtime_error", "reference", "the reference is not deterministic: two calls on the same "
                          "inputs differ (dropout in training mode or random ops in forward); make it deterministic")
    return [(tuple(x.shape), x.dtype) for x in a]


def _tolerance(r, want, o, where):
    """The tolerance for one output: slack x the reference's own error against float64, at least the dtype's floor,
    at most o.tol_ceiling; a reference that is non-finite where float64 is finite (it overflows) is refused."""
    if not r.is_floating_point():
        return 0.0
    if bool((~torch.isfinite(r) & torch.isfinite(want)).any()):
        raise Verdict("runtime_error", "reference", f"the reference overflows on {where}: non-finite outputs where "
                      "float64 is finite; no tolerance is meaningful there")
    own = _err(r, want)
    if own > o.tol_ceiling:
        raise Verdict("runtime_error", "reference", f"the reference's own error against float64 is {own:.2e} on "
                      f"{where}, above the tolerance ceiling {o.tol_ceiling:g}")
    return min(max(LOW_PRECISION_TOL.get(r.dtype, o.tol), o.tol_slack * own), o.tol_ceiling)


def _fingerprint(outs, idx):
    """Per output: its entries at the sampled positions and the RMS of its finite entries (_err's scale)."""
    fps = []
    for y, i in zip(outs, idx):
        y = y.detach().flatten().to(torch.promote_types(y.dtype, torch.float32))
        fin = y if bool(torch.isfinite(y).all()) else y[torch.isfinite(y)]
        fps.append((y[i.to(y.device)].double().cpu(), float(_rms(fin)) if fin.numel() else 0.0))
    return fps


def _replays(c, want, idx, earlier, tol):
    """Is this wrong output (on the sampled entries) an earlier call's answer and not this call's? Within twice the
    tolerance: the earlier answers are the reference's, up to one tolerance from the float64 answer the candidate is
    checked against, and a replay need not be bitwise (a CUDA graph rounds differently from eager kernels)."""
    now = c.flatten()[idx.to(c.device)].double().cpu()
    return (_rel_err(now, *_fingerprint([want], [idx])[0]) > 2 * tol
            and any(_rel_err(now, *fp) <= 2 * tol for fp in earlier))


def _spread(xs):
    q = torch.tensor(xs, dtype=torch.float64).quantile(torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    return float((q[2] - q[0]) / q[1]), float(q[1])


def _level(xs):
    """A clock's level over the timed calls: the mean of the medians of the even and of the odd calls. Rounds
    alternate the two buffer sets and a side's time can alternate with them: a mixture's median falls anywhere."""
    return statistics.median(xs) if len(xs) < 2 else (statistics.median(xs[0::2]) + statistics.median(xs[1::2])) / 2


def charge(clock, slack=0.02, rel=(0.05, 0.03), z=fences.Z):
    """(ref ms, cand ms, ref spread, cand spread) from each side's (precise, worker's, judge's[, host] ms) per timed
    call, paired round by round, and (clock["clean"], optional) the reference's rounds once no candidate was left.

    The reference costs the level (_level) of its precise clock (CUDA events on forward's stream after the hold; on
    CPU the host's clock around forward), the candidate that over the level of the rounds' ratios of the precise
    clocks (a round's two calls share its noise). A wider clock adds to the candidate's cost only on evidence: its
    time there beyond its precise clock, less the reference's overhead there in the same round (on the host clock
    all of the reference's CPU time), must exceed the allowance by a sign test over the rounds (fences.median_bounds
    at z; z < 0: unless the rounds show it within); then the median excess (z < 0: the most the rounds allow) less
    the allowance is added. The worker's clock (forward to the copy-out's end) sees side streams and work in the
    harness; the judge's (from before it writes the inputs to the answer) sees everything; on CUDA the host's, CPU
    work the GPU hold hides. The allowance: `slack` x the reference's time, or rel[clock] x its overhead there (two
    processes running the same code differ by up to ~5% there on the worker's clock, ~3% on the judge's). Where a
    test says the candidate slowed the reference, its clean rounds cap it (fences.clean_cap). Noise in some rounds,
    or in one phase, bites neither side; a clock that is not a finite number fails the candidate (clocks_read).

    >>> charge({"ref": [(1.0, 1.1, 1.5)] * 3, "cand": [(0.2, 0.3, 1.4)] * 3})  # it says 0.2 ms; the judge saw 1.4
    (1.0, 0.88, 0.0, 0.0)                                                      # 0.2 + (1.2 - 0.5) - 0.02 slack
    """
    ref, cand, clean = clock["ref"], clock["cand"], clock.get("clean", [])
    n, shares = fences.clocks_read(ref, cand, clean), (slack, *rel, rel[0])
    ref = fences.clean_cap([fences.parts(x, n) for x in ref], [fences.parts(x, n) for x in clean], shares)
    ref_ms, extra = _level([x[0] for x in ref]), 0.0
    cand_ms = ref_ms / math.exp(_level([math.log(max(x[0], 1e-9) / max(y[0], 1e-9)) for x, y in zip(ref, cand)]))
    for c in range(1, n):  # the worker's clock, the judge's, the host's
        excess = [y[c] - y[0] - x[c] for x, y in zip(ref, cand)]
        allow = max(slack * ref_ms, shares[c] * _level([x[c] for x in ref]))
        if (bound := fences.median_bounds(excess, z)[0]) > allow:
            extra = max(extra, max(bound, statistics.median(excess)) - allow)
    cand_ms = max(cand_ms + extra, 1e-4 * ref_ms)  # 1e-4: no speedup above 10,000x
    return ref_ms, cand_ms, _spread([x[0] for x in ref])[0], _spread([x[0] for x in cand])[0]


def speedup_kind(ref_prof, cand_prof, cand_src, cuda):
    """'custom_kernel' if code built from the candidate's own source ran (a __global__ or @triton.jit kernel of its
    source on the GPU; a call into its C++ extension on the CPU), 'reference_ops' if it ran exactly the reference's
    aten ops, else 'framework_ops' (library and framework calls only)."""
    own = set(re.findall(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(", cand_src))
    own |= set(re.findall(r"@triton\.jit[^\n]*\n\s*def\s+(\w+)", cand_src))
    ran = any(re.search(rf"\b{k}(?:_[0-9d]+)?\b", n) for n in cand_prof["kernels"] for k in own)  # Triton: name_0d1d
    spaces = set(re.findall(r"TORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)", cand_src))
    ops = any(n.split("::")[0] in spaces for n in cand_prof.get("other_ops", ()))
    if ran or (not cuda and (cand_prof["ext_calls"] or ops)):
        return "custom_kernel"
    return "reference_ops" if cand_prof["ops"] == ref_prof["ops"] else "framework_ops"


def _is_const(v):
    return isinstance(v, (bool, int, float, str)) or (isinstance(v, (tuple, list)) and all(map(_is_const, v)))


def _same(a, b):
    """Bitwise-equal values, NaN equal to NaN (in chunks where both are contiguous: no output-sized temporaries)."""
    if a.numel() > CHUNK and a.shape == b.shape and a.is_contiguous() and b.is_contiguous():
        a, b = a.view(-1), b.view(-1)
        return all(_same(a[i:i + CHUNK], b[i:i + CHUNK]) for i in range(0, a.numel(), CHUNK))
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


# ---------------------------------------------------------------------------- worker: runs Model or ModelNew

def worker_main(conn, device, logdir, role, nice=0, owner=None):
    """A worker (or build) process: answer the trusted side's messages, each with data of the shape REPLIES names
    (fences.send_data), until the connection ends or the first failure. nice: a build process's niceness (beside
    timed evaluations); owner: the build cache folder a build process may write (fences.owner_of its source)."""
    # every thread started from here on (CUDA's, OpenMP's) blocks them too: none can take a signal whose handler
    # would run in the main thread inside the harness (run)
    if not role.startswith("build"):
        _sigmask(signal.SIG_BLOCK, _SIGNALS)
    fences.confine_worker(logdir, role, nice, owner)
    worker = Worker(device, conn)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", getattr(worker, msg[0])(*msg[1:]))
        except BaseException as e:  # a check that fired, or the candidate's own exceptions (SystemExit included)
            text = str(e)
            kind = ("oom" if isinstance(e, (torch.cuda.OutOfMemoryError, MemoryError)) else
                    "cuda_error" if "CUDA error" in text or "illegal memory access" in text else
                    "oom" if "can't allocate memory" in text or "out of memory" in text else "exception")
            v = e if isinstance(e, Verdict) else _as_verdict(e, "runtime_error", kind)
            reply = ("fail", v.status, v.check, v.reason)
        fences.send_data(conn, reply)
        if reply[0] == "fail":
            return


# The shape of each answer (fences.fits) the judge accepts from a worker, by the request's name: anything else, or
# anything that is not data, is `wire` (fences.recv_data)
PROFILE = fences.Either({"error": str, "has_ext": bool},
                        {"ops": {str: int}, "other_ops": [str], "kernels": [str], "ext_calls": int, "has_ext": bool})
REPLIES = {"pid": int, "prepare": str, "audit": str, "held": bool, "buffers": None, "setup": None, "mode": None,
           "prep": None, "profile": PROFILE, "watch": str, "run": (float, float, fences.Either(float, None), bool, int)}


def _watched():
    """The namespaces the audits watch (fences.watched): torch's, fences', and the harness' own, which candidate code
    in a worker could patch: this module (its clocks, its checks) and Worker."""
    return fences.watched(harness=(sys.modules[__name__], False), Worker=(Worker, True))


class Worker:
    """One process's harness: build the model, run it on the judge's buffers, report what it saw.

    The same code serves the reference and the candidate, so both sides pay the same overheads."""

    def __init__(self, device, conn=None):
        self.device, self.cuda, self.conn = device, device.startswith("cuda"), conn
        self.model, self.owned, self.exts = None, {}, []  # owned: the harness' own attributes, as it set them (_own)
        self.owner = None  # the build cache folder of the source it runs (fences.owner_of), where its builds are
        self._own(flush_buf=None, hold=None)
        torch.set_grad_enabled(False)

    def build(self, src, env, name="candidate", path=None):
        """Import the module (load_inline calls are served by fences.serve_builds); errors become compile_error."""
        os.environ.update(env)
        try:
            return _exec_module(src, name, path or Path(tempfile.gettempdir()) / f"{name}.py")
        except Verdict:
            raise
        except Exception as e:
            raise _as_verdict(e, "compile_error", "import") from None

    def prebuild(self, src, env, ref_src=None):
        """In a build process: run the module (and construct ModelNew) so that its builds are compiled here."""
        self.owner = fences.owner_of(src)
        fences.serve_builds(self, local=True)
        init_args = _exec_module(ref_src, "reference", Path(tempfile.gettempdir()) / "ref.py").get_init_inputs() \
            if ref_src else None
        mod = self.build(src, env)
        if init_args is not None and isinstance(getattr(mod, "ModelNew", None), type):
            with contextlib.suppress(Exception):  # a constructor that fails fails again in its worker, with a verdict
                mod.ModelNew(*init_args)

    def build_spec(self, spec, env, owner):
        """In a build process: compile one load_inline / load call a worker asked for, into owner's folder."""
        os.environ.update(env)
        try:
            fences.compile_spec(spec, fences.spec_dir(spec, self.device, owner))
        except Verdict:
            raise
        except Exception as e:
            raise Verdict("compile_error", "build", short(e)) from None

    def request_build(self, spec):
        """In a worker: ask the judge for a build (the caller runs it outside the sandbox) and wait for it."""
        fences.send_data(self.conn, ("build", spec))
        ans = self.conn.recv()
        if ans[0] != "built":
            raise RuntimeError(f"Error building extension '{spec['args']['name']}': {ans[1]}")

    def prepare(self, env):
        """Before any candidate code: the harness' CUDA side and the audits' baselines (fences.prepare_worker); their
        digest, which the judge keeps (the worker's copies are reachable by the candidate)."""
        return fences.prepare_worker(self, env, _watched())

    def digest(self):
        """A hash of the audits' baselines; the judge compares it with the one prepare returned."""
        return hashlib.sha256(repr((self.attrs, self.flags0, self.numerics)).encode()).hexdigest()

    def setup(self, src, cls_name, init_args, init_seed, consts, env, logdir, confine=False):
        if confine:  # from here on: writes only under a temp dir of its own and /dev, no signals or ptrace outside
            fences.confine(logdir)
        name = cls_name.lower()
        self.owner = fences.owner_of(src)
        self.mod, self.consts = self.build(src, env, name, Path(logdir) / f"{name}.py"), consts
        self._check_consts()
        cls = getattr(self.mod, cls_name, None)
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            raise Verdict("compile_error", "no_modelnew", f"{cls_name} is not a subclass of torch.nn.Module")
        torch.manual_seed(init_seed)  # the same seed as the other side: parameters made in the same order match
        try:
            self.model = cls(*init_args).to(self.device)
        except Exception as e:
            raise _as_verdict(e, "runtime_error", "exception", f"{cls_name}(*get_init_inputs()) failed: ") from None
        _device_sync(self.device)  # its work done before the answer (the reference's: before another's clock)
        self.mark = (_cpu(), _thread_cpu())  # the host clock's start for the first call (_run)
        # what the harness touches right after forward returns (tensor methods, builtins, itself): compared after
        # every call (import and construction are audited separately against the state before them)
        self.guard = fences.after_forward_watch(harness=sys.modules[__name__], Worker=Worker)
        self._own(conn=self.conn)

    def _own(self, **attrs):
        """Set attributes of the harness' own (flush buffer, hold, buffers); the guard holds them to these objects
        from now on: a candidate that swaps one (it can find this worker through gc) is `monkeypatch`."""
        for k, v in attrs.items():
            setattr(self, k, v)
        self.owned.update(attrs)

    def buffers(self, template, payload, sets):
        """This side's buffers from the judge, in memory shared with the judge alone (fences.receive_buffers)."""
        fences.receive_buffers(self, template, payload, sets)

    def held(self):
        return self.hold is not None

    def pid(self):
        return os.getpid()  # asked before any candidate code runs, so the answer is the harness's

    def mode(self, train):
        self.model.train(train)

    def prep(self):
        """Before every timed call on CUDA: the L2 flushed (fences.flush_l2) over the harness' own buffer (a swapped
        attribute is the guard's to name, at the call after this)."""
        if self.cuda:
            fences.flush_l2(self.owned["flush_buf"])

    def run(self, b, probe=False, behind_hold=False):
        """One call: forward, a device-wide synchronize (side streams count), the output checked and copied into the
        judge's buffers, all before the answer that stops the judge's clock. Returns (precise ms: CUDA events on the
        current stream, or on CPU the host's clock around forward; the worker's ms: forward's start to the copy-out's
        end, on CPU plus other threads' CPU time outside forward since the last answer (work before or after it); on
        CUDA the host ms: CPU time of forward's thread in forward and of every other thread since the last answer,
        else None; whether the output aliases an input; threads it left running). behind_hold (CUDA): the GPU is held
        (fences.gpu_hold) while forward launches; the events start after it, the worker's ms leave it out. From
        forward to the copy-out's end the garbage collector is off and signals are blocked (again: the candidate may
        have unblocked them): a collection (gc.callbacks, finalizers) or a signal's handler (a timer armed in
        forward) would run candidate code in the harness after forward returned, off the precise clock."""
        was_on, blocked = _gc_on(), _sigmask(signal.SIG_BLOCK, _SIGNALS)
        _gc_disable()
        try:
            got = self._run(b, probe, behind_hold, _sigmask(signal.SIG_BLOCK, ()))
        finally:  # a collection runs what it triggers now, after the copy-out (signals stay blocked: worker_main)
            _sigmask(signal.SIG_SETMASK, blocked)
            if was_on:
                _gc_enable()
        if probe and self.cuda:  # the probe's copy of the outputs back to the driver (fences.evaluation_bytes)
            _empty_cache()
        return got

    def _run(self, b, probe, behind_hold, mask):
        """run() once the collector is off and the signals in mask are blocked (`deferred_work`: forward changed
        either)."""
        threads = set(threading.enumerate())
        behind = behind_hold and self.hold is not None
        cpu0, own0 = self.mark  # the host clock from the last answer: CPU work the hold hides from the others (charge)
        t0 = _perf()
        if self.cuda:
            stream, ev = _cuda_stream(), [_Event(enable_timing=True) for _ in range(3)]
            if behind:
                _record(ev[2], stream)
                self.hold(fences.HOLD_NS)
            _record(ev[0], stream)
        t0 = t0 if behind else _perf()
        fwd0, all0 = _thread_cpu(), _cpu()
        out = self.model(*self.stage[b])
        if self.cuda:
            _record(ev[1], stream)
        t1 = _perf()  # forward's end on the CPU (on CUDA the clock runs on to the end of the synchronize below)
        if _gc_on() or _sigmask(signal.SIG_BLOCK, ()) != mask:  # first: any allocation here could collect
            raise Verdict("rejected", "deferred_work", "forward turned the garbage collector on or unblocked signals: "
                          "code of its own could run in the harness after forward returned")
        fwd, others_in = _thread_cpu() - fwd0, _cpu() - all0 - (_thread_cpu() - fwd0)  # CPU time in forward
        fences.check_flags(self)  # TF32 and the like, at the return and (set by torch's setters) inside the call
        snap = None
        if probe and self.cuda:  # what the current stream alone has finished, to compare after the full sync
            fences.after_forward(self, Worker)  # before the harness' clone below
            stream.synchronize()
            snap = [y.clone() if type(y) is torch.Tensor else None for y in _flatten(out)]
        _device_sync(self.device)  # a C function held since import: no patch reaches it
        hold_ms = _elapsed(ev[2], ev[0]) if behind else 0.0
        precise = _elapsed(ev[0], ev[1]) if self.cuda else (t1 - t0) * 1e3
        fences.after_forward(self, Worker)  # the harness' own overhead: on the worker's clock
        outs, alias = (out if type(out) in (tuple, list) else [out]), False
        if len(outs) != len(self.recv):
            raise Verdict("wrong_output", "output_shape",
                          f"forward returned {len(outs)} outputs, expected {len(self.recv)}")
        for y, r in zip(outs, self.recv):
            if type(y) is not torch.Tensor:
                raise Verdict("rejected", "lazy_output", f"forward returned {type(y).__module__}.{type(y).__name__}; "
                              "outputs must be plain torch.Tensor with their values computed")
            for what, got, want in (("output_device", y.device, r.device), ("output_dtype", y.dtype, r.dtype),
                                    ("output_shape", tuple(y.shape), tuple(r.shape))):
                if got != want:
                    raise Verdict("wrong_output", what, f"output has {what[7:]} {got}, expected {want}")
            p, n = y.untyped_storage().data_ptr(), y.untyped_storage().nbytes()
            alias = alias or any(p < q + m and q < p + n for q, m in self.in_ranges)
            r.copy_(y)
        _device_sync(self.device)
        ms = (_perf() - t0) * 1e3 - hold_ms  # the worker's clock: forward, the synchronize, the guard, the copy-out
        others = (_cpu() - cpu0) - (_thread_cpu() - own0)  # every other thread's CPU time since the last answer
        host, ms = ((others + fwd) * 1e3, ms) if self.cuda else (None, ms + (others - others_in) * 1e3)
        self.mark = (_cpu(), _thread_cpu())
        # threads this call started, still running: counted before the probe's wait (after it, a thread that wakes
        # during the probe's first comparison and exits would be missed)
        started = sum(t.is_alive() and t not in threads for t in threading.enumerate())
        if probe:
            fences.background_probe(self, outs, snap, _same)
        return precise, ms, host, alias, started

    def watch(self, b):
        """One untimed call with every global setting read at each op it dispatches (fences.FlagReader): `backend_flags`
        if an op ran with one changed, though forward put it back before it returned. '' or, where forward cannot run
        under a dispatch mode (it raised), why: that call's settings went unread."""
        reader = fences.FlagReader(self.flags0)
        try:
            with reader:
                self.model(*self.stage[b])
            _device_sync(self.device)
        except Exception as e:  # (as text that is data: one line, a lone surrogate escaped)
            return " ".join(f"{type(e).__name__}: {e}"[:200].encode("utf-8", "backslashreplace").decode().split())
        if reader.seen:
            raise Verdict("rejected", "backend_flags", f"an op ran with a global setting changed inside forward "
                          f"({reader.seen}), though it was back when forward returned")
        return ""

    def profile(self, b):
        """What one call runs: aten ops (name -> count), GPU kernel names, calls into the module's own builds."""
        from torch.profiler import ProfilerActivity, profile
        exts = [m for m in self.exts if isinstance(m, types.ModuleType)]  # what fences.serve_builds loaded for it
        calls, undo = [0], []
        for ext in exts:
            for k, fn in list(vars(ext).items()):
                if callable(fn) and not k.startswith("_"):
                    def counted(*a, _fn=fn, **kw):
                        calls[0] += 1
                        return _fn(*a, **kw)
                    setattr(ext, k, counted)
                    undo.append((ext, k, fn))
        try:
            with profile(activities=[ProfilerActivity.CPU] + [ProfilerActivity.CUDA] * self.cuda) as prof:
                self.model(*self.stage[b])
                _device_sync(self.device)
            events = prof.events()
        except Exception as e:  # a profiler that cannot run here (no CUPTI, say) costs the kind, not the verdict
            return {"error": f"{type(e).__name__}: {e}"[:200], "has_ext": bool(self.exts)}
        finally:
            for ext, k, fn in undo:
                setattr(ext, k, fn)
        ops, other = {}, set()
        for e in events:
            if e.name.startswith("aten::"):
                ops[e.name] = ops.get(e.name, 0) + 1
            elif "::" in e.name:  # torch.ops of a library (TORCH_LIBRARY), the profiler's own records
                other.add(e.name)
        kernels = sorted({e.name for e in events if e.device_type == torch.autograd.DeviceType.CUDA})
        return {"ops": ops, "other_ops": sorted(other), "kernels": kernels, "ext_calls": calls[0],
                "has_ext": bool(self.exts)}

    def _check_consts(self):
        for k, v in self.consts.items():
            mine = vars(self.mod).get(k, v)
            if not (_is_const(mine) and mine == v):
                raise Verdict("rejected", "shape_globals", f"the candidate module sets {k} = {mine!r}; the reference "
                              f"has {k} = {v!r}; sizes and hyperparameters must not change")

    def audit(self):
        return fences.audit_worker(self, _watched())


def _exec_module(src, name, path):
    """Run source as a fresh module of its own (never in another module's namespace)."""
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod  # pickling, dataclasses and torch.compile look modules up by name
    linecache.cache[str(path)] = (len(src), None, src.splitlines(True), str(path))  # inspect.getsource (Triton)
    exec(compile(src, str(path), "exec"), mod.__dict__)
    return mod


def _describe(e):
    """The exception first (what a model can learn from), then the innermost frames."""
    frames = traceback.format_tb(e.__traceback__)[-3:]
    return short(f"{type(e).__name__}: {e}\n" + "".join(frames), lines=14)


def _as_verdict(e, status, check, prefix=""):
    """A candidate's exception as a verdict; a failed build (in whatever call it happened) is a compile_error."""
    if isinstance(e, RuntimeError) and "Error building extension" in str(e):
        return Verdict("compile_error", "build", short(e))
    return Verdict(status, check, prefix + _describe(e))


def _flatten(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _device_sync(device):
    if device.startswith("cuda"):
        _cuda_sync()


# ---------------------------------------------------------------------------- tasks

TASKS_DIR = Path(__file__).resolve().parent / "tasks"

TASK_NAMES = ("Model", "get_inputs", "get_init_inputs")


class TaskError(ValueError):
    """A task file (or task selection) that cannot be used."""


def find_tasks(spec, tasks_dir=TASKS_DIR):
    """Task files for 'all', a stem ('relu'), a glob ('level1/*'), a path, or several of these joined by commas."""
    root = Path(tasks_dir)
    found = []
    for part in [s.strip() for s in str(spec).split(",") if s.strip()]:
        if part.endswith(".py") and Path(part).is_file():
            found.append(Path(part))
            continue
        if not root.is_dir():
            raise TaskError(f"tasks folder {root} does not exist (give one with --tasks-dir)")
        files = sorted(f for f in root.rglob("*.py") if not f.name.startswith("_"))
        names = {f: f.relative_to(root).with_suffix("").as_posix() for f in files}
        if part == "all":
            hits = files
        else:
            pat = part[:-3] if part.endswith(".py") else part
            hits = [f for f in files if f.stem == pat or fnmatch.fnmatch(names[f], pat) or fnmatch.fnmatch(f.stem, pat)]
        if not hits:
            raise TaskError(f"no task matches {part!r} in {root} (try a file stem, a glob like 'level1/*', or 'all')")
        found += hits
    return list(dict.fromkeys(found))  # keep order, drop repeats


def task_name(path, tasks_dir=TASKS_DIR):
    """'level1/relu' for tasks/level1/relu.py; the stem for a file outside the tasks folder."""
    path = Path(path).resolve()
    try:
        return path.relative_to(Path(tasks_dir).resolve()).with_suffix("").as_posix()
    except ValueError:
        return path.stem


def task_memory(ref_src, device, name="task"):
    """The task's fences.memory_plan for one evaluation at a time on device; a TaskError, one line with the sizes,
    for a task that cannot fit it at all (rl.py asks this of every task before a run)."""
    try:
        return fences.memory_plan(ref_src, device, in_flight=1)
    except fences.MemoryRefusal as e:
        raise TaskError(f"{name}: {e}") from None


def check_task_source(src, where="task"):
    """Raise TaskError unless `src` parses and defines Model, get_inputs and get_init_inputs."""
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        raise TaskError(f"{where}: syntax error on line {e.lineno}: {e.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in TASK_NAMES if n not in defined]
    if missing:
        raise TaskError(f"{where}: missing {', '.join(missing)} (a KernelBench-format task defines "
                        "class Model(nn.Module), get_inputs() and get_init_inputs())")
    return src


def load_task(path):
    """Source of one task file, checked for the KernelBench shape."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"task file {path} does not exist")
    return check_task_source(path.read_text(), where=str(path))


# ---------------------------------------------------------------------------- CLI

def _summary(r):
    if r.status != "ok":
        return f"{r.status}: {r.reason}"
    flag = "  [same_as_reference: no speedup credit]" if r.same_as_reference else ""
    return (f"ok: speedup {r.speedup:.3f}x  (reference {r.ref_ms:.4f} ms +-{100 * r.ref_spread:.1f}%, candidate "
            f"{r.cand_ms:.4f} ms +-{100 * r.cand_spread:.1f}%, {r.rounds} paired rounds, {r.seconds:.1f} s){flag}")


class ArgumentParser(argparse.ArgumentParser):
    """argparse, whose usage errors are one line naming the flag, with a hint (a near flag's name, or --help), not
    the usage block of every flag above it."""

    def error(self, message):
        wrong = re.findall(r"unrecognized arguments: (--[\w-]+)", message)
        near = difflib.get_close_matches(wrong[0], self._option_string_actions, n=1) if wrong else []
        hint = (f"did you mean {near[0]}?" if near else f"{self.prog} --help lists the flags" if wrong
                else f"{self.prog} --help says what it takes" if message.startswith("argument ") else "")
        self.exit(2, f"{self.prog}: error: {message}{f' ({hint})' * bool(hint)}\n")


def add_option_flags(p):
    """Every Options field as a flag of the argparse parser p (--time-budget-s, --min-rounds, ...), its help the
    field's comment (continuation lines included, read from the source: --help says what the code says)."""
    said, name = {}, None
    for line in inspect.getsource(Options).splitlines()[1:]:
        first, more = re.match(r"    (\w+): [^#]*(?:#\s*(.*))?$", line), re.match(r"\s+#\s*(.*)$", line)
        if first:
            name, said[first[1]] = first[1], first[2] or ""
        elif more and name:
            said[name] += " " + more[1]
    for f in fields(Options):
        kind = {"type": type(f.default)} if type(f.default) is not bool else {"action": argparse.BooleanOptionalAction}
        p.add_argument("--" + f.name.replace("_", "-"), default=f.default,
                       help=f"{said.get(f.name, '')} (default: {f.default})".replace("%", "%%"), **kind)


def options_of(args):
    """The Options fields' values from parsed add_option_flags flags, as evaluate's keyword arguments."""
    return {f.name: getattr(args, f.name) for f in fields(Options)}


def main(argv=None):
    p = ArgumentParser(description="Evaluate one candidate (defines ModelNew) against a KernelBench-format "
                       "reference (defines Model, get_inputs, get_init_inputs).", allow_abbrev=False,
                       usage="%(prog)s REFERENCE CANDIDATE [--device cpu|cuda] [--json] [options]")
    p.add_argument("reference", nargs="?", help="task file, e.g. tasks/cpu/relu.py")
    p.add_argument("candidate", nargs="?", help="candidate file defining class ModelNew")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    p.add_argument("--device", choices=["cpu", "cuda"], default=device,
                   help=f"where both run and are timed (default here: {device}; cuda where a GPU is visible)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on the last line")
    add_option_flags(p)
    a = p.parse_args(argv)
    if not (a.reference and a.candidate):
        p.error("give REFERENCE and CANDIDATE files (re-scoring other systems' kernels: bench/rescore.py)")
    if not Path(a.candidate).is_file():
        p.error(f"candidate file {a.candidate} does not exist")
    try:
        ref_src, cand_src = load_task(a.reference), Path(a.candidate).read_text()
    except (TaskError, OSError) as e:
        p.error(str(e))
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda, but torch sees no CUDA GPU (no GPU, or a CPU-only torch build)")
    res = _raised(evaluate, ref_src, cand_src, a.device, **options_of(a))
    sys.stdout.reconfigure(errors="backslashreplace")  # text no encoding can print is escaped, never a traceback
    print(_summary(res))
    if a.json:
        print(json_line(res))
    return 0


def json_line(res):
    """The CLI's --json line: strict JSON (a number that is not finite is null: JSON has no NaN or Infinity)."""
    d = {k: None if type(v) is float and not math.isfinite(v) else v for k, v in res.to_dict().items()}
    return json.dumps(d, allow_nan=False)


if os.environ.pop("CUDAL1_FORKSERVER", None) == str(os.getppid()):  # this is the forkserver, importing its preloads
    fences.seal(secret=False)
    fences.serve_only(os.getppid())
    fences.subreaper()
    fences.torch_code()  # once here (~0.4 s): every worker inherits it and walks only the modules it imports later


if __name__ == "__main__":  # run the harness from the imported module (workers pickle their targets by module
    import evaluator          # name: from __main__ they would run a second copy of it, which no watch covers)
    sys.exit(evaluator.main())
