"""fences.py: walls around the candidate that evaluator.py calls by name (the older ones still live there).

    memory      what one evaluation of a task needs on its device, and the plan that makes it fit (or one line that
                says it cannot): memory_plan, the only call rl.py makes here. Corpus: honest/cuda_large_memory_bound.
    shared      the buffers a worker shares with the judge, alone in their allocator segments: a CUDA IPC handle maps
                a whole segment, so nothing else of the judge's may sit in one. Corpus: hacks/cuda_ipc_segment_*.
    clean       the reference's level with no candidate process left on the device, which caps what its paired
                rounds may cost (GPU work that outlives SIGSTOP, a second CUDA context). Corpus: hacks/cuda_*_interfere.
    numerics    the flags that change fp32 arithmetic, read right after forward returns. Corpus: hacks/flag_tf32_*.
    host        contexts that sleep while they wait, so that CPU time is work (the host clock). Corpus:
                hacks/cuda_hold_window_cpu.
Imports flow one way: evaluator imports this module, never the reverse.
"""
import ctypes
import math
import types
import weakref
from dataclasses import asdict, dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

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
    each worker's forward (its peak) and parameters; on the device, the oracle's float64 inputs, parameters and
    output, and the comparison's float64 copies of two answers (on the CPU all of it is host memory)."""
    shared = 2 * (sets * ins + outs)
    judge = max(2.25 * ins, ins + peak + outs) + params + (3 * outs if oracle == "device" else 0)
    workers = 2 * (peak + params)
    oracle_bytes = 2 * (ins + params) + 3 * 2 * outs if oracle == "device" else 0
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

    >>> memory_plan(relu_src, "cuda", budget=74 << 30)   # KernelBench 19_ReLU: 6 GiB in, 6 GiB out
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
            # fit there too (the comparisons go in chunks: fences adds no temporaries for them)
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


# ---------------------------------------------------------------------------- clean: the reference with no candidate

def clean_cap(paired, clean, noise=0.02):
    """The most the reference may cost on one clock: its level in the paired rounds, capped by its level with no
    candidate process left (clean rounds) plus the noise between the two, the larger of `noise` x that level and
    3 x the clean rounds' IQR / sqrt(rounds). GPU work the candidate leaves running while the reference is timed
    (a kernel that outlives SIGSTOP, a second CUDA context) slows the paired rounds only.

    >>> clean_cap(2.0, [1.0, 1.0, 1.0])    # paired rounds twice the clean level: the clean level, plus 2%
    1.02
    """
    if not clean:
        return paired
    q = torch.tensor(clean, dtype=torch.float64).quantile(torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    level = float(q[1])
    return min(paired, level + max(noise * level, 3 * float(q[2] - q[0]) / math.sqrt(len(clean))))


# ---------------------------------------------------------------------------- numerics: flags read inside the call

def numeric_flags():
    """The settings that change fp32 arithmetic, read in microseconds: right after every forward returns, before the
    harness runs anything else (a forward that leaves TF32 on, for a thread to turn off later, is seen; one that turns
    it off again before returning is judged by its outputs alone: THREATS.md states the rule)."""
    b = torch.backends
    return (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, torch.get_float32_matmul_precision(),
            b.cuda.matmul.allow_fp16_reduced_precision_reduction, b.cuda.matmul.allow_bf16_reduced_precision_reduction,
            torch.get_default_dtype())


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
