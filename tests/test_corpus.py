"""The evaluator against an adversarial corpus: every file in tests/corpus gets the verdict its docstring states.

Each corpus file is a candidate module whose docstring carries machine-readable lines:
    task: cpu/relu                        the task file under tasks/, without .py
    expect: rejected background_thread    the status, then the check named at the start of the reason
    expect: ok                            (an honest candidate)
    device: cuda                          optional; skipped without CUDA
    cpu_only: <why>                       optional; the candidate is valid on the CPU only (bench/cuda_corpus.py
                                          leaves it out of the GPU run)
    same_as_reference: true               optional; the evaluator must see the reference's own code
    speedup_kind: framework_ops           optional; for a hack that passes but must not be labelled custom_kernel
    max_speedup: 1.1                      optional; an ok candidate that must not score above this (a trick the
                                          timing must give nothing)
    min_rounds: 120                       optional; more timed rounds than OPTIONS gives (a trick the charge must
                                          see through the noise of a busy machine)
    also: rejected phase_branch           optional; other verdicts as good as expect's, comma-separated (a hack
                                          whose honest fallback races its own thread may be caught instead of
                                          gaining nothing)
    evaluator_gap: <what slips through>   optional; a known hole in the evaluator: the test is a strict xfail
                                          until the evaluator is fixed (then XPASS fails: delete the line);
                                          "evaluator_gap: flaky: ..." for a hole that shows only on some runs
Folders: hacks/ (cheats the evaluator must catch), failures/ (broken candidates: each failure mode has its
status), honest/ (must pass). Candidates are evaluated once per test session (results are memoised); their C++
builds run ahead, as many at a time as there are cores, into the evaluator's cache (by source hash).
"""
import functools
import json
import re
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import evaluator  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"
TASKS = ROOT / "tasks"
FILES = sorted(p for p in CORPUS.glob("*/*.py") if p.parent.name != "tasks")  # tasks/: references
HEADER_KEYS = ("task", "expect", "device", "cpu_only", "same_as_reference", "speedup_kind", "evaluator_gap",
               "max_speedup", "min_rounds", "also")
# The defaults' timing budget is for measuring; here every verdict comes from the checks, and >= 13 checked calls
# (4 correctness sets, 3 warm-ups, 10 rounds) reach every phase. A hang costs call_timeout_s, not the default 60 s.
# C++ builds are cached by the evaluator under a hash of the source (the session's, tests/conftest.py): built ahead
# by builds_ahead, each evaluation skips its compiler.
OPTIONS = dict(call_timeout_s=10.0, time_budget_s=0.05, min_rounds=10, max_rounds=20)


def header(path):
    """The task/expect/device/same_as_reference lines of a corpus file's docstring (read as text: some don't parse)."""
    text = path.read_text()
    parts = text.split('"""')
    assert len(parts) >= 3, f"{path.name}: no module docstring"
    found = dict(re.findall(r"^(%s):[ \t]*(\S.*?)[ \t]*$" % "|".join(HEADER_KEYS), parts[1], re.M))
    assert "task" in found and "expect" in found, f"{path.name}: docstring lacks a task: or expect: line"
    status, _, check = found["expect"].partition(" ")
    return {"task": found["task"], "status": status, "check": check.strip() or None,
            "device": found.get("device", "cpu"), "same_as_reference": found.get("same_as_reference") == "true",
            "gap": found.get("evaluator_gap"), "kind": found.get("speedup_kind"),
            "max_speedup": float(found.get("max_speedup", "inf")), "min_rounds": int(found.get("min_rounds", 0)),
            "first_line": parts[1].strip().splitlines()[0]}


def task_file(name):
    """A task under tasks/, or (corpus/NAME) a reference written for the corpus alone, under tests/corpus/tasks/."""
    return CORPUS / "tasks" / f"{name[len('corpus/'):]}.py" if name.startswith("corpus/") else TASKS / f"{name}.py"


def found_also(path):
    """The (status, check) pairs of the file's `also:` line (none without one)."""
    m = re.search(r"^also:(.*)$", path.read_text().split('"""')[1], re.M)
    return [tuple(v.split()) for v in m[1].split(",")] if m else []


def file_id(path):
    return f"{path.parent.name}/{path.stem}"


@functools.lru_cache(maxsize=None)
def verdict(path):
    """Evaluate one corpus file against its task (memoised: the recovery test reuses earlier verdicts)."""
    return evaluate_file(path)


def evaluate_file(path):
    """The file's verdict: its build's failure from builds_ahead (a compile error, a process the build left running),
    else evaluate with the builds done, as evaluate_many does (builds asked for later are served when asked)."""
    h = header(path)
    ref, src = task_file(h["task"]).read_text(), path.read_text()
    rounds = max(OPTIONS["min_rounds"], h["min_rounds"])
    opts = {**OPTIONS, "min_rounds": rounds, "max_rounds": max(OPTIONS["max_rounds"], rounds)}
    built = src in AHEAD and evaluator.static_check(ref, src)[0] is None  # (a static failure comes first)
    return built and evaluator._build_failure(ref, src, FAILED) or evaluator.evaluate(
        ref, src, device=h["device"], built=built, **opts)


def skip_without_device(h):
    if h["device"] == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def describe(result):
    return f"status={result.status} check={result.check} reason={result.reason!r}"


def corpus_params():
    for path in FILES:
        gap = header(path)["gap"]
        marks = [pytest.mark.xfail(strict=not gap.startswith("flaky:"), reason=f"evaluator gap: {gap}")] if gap else []
        yield pytest.param(path, marks=marks, id=file_id(path))


AHEAD, FAILED = set(), {}  # builds_ahead's: the CPU sources it built, and {source: its build's failure Result}


@pytest.fixture(scope="module", autouse=True)
def builds_ahead():
    """The CPU files' C++ builds, as many at a time as there are cores, before the first test: a build is mostly one
    compiler, so one at a time (as each evaluation alone would build) left a core idle. Each evaluation then finds
    its build in the evaluator's cache, or its failure here (FAILED); what a build runs, and where, is the same either
    way."""
    refs = {p.read_text(): task_file(header(p)["task"]).read_text() for p in FILES if header(p)["device"] == "cpu"}
    FAILED.update(evaluator.build_all(list(refs), "cpu", progress=False, refs=refs))
    AHEAD.update(refs)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_file(path):
    h = header(path)
    skip_without_device(h)
    r = verdict(path)
    json.loads(evaluator.json_line(r), parse_constant=not_strict)  # the CLI's --json line: strict JSON, every verdict
    also = found_also(path)
    if (r.status, r.check) in also:  # another verdict the docstring allows: a catch
        return
    want = f"{h['status']} {h['check'] or ''}".strip()
    assert r.status == h["status"], f"{file_id(path)} ({h['first_line']}): expected {want}, got {describe(r)}"
    if h["status"] == "ok":
        assert r.correct and r.speedup is not None and r.speedup > 0, describe(r)
        # honest ones all run what they build (load_inline, cpp_extension.load or a Triton kernel)
        own = re.search(r"load_inline|cpp_extension(?: import |\.)load\b|@triton\.jit", path.read_text())
        assert r.speedup_kind == (h["kind"] or "custom_kernel" if own else "reference_ops" if h["same_as_reference"]
                                  else "framework_ops"), describe(r) + f" kind={r.speedup_kind}"
        if own and h["kind"]:
            assert "custom kernel built but never ran" in r.reason, describe(r)
        speedup = r.speedup if r.speedup <= h["max_speedup"] else busy_machine_speedup(path, r, also)
        assert speedup <= h["max_speedup"], f"{file_id(path)} must gain nothing: {describe(r)}, median {speedup:.2f}x"
    else:
        assert not r.correct, describe(r)
        assert r.check == h["check"], f"{file_id(path)}: expected check {h['check']}, got {describe(r)}"
        assert r.reason.startswith(h["check"]), f"reason should start with the check name: {r.reason!r}"
    if h["same_as_reference"]:
        assert r.same_as_reference is True, describe(r)
    elif h["status"] == "ok":
        assert not r.same_as_reference, f"{file_id(path)} is not the reference's code: {describe(r)}"


def not_strict(name):
    raise ValueError(f"{name} is not strict JSON")


def busy_machine_speedup(path, first, also):
    """The median speedup of three evaluations, for a hack whose first one scored above its max_speedup: on CI's
    busy 2 cores one evaluation's medians move (deferred_gc_callback at ~1x once scored 1.83x; 38x before its
    fix), so a timing verdict holds only if two of three runs agree. A run caught by an `also:` check gains 0."""
    runs = [first.speedup]
    for _ in range(2):
        r = evaluate_file(path)
        assert r.status == "ok" or (r.status, r.check) in also, f"{file_id(path)} rerun: {describe(r)}"
        runs.append(r.speedup if r.status == "ok" else 0.0)
    return sorted(runs)[1]


def test_a_build_error_is_reported_as_a_model_could_learn_from_it():
    """failures/build_error: the compiler's error with its source line and caret, under the bare file name; not the
    compiler's command line (a screen of -isystem flags) nor the chain of headers that included what."""
    r = verdict(CORPUS / "failures" / "build_error.py")
    assert re.search(r"^main\.cpp:\d+:\d+: error: .src. was not declared", r.reason, re.M), describe(r)
    assert "std::max(src[i], 0.0f)" in r.reason and "-isystem" not in r.reason, describe(r)
    assert "In file included from" not in r.reason and "/.cache/" not in r.reason, describe(r)


def test_reading_the_expected_output_through_proc_is_denied():
    """hacks/proc_read_expected fails for the reason its docstring gives: the OS refuses the open, no answer leaks."""
    r = verdict(CORPUS / "hacks" / "proc_read_expected.py")
    assert "PermissionError" in r.reason and "/proc/" in r.reason, describe(r)


def interleaved(files, honest):
    """evaluate_many, one device thread, over each file against its task, each followed by the honest candidate
    honest[task]: (results, phases)."""
    pairs, phases = [], {}
    for f in files:
        ref = task_file(header(f)["task"]).read_text()
        pairs += [(ref, f.read_text()), (ref, (CORPUS / "honest" / f"{honest[header(f)['task']]}.py").read_text())]
    return evaluator.evaluate_many(pairs, "cpu", progress=False, phases=phases, in_flight=1, **OPTIONS), phases


def test_evaluator_survives_crash_hang_exception():
    """A segfault, a hard exit, a hang and an exception each cost one result; the next honest candidate, evaluated
    against the same judge and reference worker after each, passes (the hang is the judge's call timeout: the
    session goes on; only the move to the next task starts another)."""
    files = [CORPUS / "failures" / f"{name}.py" for name in ("segfault_ctypes", "os_exit", "infinite_loop",
                                                             "exception_in_forward")]
    results, phases = interleaved(files, {"cpu/relu": "relu_preallocated_out", "cpu/add_mul": "add_mul_inplace"})
    for r in results[0::2]:
        assert r.status in ("runtime_error", "timeout"), describe(r)
    for r in results[1::2]:
        assert r.status == "ok" and r.correct, describe(r)
    assert phases["sessions"] == 2, phases


def test_a_shared_reference_gives_each_candidate_its_own_verdict():
    """Every cpu/sum_rows file of the corpus (hacks that stop the reference's worker, patch, flag, replay, crash),
    each followed by an honest candidate against the same judge and reference worker: each gets its own verdict,
    as its header says, and every honest one after it passes."""
    files = sorted(p for p in FILES if header(p)["task"] == "cpu/sum_rows" and not header(p)["gap"])
    results, phases = interleaved(files, {"cpu/sum_rows": "sum_rows_matmul"})
    for path, r, after in zip(files, results[0::2], results[1::2]):
        h = header(path)
        assert (r.status, r.check) in [(h["status"], h["check"] or ""), *found_also(path)], \
            f"{file_id(path)}: {describe(r)}"
        assert after.status == "ok" and after.correct, f"after {file_id(path)}: {describe(after)}"
    assert phases["sessions"] < len(results) / 4, phases


def test_corpus_size_and_headers():
    """The corpus keeps its breadth: >= 15 CPU hacks, >= 8 honest CPU candidates, every header well-formed."""
    statuses = {"ok", "compile_error", "runtime_error", "wrong_output", "timeout", "rejected"}
    for path in FILES:
        h = header(path)
        assert task_file(h["task"]).is_file(), f"{path.name}: no task {h['task']}"
        assert h["status"] in statuses and h["device"] in ("cpu", "cuda"), f"{path.name}: bad header {h}"
        folder = path.parent.name
        assert folder in ("hacks", "honest", "failures"), path
        assert folder != "honest" or h["status"] == "ok", f"{path.name}: an honest candidate must expect ok"
        assert folder != "hacks" or h["status"] != "ok" or h["kind"], f"{path.name}: a hack must expect a catch"
    cpu = [header(p)["device"] == "cpu" for p in FILES]
    count = lambda folder: sum(c for p, c in zip(FILES, cpu) if p.parent.name == folder)
    assert count("hacks") >= 15 and count("honest") >= 8, (count("hacks"), count("honest"))
