"""Does where a microsecond kernel's tensors sit in GPU memory set its time? (issue 20's repeat CV)

    PYTHONPATH=. python3 bench/placement_probe.py [KERNEL...]   # on a CUDA machine, ~30 s a kernel; a table each
    PYTHONPATH=. python3 bench/placement_probe.py --launch [KERNEL...]   # the level by stream and by CPU (~2 min)
    PYTHONPATH=. python3 bench/placement_probe.py --neighbours [KERNEL...]   # beside other CUDA processes (~1 min)

Each timed call is made as the evaluator makes it: the L2 flush, the inputs copied in from elsewhere (the judge's
fill), the GPU hold, then events around the kernel; a trial is the median of ROUNDS such calls. Every process
(PROCS fresh ones per kernel: new context, new physical memory) runs, for each flush:
  same       one trial on one set of inputs (what one evaluation sees today)
  rot        one trial over SETS input sets, each placed after a spacer of random size, a random set each call
  moved      MOVED trials, each on inputs made anew after a spacer of random size (a new placement per trial)
Flushes: write (the evaluator's: ~4 GB of zeros over a buffer of twice the L2), write+read (then one read of that
buffer: the L2 holds clean lines, none of them dirty), none. Reported: the trials' medians (us) of each process, CV =
stdev / mean across processes (same, rot) and the spread (max / min - 1) of moved within a process.
--launch (session 34 found the level in the launch: an empty kernel 2.94-3.23 us by process, bench/RESULTS.md §5):
ten processes, eight of them pinned to one of four CPUs before their CUDA context exists, each timing the `same`
trial on the default stream and on STREAMS - 1 new ones. Levels that differ by stream within a process would let an
evaluation average over streams; levels that follow the CPU, a pinning at the worker's start.
--neighbours: in one process, the `same` trial alone and beside other processes holding a CUDA context (idle,
stopped), as a session's reference worker sees a new candidate's worker come and go: in session 34 the reference of
cpu/add_mul moved 7.90 -> 7.07 us between two candidates of one session, one process."""
import json
import os
import random
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

import evaluator as E

ROUNDS, PROCS, SETS, MOVED, STREAMS, N = 60, 5, 8, 4, 8, (512, 1024)


@triton.jit
def _add_mul(a, b, c, y, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y + i, (tl.load(a + i, mask=m) + tl.load(b + i, mask=m)) * tl.load(c + i, mask=m), mask=m)


def fused(a, b, c):
    y = torch.empty_like(a)
    _add_mul[(triton.cdiv(a.numel(), 1024),)](a, b, c, y, a.numel(), BLOCK=1024)
    return y


@triton.jit
def _nothing(x):
    pass


KERNELS = {"ref_add_mul": (lambda a, b, c: (a + b) * c, 3), "fused_add_mul": (fused, 3), "relu": (torch.relu, 1),
           "empty": (lambda x: _nothing[(1,)](x), 1)}  # one block that does nothing: the launch alone


def child(name, streams=0, cpu=None, neighbours=0):
    """One fresh process's trials of kernel `name` (JSON on stdout). streams > 0: the `same` trial on the default
    stream and on streams - 1 new ones, each its own trial, with this process first pinned to cpu (before its CUDA
    context exists: where the driver puts the context's host memory). neighbours: the `same` trial as other
    processes with a CUDA context come, stop and go (with_neighbours)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    fn, k = KERNELS[name]
    rng = random.Random()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    buf = torch.empty(max(2 * l2, 64 << 20) // 4, device="cuda")
    hold, ev = E._gpu_hold("cuda"), [torch.cuda.Event(enable_timing=True) for _ in range(2)]

    def write():
        for _ in range(max(1, (4 << 30) // (4 * buf.numel()))):
            buf.zero_()

    flushes = {"write": write, "write+read": lambda: (write(), buf.sum()), "none": lambda: None}
    src = [torch.randn(N, device="cuda") for _ in range(k)]

    def placed():
        spacer = torch.empty(rng.randrange(1, 40 << 20), dtype=torch.uint8, device="cuda")
        return spacer, [torch.empty(N, device="cuda") for _ in range(k)]

    def trial(flush, sets, stream=None):
        ts = []
        for _ in range(ROUNDS):
            with torch.cuda.stream(stream or torch.cuda.current_stream()):
                xs = rng.choice(sets)[1]
                flush()
                for x, s in zip(xs, src):
                    x.copy_(s)
                torch.cuda.synchronize()
                hold(E.HOLD_NS)
                ev[0].record()
                fn(*xs)
                ev[1].record()
                torch.cuda.synchronize()
                ts.append(ev[0].elapsed_time(ev[1]) * 1e3)
        return statistics.median(ts)

    one = [placed()]
    trial(write, one)  # warm-up: Triton's first launches
    if streams:
        ss = [None] + [torch.cuda.Stream() for _ in range(streams - 1)]
        return print(json.dumps([trial(write, one, st) for st in ss]))
    if neighbours:
        return print(json.dumps(with_neighbours(lambda: trial(write, one))))
    rot = [placed() for _ in range(SETS)]
    out = {}
    for f, flush in flushes.items():
        out[f] = {"same": trial(flush, one), "rot": trial(flush, rot),
                  "moved": [trial(flush, [placed()]) for _ in range(MOVED)]}
    print(json.dumps(out))


NEIGHBOUR = "import time, torch; torch.zeros(1, device='cuda'); print('up', flush=True); time.sleep(900)"


def with_neighbours(trial, cycles=3):
    """[(state, trial's median)]: alone, beside one idle process holding a CUDA context (as a candidate's worker
    between calls), beside it stopped (as during the reference's calls), beside two, alone again; `cycles` times."""
    out = []
    for _ in range(cycles):
        out.append(("alone", trial()))
        procs = []
        for state in ("1 idle", "1 stopped", "2, one stopped"):
            if state != "1 stopped":
                procs.append(subprocess.Popen([sys.executable, "-c", NEIGHBOUR], stdout=subprocess.PIPE, text=True))
                if procs[-1].stdout.readline() != "up\n":  # its context exists
                    raise RuntimeError("a neighbour process did not start its CUDA context")
            else:
                procs[0].send_signal(signal.SIGSTOP)
            out.append((state, trial()))
        for p in procs:
            p.kill()
            p.wait()
    out.append(("alone", trial()))
    return out


def run_child(*args):
    """The JSON a fresh process of child(*args) prints."""
    out = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[-1])


def gpu_node():
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True).stdout.strip().lower()
        return Path(f"/sys/bus/pci/devices/{bus[-12:]}/numa_node").read_text().strip()
    except (OSError, IndexError):
        return "?"


def launch(names):
    """--launch: is a process's level its stream's (hardware queue) or the CPU its context was made on?"""
    cpus = sorted(os.sched_getaffinity(0))
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; CPUs {cpus[0]}-{cpus[-1]}; NUMA nodes: "
          f"{len(list(Path('/sys/devices/system/node').glob('node[0-9]*')))}, the GPU's: {gpu_node()}")
    picks = [cpus[i * (len(cpus) - 1) // 3] for i in range(4)] * 2 + [None] * 2
    for name in names:
        print(f"\n### {name}: the same trial on the default stream and {STREAMS - 1} new ones (us)\n\n"
              "| pinned to CPU | per stream | spread | mean |\n|---|---|---|---|")
        means = []
        for cpu in picks:
            ms = run_child(name, STREAMS, cpu)
            means.append(statistics.mean(ms))
            print(f"| {cpu} | {' '.join(f'{m:.2f}' for m in ms)} | {100 * (max(ms) / min(ms) - 1):.1f}% | "
                  f"{means[-1]:.3f} |")
        print(f"\nCV of the processes' means: {100 * statistics.stdev(means) / statistics.mean(means):.1f}%")


def main():
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2], *(int(a) if a != "None" else None for a in sys.argv[3:6]))
    if sys.argv[1:2] == ["--neighbours"]:
        for name in sys.argv[2:] or ["empty", "ref_add_mul"]:
            got = run_child(name, 0, None, 1)
            print(f"\n### {name} beside other CUDA processes (us)\n\n| state | median |\n|---|---|")
            print("\n".join(f"| {state} | {ms:.2f} |" for state, ms in got))
        return
    if sys.argv[1:2] == ["--launch"]:
        return launch(sys.argv[2:] or ["empty", "relu"])
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {ROUNDS} rounds a trial, us per call, "
          f"{PROCS} processes per kernel")
    for name in sys.argv[1:] or KERNELS:
        runs = [run_child(name) for _ in range(PROCS)]
        print(f"\n### {name}\n\n| flush | same: per process | CV | rot: per process | CV | moved: spread in a "
              "process (median, max) |\n|---|---|---|---|---|---|")
        for f in runs[0]:
            cells = []
            for c in ("same", "rot"):
                xs = [r[f][c] for r in runs]
                cells += [" ".join(f"{x:.2f}" for x in xs), f"{100 * statistics.stdev(xs) / statistics.mean(xs):.1f}%"]
            sp = [100 * (max(r[f]["moved"]) / min(r[f]["moved"]) - 1) for r in runs]
            print(f"| {f} | {' | '.join(cells)} | {statistics.median(sp):.1f}%, {max(sp):.1f}% |")


if __name__ == "__main__":
    main()
