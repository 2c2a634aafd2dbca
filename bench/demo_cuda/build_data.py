"""bench/demo_cuda/build_data.py: evaluate the hand-written CUDA candidates in bench/demo_cuda/candidates on a GPU and
write stage-1 data (the CUDA twin of bench/demo/build_data.py).

    python bench/demo_cuda/build_data.py                                  # every task -> bench/demo_cuda/stage1.jsonl
    python bench/demo_cuda/build_data.py --tasks relu_large,elu --out /tmp/s1.jsonl
    python bench/demo_cuda/build_data.py --device cpu --tasks elu         # only checks the script runs (no GPU)

A candidate lives at candidates/<task stem>/<kind>_<name>.py for the task tasks/level1/<task stem>.py, its intended
kind (slower, faster, wrong, broken) being the file name's prefix. Every candidate is run through
evaluator.evaluate_many; each JSONL record holds task, candidate, ref_code, code, kind (intended) and result (the
evaluator's Result.to_dict(), never edited), the same fields as bench/demo's. The table's last column says where the
measured verdict and the intended kind disagree. On a CPU the CUDA candidates fail to build: that is expected.
"""
import argparse
import fnmatch
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # H200 (sm_90): build for it only, before torch reads it
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # the repo root, for evaluator.py
import evaluator  # noqa: E402

KINDS = ("faster", "slower", "wrong", "broken")

# ---------------------------------------------------------------------------- candidates


def find_candidates(task_filter):
    """[(task name, ref_src, candidate name, kind, cand_src)] for every candidates/<stem> folder's level1 task."""
    items = []
    for folder in sorted(p for p in (HERE / "candidates").iterdir() if p.is_dir()):
        path = evaluator.TASKS_DIR / "level1" / f"{folder.name}.py"
        task = evaluator.task_name(path)  # 'level1/relu_large'
        if task_filter and not any(fnmatch.fnmatch(task, p) or fnmatch.fnmatch(path.stem, p) for p in task_filter):
            continue
        ref_src = evaluator.load_task(path)
        for f in sorted(folder.glob("*.py")):
            kind = f.stem.split("_", 1)[0]
            if kind not in KINDS:
                raise SystemExit(f"{f}: the file name must start with one of {', '.join(KINDS)}")
            items.append((task, ref_src, f.stem, kind, f.read_text()))
    return items

# ---------------------------------------------------------------------------- verdicts


def agrees(kind, r):
    """Whether the evaluator's verdict is the kind the author intended (speedups within 5% of 1 count as a tie)."""
    if kind == "broken":
        return r.status in ("compile_error", "runtime_error")
    if kind == "wrong":
        return r.status == "wrong_output"
    if r.status != "ok" or r.speedup is None:
        return False
    return r.speedup > 1.05 if kind == "faster" else r.speedup < 0.95


def table(items, results):
    """Markdown rows: task | candidate | intended kind | status | speedup | check | agrees."""
    rows = ["| task | candidate | intended | status | speedup | check | agrees |", "|---|---|---|---|---|---|---|"]
    for (task, _, name, kind, _), r in zip(items, results):
        speed = f"{r.speedup:.2f}x" if r.speedup is not None else "-"
        rows.append(f"| {task} | {name} | {kind} | {r.status} | {speed} | {r.check or '-'} | "
                    f"{'yes' if agrees(kind, r) else 'NO'} |")
    return "\n".join(rows)

# ---------------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description="evaluate bench/demo_cuda/candidates and write stage-1 JSONL",
                                allow_abbrev=False)
    p.add_argument("--tasks", default="", help="comma-separated task names or globs (level1/elu, softplus, '*')")
    p.add_argument("--device", default="cuda", help="evaluator device: cuda (every visible GPU) or cuda:N; cpu only "
                                                    "to check the script runs")
    p.add_argument("--out", default=str(HERE / "stage1.jsonl"), help="output JSONL file")
    p.add_argument("--time-budget", type=float, default=1.0, help="evaluator time_budget_s per side (seconds)")
    args = p.parse_args()
    items = find_candidates([s.strip() for s in args.tasks.split(",") if s.strip()])
    if not items:
        raise SystemExit(f"no candidates for --tasks {args.tasks!r}")
    t0 = time.time()
    results = evaluator.evaluate_many([(ref, cand) for _, ref, _, _, cand in items], device=args.device,
                                      time_budget_s=args.time_budget)
    with open(args.out, "w") as f:
        for (task, ref, name, kind, cand), r in zip(items, results):
            f.write(json.dumps(dict(task=task, candidate=name, ref_code=ref, code=cand, kind=kind,
                                    result=r.to_dict())) + "\n")
    print(table(items, results))
    n_ok = sum(r.status == "ok" for r in results)
    n_agree = sum(agrees(k, r) for (_, _, _, k, _), r in zip(items, results))
    print(f"\n{len(items)} candidates, {n_ok} ok, {n_agree} as intended; {time.time() - t0:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
