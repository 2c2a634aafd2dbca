"""bench/rescore.py: re-score other systems' kernels with evaluator.py, on your GPU.

    python bench/rescore.py --release release.jsonl --device cuda --out rescored.md
    python bench/rescore.py --tasks KernelBench/level1 --candidates my_run/level1 --device cuda --out rescored.md

A release file holds one JSON object per line: level_id, task_id, ref_code, custom_code (null: no candidate); a
KernelBench-style pair of folders matches tasks and candidates by relative path. Per task: status, check, speedup
kind, speedup against eager and against torch.compile of the reference; per level: mean, median, geomean, fast_1,
fast_1.2, with missing or failed candidates counted as 1.0x (as if the reference were kept). Every evaluator option
is a flag too (--time-budget-s, --min-rounds, ...).
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import evaluator  # noqa: E402
from evaluator import TaskError  # noqa: E402


def release_items(path):
    """(level, task, ref_src, cand_src or None) from a release file: one JSON object per line with level_id,
    task_id, ref_code, custom_code (custom_code may be null)."""
    items = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
                items.append((str(rec["level_id"]), str(rec["task_id"]), rec["ref_code"], rec.get("custom_code")))
            except (ValueError, KeyError) as e:
                raise TaskError(f"{path}:{n}: not a release record ({type(e).__name__}: {e})") from None
    return items


def folder_items(tasks_dir, cand_dir):
    """(level, task, ref_src, cand_src or None) for a KernelBench-style pair of folders, matched by relative path."""
    items = []
    for f in evaluator.find_tasks("all", tasks_dir):
        rel = f.relative_to(tasks_dir)
        cand = Path(cand_dir) / rel
        level = rel.parts[0] if len(rel.parts) > 1 else Path(tasks_dir).name
        items.append((level, rel.with_suffix("").as_posix(), evaluator.load_task(f),
                      cand.read_text() if cand.is_file() else None))
    return items


def compiled_reference(ref_src):
    """The reference under torch.compile, as a candidate: its ratio to eager is the torch.compile baseline."""
    return ref_src + ("\n\nclass ModelNew(Model):\n    def __init__(self, *args):\n        super().__init__(*args)\n"
                      "        self.compiled = torch.compile(super().forward)\n\n"
                      "    def forward(self, *args):\n        return self.compiled(*args)\n")


def rescore(items, device="cpu", compile_baseline=True, progress=True, **opts):
    """Evaluate other systems' kernels; per-task rows and per-level aggregates.

    A missing or failed candidate counts as 1.0x in mean, median and geomean (as if the reference were kept);
    fast_p is the share of tasks whose candidate is correct and more than p times faster."""
    pairs = [(ref, cand or "") for _, _, ref, cand in items]
    if compile_baseline:
        pairs += [(ref, compiled_reference(ref)) for _, _, ref, _ in items]
    res = evaluator.evaluate_many(pairs, device, progress=progress, **opts)
    rows = []
    for i, (level, task, _, cand) in enumerate(items):
        r, base = res[i], (res[len(items) + i] if compile_baseline else None)
        eager = r.speedup if r.status == "ok" and not r.same_as_reference else None
        vs_compile = eager / base.speedup if eager and base and base.status == "ok" else None
        rows.append(dict(level=level, task=task, status="missing" if cand is None else r.status, check=r.check,
                         kind=r.speedup_kind, speedup=eager, vs_compile=vs_compile))
    summary = {}
    for level in sorted({r["level"] for r in rows}):
        mine = [r for r in rows if r["level"] == level]
        for base in ("speedup", "vs_compile") if compile_baseline else ("speedup",):
            xs = [r[base] or 1.0 for r in mine]
            summary[(level, base)] = dict(
                n=len(xs), mean=statistics.fmean(xs), median=statistics.median(xs),
                geomean=statistics.geometric_mean(xs),
                fast_1=sum(bool(r[base]) and r[base] > 1.0 for r in mine) / len(xs),
                fast_1_2=sum(bool(r[base]) and r[base] > 1.2 for r in mine) / len(xs))
    return rows, summary


def rescore_table(rows, summary):
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    out = ["| level | task | status | check | kind | vs eager | vs torch.compile |", "|---|---|---|---|---|---|---|"]
    out += [f"| {r['level']} | {r['task']} | {r['status']} | {r['check']} | {r['kind']} | {fmt(r['speedup'])} | "
            f"{fmt(r['vs_compile'])} |" for r in rows]
    out += ["", "missing or failed candidates count as 1.0x in mean, median and geomean", "",
            "| level | against | n | mean | median | geomean | fast_1 | fast_1.2 |",
            "|---|---|---|---|---|---|---|---|"]
    out += [f"| {lv} | {'eager' if b == 'speedup' else 'torch.compile'} | {a['n']} | {a['mean']:.3f} | "
            f"{a['median']:.3f} | {a['geomean']:.3f} | {a['fast_1']:.2f} | {a['fast_1_2']:.2f} |"
            for (lv, b), a in summary.items()]
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--release", help="a release file (JSON lines: level_id, task_id, ref_code, custom_code)")
    p.add_argument("--tasks", help="a KernelBench-style folder of tasks ...")
    p.add_argument("--candidates", help="... and a folder of candidates with the same relative paths")
    p.add_argument("--compile-baseline", action=argparse.BooleanOptionalAction, default=True,
                   help="also time torch.compile of each reference")
    p.add_argument("--out", help="also write the table (markdown) and the rows (.json beside it)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    evaluator.add_option_flags(p)
    a = p.parse_args(argv)
    if not (a.release or a.tasks):
        p.error("give --release FILE, or --tasks DIR --candidates DIR")
    try:
        items = release_items(a.release) if a.release else folder_items(a.tasks, a.candidates or a.tasks)
    except (TaskError, OSError) as e:
        p.error(str(e))
    rows, summary = rescore(items, a.device, a.compile_baseline, **evaluator.options_of(a))
    table = rescore_table(rows, summary)
    print(table)
    if a.out:
        Path(a.out).write_text(table + "\n")
        Path(a.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
