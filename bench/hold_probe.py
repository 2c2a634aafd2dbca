"""Does the evaluator's GPU hold keep another stream's kernel from running before a timed call's first event?

    python bench/hold_probe.py            # on a CUDA machine; prints one line per variant

A worker's timed call queues the hold (evaluator._gpu_hold: 2 blocks of 1024 threads per SM spinning for HOLD_NS),
then the first event, then forward. A forward that puts its work on a side stream that never waits for forward's
stream (tests/corpus/honest/cuda_fork_without_wait) must not finish it before that event. Each variant runs that
sequence (a ReLU of 2^26 floats on the side stream, the current stream waiting for it at the end) and prints the
events' ms (first to last event: what the candidate is charged on CUDA) against the ReLU alone."""
import statistics

import torch
import triton

import evaluator as E


def timed(hold, ns, x, side, on_default=True):
    cur = torch.cuda.current_stream() if on_default else torch.cuda.Stream()
    with torch.cuda.stream(cur):
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        ev[2].record(cur)
        if hold:
            hold(ns)
        ev[0].record(cur)
        with torch.cuda.stream(side):
            torch.relu(x)
        cur.wait_stream(side)
        ev[1].record(cur)
        torch.cuda.synchronize()
    return ev[2].elapsed_time(ev[0]), ev[0].elapsed_time(ev[1])


def main():
    props = torch.cuda.get_device_properties(0)
    compiled = triton.jit(E._hold_kernel)[(1,)](1000, num_warps=32)
    print(f"{torch.cuda.get_device_name()}, {props.multi_processor_count} SMs, torch {torch.__version__}, triton "
          f"{triton.__version__}; the hold's kernel: {getattr(compiled, 'n_regs', '?')} registers a thread")
    hold, x = E._gpu_hold("cuda"), torch.randn(2 ** 26, device="cuda")
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
              f"{statistics.median(r[1] for r in runs):.4f} ms")


if __name__ == "__main__":
    main()
