"""bench/demo/build_data.py: evaluate the hand-written candidates in bench/demo/candidates and write stage-1 data.

    python bench/demo/build_data.py                                   # every task -> bench/demo/stage1.jsonl
    python bench/demo/build_data.py --tasks cpu/relu,cpu/softmax --out /tmp/s1.jsonl

A candidate lives at candidates/<task stem>/<kind>_<name>.py, its intended kind (slower, faster, wrong, broken) being
the file name's prefix. Every candidate is run through evaluator.evaluate_many on the CPU; each JSONL record holds
task, candidate, ref_code, code, kind (intended) and result (the evaluator's Result.to_dict(), never edited). The
intended kind is what the author meant; the result is what the evaluator measured, and the two can disagree (a
"faster" rewrite that only ties, a "wrong" one within tolerance): the table's last column says where they do.
`python rl.py --stage sft --data stage1.jsonl` trains on the records whose result is ok (slower ones included).
A run cut short keeps what it evaluated in OUT.partial; the same command again goes on from there.
"""
import argparse
import fnmatch
import json
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # the repo root, for evaluator.py
import evaluator  # noqa: E402

KINDS = ("faster", "slower", "wrong", "broken")

# ---------------------------------------------------------------------------- candidates


def find_candidates(task_filter, folder=HERE / "candidates"):
    """[(task name, ref_src, candidate name, kind, cand_src)]: one subfolder of `folder` per task, named by the task's
    file stem (relu -> tasks/cpu/relu.py, relu_large -> tasks/level1/relu_large.py)."""
    items = []
    for sub in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        path = evaluator.find_tasks(sub.name)[0]
        task = evaluator.task_name(path)  # 'cpu/relu'
        if task_filter and not any(fnmatch.fnmatch(task, p) or fnmatch.fnmatch(path.stem, p) for p in task_filter):
            continue
        ref_src = evaluator.load_task(path)
        for f in sorted(sub.glob("*.py")):
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


def main(argv=None, here=HERE, device="cpu", time_budget=0.2, find=find_candidates):
    """The command line; bench/demo_cuda/build_data.py calls it with its own folder and defaults, and
    bench/real/make_stage1.py with its own find (task filter, folder) -> items."""
    p = argparse.ArgumentParser(description=f"evaluate {here}/candidates and write stage-1 JSONL", allow_abbrev=False)
    p.add_argument("--tasks", default="", help="comma-separated task names or globs (cpu/relu, softmax, 'cpu/*')")
    p.add_argument("--device", default=device, help="evaluator device (cuda: every visible GPU)")
    p.add_argument("--out", default=str(here / "stage1.jsonl"), help="output JSONL file")
    p.add_argument("--time-budget", type=float, default=time_budget, help="evaluator time_budget_s per side (seconds)")
    args = p.parse_args(argv)
    items = find([s.strip() for s in args.tasks.split(",") if s.strip()], here / "candidates")
    if not items:
        raise SystemExit(f"no candidates for --tasks {args.tasks!r}")
    t0, partial = time.time(), Path(args.out + ".partial")
    # a run cut short (a time limit) keeps what it evaluated in OUT.partial, and the same command
    # goes on from there: the records of unchanged candidates are taken, the rest evaluated. A line a kill tore
    # (no newline yet) is cut off, so that the next record starts a line of its own; its candidate is evaluated again
    lines = partial.read_text().splitlines(keepends=True) if partial.exists() else []
    if lines and not lines[-1].endswith("\n"):
        lines.pop()
        partial.write_text("".join(lines))
    kept = {(r["task"], r["candidate"], r["code"]): r for r in map(json.loads, lines)}
    todo = [i for i, (task, _, name, _, cand) in enumerate(items) if (task, name, cand) not in kept]
    print(f"{len(items) - len(todo)} of {len(items)} candidates evaluated before ({partial}); evaluating the rest",
          flush=True)

    def record(i, r):
        task, ref, name, kind, cand = items[i]
        return dict(task=task, candidate=name, ref_code=ref, code=cand, kind=kind, result=r.to_dict())

    lock = threading.Lock()

    def save(j, r):  # as each finishes (from evaluate_many's threads, one per GPU)
        with lock, open(partial, "a") as f:
            f.write(json.dumps(record(todo[j], r)) + "\n")
    fresh = evaluator.evaluate_many([items[i][1::3] for i in todo], device=args.device, on_result=save,
                                    time_budget_s=args.time_budget)
    found = dict(zip(todo, fresh))
    results = [found[i] if i in found else evaluator.Result(**kept[it[0], it[2], it[4]]["result"])
               for i, it in enumerate(items)]
    with open(args.out, "w") as f:
        for i, r in enumerate(results):
            f.write(json.dumps(record(i, r)) + "\n")
    partial.unlink(missing_ok=True)
    print(table(items, results))
    n_ok = sum(r.status == "ok" for r in results)
    n_agree = sum(agrees(k, r) for (_, _, _, k, _), r in zip(items, results))
    print(f"\n{len(items)} candidates, {n_ok} ok, {n_agree} as intended; {time.time() - t0:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
