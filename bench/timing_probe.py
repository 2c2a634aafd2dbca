"""Why does a short custom kernel's time move between evaluations? A GPU diagnostic, outside the evaluator.

Session 5's identity + CV run: the reference's time repeated within ~1% between evaluations, but some corpus
candidates' (one custom kernel, 0.1-0.3 ms) moved 5-14% from one evaluation (process) to the next. Two suspects:
  launch  - the CUDA events start on an idle GPU, so they include the CPU's time to reach the first launch (Python,
            pybind11, allocation), which may differ from process to process;
  place   - the kernel's speed depends on where its output lands in memory (fixed per process).
Each (task, candidate) pair is timed in several fresh processes, 3 ways interleaved at random per round, after the
evaluator's flush: `idle` (as the evaluator times), `sleep` (a ~0.3 ms GPU spin queued before the first event, so
the launch is hidden: GPU time only), `pad` (idle, with a random-sized allocation made first: a new output place
each round). Per way: the spread of the per-process medians (max/min - 1) over processes. If `sleep` is steady and
`idle` is not, the launch is the cause; if `pad` is steadier than `idle`, placement.

    TORCH_CUDA_ARCH_LIST=9.0 python bench/timing_probe.py --procs 4
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [("level2/silu_mul_clamp", "cuda_l2_silu_mul_clamp"), ("level1/sum_lastdim", "cuda_sum_lastdim_warp"),
         ("cpu/relu", "cuda_relu"), ("level2/bias_gelu", "cuda_l2_bias_gelu")]


def load(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def one(task, cand, rounds):
    """In this (fresh) process: ms per way for the reference and the candidate, medians over the rounds."""
    import torch
    ref = load(ROOT / "tasks" / f"{task}.py", "ref")
    new = load(ROOT / "tests" / "corpus" / "honest" / f"{cand}.py", "cand")
    torch.manual_seed(0)
    models = {"ref": ref.Model(*ref.get_init_inputs()).cuda(), "cand": None}
    torch.manual_seed(0)
    models["cand"] = new.ModelNew(*ref.get_init_inputs()).cuda()
    xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
    flush = torch.empty((256 << 20) // 4, device="cuda")
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record(), torch.cuda._sleep(10 ** 7), ev[1].record(), torch.cuda.synchronize()
    cycles_per_ms = 10 ** 7 / ev[0].elapsed_time(ev[1])
    got = {(s, w): [] for s in models for w in ("idle", "sleep", "pad")}
    for k in range(rounds + 10):
        for side, way in random.sample(list(got), len(got)):
            for _ in range(16):  # ~4 GB written, as the evaluator's prep
                flush.zero_()
            torch.cuda.synchronize()
            pad = torch.empty(random.randrange(1, 64 << 20), dtype=torch.uint8, device="cuda") if way == "pad" else None
            if way == "sleep":
                torch.cuda._sleep(int(0.3 * cycles_per_ms))
            ev[0].record()
            out = models[side](*xs)
            ev[1].record()
            torch.cuda.synchronize()
            if k >= 10:
                got[(side, way)].append(ev[0].elapsed_time(ev[1]))
            del out, pad
    med = lambda v: sorted(v)[len(v) // 2]
    return {f"{s} {w}": med(v) for (s, w), v in got.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--one", nargs=2)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(*a.one, a.rounds)))
        return
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", "/tmp/cudal1_probe_ext")
    t0 = time.time()
    first = [subprocess.Popen([sys.executable, __file__, "--rounds", "1", "--one", t, c], stdout=subprocess.DEVNULL)
             for t, c in PAIRS]  # builds, in parallel
    for p in first:
        p.wait()
    print(f"builds: {time.time() - t0:.0f} s\n")
    print("| task | way | ref ms per process | cand ms per process | ref spread | cand spread |\n|---|---|---|---|---|---|")
    for t, c in PAIRS:
        runs = []
        for _ in range(a.procs):
            out = subprocess.run([sys.executable, __file__, "--rounds", str(a.rounds), "--one", t, c],
                                 capture_output=True, text=True)
            if out.returncode:
                print(f"| {t} | failed: {out.stderr.strip().splitlines()[-1:]} |")
                break
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        for way in ("idle", "sleep", "pad") if runs else ():
            r, cd = ([x[f"{s} {way}"] for x in runs] for s in ("ref", "cand"))
            spread = lambda v: f"{(max(v) / min(v) - 1) * 100:.1f}%"
            print(f"| {t} | {way} | {' '.join(f'{x:.4f}' for x in r)} | {' '.join(f'{x:.4f}' for x in cd)} "
                  f"| {spread(r)} | {spread(cd)} |")
    print(f"\n{time.time() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
