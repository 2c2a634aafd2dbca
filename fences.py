"""fences.py: the walls around the candidate, which evaluator.py calls by name (runs.py only asks uses_extension).

Covered (each with the corpus files, under tests/corpus/, that exercise it):
    verdicts   Verdict, which a wall or a check raises to end an evaluation; compiler output trimmed (short).
    wire       what untrusted processes send: plain data (recv_data: finite numbers in range, text that encodes) of
               the shape expected (fits); build specs and their flags (check_spec, FLAG_RULES). hacks/wire_*,
               hacks/flags_*.
    memory     what one evaluation of a task needs on its device, and the plan that makes it fit (or one line that
               says it cannot): memory_plan, which rl.py asks of every task (evaluator.task_memory).
               honest/cuda_large_relu_huge.
    shared     the buffers a worker shares with the judge, alone in their allocator segments (a CUDA IPC handle maps
               a whole segment) or in an unnamed memfd (CPU). hacks/cuda_ipc_oracle_overwrite, hacks/fd_broker_mitm.
    tests      the charge's evidence: a sign test's bounds on a median, by which a wider clock's excess or the
               clean cap bites only beyond the noise; the reference's level with no candidate process left, which caps
               its paired rounds (GPU work that outlives SIGSTOP, a second CUDA context); clocks that are finite
               numbers. hacks/cuda_*_interfere, hacks/input_watcher_thread, hacks/cuda_hold_window_cpu.
    numerics   the flags that change fp32 arithmetic, read right after forward returns; torch's setters of every
               global setting watched from the harness's start (FlagWatch). hacks/flag_*.
    host       contexts that sleep while they wait, so that CPU time is work (the host clock).
               hacks/cuda_hold_window_cpu.
    builds     load_inline / load served outside the sandbox, compiled into folders named by the spec's hash (one
               shared precompiled header, made for fixed flag sets in a build process: make_pch); the worker only
               loads. failures/build_error, honest/cpp_build_*, honest/cpp_load_sources_file,
               honest/cpp_two_extensions, hacks/pch_wish_forged.
    sandbox    capabilities dropped and the answer holders non-dumpable (seal); a forkserver that forks for its caller
               alone (serve_only); seccomp keeps every process in its group (stay_in_group); Landlock: writes only
               under a folder of its own, no signal or ptrace outside; processes left running. hacks/proc_read_expected,
               hacks/forkserver_escape, hacks/orphan_new_session, hacks/sibling_sigstop, hacks/judge_sigstop,
               hacks/task_file_write_probe, hacks/forged_verdict_caller_pipe, failures/stdout_flood.
    processes  the forkserver, start and stop of process groups and sessions, a device's turns (candidate code in one
               evaluation at a time, the clock alone), builds stopped while a clock runs, pinning. failures/os_exit,
               failures/segfault_ctypes, failures/infinite_loop (turns, pause, pins: tests/test_evaluator.py).
    caller     the processes of one task's evaluations kept for its next candidate (Session: a judge and the
               reference's worker, a worker per candidate, the evaluation's time bounded), builds in parallel build
               processes (build_all), evaluate_many's queue. failures/infinite_loop, failures/os_exit,
               honest/cpp_build_* (sessions and builds: tests/test_evaluator.py).
    guards     the worker's baselines (prepare_worker); watched attributes and torch's own code, checked after every
               forward (after_forward) and at each audit (audit_worker); the output probed after forward
               (background_probe); global flags, the persisting-L2 limit, the GPU hold. hacks/monkeypatch_*,
               hacks/harness_*, hacks/report_*, hacks/baseline_rewrite_clock, hacks/flag_*, hacks/cuda_persisting_l2,
               hacks/cuda_hold_tell_shortcut, hacks/cuda_side_stream.
Not covered (THREATS.md, "Does not protect against", says each in full): code that forges its own worker's reports
(the judge compares values and owns the bounding clock); host RAM limits on the CPU; services outside the evaluation
that start processes on request; setsid without seccomp, files and signals without Landlock (before Linux 5.13 and
6.12); a watched attribute replaced by another function torch already had; copy-engine work inside the hold's window.
Imports flow one way: evaluator imports this module, never the reverse.
"""
import atexit
import builtins
import contextlib
import ctypes
import errno
import fcntl
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import multiprocessing as mp
import multiprocessing.connection as _mpc
import operator
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_perf = time.perf_counter  # captured before any candidate code runs in this process (as evaluator's are)
_cuda_sync = torch.cuda.synchronize
_Event = getattr(torch._C, "_CudaEventBase", None)
_modes = (torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack)

# ---------------------------------------------------------------------------- verdicts

class Verdict(Exception):
    """Raised anywhere in the judge or a worker to end an evaluation with a status."""

    def __init__(self, status, check, reason):
        super().__init__(f"{status}: {check}: {reason}")
        self.status, self.check, self.reason = status, check, reason


def short(text, lines=25, width=4000):
    """The tail of a long message (compiler output, traceback), each error line first with the two lines after it
    (the source line and the caret); compiler command lines and include chains dropped."""
    rows = [r for r in str(text).splitlines() if r.strip() and not (" -c " in r and " -o " in r)
            and not r.lstrip().startswith(("In file included from", "from "))]
    errors = [i for i, r in enumerate(rows) if re.search(r"\berror\b", r, re.I)][:8]
    first = list(dict.fromkeys(rows[j] for i in errors for j in range(i, min(i + 3, len(rows)))))
    keep = first + ["..."] + rows[-lines:] if errors and len(rows) > lines else rows[-lines:]
    return re.sub(r"/[^\s:]*/(?=[\w.-]+\.(?:cpp|cu|cuh|h|hpp|py)\b)", "", "\n".join(keep))[-width:]  # bare file names


# ---------------------------------------------------------------------------- wire: data only from untrusted processes

# A process that has run, imported or built candidate code (a worker, a build process) is untrusted for the rest of its
# life, and so is every byte it sends: `Connection.recv()` is `pickle.loads`, and an object with a `__reduce__` runs
# code in whoever receives it. Such processes send JSON (send_data); the trusted side reads one bounded message
# (recv_data) and checks it against the shape it expects (fits): exact types only, a `str` subclass never arrives
# (JSON has none). The trusted side's own messages (the caller's and the judge's, to workers and builds) stay pickled.

WIRE_MAX = 4 << 20  # bytes of one message from an untrusted process (a build spec's sources are the largest)
NUMBER_MAX = 2 ** 53  # the largest magnitude of a number on the wire: NaN, infinities and huge ints never reach a clock


class Either:
    """A shape of fits(): any one of these shapes."""

    def __init__(self, *shapes):
        self.shapes = shapes


def fits(value, shape):
    """Does JSON data `value` have `shape`: a type (float takes an int too; None is None), [s] (a list of s),
    (s1, s2, ...) (a list of exactly these), {key: s} (a dict with exactly these keys), {str: s} (a dict of any
    str keys), Either(...)?

    >>> fits([1.5, 2, None, True, 3], (float, float, Either(float, None), bool, int))
    True
    >>> fits(["x", "y"], [int])
    False
    """
    if isinstance(shape, Either):
        return any(fits(value, s) for s in shape.shapes)
    if shape is None:
        return value is None
    if shape is float:
        return type(value) in (int, float)
    if isinstance(shape, type):
        return type(value) is shape
    if isinstance(shape, list):
        return type(value) is list and all(fits(v, shape[0]) for v in value)
    if isinstance(shape, tuple):
        return type(value) is list and len(value) == len(shape) and all(map(fits, value, shape))
    if type(value) is not dict:
        return False
    if list(shape) == [str]:
        return all(type(k) is str and fits(v, shape[str]) for k, v in value.items())
    return value.keys() == shape.keys() and all(fits(value[k], s) for k, s in shape.items())


def send_data(conn, msg):
    """What an untrusted process sends: msg as JSON (tuples arrive as lists), never a pickle."""
    conn.send_bytes(json.dumps(msg).encode())


def _number(kind):
    """json.loads' parser of a number (or NaN, Infinity): its value, or ValueError beyond +-NUMBER_MAX."""
    def parse(text):
        if not abs(x := kind(text)) <= NUMBER_MAX:  # (False for NaN too)
            raise ValueError(f"the number {text[:40]} is not finite or beyond +-2**53")
        return x
    return parse


def recv_data(conn, who):
    """One message from an untrusted process, as JSON data: a non-empty list whose first item is a str, its numbers
    finite and within +-NUMBER_MAX, its strings text (no lone surrogate: it would raise wherever it is encoded).
    Anything else (a pickle, bytes that are not JSON, a message over WIRE_MAX) is Verdict `wire`; EOFError when it
    has ended."""
    try:
        raw = conn.recv_bytes(WIRE_MAX)
    except OSError as e:  # (a message over the bound; a connection reset ends like EOF)
        if isinstance(e, ConnectionResetError):
            raise EOFError from None
        raise Verdict("rejected", "wire", f"the {who} process sent a message over {WIRE_MAX} bytes") from None
    try:  # (UnicodeDecodeError and UnicodeEncodeError are ValueErrors)
        msg = json.loads(raw, parse_float=_number(float), parse_int=_number(int), parse_constant=_number(float))
        json.dumps(msg, ensure_ascii=False).encode()
    except (ValueError, RecursionError) as e:
        raise Verdict("rejected", "wire", f"the {who} process sent a message that is not data (plain JSON): "
                      f"{str(e)[:100]!r}: {bytes(raw[:40])!r}...") from None
    if type(msg) is not list or not msg or type(msg[0]) is not str:
        raise Verdict("rejected", "wire", f"the {who} process sent {type(msg).__name__} data, not a message")
    return msg


FAILURES = ("compile_error", "runtime_error", "wrong_output", "timeout", "rejected")  # what a worker may report


def failure(msg, who):
    """The Verdict a worker's ["fail", status, check, reason] reports (msg: the three after "fail"): a failing status
    only (never `ok`), a check that is a plain name and never `reference` (the reference's failures are the judge's
    to name)."""
    if not (fits(msg, (str, str, str)) and msg[0] in FAILURES and re.fullmatch(r"[a-z_]{1,40}", msg[1])
            and msg[1] != "reference"):
        return Verdict("rejected", "wire", f"the {who} process sent a malformed failure: {str(msg)[:200]}")
    return Verdict(msg[0], msg[1], msg[2][:20000])


# Candidate flags go into build.ninja, which ninja runs through /bin/sh -c: each flag is one shell word of harmless
# characters. Each is then one of the families a kernel author needs (FLAG_RULES, by argument of load_inline), checked
# word by word as the tools see them: the parts of a wrapper (-Wl,a,b  -Xcompiler=a,b  -Xptxas a) against the rules of
# the tool they reach. No allowed word names a plugin, a wrapper, a spec or response file, another compiler or
# linker, an output file, or a folder outside the build's own (-I of a relative path without ..).
FLAG_CHARS = re.compile(r"[A-Za-z0-9_=+,.:/@%-]+")
_F_DENIED = r"plugin|dump|opt-info|profile|auto-profile|stack-usage|callgraph-info|diagnostics-format|save-|use-ld|" \
            r"ld-path|coverage|test-coverage|module|deps|compare-debug"  # -f options that load, write or run files
_HOST = (r"-O[0-3sgz]?|-Ofast|-[DU][A-Za-z_]\w*(=[\w.+:-]*)?|-std=[\w+]+|-g[0-3]?|-w|-pthread|-m[\w=.+-]+"
         rf"|-W(?![lap]\b)[\w=+-]*|-I(?!/)(?!.*\.\.)[\w.+/-]+|-f(?!{_F_DENIED})[A-Za-z][\w+.-]*(=[\w.+:-]*)?")
_NVCC = (_HOST + r"|--?use[_-]fast[_-]math|-lineinfo|--generate-line-info|--expt-relaxed-constexpr|--expt-extended"
         r"-lambda|--extended-lambda|-res-usage|--resource-usage|-G|--?maxrregcount=\d+|--?(ftz|prec-div|prec-sqrt|fmad)"
         r"=(true|false)|--?default-stream=\w+|--?threads=\d+|--?diag[-_](suppress|warning|error)=\w+|--std=[\w+]+")
_PTXAS = r"-v|--verbose|-O[0-3]|--?warn-on-[\w-]+|--?(dlcm|dscm|def-load-cache|def-store-cache)=\w+|--?maxrregcount=\d+"
_GPU = r"((arch|code)=)?(compute|sm|lto)_\w+|native|all|all-major"
_LINKER = r"-O[0-3]|--(no-)?as-needed|--gc-sections|-s|--strip-all|-z|now|relro|noexecstack|-rpath(=/[\w.+/-]+)?|/[\w.+/-]+"
_LIBS = r"cublas|cublasLt|cudart|cuda|cufft|curand|cusparse|cusolver|cudnn|nvrtc|nvToolsExt|c10|c10_cuda|torch" \
        r"|torch_cpu|torch_cuda|torch_python|m|dl|rt|pthread|gomp|stdc\+\+"
_NVCC_WRAPPERS = {"-Xcompiler": _HOST, "--compiler-options": _HOST, "-Xptxas": _PTXAS, "--ptxas-options": _PTXAS,
                  "-gencode": _GPU, "--generate-code": _GPU, "-arch": _GPU, "--gpu-architecture": _GPU,
                  "-code": _GPU, "--gpu-code": _GPU}
FLAG_RULES = {  # argument: (the words a flag may be, {a wrapper: the words its parts may be})
    "extra_cflags": (_HOST, {}), "extra_sycl_cflags": (_HOST, {}), "extra_cuda_cflags": (_NVCC, _NVCC_WRAPPERS),
    "extra_ldflags": (rf"-l({_LIBS})|-pthread|-fopenmp|-O[0-3]?", {"-Wl": _LINKER, "-Xlinker": _LINKER}),
    "extra_include_paths": (r"(?!/)(?!.*\.\.)[\w.+/-]+", {})}


def refused_flag(key, flags):
    """The first word of one load_inline argument's flags that FLAG_RULES does not allow, as (flag, the word the tool
    sees), or None. A wrapper alone (-Xcompiler -O3) takes the next flag as its parts."""
    words, wrappers = FLAG_RULES[key]
    flags = list(flags)
    while flags:
        flag = flags.pop(0)
        if type(flag) is not str or not FLAG_CHARS.fullmatch(flag):
            return flag, flag
        head, _, parts = flag.partition("," if flag.startswith("-Wl,") else "=")
        if head not in wrappers:
            if not re.fullmatch(words, flag):
                return flag, flag
            continue
        parts = parts or (flags.pop(0) if flags and type(flags[0]) is str else "")
        bad = [p for p in parts.split(",") if not re.fullmatch(wrappers[head], p)]
        if bad:
            return flag, bad[0]
    return None


def check_spec(spec):
    """A build spec (load_inline / load arguments) as data the build may use, or Verdict: `wire` for a malformed spec,
    `build_flags` (one line naming it) for a flag, name or path that would reach a shell or load code into the
    compiler."""
    if not (fits(spec, {"kind": str, "args": {str: Either(str, bool, int, None, [str], [(str, str)], {str: str})}})
            and spec["kind"] in ("load_inline", "load")):
        raise Verdict("rejected", "wire", f"malformed build request: {str(spec)[:200]}")
    args = spec["args"]
    if not (type(args.get("name")) is str and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,100}", args["name"])):
        raise Verdict("compile_error", "build_flags", f"extension name {str(args.get('name'))[:80]!r}: use letters, "
                      "digits and underscores")
    for key in FLAG_RULES:
        flags = args.get(key) or []
        bad = refused_flag(key, [flags] if type(flags) is str else flags)
        if bad:
            raise Verdict("compile_error", "build_flags", f"{key} {str(bad[0])[:80]!r} is not allowed ({str(bad[1])[:40]!r}"
                          "): a flag is one word of letters, digits and _=+,.:/@%- of the families a kernel needs "
                          "(fences.FLAG_RULES), naming no plugin, tool, output file or folder outside the build")
    for name, _ in args.get("files") or []:
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}", name):
            raise Verdict("compile_error", "build_flags", f"source file name {name[:80]!r} is not allowed")
    return spec


# ---------------------------------------------------------------------------- memory: one evaluation's bytes, a plan

GIB = 1 << 30


class MemoryRefusal(ValueError):
    """A task that cannot fit its device at all, with the sizes in one line."""


@dataclass
class MemoryPlan:
    inputs: int           # bytes of one input set (get_inputs() on the meta device)
    outputs: int          # bytes of one call's outputs
    params: int           # bytes of the reference's parameters and buffers
    peak: int             # bytes forward allocates at its peak (outputs and activations)
    sets: int = 2         # input sets resident in each side's shared buffers (timed rounds alternate them)
    oracle: str = "device"  # where the float64 oracle runs and the correctness sets' outputs are compared
    rounds: str = "device"  # where the timed rounds' answers are kept and compared: device | host
    in_flight: int = 2    # evaluations of this task that may share the device
    need: int = 0         # bytes this plan needs per evaluation on the device
    budget: int = 0       # bytes of the device it was planned for

    def to_dict(self):
        return asdict(self)


class _PeakBytes(TorchDispatchMode):
    """Counts the bytes of the tensors ops create while it is active, and the peak of those still alive."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self.seen = weakref.WeakSet()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in (out if isinstance(out, (tuple, list)) else [out]):
            if isinstance(t, torch.Tensor) and t._base is None and t not in self.seen:  # views hold their base
                self.seen.add(t)
                n = t.untyped_storage().nbytes()
                self.live += n
                weakref.finalize(t, self._freed, n)
        self.peak = max(self.peak, self.live)
        return out

    def _freed(self, n):
        self.live -= n


def footprint(ref_src):
    """(input bytes, output bytes, parameter bytes, peak bytes forward allocates: outputs and activations) of one
    call of the task, found on the meta device: nothing is allocated, a KernelBench level-1 task takes ~10 ms.
    Where the meta device cannot run forward (an op without a meta kernel), the outputs count as the inputs' size and
    the peak as twice that."""
    mod = types.ModuleType("footprint")
    exec(compile(ref_src, "<task>", "exec"), mod.__dict__)
    with torch.device("meta"):
        xs = mod.get_inputs()
        ins = sum(x.nbytes for x in xs if isinstance(x, torch.Tensor))
        try:
            model = mod.Model(*mod.get_init_inputs())
            params = sum(t.nbytes for t in (*model.parameters(), *model.buffers()))
            with torch.no_grad(), _PeakBytes() as peak:
                out = model(*xs)
            outs = sum(o.nbytes for o in (out if isinstance(out, (tuple, list)) else [out])
                       if isinstance(o, torch.Tensor))
            peak = max(peak.peak, outs)
        except Exception:  # no meta kernel, data-dependent shapes: a guess
            params, outs, peak = 0, ins, 2 * ins
    return ins, outs, params, peak


CONTEXT_BYTES = 3 * 600 << 20  # the CUDA contexts, L2-flush buffers and allocator slack of a judge and two workers


def evaluation_bytes(ins, outs, params, peak, sets, oracle, cuda=True):
    """Bytes one evaluation holds on its device at its peak, with `sets` input sets per side and the oracle on the
    device or the host: both sides' shared buffers (sets x inputs + outputs each); the judge's inputs of a call (a
    varied set drawn beside its draw: 2.25 x) or the reference it checks (inputs, forward's peak, a kept output),
    its parameters and, when the comparisons are on the device, the kept answers of both sides and the candidate's;
    each worker's forward (its peak) and parameters, and on CUDA one probe's copy of the outputs (freed after its
    call; the sides' calls never overlap); on the device, the oracle's float64 inputs, parameters and output (the
    comparisons widen a chunk at a time; on the CPU all of it is host memory)."""
    shared = 2 * (sets * ins + outs)
    judge = max(2.25 * ins, ins + peak + outs) + params + (3 * outs if oracle == "device" else 0)
    workers = 2 * (peak + params) + outs * cuda
    oracle_bytes = 2 * (ins + params + outs) if oracle == "device" else 0
    return int(shared + judge + workers + oracle_bytes) + CONTEXT_BYTES * cuda


def device_budget(device):
    """Bytes an evaluation may plan for: on CUDA the device's memory less 6% (the driver's own, the allocator's
    rounding) and what this process's allocator holds there (rl.py's policy), read without creating a context; on
    the CPU what /proc/meminfo calls available."""
    if device.startswith("cuda"):
        if not torch.cuda.is_available():  # nothing to size against: evaluate says so in its own words
            return 1 << 62
        index = torch.device(device).index or 0
        held = torch.cuda.memory_reserved(index) if torch.cuda.is_initialized() else 0
        return int(torch.cuda.get_device_properties(index).total_memory * 0.94) - held
    with open("/proc/meminfo") as f:
        info = dict(line.split(":", 1) for line in f)
    return int(info["MemAvailable"].split()[0]) * 1024


def memory_plan(ref_src, device, in_flight=2, budget=None):
    """The first plan that fits `budget` bytes (default: device_budget), from the cheapest in time to the leanest:
    two input sets per side and the oracle on the device, `in_flight` evaluations at once; then one evaluation at a
    time; then one input set per side; then (CUDA) the oracle and the comparisons on the host. Raises MemoryRefusal,
    one line with the sizes, when even the leanest does not fit with forward allocating no more than its outputs.

    >>> memory_plan(relu_src, "cuda", budget=74 << 30)   # KernelBench 19_ReLU: 6 GiB in, 6 GiB out (102 on the device)
    MemoryPlan(inputs=6442450944, outputs=6442450944, params=0, peak=6442450944, sets=1, oracle='host', ...)
    """
    budget = device_budget(device) if budget is None else budget
    try:
        ins, outs, params, peak = footprint(ref_src)
    except Exception:  # a broken task file: the judge reports it (check `reference`); no plan can know its size
        return MemoryPlan(0, 0, 0, 0, 2, "device", "device", in_flight, 0, budget)
    cuda = device.startswith("cuda")
    tries = [(2, "device", in_flight), (2, "device", 1), (1, "device", 1)] + [(1, "host", 1)] * cuda
    for sets, oracle, k in dict.fromkeys(tries):
        need = evaluation_bytes(ins, outs, params, peak, sets, oracle, cuda)
        if k * need <= budget:
            # with the oracle on the host, the timed rounds still compare on the device (fast) if the two kept answers
            # fit there too (compared in chunks: no temporaries)
            rounds = "device" if oracle == "device" or need + 2 * outs <= budget else "host"
            need += 2 * outs if oracle == "host" and rounds == "device" else 0
            return MemoryPlan(ins, outs, params, peak, sets, oracle, rounds, k, need, budget)
    # the meta device's peak counts temporaries some ops' decompositions make there and the device kernels do not
    # (InstanceNorm: 3x its output): refused is only what cannot fit with forward allocating its outputs alone
    least = evaluation_bytes(ins, outs, params, outs, 1, oracle, cuda)
    if least <= budget:
        return MemoryPlan(ins, outs, params, peak, 1, oracle, oracle, 1, least, budget)
    gb = lambda n: f"{n / GIB:.1f} GiB"  # noqa: E731
    raise MemoryRefusal(f"memory: the task needs {gb(least)} on {device} for one evaluation at its leanest (inputs "
                        f"{gb(ins)}, outputs {gb(outs)}, forward's peak {gb(peak)}, parameters {gb(params)}), "
                        f"{gb(budget)} is free")


# ---------------------------------------------------------------------------- shared: buffers alone in their segments

SEGMENT_ALIGN = 2 << 20   # the caching allocator rounds large segments to 2 MB ...
MIN_LARGE_ALLOC = 10 << 20  # ... once a request is at least 10 MB (smaller ones share 2 or 20 MB segments)


def arena_bytes(nbytes):
    """A size the CUDA caching allocator gives a segment of exactly that size: whole 2 MB, at least 10 MB."""
    return max(MIN_LARGE_ALLOC, -(-nbytes // SEGMENT_ALIGN) * SEGMENT_ALIGN)


_POOLS = []


def shared_arena(nbytes, device):
    """One uint8 tensor that holds a side's shared buffers (views over it), in a memory pool of its own and filling
    its allocator segment: the IPC handle the worker gets maps this arena and nothing else of the judge's (the
    expected outputs, the oracle, the other side's buffers live in other segments). On the CPU: None (the buffers
    there are an unnamed memfd holding nothing else)."""
    if not device.startswith("cuda"):
        return None
    size, dev = arena_bytes(nbytes), torch.device(device)
    pool = torch.cuda.MemPool() if hasattr(torch.cuda, "MemPool") else None
    if pool is not None:
        with torch.cuda.use_mem_pool(pool, device=dev.index if dev.index is not None else torch.cuda.current_device()):
            arena = torch.empty(size, dtype=torch.uint8, device=device)
    else:
        arena = torch.empty(size, dtype=torch.uint8, device=device)
    _POOLS.append(pool)  # kept for the process's life, as the session's buffers are
    if not fills_segment(arena, pool):
        raise RuntimeError("harness: a shared buffer does not fill its allocator segment (expandable_segments or "
                           "roundup_power2_divisions in PYTORCH_CUDA_ALLOC_CONF?): the candidate's IPC handle would "
                           "map the judge's memory")
    return arena


def fills_segment(t, pool=None):
    """Does tensor t's storage span exactly one allocator segment (per torch.cuda.memory_snapshot: every pool's
    segments, or else those of the pool t came from)?"""
    p, n = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
    for snapshot in (torch.cuda.memory_snapshot, lambda: torch.cuda.memory_snapshot(pool.id) if pool else []):
        for seg in snapshot():
            if seg["address"] <= p < seg["address"] + seg["total_size"]:
                return seg["address"] == p and seg["total_size"] == n
    return False


def side_buffers(like, spec, device, sets=2):
    """One side's buffers: `sets` lists of forward arguments shaped like `like` and one output buffer per (shape,
    dtype) of spec, views over one arena that holds nothing else. Returns (stage, recv, what the worker's `buffers`
    takes, the memfd to send after it or None). On CPU the arena is an unnamed memfd (no name in /dev/shm, no
    resource_sharer socket: only the processes it is sent to can map it); on CUDA a device tensor alone in its
    allocator segment (shared_arena), which travels as an IPC handle mapping that segment."""
    metas = [(tuple(x.shape), tuple(x.stride()), x.dtype) for x in like if isinstance(x, torch.Tensor)] * sets
    metas += [(tuple(s), tuple(torch.empty(s, device="meta").stride()), d) for s, d in spec]
    template = [None if isinstance(x, torch.Tensor) else x for x in like]
    layout, off = [], 0
    for sh, st, dt in metas:
        layout.append((off, sh, st, dt))
        off += -(-nbytes(sh, st, dt) // 64) * 64  # 64-byte aligned
    if device.startswith("cuda"):
        arena = shared_arena(off, device)
        return (*unpack(template, views(arena, layout), sets), (template, (arena, layout), sets), None)
    import mmap
    fd = os.memfd_create("cudal1", os.MFD_CLOEXEC)
    os.ftruncate(fd, max(1, off))
    tensors = views(mmap.mmap(fd, max(1, off)), layout)
    return (*unpack(template, tensors, sets), (template, layout, sets), fd)


def send_buffers(w, payload, fd):
    from multiprocessing.reduction import send_handle
    w.send("buffers", *payload)
    if fd is not None:  # kept open: the session's next candidate gets the same memfd
        send_handle(w.conn, fd, 0)
    w.reply()


def receive_buffers(w, template, payload, sets):
    """A worker's buffers from the judge (side_buffers): `sets` lists of forward arguments and one output
    buffer per output, in memory shared with the judge alone (CUDA: the IPC handle of an arena alone in its segment;
    CPU: an unnamed memfd sent over this worker's own socket, so no file or socket of the evaluation names it)."""
    if w.cuda:
        tensors = views(*payload)
    else:
        import mmap
        from multiprocessing.reduction import recv_handle
        fd = recv_handle(w.conn)
        mem = mmap.mmap(fd, max(1, arena_size(payload)))
        os.close(fd)
        tensors = views(mem, payload)
    stage, recv = unpack(template, tensors, sets)
    w._own(stage=stage, recv=recv,
           in_ranges=[(t.data_ptr(), t.nbytes) for args in stage for t in args if isinstance(t, torch.Tensor)])


def nbytes(shape, stride, dtype):
    """Bytes a strided tensor spans in its storage."""
    return 0 if 0 in shape else (1 + sum((n - 1) * s for n, s in zip(shape, stride))) * dtype.itemsize


def arena_size(layout):
    return max((off + nbytes(sh, st, dt) for off, sh, st, dt in layout), default=0)


def views(mem, layout):
    """Tensors over one shared mapping (a uint8 device tensor, or host memory), placed as layout says: [(byte
    offset, shape, stride, dtype)]."""
    base = mem if isinstance(mem, torch.Tensor) else torch.frombuffer(mem, dtype=torch.uint8)
    return [base[off:off + nbytes(sh, st, dt)].view(dt).as_strided(sh, st) if nbytes(sh, st, dt) else
            torch.empty(sh, dtype=dt, device=base.device) for off, sh, st, dt in layout]


def unpack(template, tensors, sets=2):
    """(`sets` lists of forward arguments, output buffers) from the buffers' template: None marks a tensor's place."""
    it = iter(tensors)
    stage = [[next(it) if x is None else x for x in template] for _ in range(sets)]
    return stage, list(it)


# ---------------------------------------------------------------------------- tests: the charge's evidence

Z = 2.5  # a bound or a cap of the charge bites on evidence this many standard errors strong (by chance ~1 in 160)


def median_bounds(xs, z=Z):
    """(lower, upper) confidence bounds on the median of xs, whatever their distribution (the sign test's order
    statistics): the k-th smallest and the k-th largest, k = (n - z sqrt(n)) / 2, at least the smallest and largest
    (z < 0 turns them round: the lower bound is then a value most of xs lie under).

    >>> median_bounds(range(100))          # k = (100 - 30) / 2 = 35
    (35, 64)
    """
    xs = sorted(xs)
    k = min(max(0, math.floor((len(xs) - z * math.sqrt(len(xs))) / 2)), len(xs) - 1)
    return xs[k], xs[-1 - k]


def parts(x, n):
    """A timed call's n clocks as parts: the precise clock, then what each wider clock saw beyond it (the host clock:
    all of its CPU time, beside the GPU's)."""
    return [x[c] - x[0] if 0 < c < 3 else x[c] for c in range(n)]


def clean_cap(paired, clean, noise):
    """The reference's parts (parts()) per paired round, each clock's capped where its paired rounds ran slower than
    its clean rounds (no candidate process left) by more than the noise, by a test: the paired median's lower bound
    above the clean median's upper bound plus noise[clock] x the clean level; the cap is the clean level plus that
    noise. GPU work the candidate leaves running while the reference is timed (a kernel that outlives SIGSTOP, a
    second CUDA context) slows the paired rounds only; a host busier in one phase than the other rarely passes.
    Wider clocks are capped only where the precise one is: alone the host is quieter, and identical code would pay
    for the reference's smaller overheads.

    >>> clean_cap([[2.0]] * 20, [[1.0]] * 10, [0.02])[0]        # twice the clean level in every round: capped
    [1.02]
    >>> clean_cap([[1.0], [2.0]] * 10, [[1.0]] * 10, [0.02])[1]  # slower in half the rounds: no evidence
    [2.0]
    """
    caps = [math.inf] * len(paired[0])
    for c in range(len(caps) if clean else 0):
        ours, alone = [x[c] for x in paired], [x[c] for x in clean]
        level = statistics.median(alone)
        if median_bounds(ours)[0] > median_bounds(alone)[1] + noise[c] * level:
            caps[c] = level * (1 + noise[c])
        elif c == 0:  # the precise clock ran as alone: no work was left on the GPU
            break
    return [[min(v, cap) for v, cap in zip(x, caps)] for x in paired]


def clocks_read(ref, cand, clean):
    """How many clocks each timed call has (3; 4 where every reference call has a host clock); Verdict `wire` for the
    candidate if any value is not a finite number or a call of the candidate's lacks a clock in use: max, min and
    sorting let one NaN switch a bound off, and a missing host clock would end its bound."""
    n = 4 if all(len(x) > 3 and x[3] is not None for x in ref) else 3
    for x in ref + cand + clean:
        if len(x) < n or not all(type(v) in (int, float) and math.isfinite(v) for v in x[:n]):
            raise Verdict("rejected", "wire", f"a timed call's clocks read {str(x)[:80]}: not finite numbers")
    return n


# ---------------------------------------------------------------------------- numerics: flags read inside the call

def numeric_flags():
    """The settings that change fp32 arithmetic, read in microseconds: right after every forward returns, before the
    harness runs anything else (a forward that leaves TF32 on, for a thread to turn off later, is seen)."""
    b = torch.backends
    return (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, torch.get_float32_matmul_precision(),
            b.cuda.matmul.allow_fp16_reduced_precision_reduction, b.cuda.matmul.allow_bf16_reduced_precision_reduction,
            torch.get_default_dtype())


# torch._C's setters of the global settings (global_flags) that torch's Python calls: torch.backends' attributes and
# context managers, set_float32_matmul_precision, set_default_dtype, use_deterministic_algorithms, set_num_threads
SETTERS = ("_set_cublas_allow_tf32", "_set_cudnn_allow_tf32", "_set_float32_matmul_precision", "_set_default_dtype",
           "_set_cublas_allow_fp16_reduced_precision_reduction", "_set_cublas_allow_bf16_reduced_precision_reduction",
           "_set_cublas_allow_fp16_accumulation", "_set_cudnn_benchmark", "_set_cudnn_deterministic",
           "_set_cudnn_enabled", "_set_deterministic_algorithms", "_set_mkldnn_enabled", "_set_onednn_allow_tf32",
           "_set_fp32_precision_setter", "_set_sdp_use_flash", "_set_sdp_use_mem_efficient", "_set_sdp_use_math",
           "_set_sdp_use_cudnn", "set_num_threads")


class FlagWatch:
    """The setters (SETTERS) wrapped before any candidate code: a call that leaves a global setting other than its
    baseline is kept (`changed`), even if a later call puts it back. So a forward that turns TF32 on and off again
    inside itself, or a thread that does while forward runs, is `backend_flags` (check_flags). Not seen: native code
    that sets a flag through ATen, and Python that calls a wrapped setter's original (gc reaches it)."""

    def __init__(self):
        self.baseline, self.changed = None, None
        for name in SETTERS:
            for owner in (torch._C, torch) if name == "set_num_threads" else (torch._C,):
                real = getattr(owner, name, None)
                if real is not None:
                    setattr(owner, name, self._wrap(name, real))

    def _wrap(self, name, real):
        def setter(*args, **kwargs):
            out = real(*args, **kwargs)
            if self.baseline is not None and self.changed is None and global_flags() != self.baseline:
                self.changed = f"{name}{args!r:.60}"
            return out
        return setter


class FlagReader(TorchDispatchMode):
    """Every global setting of ATen's read as each op of one forward is dispatched, on its thread (global_flags):
    the first op that runs with a setting other than the baseline is kept (`seen`; one that cannot be read at that
    moment is not a change). This sees what the setter watch cannot: native code that sets ATen's flag before an op
    and puts it back after it, and a setter's original reached through gc. Ops reach a mode from C++ as well as
    Python; kernels launched without an op read none. On one untimed call after the timed rounds (Worker.watch):
    a mode costs ~10 us an op, and code that looks for a mode can tell this call apart."""

    def __init__(self, baseline):
        super().__init__()
        self.baseline, self.seen = baseline, None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.seen is None:
            now = global_flags(limits=False)
            moved = flags_moved(self.baseline, {k: v for k, v in now.items() if not v.startswith("n/a")})
            if moved:
                self.seen = f"{func} ran with {'; '.join(moved)[:120]}"
        return func(*args, **(kwargs or {}))


def check_flags(w):
    """After every forward: `backend_flags` if a setting of fp32 arithmetic differs now, or any global setting was
    set away from its baseline since the worker's harness started (w.flag_watch), even if it was set back."""
    if numeric_flags() != w.numerics:
        raise Verdict("rejected", "backend_flags", "forward returned with a global setting of fp32 arithmetic "
                      "changed (TF32, matmul precision, reduced-precision reductions, default dtype)")
    if w.flag_watch.changed:
        raise Verdict("rejected", "backend_flags", f"a global setting was changed ({w.flag_watch.changed}), even if "
                      "it was set back: settings are the harness's, the same for both sides in every call")


# ---------------------------------------------------------------------------- host: CPU time the hold would hide

def blocking_sync(index):
    """Make this process's CUDA context wait for the GPU asleep rather than spinning (CU_CTX_SCHED_BLOCKING_SYNC),
    before torch creates it: a forward that synchronises inside then spends no CPU time waiting, so the host clock
    (CPU time, charge) counts its work alone. False where the driver refuses (the context keeps spinning: such a
    forward is charged the wait on the host clock)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        set_flags = getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None) or cuda.cuDevicePrimaryCtxSetFlags
        dev = ctypes.c_int()
        return (cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), index) == 0
                and set_flags(dev, 0x04) == 0)
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------------------- builds: served outside the sandbox

# A candidate may call load_inline / load anywhere (module level, __init__, the first forward). Its worker cannot run
# ninja (the sandbox denies setpgid), so the harness answers those calls itself: the call's arguments become a build
# spec (data, check_spec), a build process outside the worker's sandbox compiles it into a folder named by the spec's
# hash under its owner's folder (owner_of: the source that asked), and the worker loads the library from there. A
# build process may write its owner's folder alone: what one candidate's build leaves in the cache (a library, a
# `built` mark) only that same source ever reads. torch/extension.h's precompiled header, which builds read, is made
# for the harness' own flag sets alone (PCH_CFLAGS) by a build process of its own (make_pch): no argument, path or
# file name of a candidate's reaches any tool outside a build process, and none asks for a header.


def build_root():
    return Path(os.environ.get("CUDAL1_BUILD_DIR", Path.home() / ".cache" / "cudal1" / "builds"))


def owner_of(src):
    """The build cache's folder name for the builds a source asks for (its hash)."""
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def spec_dir(spec, device, owner):
    """The build folder of one spec (and torch version, device kind) asked for by source `owner`: a repeated build of
    the same source is a cache hit."""
    text = json.dumps(spec, sort_keys=True)
    key = hashlib.sha256(f"{torch.__version__}|{device.split(':')[0]}|{text}".encode()).hexdigest()[:20]
    return build_root() / owner / key


def _build_spec(kind, real, *args, **kwargs):
    """The spec of one load_inline / load call: every argument by name as plain data (a Path as its text, a tuple as a
    list), source files read into the spec; check_spec's refusal for a flag that would reach a shell."""
    bound = inspect.signature(real).bind(*args, **kwargs).arguments
    bound.pop("build_directory", None), bound.pop("verbose", None)
    if bound.get("is_standalone"):
        raise RuntimeError("cudal1: load(is_standalone=True) builds an executable; the evaluator serves libraries only")
    if kind == "load":
        paths = [bound.pop("sources")] if isinstance(bound.get("sources"), (str, os.PathLike)) else \
            list(bound.pop("sources"))
        bound["files"] = [(Path(p).name, Path(p).read_text()) for p in paths]
    return check_spec(json.loads(json.dumps({"kind": kind, "args": bound}, default=str)))


def _library(spec, folder):
    """Load a built library as torch does after a build: a Python module, or torch.ops registrations (its path)."""
    name, python = spec["args"]["name"], spec["args"].get("is_python_module", True)
    path = str(Path(folder) / f"{name}.so")
    if not python:
        torch.ops.load_library(path)
        return path
    found = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(found)
    found.loader.exec_module(mod)
    return mod


def compile_spec(spec, folder):
    """Build one spec into folder without loading it (in a build process). Raises RuntimeError like torch does.
    The folder is held under an flock while it builds: a build of the same spec beside it waits, then finds it built
    (or failed). torch's own lock in the folder (a file, FileBaton) outlives a build that was killed (a cut run, a
    build's time limit), and torch waits for it to go away; holding the flock, any such file is a dead build's and
    is removed (bench/RESULTS.md, "what did the walls' docstrings say was measured")."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "building", "w") as mine:
        fcntl.flock(mine, fcntl.LOCK_EX)  # released by the kernel when its holder dies
        if (folder / "failed").exists():
            raise RuntimeError((folder / "failed").read_text())
        if not (folder / "built").exists():
            (folder / "lock").unlink(missing_ok=True)
            _compile_unlocked(spec, folder)


def _compile_unlocked(spec, folder):
    from torch.utils import cpp_extension as ce
    args = dict(spec["args"])
    if spec["kind"] == "load":
        (folder / "src").mkdir(exist_ok=True)
        args["sources"] = [str(folder / "src" / n) for n, _ in args.pop("files")]
        for path, (_, text) in zip(args["sources"], spec["args"]["files"]):
            Path(path).write_text(text)
    ce._import_module_from_library = lambda *a: None  # compile only: this process never runs the candidate's code
    ninja = getattr(ce._run_ninja_build, "__wrapped__", ce._run_ninja_build)
    ce._run_ninja_build = lambda directory, *a, **k: (_use_pch(Path(directory)), ninja(directory, *a, **k))
    ce._run_ninja_build.__wrapped__ = ninja
    try:
        fn = ce.load if spec["kind"] == "load" else ce.load_inline
        getattr(fn, "__wrapped__", fn)(build_directory=str(folder), **args)  # torch's own, not serve_builds
    except Exception as e:  # remembered: the same spec asked again (by its worker, after a prebuild) fails at once
        (folder / "failed").write_text(f"Error building extension '{spec['args']['name']}': {short(e)}")
        raise
    (folder / "built").write_text(json.dumps(spec["args"]["name"]))


def _use_pch(folder):
    """Before ninja runs in a build folder: torch/extension.h (load_inline's main.cpp's first line) precompiled once
    per set of C++ flags the harness fixes (PCH_CFLAGS), in the build cache's pch/, put first on main.cpp's include
    path, where g++ takes the .gch (one it cannot use, it ignores): main.cpp's compile more than halves. The header
    is copied beside it: g++ looks for a second #include of it in the .gch's folder. A build never writes pch/: with
    other flags, or none made yet, it builds without; while make_pch compiles its set's (it holds the lock), main.cpp
    waits for it (flock) and nvcc compiles the CUDA side."""
    ninja = folder / "build.ninja"
    text = ninja.read_text() if ninja.exists() else ""
    cflags, cxx = (re.search(rf"^{k} = (.*)$", text, re.M) for k in ("cflags", "cxx"))
    if not (cflags and cxx):
        return
    pch = _pch_dir(cxx.group(1), cflags.group(1))[0]
    gch, lock_path = pch / "torch" / "extension.h.gch", pch / "lock"
    if not gch.exists():
        try:
            with open(lock_path) as lock:  # (read-only: a build cannot write pch/)
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return  # none, and none being made
        except OSError as e:  # make_pch is compiling it: main.cpp's compiler waits for it
            if isinstance(e, FileNotFoundError) or not shutil.which("flock"):
                return
            text = text.replace(cxx.group(0), f"cxx = flock -s {shlex.quote(str(lock_path))} {cxx.group(1)}", 1)
    text = text.replace(cflags.group(0), f"cflags = -I{shlex.quote(str(pch))} {cflags.group(1)}", 1)
    ninja.write_text(text)


def _pch_dir(cxx, cflags):
    """(The build cache's folder for the .gch of this compiler and these flags, the flags less the extension's
    name, which every build has its own of, and with single spaces: extra_cflags=[""] is the set of none.)"""
    flags = " ".join(re.sub(r"-DTORCH_EXTENSION_NAME=\S+", "", cflags).split())
    return build_root() / "pch" / hashlib.sha256(f"{cxx}|{flags}".encode()).hexdigest()[:16], flags


PCH_CFLAGS = ([], ["-O3"])  # the extra_cflags of the flag sets whose builds share a precompiled torch/extension.h:
# none (load_inline's default, and a CUDA build's host side: made first on CUDA), and -O3 (most C++ kernels: made
# first on the CPU)
PCH_JOB = "precompiled header"  # build_all's key for make_pch's build process (no source is this text)


class _Written(Exception):
    """_torch_cflags' stop: torch has written build.ninja, and ninja is not to run."""


def _written(*args, **kwargs):
    raise _Written


def _torch_cflags(extra_cflags, cuda):
    """(cxx, cflags) as torch writes them into a build.ninja for load_inline with these extra_cflags: read from the
    file torch writes, its build stopped before ninja runs."""
    from torch.utils import cpp_extension as ce
    folder, real = tempfile.mkdtemp(prefix="cudal1-pch-"), ce._run_ninja_build
    ce._run_ninja_build = _written
    try:
        with contextlib.suppress(_Written):
            getattr(ce.load_inline, "__wrapped__", ce.load_inline)(
                "cudal1_pch", "", extra_cflags=extra_cflags, build_directory=folder, with_cuda=cuda)
        text = (Path(folder) / "build.ninja").read_text()
    finally:
        ce._run_ninja_build = real
        shutil.rmtree(folder, ignore_errors=True)
    return tuple(re.search(rf"^{k} = (.*)$", text, re.M).group(1) for k in ("cxx", "cflags"))


def make_pch(device):
    """torch/extension.h precompiled for each flag set of PCH_CFLAGS (as torch writes them for this device's kind),
    one after another, each under its folder's lock (a build of that set waits for it, _use_pch; another make_pch
    waits, then finds it made), written aside and renamed into place. Run in a build process of its own (pch_main):
    its compiler's arguments are the harness' and torch's alone, its working directory a temp folder of its own."""
    from torch.utils.cpp_extension import include_paths
    header = Path(include_paths()[0]) / "torch" / "extension.h"
    cuda = device.startswith("cuda")
    for extra in PCH_CFLAGS if cuda else PCH_CFLAGS[::-1]:  # the set most builds want first
        cxx, cflags = _torch_cflags(extra, cuda)
        pch, flags = _pch_dir(cxx, cflags)
        gch = pch / "torch" / "extension.h.gch"
        gch.parent.mkdir(parents=True, exist_ok=True)
        with open(pch / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if gch.exists():
                continue
            for left in gch.parent.glob("extension.h.[0-9]*"):  # a killed make_pch's parts
                left.unlink()
            part = gch.with_suffix(f".{os.getpid()}.h")
            shutil.copy2(header, part)  # its times too: #pragma once takes it for the header it is
            part.rename(gch.with_suffix(""))
            part = gch.with_suffix(f".{os.getpid()}")
            made = subprocess.run([*shlex.split(cxx), "-x", "c++-header", *shlex.split(flags), str(header), "-o",
                                   str(part)], capture_output=True, cwd=tempfile.gettempdir())
            if made.returncode == 0 and part.exists():
                part.rename(gch)
            else:
                part.unlink(missing_ok=True)


def pch_main(conn, device, logdir, role, nice=0, owner="pch"):
    """make_pch's build process: confined as a build (its folder of the build cache is pch/), then one message from
    the caller, ("make_pch", None, env, "pch"), and the answer ["ok", null]."""
    confine_worker(logdir, role, nice, owner)
    os.environ.update(conn.recv()[2])
    make_pch(device)
    send_data(conn, ["ok", None])


def serve_builds(worker, local):
    """Answer load_inline / load in this process (before any candidate code): local (a build process) compiles here,
    else the worker asks the judge for the build; both then load the library from its spec's folder under the
    worker's owner (owner_of the source it runs)."""
    from torch.utils import cpp_extension as ce
    real = {"load_inline": ce.load_inline, "load": ce.load}

    def served(kind):
        def call(*args, **kwargs):
            spec = _build_spec(kind, real[kind], *args, **kwargs)
            folder = spec_dir(spec, worker.device, worker.owner)
            if (folder / "failed").exists():
                raise RuntimeError((folder / "failed").read_text())
            if not (folder / "built").exists():
                compile_spec(spec, folder) if local else worker.request_build(spec)
            lib = _library(spec, folder)
            worker.exts.append(lib)
            return lib
        call.__name__, call.__doc__, call.__wrapped__ = kind, real[kind].__doc__, real[kind]
        return call
    ce.load_inline, ce.load = served("load_inline"), served("load")


# ---------------------------------------------------------------------------- sandbox: seal, seccomp, Landlock

# capabilities that let a process read another's memory or open its files (ptrace, /proc/PID/mem, fd and
# map_files, /dev/mem, kernel modules, BPF and perf probes): numbers from linux/capability.h
CAPS = dict(DAC_READ_SEARCH=2, SYS_MODULE=16, SYS_RAWIO=17, SYS_PTRACE=19, SYS_ADMIN=21, PERFMON=38, BPF=39,
             CHECKPOINT_RESTORE=40)


def seal(secret):
    """Linux: drop CAPS (bounding set too, so no exec gets them back) and, for a process that holds answers (the
    judge, the reference's worker), become non-dumpable: then no process of the evaluation, root included, can
    open its /proc/PID/mem or /proc/PID/fd/* (the shared buffers with the expected outputs). Best effort: a system
    that refuses leaves the process as it was (a non-root user holds none of these capabilities anyway)."""
    if sys.platform != "linux":
        return
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):  # expandable segments share CUDA memory through
        if "expandable_segments:True" in os.environ.get(key, ""):   # pidfd_getfd, which needs the access dropped here
            os.environ[key] = os.environ[key].replace("expandable_segments:True", "expandable_segments:False")
    libc = ctypes.CDLL(None, use_errno=True)
    if secret:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    for cap in CAPS.values():
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP = 24 (needs CAP_SETPCAP, which stays)

    _capset(libc, sum(1 << c for c in CAPS.values()))


def _capset(libc, mask):
    """Drop the capabilities in mask (bits) from this process's effective, permitted and inheritable sets."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
    header, sets = Header(0x20080522, 0), (ctypes.c_uint32 * 6)()  # v3: (effective, permitted, inheritable) x 2
    if libc.capget(ctypes.byref(header), sets) == 0:
        for i in range(6):
            sets[i] &= ~(mask >> (32 * (i // 3))) & 0xFFFFFFFF
        libc.capset(ctypes.byref(header), sets)


def unprivileged():
    """A worker or build process (Linux): no capability left in any set (bounding and ambient included, so no exec
    gets one back) and no new privileges (set-user-ID programs gain none). A root worker otherwise keeps
    CAP_SYS_NICE (SCHED_FIFO), CAP_MKNOD, CAP_DAC_OVERRIDE and the rest."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    _capset(libc, (1 << 64) - 1)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS


def serve_only(caller):
    """In the forkserver: fork for the process that started it and no other. Any process can connect to its socket
    (a file under the temp dir; Python up to 3.13 asks for no key), and what it forks belongs to no evaluation's
    process group: the fence and the audit would miss it. A request from anyone else is refused, the requester
    killed, and its process group noted for the judge (refusal)."""
    import multiprocessing.reduction as reduction
    recvfds, server = reduction.recvfds, os.getpid()

    def checked(sock, size):  # the forkserver's first call on each request's connection
        pid = int.from_bytes(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[:4], sys.byteorder)
        if pid == caller or os.getpid() != server:  # the processes it forks inherit this: there it is not a request
            return recvfds(sock, size)
        try:
            _refusal_note(os.getpid(), os.getpgid(pid)).touch()
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone already
            pass
        raise ConnectionAbortedError(errno.ECONNABORTED, "cudal1: fork refused")  # the server's loop skips it
    reduction.recvfds = checked


def _refusal_note(forkserver, pgid):
    return Path(tempfile.gettempdir(), f"cudal1-refused-{forkserver}-{pgid}")


def refusal(pgid):
    """The verdict if a forkserver of this evaluator (the judge's parent, or another caller's on the machine: the
    candidate may find either) refused a fork to this process group (and killed the requester), else None. Each note
    is read once; the judge also reads the notes of a group as its leader starts, so that an unread note of an older
    group with the same number (pids wrap at 32768 on many machines) never blames a new candidate."""
    notes = list(Path(tempfile.gettempdir()).glob(_refusal_note("*", pgid).name))
    for note in notes:
        with contextlib.suppress(OSError):
            note.unlink()  # read once
    if not notes:
        return None
    return Verdict("rejected", "background_process", "the candidate asked the evaluator's forkserver for a process "
                   "outside its process group: refused, and the process that asked stopped")


# per audit arch (x86-64 also through its x32 numbers; i386's int 0x80 numbers, which an x86-64 process can reach
# too): the syscalls that leave a process group (setsid, setpgid), and those that change another process's
# scheduling or limits, with the index of their pid argument: setpriority, sched_setparam, sched_setscheduler,
# sched_setaffinity, ioprio_set, prlimit64, sched_setattr
_X32 = 0x40000000

_GROUP_EXITS = {0xC000003E: (112, 109, _X32 | 112, _X32 | 109), 0x40000003: (66, 57), 0xC00000B7: (157, 154)}

_OTHERS = {0xC000003E: ((141, 1), (142, 0), (144, 0), (203, 0), (251, 1), (302, 0), (314, 0)),
           0x40000003: ((97, 1), (154, 0), (156, 0), (241, 0), (289, 1), (340, 0), (351, 0)),
           0xC00000B7: ((140, 1), (118, 0), (119, 0), (122, 0), (30, 1), (261, 0), (274, 0))}


def stay_in_group(group=True):
    """Seccomp (Linux), for this process and everything it starts: setsid() and setpgid() fail with EPERM, so nothing
    the candidate starts can leave its process group (the SIGSTOP fence, the audit and the final kill reach all of
    it); and the scheduling, priority and limits of any process but the caller's own (pid 0) cannot be changed (a
    candidate would pin the reference's worker to one core). group=False (builds: ninja puts each compiler in a
    group of its own) denies setsid alone: nothing leaves the session, which stop kills whole. Best effort: without
    seccomp (or on another arch) nothing changes."""
    if sys.platform != "linux":
        return
    prog = [("ld", 4)]  # A = seccomp_data.arch; then one block per arch, entered when A is that arch
    for i, (arch, exits) in enumerate(_GROUP_EXITS.items()):
        prog += [(f"arch{i}",), ("jeq", arch, None, f"arch{i + 1}"), ("ld", 0)]  # A = the syscall's number
        prog += [("jeq", nr, "deny", None) for nr in (exits if group else exits[::2])]  # (setsid, setpgid) pairs
        others = _OTHERS[arch] + tuple((_X32 | nr, a) for nr, a in _OTHERS[arch] if arch == 0xC000003E)
        for j, (nr, arg) in enumerate(others):  # allowed only on pid 0 (the caller): both words of the argument 0
            prog += [("jeq", nr, None, f"skip{i}.{j}"), ("ld", 16 + 8 * arg), ("jeq", 0, None, "deny"),
                     ("ld", 20 + 8 * arg), ("jeq", 0, "allow", "deny"), (f"skip{i}.{j}",)]
        prog.append(("ret", 0x7FFF0000))  # RET_ALLOW
    prog += [(f"arch{len(_GROUP_EXITS)}",), ("allow",), ("ret", 0x7FFF0000), ("deny",),
             ("ret", 0x00050000 | errno.EPERM)]  # RET_ERRNO
    labels, code = {}, []
    for ins in prog:  # labels are 1-tuples: they name the next instruction
        if len(ins) == 1:
            labels[ins[0]] = len(code)
        else:
            code.append(ins)
    jump = lambda i, to: 0 if to is None else labels[to] - i - 1  # None: the next instruction

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Insn))]
    ops = {"ld": lambda i, k: (0x20, 0, 0, k), "ret": lambda i, k: (0x06, 0, 0, k),  # BPF_LD|W|ABS, BPF_RET|K
           "jeq": lambda i, k, t, f: (0x15, jump(i, t), jump(i, f), k)}               # BPF_JMP|JEQ|K
    insns = (Insn * len(code))(*[Insn(*ops[op](i, *args)) for i, (op, *args) in enumerate(code)])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) == 0:  # PR_SET_NO_NEW_PRIVS, needed to install a filter without CAP_SYS_ADMIN
        libc.prctl(22, 2, ctypes.byref(Prog(len(code), insns)), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


# Landlock (Linux 5.13+; signal scoping 6.12+): access rights from linux/landlock.h
_LL_WRITE = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write file, remove, make char/dir/reg/sock/...

_LL_ABI_RIGHTS = {2: 1 << 13, 3: 1 << 14}                           # refer (ABI 2), truncate (ABI 3)
_LL_WRITE_FILE = 1 << 1


def dev_writable():
    """What of /dev a worker or build may write: every entry but the shared memory folders (/dev/shm, /dev/mqueue),
    where a process could leave a file for a later evaluation or steer one beside it."""
    try:
        return [f"/dev/{n}" for n in sorted(os.listdir("/dev")) if n not in ("shm", "mqueue")]
    except OSError:
        return []


def landlock(writable):
    """Landlock this process and what it starts: files may be written only under `writable`; from ABI 6 on no
    signal reaches a process outside (the judge, the reference, the caller, other evaluations) and no abstract
    socket outside can be reached; ptrace of any process outside is refused at every ABI. Returns the ABI (0: none,
    nothing changed)."""
    if sys.platform != "linux":
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return 0
    rights = _LL_WRITE | sum(r for v, r in _LL_ABI_RIGHTS.items() if abi >= v)

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
    attr = Ruleset(rights, 0, 0b11 if abi >= 6 else 0)  # scoped: abstract unix sockets, signals
    size = ctypes.sizeof(Ruleset) if abi >= 6 else 16 if abi >= 4 else 8
    fd = libc.syscall(444, ctypes.byref(attr), size, 0)
    if fd < 0:
        return 0
    files = rights & (_LL_WRITE_FILE | _LL_ABI_RIGHTS[3])  # the rights a rule on a file (not a folder) may grant
    try:
        for path in writable:
            with contextlib.suppress(OSError):
                dfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                folder = os.path.isdir(path)
                libc.syscall(445, fd, 1, ctypes.byref(Beneath(rights if folder else files, dfd)), 0)  # PATH_BENEATH
                os.close(dfd)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        return abi if libc.syscall(446, fd, 0) == 0 else 0  # landlock_restrict_self
    finally:
        os.close(fd)


def group_pids(pgid, field=2):
    """The live processes of a process group (field 3: of a session; field 1: a process's children), pids as strings,
    from /proc. A process whose leader thread has exited shows its leader as a zombie while its other threads run:
    it is alive until every thread has ended."""
    found = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()  # state ppid pgrp session ...
        except (OSError, ValueError):  # ended meanwhile
            continue
        if stat[field] == str(pgid) and (stat[0] != "Z" or alive(d)):
            found.append(d)
    return found


def alive(pid):
    """Does any thread of the process still run (a zombie leader's threads may)?"""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(_state(f"/proc/{pid}/task/{t}/stat") not in "ZX" for t in tasks)


def audit_processes(cand_pid):
    """Processes the candidate started that still run (or a fork it asked of the forkserver) are background work."""
    refused = refusal(cand_pid)  # a process of its group asked the forkserver for one (the candidate lived on)
    if refused:
        raise refused
    try:
        kids = [p for t in Path(f"/proc/{cand_pid}/task").glob("*/children") for p in t.read_text().split()]
    except PermissionError:  # the judge holds no CAP_SYS_PTRACE (seal): the candidate made itself non-dumpable
        raise Verdict("rejected", "background_process", "the candidate's process hides what it started "
                      "(it made itself non-dumpable)") from None
    kids += [p for p in group_pids(cand_pid) if p not in kids and p != str(cand_pid)]  # orphans (stay_in_group)
    if kids:
        raise Verdict("rejected", "background_process", f"the candidate started {len(kids)} process(es) that are "
                      f"still running (first: {_cmdline(kids[0])!r}); all work must finish inside forward")


def stop_group(pgid):
    """SIGSTOP a worker's group and wait (up to 50 ms) until its worker's threads have stopped: kill() returns before
    a thread running on another core has, and the judge is about to write that side's inputs."""
    signal_group(pgid, signal.SIGSTOP)
    _wait_stopped(lambda: [t / "stat" for t in Path(f"/proc/{pgid}/task").iterdir()])


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:  # that worker is gone; its own next answer says how
        pass


def confine_worker(logdir, role, nice=0, owner=None):
    """A worker or build process, before anything else runs in it: a process group (a build: a session) of its own,
    sealed and without any capability (unprivileged), kept in its group by seccomp, its output into a capped log
    file; a build also under Landlock, writing only a temp folder of its own and its owner's folder of the build
    cache (owner_of: the source it builds for)."""
    build = role.startswith("build")
    if nice:
        os.nice(nice)
    os.setsid() if build else os.setpgrp()  # its own session or group: everything it starts is killed with it
    seal(secret=role == "reference")
    unprivileged()
    stay_in_group(group=not build)
    fd = os.open(os.path.join(logdir, f"{role}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 1), os.dup2(fd, 2)  # an output flood fills a capped file, not the caller's terminal
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
    if build:  # a build runs the candidate's module (prebuild) and compilers: it writes builds and its own temp files
        own = Path(logdir, f"{role}-tmp")  # (the compilers' too: TMPDIR), not the machine's temp dir
        own.mkdir(exist_ok=True)
        os.environ["TMPDIR"], tempfile.tempdir = str(own), None
        landlock([str(own), *dev_writable()] + [str(build_root() / owner)] * bool(owner))


def confine(logdir):
    """The candidate's worker, before its code first runs: writes only under a temp folder of its own (under logdir)
    and /dev but its shared memory folders (dev_writable); from Landlock ABI 6 on, no signal or abstract socket
    outside."""
    own = Path(logdir, "tmp")  # not the machine's temp dir: a checkout (tasks, this file) may live there
    own.mkdir()
    os.environ.update(TMPDIR=str(own), TRITON_CACHE_DIR=str(own / "triton"),  # compile caches start cold:
                      TORCHINDUCTOR_CACHE_DIR=str(own / "inductor"))  # a shared one could be poisoned
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    landlock([str(own), *dev_writable()])


# ---------------------------------------------------------------------------- processes: start, stop, turns, pins

class Terminated(KeyboardInterrupt):
    """A SIGTERM that came while evaluate_many ran (see sigterm_as_interrupt)."""


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While evaluate_many runs in a program that leaves SIGTERM (what `timeout` and batch schedulers send) to its
    default, a SIGTERM is raised as Terminated: the builds, in sessions of their own (and stopped while a clock
    runs), are killed before the process ends by the SIGTERM (by default they outlive it, stopped). A program's own
    SIGTERM handler is left be."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminated(signum, frame):
        raise Terminated
    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Turns:
    """One device's evaluations in flight (evaluate_many): the trusted part of their set-up (processes, CUDA contexts,
    the harness, the reference side) runs side by side; candidate code runs in one of them at a time (its turn, from
    the candidate's set-up to its end); the clock (profile, timed rounds, the processes' end) has the device to
    itself. An evaluation's thread holds some of: "device" (shared by all but the clock), "turn", "clock"."""

    def __init__(self, builds=None):
        self.cv, self.turn, self.builds = threading.Condition(), threading.Lock(), builds  # builds: BuildPause
        self.sharing, self.clock, self.waiting = 0, False, 0

    def share(self, held):
        with self.cv:  # a clock asked for goes first: no new sharer meanwhile
            self.cv.wait_for(lambda: not self.clock and not self.waiting)
            self.sharing += 1
        held.add("device")

    def unshare(self, held):
        with self.cv:
            self.sharing -= 1
            self.cv.notify_all()
        held.discard("device")

    def take(self, what, held):
        """what: "go" (the turn: candidate code may run) or "clock" (the device alone; held once, until leave)."""
        if "clock" in held:
            return
        self.unshare(held)
        if what == "go":
            self.turn.acquire()
            held.add("turn")
            self.share(held)
            return
        with self.cv:
            self.waiting += 1
            self.cv.wait_for(lambda: not self.clock and not self.sharing)
            self.waiting, self.clock = self.waiting - 1, True
        held.add("clock")
        if self.builds:
            self.builds.clock(True)

    def leave(self, held):
        if "device" in held:
            self.unshare(held)
        if "clock" in held:
            if self.builds:
                self.builds.clock(False)
            with self.cv:
                self.clock = False
                self.cv.notify_all()
        if "turn" in held:
            self.turn.release()
        held.clear()


class BuildPause:
    """The build processes running beside evaluations (evaluate_many's overlap): stopped, every process of their
    sessions (ninja puts its compilers in groups of their own), while any device's clock runs, and continued once
    none does: niced compilers on cores of their own still move the wider clocks of the timed rounds beside them
    (bench/RESULTS.md on the clock)."""

    def __init__(self):
        self.lock, self.clocks, self.pids = threading.Lock(), 0, set()
        self.stopped, self.since = 0.0, 0.0  # seconds the builds were stopped for, and since when they are

    def stopped_s(self):
        """Seconds the builds have been stopped for so far: a build's time limit counts only its time running."""
        with self.lock:
            return self.stopped + (time.monotonic() - self.since if self.clocks else 0.0)

    def started(self, pid):
        with self.lock:
            self.pids.add(pid)
            if self.clocks:
                signal_session(pid, signal.SIGSTOP)

    def ended(self, pid):
        with self.lock:
            self.pids.discard(pid)

    def clock(self, on):
        """A clock starts (on) or ends somewhere: the first to start stops the builds, the last to end goes on."""
        with self.lock:
            self.clocks += 1 if on else -1
            if self.clocks == int(on):
                self.since, self.stopped = (time.monotonic(), self.stopped) if on else \
                    (self.since, self.stopped + time.monotonic() - self.since)
                for pid in self.pids:
                    signal_session(pid, signal.SIGSTOP if on else signal.SIGCONT)


def signal_session(sid, sig):
    """Signal every process of a session and its leader (which may not have called setsid yet), SIGSTOP and SIGKILL
    three times over (for a process forked while a pass ran); after SIGSTOP, wait until they have stopped or sleep
    uninterruptibly (D: in the kernel, on disk I/O mostly, off the cores; they stop on their way out of it)."""
    for _ in range(1 if sig == signal.SIGCONT else 3):
        pids = {str(sid), *group_pids(sid, field=3)}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), sig)
    if sig == signal.SIGSTOP:
        _wait_stopped(lambda: [f"/proc/{p}/stat" for p in pids], settled="tTXZD")


def _wait_stopped(stat_files, settled="tTXZ"):
    """Wait (up to 50 ms) until the processes or threads of these /proc stat files have stopped or ended (their states
    in settled): kill() returns before one running on another core has."""
    deadline = _perf() + 0.05
    while _perf() < deadline:
        try:
            if all(_state(f) in settled for f in stat_files()):
                return
        except OSError:  # gone: its next answer says how
            return


def _state(stat):
    """The state letter in a /proc stat file ("X" once its process or thread is gone)."""
    try:
        return Path(stat).read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


_CTX, _CTX_PID = None, None

ENV_KEYS = ("TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CUDA_HOME", "CXX", "CC")


def context():
    """A forkserver that has imported torch (but never touched CUDA): new processes start in ~0.1 s, not seconds."""
    global _CTX, _CTX_PID
    if _CTX is not None and _CTX_PID != os.getpid():  # its forkserver forks for the process that started it only
        raise RuntimeError("cudal1's evaluator runs in a forked copy of the process that started its forkserver: "
                           "evaluate from that process, or from a fresh one")
    if _CTX is None:
        _CTX_PID = os.getpid()
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # one side's idle OpenMP threads must not spin
        _CTX = mp.get_context("forkserver")
        # torch._dynamo is preloaded: each process would import it again (seconds); children still get CUDA after
        # it. Never torch.utils.cpp_extension here: it queries CUDA, which forks cannot inherit.
        _CTX.set_forkserver_preload(["torch", "torch.multiprocessing", "torch._dynamo", "evaluator"])
        # the forkserver forks anything asked of it through its socket, also by a candidate: it drops CAPS too
        # (when it imports evaluator), so that no process it makes can read the judge's memory. Python 3.11's
        # forkserver ignores the caller's sys.path: PYTHONPATH lets it find evaluator from any working directory.
        path, here = os.environ.get("PYTHONPATH"), str(Path(__file__).resolve().parent)
        os.environ.update(CUDAL1_FORKSERVER=str(os.getpid()), PYTHONPATH=os.pathsep.join(filter(None, [here, path])))
        try:
            import multiprocessing.forkserver
            multiprocessing.forkserver.ensure_running()
        finally:
            del os.environ["CUDAL1_FORKSERVER"]
            if path is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = path
    return _CTX


_START = threading.Lock()


def start(procs):
    """Start processes. Children re-import the caller's main script; from stdin or a notebook there is none."""
    with _START:
        _start_unlocked(procs)


def _start_unlocked(procs):
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    fake = path is not None and not os.path.isfile(path)
    if fake:
        del main.__file__
    try:
        for p in procs:
            p.start()
            _LIVE.add(p.pid)
    finally:
        if fake:
            main.__file__ = path


_LIVE = set()  # the processes this caller started through its forkserver that it has not stopped yet


def subreaper():
    """In the forkserver: become the child subreaper of everything it starts (Linux), so that a process orphaned
    inside an evaluation (its parent ended: a build's double fork, a worker killed first) is re-parented here, where
    sweep finds it, not to init, where nothing would."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    import warnings  # the forkserver reaps such orphans too, and would warn of each
    warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")


def sweep():
    """Kill every process the forkserver holds that this caller did not start or has stopped (the orphans subreaper
    re-parents there, and whatever they start): nothing an evaluation started outlives it, even where seccomp
    cannot keep it in its process group or session. Returns how many were killed."""
    import multiprocessing.forkserver as fs
    server = getattr(fs._forkserver, "_forkserver_pid", None)
    if server is None:
        return 0
    killed = 0
    for _ in range(8):  # a killed stray's own children are re-parented to the forkserver in turn
        with _START:
            strays = [int(q) for q in group_pids(server, field=1) if int(q) not in _LIVE]
            for q in strays:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(q, signal.SIGKILL)
        if not strays:
            return killed
        killed += len(strays)
        time.sleep(0.01)
    return killed


def child_env(**extra):
    # TORCHINDUCTOR_COMPILE_THREADS=1: torch.compile in a process the candidate starts compiles in-process too
    return {"TORCHINDUCTOR_COMPILE_THREADS": "1", **{k: os.environ[k] for k in ENV_KEYS if k in os.environ}, **extra}


def ended(pgid, timeout=5.0):
    """Has every process of the group ended (its memory and files let go: zombies are) within the timeout?"""
    deadline = time.monotonic() + timeout
    while group_pids(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def stop(procs, session=False):
    """Kill processes with every process of their groups (session: of their sessions), then whatever the forkserver
    holds that no live process of this caller's is (sweep)."""
    for p in procs:
        if p.pid is not None:
            signal_group(p.pid, signal.SIGKILL)  # the worker and any process it started (builds, strays)
            if session:  # a build's processes in groups of their own (ninja's compilers)
                signal_session(p.pid, signal.SIGKILL)
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(5)
        _LIVE.discard(p.pid)
    sweep()


def pin(pids, one_cpu=False):
    """Options.pin_cpus: every thread of the workers (pids) onto one CPU, which they take in turns (the other side is
    stopped during a call), and the judge's thread onto a second (one_cpu: the same one, where the workers' own
    clocks are the host's: the evaluation then takes one core, and a neighbour on the machine another); the pair is
    the first free one (a lock file per pair: evaluations timed at once on other GPUs take others). With one_cpu and
    every CPU taken, it shares one: both sides of each evaluation still run alike. Returns what unpin needs, or None
    (none free)."""
    cpus = sorted(os.sched_getaffinity(0))
    pairs = [(c, c) for c in cpus] if one_cpu else list(zip(cpus[::2], cpus[1::2]))
    for a, b in pairs:
        lock = open(Path(tempfile.gettempdir()) / f"cudal1-cpus-{a}-{b}.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        return lock, _move(pids, a, b)
    return (None, _move(pids, *pairs[os.getpid() % len(pairs)])) if one_cpu else None


def _move(pids, a, b):
    """Every thread of pids onto CPU a, the calling thread onto b: {tid (0: the caller): its CPUs before}."""
    before = {0: os.sched_getaffinity(0)}
    os.sched_setaffinity(0, {b})
    for tid in (int(t.name) for pid in pids for t in Path(f"/proc/{pid}/task").iterdir()):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, {a})
    return before


def unpin(pins):
    if pins:
        lock, before = pins
        for tid, cpus in before.items():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, cpus)
        if lock:
            lock.close()  # the pair is free again


_TEMP_DIRS = set()  # the evaluator's temp folders (logs, the workers' TMPDIR) that exist now


def temp_dir(prefix):
    """A new temp folder that outlives no evaluation: removed by its finally, or at exit when a Ctrl-C ended the
    process before that ran (evaluate_many's threads, stopped half-way)."""
    path = tempfile.mkdtemp(prefix=prefix)
    _TEMP_DIRS.add(path)
    return path


def remove_temp_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.exists(path):  # (a process that still writes there can keep it: at exit it is tried again)
        _TEMP_DIRS.discard(path)


@atexit.register
def _remove_temp_dirs():
    for path in list(_TEMP_DIRS):
        remove_temp_dir(path)


class Remote:
    """The judge's handle on one worker: every reply is data (recv_data) of the shape its request expects (replies:
    {request: shape}, fits), silence past the timeout is a verdict; build requests in between (a spec, check_spec)
    are passed to `builds` (the caller runs them outside the sandbox) and their time is not the call's."""

    def __init__(self, conn, role, timeout, builds, replies):
        self.conn, self.role, self.timeout, self.builds, self.pid = conn, role, timeout, builds, None
        self.replies = replies

    def send(self, *msg):
        try:
            self.conn.send(msg)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            raise self._fail("runtime_error", "crash", f"the {self.role} process died before '{msg[0]}'") from None
        self.last = msg[0]

    def reply(self, timeout=None):
        t = timeout or self.timeout
        while True:
            if not self.conn.poll(t):
                raise self._fail("timeout", "timeout", f"no answer within {t:.0f} s to '{self.last}'")
            try:
                ans = recv_data(self.conn, self.role)
            except (EOFError, OSError):
                raise self._fail("runtime_error", "crash", f"the {self.role} process died during '{self.last}'") \
                    from None
            except Verdict as v:
                raise self._fail(v.status, v.check, v.reason) from None
            if ans[0] != "build":
                break
            if len(ans) != 2:
                raise self._fail("rejected", "wire", f"malformed build request from the {self.role} process")
            try:
                spec = check_spec(ans[1])
            except Verdict as v:
                raise self._fail(v.status, v.check, v.reason) from None
            self.conn.send(self.builds(spec, self.role))
        if ans[0] == "fail":
            v = failure(ans[1:], self.role)
            raise self._fail(v.status, v.check, v.reason)
        if ans[0] != "ok" or len(ans) != 2 or not fits(ans[1], self.replies[self.last]):
            raise self._fail("rejected", "wire", f"the {self.role} process answered '{self.last}' with "
                             f"{str(ans)[:200]}")
        return ans[1]

    def __call__(self, *msg, timeout=None):
        self.send(*msg)
        return self.reply(timeout)

    def _fail(self, status, check, reason):
        if self.role == "reference":  # never blame the candidate for the reference's failure
            return Verdict("runtime_error", "reference", f"the reference failed ({status}/{check}): {reason}")
        refused = check == "crash" and self.pid and refusal(self.pid)
        if refused:
            return refused
        return Verdict(status, check, reason)


def quiet_broken_pipes(kind, value, tb):
    """sys.excepthook for the judge: a worker killed while taking shared tensors breaks the connection of the thread
    that hands them over (multiprocessing's resource_sharer, which prints through this hook); that is the worker's
    verdict, not a harness error."""
    if not issubclass(kind, (BrokenPipeError, ConnectionResetError)):
        sys.__excepthook__(kind, value, tb)


# ---------------------------------------------------------------------------- caller: sessions, builds in parallel

def plans(refs, device, in_flight):
    """{reference source: its MemoryPlan, or the MemoryRefusal that says in one line why it cannot fit}."""
    out = {}
    for ref in refs:
        try:
            out[ref] = memory_plan(ref, device, in_flight)
        except MemoryRefusal as e:
            out[ref] = e
    return out


class Queue:
    """evaluate_many's pairs, handed to the device threads in order, each once none of its sources waits for its
    build (the builds end in another thread). An exception in any thread stops them all at their next pair."""

    def __init__(self, pairs, pending, devices, t0):
        self.pairs, self.todo, self.pending, self.failed, self.errors = pairs, list(range(len(pairs))), pending, {}, []
        self.ready, self.waited, self.on = threading.Condition(), dict.fromkeys(devices, 0.0), {}
        self.builds_end, self.first, self.last = t0, None, t0

    def built(self, src, failure):
        """src's build ended, with its failure Result or None."""
        with self.ready:
            self.failed.update({src: failure} if failure else {})
            self.pending.discard(src)
            self.builds_end = time.time()
            self.ready.notify_all()

    def builds_over(self):
        """No other build will end: nothing waits for one any more."""
        with self.ready:
            self.pending.clear()
            self.ready.notify_all()

    def fail(self, e):
        with self.ready:
            self.errors.append(e)
            self.ready.notify_all()

    def take(self, dev, ref=None):
        """A pair not taken yet whose builds have ended: the first of task `ref` (the thread's session), else the
        first of a task no other thread is on, else the first; None when none is left (or after an error)."""
        with self.ready:
            while self.todo and not self.errors:
                ready = [i for i in self.todo if not self.pending & set(self.pairs[i])]
                if ready:
                    others = {r for d, r in self.on.items() if d != dev}
                    i = min(ready, key=lambda i: (self.pairs[i][0] != ref, self.pairs[i][0] in others))
                    self.todo.remove(i)
                    self.on[dev], self.first = self.pairs[i][0], self.first or time.time()
                    return i
                t = time.time()
                self.ready.wait()
                self.waited[dev] += time.time() - t
        return None


def gpus(device):
    """The devices evaluate_many spreads over: 'cuda' means every visible GPU; any other device is used as given."""
    n = torch.cuda.device_count() if device == "cuda" else 0
    return [f"cuda:{i}" for i in range(n)] if n > 1 else [device]


def build_all(srcs, device, worker, jobs=None, timeout=900.0, progress=True, times=None, refs=None, cores=None,
              on_done=None, nice=0, cancel=None, pause=None):
    """Compile candidates' builds ahead of their evaluation, in parallel build processes (worker: their entry point,
    evaluator's worker_main): each runs the module and, given its reference's source in refs ({src: ref_src}),
    constructs ModelNew, so that builds at import and in __init__ are ready (later ones are served when asked).
    {src: the Verdict of a failed build}; times: {src: seconds}. cores: how many the builds share (default: all);
    on_done(src, its Verdict or None) as each build ends, in the order of srcs as far as the parallel builds allow;
    cancel() true: the running builds are killed, no other starts; pause: a BuildPause that stops them while a clock
    runs."""
    srcs, cores = list(dict.fromkeys(s for s in srcs if uses_extension(s))), cores or os.cpu_count() or 2
    jobs = jobs or default_jobs(cores)
    # ninja's compilers per build: main.cpp beside nvcc
    env = child_env(MAX_JOBS=os.environ.get("MAX_JOBS", "2"))
    msgs = {s: ("prebuild", s, env, (refs or {}).get(s)) for s in srcs}
    if len(srcs) > 1:  # the shared headers first (make_pch), once builds can share them: ~40 s of one core a set
        msgs = {PCH_JOB: ("make_pch", None, env, "pch"), **msgs}
    failed = run_builds(msgs, device, worker, jobs, timeout, progress, times,
                        on_done and (lambda key, v: key == PCH_JOB or on_done(key, v)), nice, cancel, pause)
    for found in (failed, times or {}):  # (without a header, builds go on without one)
        found.pop(PCH_JOB, None)
    return failed


def uses_extension(src):
    return "cpp_extension" in src or "load_inline" in src


def default_jobs(cores=None):
    """Builds at once: one per core (a CUDA build is one compiler most of its time, main.cpp beside nvcc: fewer builds
    with more compilers each leave cores idle; bench/RESULTS.md on throughput)."""
    return max(1, cores or os.cpu_count() or 2)


def run_builds(msgs, device, worker, jobs=None, timeout=900.0, progress=True, times=None, on_done=None, nice=0,
               cancel=None, pause=None):
    """Run build processes (worker: their entry point, evaluator's worker_main), jobs at a time, one message each
    ({key: message}: ("prebuild", src, env, ref_src) or ("build_spec", spec, env, owner)), in the order of msgs,
    until all have ended or cancel() is true; {key: the Verdict of a failed build}. timeout: the seconds a build
    process may run, not counting the time pause kept it stopped. A build's answer is data (recv_data); a build
    that leaves a process running when it answers is `background_process`, and that process is killed with it.
    ("make_pch", None, env, "pch"): the shared headers' build process (pch_main), run, paused and killed as builds
    are."""
    if not msgs:
        return {}
    jobs = jobs or default_jobs()
    ctx, failed, running, todo = context(), {}, [], list(msgs)[::-1]
    logdir, bar = temp_dir("cudal1-build-"), progress_bar(len(msgs), "build", progress)
    try:  # the build processes' logs, removed once they have ended
        while (todo or running) and not (cancel and cancel()):
            while todo and len(running) < jobs and not (pause and pause.clocks):  # none starts while a clock runs
                key = todo.pop()
                owner = owner_of(msgs[key][1]) if msgs[key][0] == "prebuild" else msgs[key][3]
                (build_root() / owner).mkdir(parents=True, exist_ok=True)  # the one folder it may write
                here, there = ctx.Pipe()
                p = ctx.Process(target=pch_main if msgs[key][0] == "make_pch" else worker, name="cudal1-build",
                                args=(there, device, logdir, f"build-{len(todo)}", nice, owner))
                start([p])
                if pause:
                    pause.started(p.pid)
                there.close()
                here.send(msgs[key])
                running.append((key, p, here, time.time(), pause.stopped_s() if pause else 0.0))
            for item in list(running):
                key, p, conn, t0, stopped0 = item
                done = conn.poll(0.05)
                ran = time.time() - t0 - (pause.stopped_s() - stopped0 if pause else 0.0)
                if done or ran > timeout or not p.is_alive():
                    failure = _build_answer(conn, p.pid) if done else Verdict(
                        "timeout", "timeout", f"build ran over {timeout:.0f} s") if p.is_alive() else Verdict(
                        "runtime_error", "crash", "the build process died")
                    if failure:
                        failed[key] = failure
                    if times is not None:
                        times[key] = time.time() - t0
                    conn.close()
                    stop([p], session=True)
                    if pause:
                        pause.ended(p.pid)
                    running.remove(item)
                    bar.update(1)
                    if on_done:
                        on_done(key, failed.get(key))
    finally:
        for _, p, conn, _, _ in running:  # stopped (or a Ctrl-C): what still runs is killed
            conn.close()
            stop([p], session=True)
            if pause:
                pause.ended(p.pid)
        remove_temp_dir(logdir)
    bar.close()
    return failed


def _build_answer(conn, sid):
    """A build process's answer (recv_data) as the Verdict of its failure or None: ["ok", null] or ["fail", status,
    check, reason]; a process of its session still running when it answers (sid: the build process, its session's
    leader) is background work."""
    try:
        ans = recv_data(conn, "build")
    except EOFError:
        return Verdict("runtime_error", "crash", "the build process died")
    except Verdict as v:
        return v
    if ans[0] == "fail":
        return failure(ans[1:], "build")
    if ans != ["ok", None]:
        return Verdict("rejected", "wire", f"the build process sent {str(ans)[:200]}")
    left = [q for q in group_pids(sid, field=3) if q != str(sid)]
    if left:
        return Verdict("rejected", "background_process", f"the build left {len(left)} process(es) running when it "
                       f"ended (first: {_cmdline(left[0])!r}); a build may start processes only to wait for them")
    return None


def _cmdline(pid):
    """A process's command line (read through its threads: a zombie leader's own reads empty), or "?"."""
    for path in [f"/proc/{pid}/cmdline", *map(str, Path(f"/proc/{pid}/task").glob("*/cmdline"))]:
        try:
            text = Path(path).read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
        except OSError:  # it ended meanwhile
            continue
        if text:
            return text
    return "?"


def progress_bar(total, desc, on):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, disable=not on, leave=False)
    except ImportError:  # tqdm is in requirements.txt; degrade quietly without it
        return types.SimpleNamespace(update=lambda n: None, close=lambda: None)


def serve_build(spec, owner, device, o, worker):
    """One build a worker asked for (spec: checked by the judge, check_spec), in a build process that writes owner's
    folder alone: ('built',) or ('failed', compiler output)."""
    folder = spec_dir(spec, device, owner)
    if (folder / "built").exists():
        return ("built",)
    failed = run_builds({"spec": ("build_spec", spec, child_env(), owner)}, device, worker, 1, o.build_timeout_s,
                        progress=False)
    return ("failed", failed["spec"].reason) if failed else ("built",)


class Session:
    """The caller's side of a judge and a reference worker, kept for one task's candidates on one device (set up
    once; evaluate_many runs the candidates in turn). Each candidate gets a worker of its own, killed, with all
    it started, before the next one starts. The judge and the reference worker end at close(), or after a timeout,
    a crash or a failure of the reference: the next candidate then starts new ones.
    With turns (evaluate_many's, for the device): the processes start on the device's shared part (their CUDA contexts
    are GPU work too), and whatever a candidate's evaluation holds of it is let go once its worker has ended.
    worker, judge: the entry points of the processes it starts (evaluator's worker_main and judge_main)."""

    def __init__(self, ref_src, device, worker, judge, turns=None, plan=None):
        self.ref_src, self.device, self.turns, self.procs, self.started = ref_src, device, turns, None, 0
        self.worker, self.judge = worker, judge
        self.plan = plan or memory_plan(ref_src, device, in_flight=1)  # MemoryRefusal: it cannot fit

    def _open(self):
        ctx, self.logdir = context(), temp_dir("cudal1-ref-")
        ref_here, ref_there = ctx.Pipe()
        self.conn, there = ctx.Pipe()
        self.procs = [ctx.Process(target=self.worker, name="cudal1-reference",
                                  args=(ref_there, self.device, self.logdir, "reference")),
                      ctx.Process(target=self.judge, name="cudal1-judge", args=(
                          there, ref_here, self.ref_src, self.device, child_env(), self.logdir))]
        start(self.procs)
        for conn in (there, ref_here, ref_there):
            conn.close()
        self.started += 1

    def close(self, held=None):
        """End the judge and the reference's worker, with the device alone as a clock has it (their CUDA contexts'
        end is GPU work); held: what the calling evaluation holds of the device (evaluate leaves it)."""
        if not self.procs:
            return
        mine = held is None
        held = set() if mine else held
        try:
            if self.turns:
                if not held:
                    self.turns.share(held)
                self.turns.take("clock", held)
            stop(self.procs)
        finally:
            self.procs = None
            self.conn.close()
            remove_temp_dir(self.logdir)
            if mine and self.turns:
                self.turns.leave(held)

    def evaluate(self, cand_src, o, logdir):
        """Evaluate one candidate (its worker's log and temp files under logdir); serve the judge's builds and turns,
        bound its time (o.eval_timeout_s, builds not counted). The verdict as data: the judge's Result as a dict."""
        held, alive, cand, t0 = set(), False, None, _perf()
        if self.turns:
            self.turns.share(held)
        try:
            ctx = context()
            here, there = ctx.Pipe()
            cand = ctx.Process(target=self.worker, args=(there, self.device, logdir, "candidate"),
                               name="cudal1-candidate")
            start([cand])
            there.close()
            self._hand_over(here, ("candidate", cand_src, asdict(o), logdir, self.plan.to_dict()), held)
            spawn = _perf() - t0
            res, alive = self._judged(o, held)
        finally:
            t0 = _perf()
            if cand is not None:
                stop([cand])
                alive = alive and ended(cand.pid)  # the next candidate gets this one's buffers
            if not alive:  # after a timeout, a crash, a reference failure or an interrupt: nothing is reused
                self.close(held)
            if self.turns:
                self.turns.leave(held)
        if res.get("phases") is not None:  # the caller's side of the process costs (the judge's phases come before)
            res["phases"].update(spawn=round(spawn, 3), exit=round(_perf() - t0, 3))
        if res["check"] == "crash" and cand.exitcode is not None and cand.exitcode < 0:
            res["reason"] += f" (killed by signal {-cand.exitcode})"
        return res

    def _hand_over(self, conn, msg, held):
        """Send the judge msg and the candidate worker's connection: the session's judge, continued with the
        reference's worker (the last candidate's processes, all ended now, may have stopped either as they ended),
        or a new one where there is none or the last one is gone."""
        from multiprocessing.reduction import send_handle
        for again in (False, True):
            if self.procs and (again or not all(p.is_alive() for p in self.procs)):
                self.close(held)
            if self.procs is None:
                self._open()
            for p in self.procs:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGCONT)
            try:
                self.conn.send(msg)
                send_handle(self.conn, conn.fileno(), self.procs[1].pid)
                break
            except OSError:  # the judge ended meanwhile
                if again:
                    raise
        conn.close()

    def _judged(self, o, held):
        deadline = time.monotonic() + o.eval_timeout_s  # no candidate action can stop this process's clock
        try:
            while True:
                if not self.conn.poll(max(0.0, deadline - time.monotonic())):
                    return dict(status="timeout", check="timeout", reason=f"timeout: the evaluation did not finish "
                                f"within {o.eval_timeout_s:.0f} s (eval_timeout_s)"), False
                msg = self.conn.recv()
                if msg[0] == "result":
                    return msg[1], msg[2]
                t = time.monotonic()  # a worker's build, run here; or the judge's wait for its turn or the clock:
                if msg[0] == "build":  # their time is not the evaluation's
                    self.conn.send(serve_build(msg[1], msg[2], self.device, o, self.worker))
                else:
                    if self.turns:
                        self.turns.take(msg[0], held)
                    self.conn.send(True)
                deadline += time.monotonic() - t
        except (EOFError, OSError):
            return dict(status="runtime_error", check="harness", reason="harness: the judge process died"), False


# ---------------------------------------------------------------------------- guards: watches, flags, the L2, the hold

def prepare_worker(w, env, namespaces):
    """Worker.prepare, before any candidate code: start what the harness needs, take the baselines the audits
    compare with, and return their digest, which the judge keeps (the worker's copies are reachable by the
    candidate)."""
    if w.cuda:
        blocking_sync(torch.device(w.device).index or 0)  # before the context exists
        if torch.device(w.device).index is not None:
            torch.cuda.set_device(torch.device(w.device))
        torch.ones(1, device=w.device).sum().item()  # the CUDA context exists before the baselines
        l2 = getattr(torch.cuda.get_device_properties(w.device), "L2_cache_size", 64 << 20)
        w._own(flush_buf=torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device=w.device),
               hold=gpu_hold(w.device))  # before any candidate code: its own kernel
    (torch.randn(256, 256) @ torch.randn(256, 256)).sum()  # start the CPU thread pool before the baselines
    os.environ.update(env)
    for name in ("torch.utils.cpp_extension", "torch._dynamo", "torch.profiler"):  # imports change torch's attrs
        importlib.import_module(name)  # (dynamo wraps torch.manual_seed); dynamo is usually preloaded by the
        # forkserver, cpp_extension never (importing it queries CUDA, which forked children cannot inherit)
    # torch.compile compiles in this process, not in a pool of child processes (which would be background work);
    # set here, not through the environment: the forkserver read that when it imported dynamo
    importlib.import_module("torch._inductor.config").compile_threads = 1
    serve_builds(w, local=False)
    w._own(flag_watch=FlagWatch())  # torch's setters wrapped, before the baselines (the wrappers are in them)
    torch_code()  # the code objects torch has now: only these count as torch patching itself
    w.attrs, w.flags0 = attr_ids(namespaces), global_flags()
    w.numerics, w.flag_watch.baseline = numeric_flags(), w.flags0
    return w.digest()


def watched(**harness):
    """name -> (object, whether added attributes count too) for the namespaces a candidate must leave alone: torch's,
    builtins', this module's, the connections', and the harness' own (evaluator's module and Worker class)."""
    return {"torch": (torch, False), "torch.nn.functional": (torch.nn.functional, False), "torch._C": (torch._C, False),
            "torch.cuda": (torch.cuda, False), "time": (time, False), "torch.Tensor": (torch.Tensor, True),
            "torch.nn.Module": (torch.nn.Module, True), **harness, "fences": (sys.modules[__name__], False),
            "builtins": (builtins, False), "Connection": (_mpc.Connection, True),
            "_ConnectionBase": (_mpc._ConnectionBase, True),  # the worker's replies travel through these
            **({"torch._C._CudaEventBase": (_Event, True)} if _Event else {})}


def attr_ids(namespaces):
    """{name: (the ids of its attributes, strict)} for watched()'s namespaces, the baseline patched() compares with."""
    return {name: ({k: id(v) for k, v in list(vars(obj).items())}, strict)
            for name, (obj, strict) in namespaces.items()}


def patched(before, namespaces):
    """Watched attributes replaced, deleted, or (on classes) callables added since `before`. A replacement defined in
    torch's own files is torch patching itself (torch.compile wraps nn.Module.__init__, dynamo torch.manual_seed)."""
    bad = []
    for name, (obj, strict) in namespaces.items():
        ids, now = before[name][0], dict(vars(obj))
        for k, v in now.items():
            if ((k in ids and ids[k] != id(v)) or (strict and k not in ids and callable(v))) and not torch_own(v):
                bad.append(f"{name}.{k}")
        bad += [f"{name}.{k}" for k in ids.keys() - now.keys()]
    return bad


_TORCH_CODE, _TORCH_MODS = {}, set()  # id -> code object of torch's functions before any candidate code; modules seen


def torch_code():
    """Record the code objects of torch's loaded modules (their functions, classes' methods, nested code). A later
    replacement counts as torch patching itself only if its code is one of these: a file name proves nothing
    (compile() sets any), an object that existed before the candidate does."""
    def codes(v):  # exact types only: isinstance would read __class__, which some lazy objects warn about
        v = v.__func__ if type(v) in (staticmethod, classmethod) else v
        fns = (v.fget, v.fset, v.fdel) if type(v) is property else (v,)
        return [f.__code__ for f in fns if type(f) is types.FunctionType]
    todo = []
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] == "torch" and type(mod) is types.ModuleType and name not in _TORCH_MODS:
            _TORCH_MODS.add(name)
            for v in list(vars(mod).values()):
                todo += [c for a in list(vars(v).values()) for c in codes(a)] if issubclass(type(v), type) else codes(v)
    while todo:
        c = todo.pop()
        if isinstance(c, types.CodeType) and id(c) not in _TORCH_CODE:
            _TORCH_CODE[id(c)] = c  # held: ids stay unique
            todo += c.co_consts


def unchanged(d, before, _is=operator.is_):
    """Does namespace d hold exactly the key and value objects of before, in its order? (By identity: no __hash__
    or __eq__ of theirs runs.)"""
    return len(d) == len(before) and all(map(_is, d, before)) and all(map(_is, d.values(), before.values()))


def torch_own(v):
    """Is v a function whose code torch had before the candidate ran (torch patching itself)?"""
    v = getattr(v, "__func__", v) if isinstance(v, (types.MethodType, staticmethod, classmethod)) else v
    code = v.__code__ if isinstance(v, types.FunctionType) else None
    return code is not None and _TORCH_CODE.get(id(code)) is code


WORKER_ATTRS = {"device", "cuda", "conn", "model", "owned", "exts", "owner", "flush_buf", "hold", "attrs", "flags0",
                "mod", "consts", "guard", "stage", "recv", "in_ranges", "numerics", "flag_watch", "mark"}  # harness's


def after_forward_watch(**harness):
    """[(name, namespace, a copy of its dict)] for what the harness touches right after forward returns (tensor methods,
    builtins, its own namespaces: evaluator's module and Worker class), which after_forward compares."""
    return [(name, o, dict(vars(o))) for name, o in (
        ("torch.Tensor", torch.Tensor), ("torch._C.TensorBase", torch._C.TensorBase), ("builtins", builtins),
        *harness.items(), ("fences", sys.modules[__name__]),
        ("Connection", _mpc.Connection), ("_ConnectionBase", _mpc._ConnectionBase))]


def after_forward(w, worker_cls):
    """Raise if forward left a torch function or dispatch mode active or replaced anything the harness touches
    next (checked before the harness uses them: a patch undone later would escape the audits)."""
    if any(n() for n in _modes):
        raise Verdict("rejected", "monkeypatch", "forward left a torch function or dispatch mode active")
    changed = [f"{name}.{k}" for name, o, before in w.guard for now in (vars(o),)
               if not unchanged(now, before)  # by identity first: the check by name below only where it fails
               for k in before.keys() | now.keys()  # by name (`is`: no candidate __eq__ runs here)
               if before.get(k) is not now.get(k) and not torch_own(now.get(k))]
    changed += [f"worker.{k}" for k, v in w.owned.items() if vars(w).get(k) is not v]
    changed += [f"worker.{k}" for k in vars(w).keys() - WORKER_ATTRS]  # a method shadowed on the instance
    changed += [] if type(w) is worker_cls and type(w.conn).__module__ == "multiprocessing.connection" \
        else ["worker's class or connection"]
    if changed:
        raise Verdict("rejected", "monkeypatch", f"forward replaced {', '.join(sorted(changed)[:8])}")


def background_probe(w, outs, snap, same):
    """On correctness calls: is the output still changing after forward returned? A change after the full
    synchronize (w.recv was copied after it) comes from the host, so it is asked first: a thread that queues work
    whose writes land just before that synchronize is background_thread, not side_stream."""
    time.sleep(0.02)
    if w.cuda:
        _cuda_sync()
    if any(not same(r, o) for r, o in zip(w.recv, outs)):
        raise Verdict("rejected", "background_thread", "the output changed after forward returned: work "
                      "continues in the background")
    if w.cuda and any(s is not None and not same(s, r) for s, r in zip(snap, w.recv)):
        raise Verdict("rejected", "side_stream", "the output was still being written after forward returned and "
                      "its stream finished: work on another stream is not joined to the current stream")


def audit_worker(w, namespaces):
    """The worker's audit (Worker.audit): its constants, the watched namespaces, tracing hooks, global flags; the
    digest of its baselines."""
    w._check_consts()
    getters = (sys.getprofile, sys.gettrace, threading.getprofile, threading.gettrace)
    hooks = [f"{f.__module__}.{f.__name__[3:]}" for f in getters if f() is not None]
    bad = patched(w.attrs, namespaces) + hooks
    if bad:
        raise Verdict("rejected", "monkeypatch", f"replaced: {', '.join(sorted(bad)[:8])}")
    changed = flags_moved(w.flags0, global_flags())
    if changed:
        raise Verdict("rejected", "backend_flags", "global settings changed: " + "; ".join(changed))
    return w.digest()


_CUDART = []  # the CUDA runtime torch loaded, found once (before any candidate code runs in the worker)


def cudart():
    """ctypes handle on the libcudart this process mapped (for the L2 calls torch does not expose), or None."""
    if not _CUDART:
        maps = Path("/proc/self/maps").read_text().splitlines() if sys.platform == "linux" else []
        paths = [ln.split()[-1] for ln in maps if "libcudart" in ln]
        _CUDART.append(ctypes.CDLL(paths[0]) if paths and torch.cuda.is_initialized() else None)
    return _CUDART[0]


def _persisting_l2():
    """Bytes of L2 set aside for persisting accesses (cudaLimitPersistingL2CacheSize): a carve-out survives the
    flush before every timed call, so a candidate that sets one is changing a global setting."""
    size, rt = ctypes.c_size_t(), cudart()
    if rt is None or rt.cudaDeviceGetLimit(ctypes.byref(size), 0x06) != 0:  # 0x06: cudaLimitPersistingL2CacheSize
        raise RuntimeError("no CUDA runtime in this process")
    return size.value


def flush_l2(buf):
    """Before every timed call on CUDA: ~1 ms of writes over buf, a buffer of twice the L2 (the GPU's clocks come up
    from idle, and the L2 holds none of the inputs), then a synchronize."""
    rt = cudart()
    if rt is not None:  # lines a candidate marked persisting become normal ones
        rt.cudaCtxResetPersistingL2Cache()
    for _ in range(max(1, (4 << 30) // (4 * buf.numel()))):  # ~4 GB written
        buf.zero_()
    _cuda_sync()


HOLD_NS = 500_000  # the hold before every timed call on CUDA: longer than most forwards take to launch


def _hold_kernel(ns, seen):  # every thread spins on the GPU's clock for ns (made a Triton kernel by gpu_hold); first,
    # each block's thread 0 writes 1 into its int32 of host memory at address seen, made visible to the CPU (membar.sys)
    up = tl.inline_asm_elementwise(
        "{ .reg .pred p; .reg .u32 t; .reg .u64 a; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0; mov.u32 t, %ctaid.x; "
        "mad.wide.u32 a, t, 4, $1; @p st.volatile.global.u32 [a], 1; @p membar.sys; mov.u32 $0, 0; }",
        "=r,l", [seen], dtype=tl.int32, is_pure=False, pack=1)
    t0 = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1) + up
    t = t0
    while t - t0 < ns:
        t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


def gpu_hold(device):
    """fn(ns) that queues, on the current stream, a kernel holding every SM (two blocks of 1024 threads each: all
    thread slots) for ns, and returns once its last block runs (spinning on host memory the kernel writes; at most
    5 ms); None without Triton or if it fails here.

    Queued before a timed call's first event it hides the CPU's launch latency, which moves from process to process,
    and, the SMs being full, no kernel the candidate puts on another stream can run during it (a stream-local sleep
    would let an unjoined fork do its work for free). Forward starts only once the hold is on the SMs: queued
    earlier, a side stream's kernel can run before it (bench/RESULTS.md)."""
    try:
        import triton
        globals()["tl"] = importlib.import_module("triton.language")  # the name _hold_kernel's body uses
        kernel = triton.jit(_hold_kernel)
        grid = (2 * torch.cuda.get_device_properties(device).multi_processor_count,)
        seen = torch.zeros(grid, dtype=torch.int32, pin_memory=True).numpy()  # pinned: the GPU writes it directly
        sink = torch.zeros(grid, dtype=torch.int32, device=device)  # where the writes go if it cannot
        rt, on_gpu = cudart(), ctypes.c_void_p()  # seen's address on the device
        waits = rt is not None and rt.cudaHostGetDevicePointer(
            ctypes.byref(on_gpu), ctypes.c_void_p(seen.ctypes.data), 0) == 0 and bool(on_gpu.value)
        if rt is not None and not waits:
            rt.cudaGetLastError()  # clear the failed call's error, which torch's next launch check would raise
        at = on_gpu.value if waits else sink.data_ptr()

        def hold(ns):
            seen[-1] = 0
            kernel[grid](ns, at, num_warps=32)
            t = _perf()
            while waits and not seen[-1] and _perf() - t < 5e-3:
                pass
        hold.buffers = seen, sink  # alive as long as the hold: the kernel writes into one of them
        hold(HOLD_NS)  # compiles for these arguments (Triton specialises ints); cached on disk after the first process
        _cuda_sync()
        waits = waits and bool(seen[-1])  # the kernel's write never arrived here: hold without waiting for it
        return hold
    except Exception:  # no Triton, or it cannot build here: timed calls start from an idle GPU, launch included
        return None


def flags_moved(before, now):
    """["name: before -> now"] for each setting in `now` other than in `before`."""
    return [f"{k}: {before[k]} -> {v}" for k, v in now.items() if v != before[k]]


def global_flags(limits=True):
    """Global settings that change numerics or speed; a candidate must not touch them. limits=False: the ATen
    settings alone, no call to the CUDA runtime (safe inside any op, in a graph capture too)."""
    b = torch.backends
    getters = {
        "cuda.matmul.allow_tf32": lambda: b.cuda.matmul.allow_tf32, "cudnn.allow_tf32": lambda: b.cudnn.allow_tf32,
        "cudnn.benchmark": lambda: b.cudnn.benchmark, "cudnn.deterministic": lambda: b.cudnn.deterministic,
        "cudnn.enabled": lambda: b.cudnn.enabled, "mkldnn.enabled": lambda: b.mkldnn.enabled,
        "fp16_reduced_precision": lambda: b.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "bf16_reduced_precision": lambda: b.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "float32_matmul_precision": torch.get_float32_matmul_precision, "num_threads": torch.get_num_threads,
        "default_dtype": torch.get_default_dtype,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
        **({"persisting_l2": _persisting_l2} if limits else {}),
    }
    out = {}
    for k, get in getters.items():
        try:
            out[k] = str(get())
        except (AttributeError, RuntimeError) as e:  # a flag this torch build does not have
            out[k] = f"n/a ({type(e).__name__})"
    return out
