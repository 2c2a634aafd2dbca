"""Time each task's eager reference on one device and classify it memory- or compute-bound.

    python bench/time_tasks.py                                   # every task, on cuda
    python bench/time_tasks.py --task 'level1/*' --out bench/task_times.md
    python bench/time_tasks.py --device cpu --task 'cpu/*'       # the CPU tasks, wall clock
    python bench/time_tasks.py --compile                          # + torch.compile's time: the field's 2nd baseline

Per task: exec the file into a fresh module, build Model and inputs with a fixed seed (on CPU, as a harness does), move
them to the device, warm up, then time the forward under torch.no_grad(): a CUDA event pair around each call (wall
clock on CPU), the L2 flushed before every timed call by writing a 256 MB buffer, median over --iters calls.
- GB moved = inputs + outputs + parameters and buffers: what a perfectly fused kernel must touch (intermediates of the
  eager version are not counted, so this is a lower bound).
- GFLOP from torch.utils.flop_counter.FlopCounterMode on one call on the meta device (shapes only; cuDNN's fused RNN
  has no FLOP formula but its meta-device decomposition does): it counts matmuls, convolutions and attention, not
  elementwise work or reductions, so memory-bound tasks read as ~0.
- bound: FLOP/byte above the H200 fp32 ridge (50 TFLOP/s / 4.3 TB/s ~ 12) is compute-bound, else memory-bound.
- >= 50 us: whether the reference is long enough to time a candidate against (the task suite's size target).
- --compile: torch.compile(Model) (default mode) timed the same way after its first call (whose seconds, mostly
  compilation, are reported), and eager ms / compiled ms.
"""
import argparse
import datetime
import gc
import re
import shlex
import statistics
import sys
import time
import types
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import evaluator  # noqa: E402

RIDGE_FLOP_PER_BYTE = 50e12 / 4.3e12  # H200, fp32 without TF32

try:
    from tqdm import tqdm
except ImportError:  # tqdm is optional
    def tqdm(xs, **_):
        return xs


# ---------------------------------------------------------------------------- load and build

def load_module(src, name):
    """Execute task source into a fresh module, so no task sees another's globals."""
    mod = types.ModuleType(f"task_{re.sub(r'[^0-9a-zA-Z_]', '_', name)}")
    exec(compile(src, name, "exec"), mod.__dict__)
    return mod


def build(mod, seed, device):
    """Model and inputs made on CPU from a fixed seed, then moved to the device."""
    torch.manual_seed(seed)
    model = mod.Model(*mod.get_init_inputs())
    inputs = mod.get_inputs()
    model = model.to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    return model, inputs


def tensors(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def nbytes(ts):
    return sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))


# ---------------------------------------------------------------------------- time

def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_forward(model, inputs, device, warmup, iters, flush):
    """Median milliseconds of one eager forward, L2 flushed before each call."""
    times = []
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        sync(device)
        for _ in range(iters):
            if flush is not None:
                flush.zero_()  # write 256 MB so the task's data is no longer in L2
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(*inputs)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                model(*inputs)
                times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def count_work(model, inputs):
    """(bytes, FLOPs) of one forward: inputs + outputs + params and buffers; FLOPs as FlopCounterMode counts them."""
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        outs = tensors(model(*inputs))
    moved = nbytes(inputs) + nbytes(outs) + nbytes(list(model.parameters()) + list(model.buffers()))
    return moved, counter.get_total_flops()


def measure(path, args, device, flush):
    """One table row for one task file."""
    name = evaluator.task_name(path, args.tasks_dir)
    mod = load_module(evaluator.load_task(path), name)
    model, inputs = build(mod, args.seed, device)
    try:
        # count on the meta device first: shapes only, and fused library calls with no FLOP formula (cuDNN's RNN
        # kernels) run there as their decomposition, which FlopCounterMode does count
        try:
            with torch.device("meta"):
                meta_model, meta_inputs = mod.Model(*mod.get_init_inputs()), mod.get_inputs()
            moved, flops = count_work(meta_model, meta_inputs)
        except NotImplementedError:  # an op without a meta kernel: count on the real device
            moved, flops = count_work(model, inputs)
        ms = time_forward(model, inputs, device, args.warmup, args.iters, flush)
        compiled = []
        if args.compile:
            fast = torch.compile(model)
            t0 = time.perf_counter()
            with torch.no_grad():
                fast(*inputs)
            sync(device)
            first = time.perf_counter() - t0
            cms = time_forward(fast, inputs, device, args.warmup, args.iters, flush)
            compiled = [f"{cms:.3f}", f"{ms / cms:.2f}", f"{first:.1f}"]
    finally:
        del model, inputs
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    bound = "compute" if flops / moved > RIDGE_FLOP_PER_BYTE else "memory"
    return [name, f"{ms:.3f}", f"{moved / 1e9:.3f}", f"{flops / 1e9:.1f}", bound, "yes" if ms >= 0.050 else "NO",
            *compiled]


# ---------------------------------------------------------------------------- main

def markdown(rows, compiled=False):
    head = ["task", "ms", "GB moved", "GFLOP", "bound", ">= 50 us"] + ["compiled ms", "eager/compiled",
                                                                       "first call s"] * compiled
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="all", help="'all', a stem, a glob like 'level1/*', a path, or a comma list")
    p.add_argument("--tasks-dir", default=str(evaluator.TASKS_DIR), help="folder holding the task files")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda, cuda:N or cpu")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before timing")
    p.add_argument("--iters", type=int, default=30, help="timed calls per task (median reported; at least 20)")
    p.add_argument("--flush-mb", type=int, default=256, help="MB written before each timed call to flush L2 (0: off)")
    p.add_argument("--threads", type=int, default=0, help="CPU intra-op threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and inputs")
    p.add_argument("--compile", action="store_true", help="also time torch.compile of each reference")
    p.add_argument("--out", default=None, help="also write the table (with a header naming device and date) here")
    args = p.parse_args()
    if args.iters < 20:
        p.error("--iters must be at least 20 for a stable median")

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    paths = evaluator.find_tasks(args.task, args.tasks_dir)
    flush = torch.empty(args.flush_mb * 2**20 // 4, dtype=torch.int32, device=device) if args.flush_mb else None
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"

    rows = []
    for path in tqdm(paths, desc="tasks", unit="task"):
        try:
            rows.append(measure(path, args, device, flush))
        except (RuntimeError, evaluator.TaskError) as e:  # OOM or a broken task costs one row, not the run
            name = evaluator.task_name(path, args.tasks_dir)
            print(f"{name}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
            rows.append([name, "error", "-", "-", "-", "-"] + ["-"] * 3 * args.compile)

    header = (f"Eager reference times, {where}, torch {torch.__version__}, "
              f"{datetime.date.today().isoformat()}, median of {args.iters} calls, L2 flush {args.flush_mb} MB\n"
              f"command: python {shlex.join(sys.argv)}\n")
    table = markdown(rows, args.compile)
    print(header)
    print(table)
    if args.out:
        Path(args.out).write_text(header + "\n" + table + "\n")


if __name__ == "__main__":
    main()
