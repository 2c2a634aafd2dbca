"""Does the evaluator's GPU hold keep another stream's kernel from running before a timed call's first event?

    PYTHONPATH=. python3 bench/hold_probe.py     # on a CUDA machine; prints one line per variant

A worker's timed call queues the hold (evaluator._gpu_hold: 2 blocks of 1024 threads per SM spinning for HOLD_NS;
since session 32 it returns once the hold's last block runs), then the first event, then forward. A forward that
puts its work on a side stream that never waits for forward's stream (tests/corpus/honest/cuda_fork_without_wait)
must not finish it before that event. Each variant runs that
sequence (a ReLU of 2^26 floats on the side stream, the current stream waiting for it at the end) and prints the
events' ms (first to last event: what the candidate is charged on CUDA) against the ReLU alone. Then a traced run:
the hold's kernel with each block's SM and start/end on the GPU's clock, and a side-stream kernel whose blocks note
where and when they started: which SMs the hold left room on, and whether side blocks ran inside it."""
import statistics
import subprocess
import sys
import time

import torch
import triton
import triton.language as tl

import evaluator as E

# for the evaluator's path: honest/cuda_fork_without_wait with events of its own. Each call records one event on
# forward's stream as forward starts (after the worker's hold and first event, in that stream's order) and two around
# the side stream's ReLU; the 40th call raises with the last calls' (side start - forward's start, ReLU) ms, so the
# result's reason carries them. A negative first number: the ReLU began before forward's stream got past the hold.
DIAG = """
import json
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side, self.log = None, []

    def forward(self, x):
        if self.side is None:
            self.side = torch.cuda.Stream()
        cur, ev = torch.cuda.current_stream(), [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        ev[0].record(cur)
        with torch.cuda.stream(self.side):
            ev[1].record(self.side)
            y = torch.relu(x)
            ev[2].record(self.side)
        cur.wait_stream(self.side)
        self.log.append(ev)
        if len(self.log) == 40:
            torch.cuda.synchronize()
            rows = [(round(a.elapsed_time(b), 4), round(b.elapsed_time(c), 4)) for a, b, c in self.log[8:]]
            raise RuntimeError("DIAG " + json.dumps(rows))
        return y
"""


def timed(hold, ns, x, side, on_default=True):
    cur = torch.cuda.current_stream() if on_default else torch.cuda.Stream()
    with torch.cuda.stream(cur):
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        ev[2].record(cur)
        t = time.perf_counter()
        if hold:
            hold(ns)  # returns once the hold's last block runs (the evaluator's wait)
        waited = time.perf_counter() - t
        ev[0].record(cur)
        with torch.cuda.stream(side):
            torch.relu(x)
        cur.wait_stream(side)
        ev[1].record(cur)
        torch.cuda.synchronize()
    return ev[2].elapsed_time(ev[0]), ev[0].elapsed_time(ev[1]), waited * 1e6


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _sm():
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _hold_traced(ns, out):  # evaluator._hold_kernel, noting (start, end, SM) per block
    t0 = _now()
    t = t0
    while t - t0 < ns:
        t = _now()
    i = tl.program_id(0) * 3
    tl.store(out + i, t0)
    tl.store(out + i + 1, t)
    tl.store(out + i + 2, _sm().to(tl.int64))


@triton.jit
def _side_traced(out):  # a side kernel's block: notes its start and SM, spins 2 us
    t0 = _now()
    t = t0
    while t - t0 < 2000:
        t = _now()
    i = tl.program_id(0) * 2
    tl.store(out + i, t0)
    tl.store(out + i + 1, _sm().to(tl.int64))


def traced(blocks_per_sm, warps, side_blocks=1024):
    """The hold (blocks_per_sm blocks of `warps` warps per SM) then a side kernel of side_blocks blocks of 4 warps."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    h = torch.zeros(blocks_per_sm * sms * 3, dtype=torch.int64, device="cuda")
    s = torch.zeros(side_blocks * 2, dtype=torch.int64, device="cuda")
    side = torch.cuda.Stream()
    for _ in range(3):  # the first compiles
        torch.cuda.synchronize()
        _hold_traced[(blocks_per_sm * sms,)](500_000, h, num_warps=warps)
        with torch.cuda.stream(side):
            _side_traced[(side_blocks,)](s, num_warps=4)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
    h, s = h.view(-1, 3).cpu(), s.view(-1, 2).cpu()
    end = int(h[:, 1].min())
    per_sm = torch.bincount(h[:, 2], minlength=sms)
    early = s[s[:, 0] < end]
    print(f"traced hold, {blocks_per_sm} blocks of {warps} warps per SM: blocks on {int((per_sm > 0).sum())} of "
          f"{sms} SMs (at most {int(per_sm.max())} on one, SMs with fewer than {blocks_per_sm}: "
          f"{int(((per_sm > 0) & (per_sm < blocks_per_sm)).sum())}, largest SM id {len(per_sm) - 1}); blocks started "
          f"over {(int(h[:, 0].max()) - int(h[:, 0].min())) / 1e3:.1f} us; side blocks started before the hold's "
          f"first block ended: {len(early)} of {side_blocks} (on SMs {sorted(set(early[:, 1].tolist()))[:12]})")


def main():
    props, hold = torch.cuda.get_device_properties(0), E._gpu_hold("cuda")  # defines evaluator.tl
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")  # device memory: the kernel's write lands somewhere safe
    compiled = triton.jit(E._hold_kernel)[(1,)](1000, flag.data_ptr(), num_warps=32)
    print(f"{torch.cuda.get_device_name()}, {props.multi_processor_count} SMs, torch {torch.__version__}, triton "
          f"{triton.__version__}; the hold's kernel: {getattr(compiled, 'n_regs', '?')} registers a thread")
    x = torch.randn(2 ** 26, device="cuda")
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    alone = []
    for _ in range(5):
        a.record(), torch.relu(x), b.record(), torch.cuda.synchronize()
        alone.append(a.elapsed_time(b))
    print(f"the ReLU alone: {statistics.median(alone):.4f} ms")
    for name, h, ns, side, default in (
            ("no hold", None, 0, torch.cuda.Stream(), True),
            ("hold 0.5 ms (HOLD_NS)", hold, E.HOLD_NS, torch.cuda.Stream(), True),
            ("hold 2 ms", hold, 2_000_000, torch.cuda.Stream(), True),
            ("hold 0.5 ms, a high-priority side stream", hold, E.HOLD_NS, torch.cuda.Stream(priority=-1), True),
            ("hold 0.5 ms, forward's stream not the default", hold, E.HOLD_NS, torch.cuda.Stream(), False)):
        runs = [timed(h, ns, x, side, default) for _ in range(6)][1:]
        print(f"{name}: held {statistics.median(r[0] for r in runs):.3f} ms, charged (events) "
              f"{statistics.median(r[1] for r in runs):.4f} ms; hold() returned after "
              f"{statistics.median(r[2] for r in runs):.0f} us")
    for blocks, warps in ((2, 32), (4, 16), (16, 4)):
        traced(blocks, warps)
    # as in an evaluation: another process (the reference's worker) has a CUDA context on the same GPU
    other = subprocess.Popen([sys.executable, "-c", "import torch, time; torch.ones(1, device='cuda'); "
                              "print('up', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    other.stdout.readline()
    runs = [timed(hold, E.HOLD_NS, x, torch.cuda.Stream()) for _ in range(6)][1:]
    print(f"hold 0.5 ms, another process's context alive: held {statistics.median(r[0] for r in runs):.3f} ms, "
          f"charged (events) {statistics.median(r[1] for r in runs):.4f} ms")
    traced(2, 32)
    other.kill()
    ref = open("tasks/level1/relu_large.py").read()
    for pin in (True, False):
        r = E.evaluate(ref, DIAG, "cuda", pin_cpus=pin)
        print(f"the evaluator, pin_cpus={pin}: {r.status}, (side start - forward's start, ReLU) ms per call: "
              f"{r.reason[r.reason.find('DIAG'):][:1500]}")


if __name__ == "__main__":
    main()
