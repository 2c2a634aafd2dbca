"""GPU proof of the evaluator: the corpus's verdicts on CUDA, the identical-code ratio over the level tasks, and
recovery after an illegal memory access. Prints a short table last; writes the full records as JSON.

    TORCH_CUDA_ARCH_LIST=9.0 python bench/gpu_evaluator.py --corpus cuda --identity 'level1/*,level2/*,level3/*'
    python bench/gpu_evaluator.py --corpus all --identity '' --out results.json

--corpus: 'cuda' = the files marked `device: cuda` (GPU-only hacks, CUDA kernels, crash recovery), 'all' = every
corpus file evaluated on the GPU, '' = none.
"""
import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # one target: builds dominate evaluation time
import evaluator as E  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"


def header(path):
    doc = path.read_text().split('"""')[1]
    h = dict(re.findall(r"^(task|expect|device):[ \t]*(\S.*?)[ \t]*$", doc, re.M))
    status, _, check = h["expect"].partition(" ")
    return h["task"], status, check.strip(), h.get("device", "cpu")


def run_corpus(which, device, opts):
    files = sorted(CORPUS.glob("*/*.py"))
    if which == "cuda":
        files = [f for f in files if header(f)[3] == "cuda"]
    # the illegal memory access goes first among the CUDA files, so the ones after it prove recovery
    files.sort(key=lambda f: (f.stem != "cuda_illegal_memory_access", str(f)))
    pairs = [((ROOT / "tasks" / f"{header(f)[0]}.py").read_text(), f.read_text()) for f in files]
    t0 = time.time()
    results = E.evaluate_many(pairs, device, **opts)
    rows = []
    for f, r in zip(files, results):
        task, status, check, _ = header(f)
        hit = r.status == status and (status == "ok" or r.check == check)
        rows.append(dict(file=f"{f.parent.name}/{f.stem}", task=task, expect=f"{status} {check}".strip(),
                         got=f"{r.status} {r.check}".strip(), match=hit, speedup=r.speedup, kind=r.speedup_kind,
                         seconds=r.seconds,
                         reason=r.reason[:600]))
    return rows, time.time() - t0


def run_identity(spec, device, opts):
    paths = E.find_tasks(spec)
    pairs = []
    for p in paths:
        src = E.load_task(p)
        pairs.append((src, re.sub(r"\bModel\b", "ModelNew", src)))
    t0 = time.time()
    results = E.evaluate_many(pairs, device, **opts)
    rows = [dict(task=E.task_name(p), status=r.status, same=r.same_as_reference, ratio=r.speedup, ref_ms=r.ref_ms,
                 cand_ms=r.cand_ms, ref_spread=r.ref_spread, rounds=r.rounds, reason=r.reason[:600])
            for p, r in zip(paths, results)]
    return rows, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="cuda", choices=["cuda", "all", ""])
    ap.add_argument("--identity", default="level1/*,level2/*,level3/*")
    ap.add_argument("--device", default="cuda", help="cpu only to try the script without a GPU")
    ap.add_argument("--time-budget-s", type=float, default=0.5)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_evaluator.json"))
    a = ap.parse_args()
    opts = dict(time_budget_s=a.time_budget_s)
    report = {}
    if a.corpus:
        rows, secs = run_corpus(a.corpus, a.device, opts)
        report["corpus"] = dict(rows=rows, seconds=secs)
        print(f"\n## corpus on CUDA ({len(rows)} files, {secs:.0f} s)\n")
        print("| file | expect | got | match | speedup | kind |\n|---|---|---|---|---|---|")
        for r in rows:
            sp = f"{r['speedup']:.2f}" if r["speedup"] else "-"
            hit = "yes" if r["match"] else "NO"
            print(f"| {r['file']} | {r['expect']} | {r['got']} | {hit} | {sp} | {r['kind']} |")
        for r in rows:
            if not r["match"]:
                print(f"MISMATCH {r['file']}: {r['reason']}")
        print(f"matched {sum(r['match'] for r in rows)}/{len(rows)}")
    if a.identity:
        rows, secs = run_identity(a.identity, a.device, opts)
        report["identity"] = dict(rows=rows, seconds=secs)
        ratios = sorted(r["ratio"] for r in rows if r["ratio"])
        inside = sum(0.98 <= x <= 1.02 for x in ratios)
        print(f"\n## identical code (reference renamed ModelNew), {len(rows)} tasks, {secs:.0f} s\n")
        print("| task | status | ratio | ref ms | spread |\n|---|---|---|---|---|")
        for r in rows:
            ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
            ms = f"{r['ref_ms']:.3f}" if r["ref_ms"] else "-"
            sp = f"{100 * r['ref_spread']:.1f}%" if r["ref_spread"] is not None else "-"
            why = "" if r["status"] == "ok" else r["reason"][:80]
            print(f"| {r['task']} | {r['status']} {why} | {ratio} | {ms} | {sp} |")
        if ratios:
            q = statistics.quantiles(ratios, n=20) if len(ratios) > 1 else ratios * 19
            print(f"ratio min {ratios[0]:.3f}  p5 {q[0]:.3f}  median {statistics.median(ratios):.3f}  p95 {q[-1]:.3f}  "
                  f"max {ratios[-1]:.3f}; within [0.98, 1.02]: {inside}/{len(ratios)}; all flagged same_as_reference: "
                  f"{all(r['same'] for r in rows)}")
    Path(a.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
