"""The CUDA half of the corpus test: tests/test_corpus.py checks each corpus file's verdict on the CPU, this script
on a GPU. Then a batch (identical code over the level tasks + the CUDA kernels of the corpus repeated) for
identical-code fidelity, repeat CV and throughput, and with --mix an RL step's batch. bench/gpu_check.sh runs them.
Prints short tables as it goes; writes the full records as JSON after each section, and every evaluation as it ends
to <out's stem>.partial.jsonl beside --out, from which --tables prints the same tables when a time limit cut the run.

    TORCH_CUDA_ARCH_LIST=9.0 python bench/cuda_corpus.py                        # the whole corpus, then the batch
    python bench/cuda_corpus.py --corpus cuda --identity 'level1/*' --repeats 0 --devices cuda:0
    python bench/cuda_corpus.py --corpus '' --identity '' --repeats 0 --mix bench/real/stage1.jsonl --precision 0.01
    python bench/cuda_corpus.py --corpus '' --repeats 0 --tasks-dir KB/level1 --identity all --shard 1/3
    python bench/cuda_corpus.py --tables OUT/corpus.partial.jsonl                # the tables from the records alone

--corpus: 'all' = every corpus file evaluated on the GPU (but those marked cpu_only), 'cuda' = the files marked
`device: cuda`, '' = none, or a comma list of globs over folder/stem ('hacks/flag_*').
--devices: where to evaluate (default: every visible GPU, one evaluation at a time on each).
--shard I/N: of the sorted identity tasks, those at positions I-1, I-1+N, ... (slow and fast ones spread over shards).
--tables: a later record of the same evaluation (section, kind, task, file, rep) replaces an earlier one; throughput
is only what the records' done_at stamps tell (evaluate_many's phases are not in them).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # one target: builds dominate evaluation time
import evaluator as E  # noqa: E402
import fences  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
CLOCKS = ("events", "worker", "judge")  # the three clocks a timed call is seen by (Result.samples)


def header(path):
    doc = path.read_text().split('"""')[1]
    h = dict(re.findall(r"^(task|expect|device|cpu_only):[ \t]*(\S.*?)[ \t]*$", doc, re.M))
    status, _, check = h["expect"].partition(" ")
    return h["task"], status, check.strip(), "cpu_only" if "cpu_only" in h else h.get("device", "cpu")


def max_speedup(path):
    """The file's `max_speedup:` line (an ok candidate that must gain nothing), else infinity."""
    m = re.search(r"^max_speedup:[ \t]*(\S+)", path.read_text().split('"""')[1], re.M)
    return float(m[1]) if m else float("inf")


def also(path):
    """The (status, check) pairs of the file's `also:` line: other verdicts as good as expect's."""
    m = re.search(r"^also:(.*)$", path.read_text().split('"""')[1], re.M)
    return [tuple(v.split()) for v in m[1].split(",")] if m else []


def task_src(task):
    """tasks/TASK.py, or for corpus/NAME the reference written for the corpus alone (tests/corpus/tasks/)."""
    if task.startswith("corpus/"):
        return (CORPUS / "tasks" / f"{task[len('corpus/'):]}.py").read_text()
    return (ROOT / "tasks" / f"{task}.py").read_text()


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def quantiles(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=20, method="inclusive") if len(xs) > 1 else xs * 19
    return f"min {xs[0]:.3f}  p5 {q[0]:.3f}  median {statistics.median(xs):.3f}  p95 {q[-1]:.3f}  max {xs[-1]:.3f}"


class GpuBusy:
    """Samples nvidia-smi's utilization.gpu every 250 ms while running: the GPU busy fraction per device."""

    def __init__(self):
        self.rows, self.proc = [], None

    def __enter__(self):
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,"
                                          "nounits", "-lms", "250"], stdout=subprocess.PIPE, text=True)
        except OSError:
            return self
        threading.Thread(target=lambda: [self.rows.append(line) for line in self.proc.stdout], daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()

    def mean(self):
        per = {}
        for line in self.rows:
            try:
                i, u = (int(v) for v in line.split(","))
            except ValueError:
                continue
            per.setdefault(i, []).append(u)
        return {i: statistics.mean(u) / 100 for i, u in per.items()}


def saver(items, section, partial):
    """on_result for evaluate_many: each result as one line of the partial file (beside --out) and one printed line,
    as it comes (a run cut short by a time limit keeps what it measured)."""
    lock = threading.Lock()

    def save(i, r):
        items[i]["done_at"] = time.time()  # when it finished: during the builds or after them (overlap)
        who = {k: v for k, v in items[i].items() if k not in ("ref", "cand")}
        with lock, open(partial, "a") as f:
            f.write(json.dumps(dict(section=section, **who, **r.to_dict())) + "\n")
            print(f"{section} {json.dumps(who)}: {r.status} {r.check} ratio {fmt(r.speedup)} "
                  f"({r.seconds:.1f} s, {r.phases})", flush=True)
    return save


# ---------------------------------------------------------------------------- the corpus

def corpus_name(path):
    return f"{path.parent.name}/{path.stem}"


def corpus_files(which="all"):
    """The corpus files run_corpus evaluates for --corpus `which`, in its order."""
    files = [f for f in sorted(CORPUS.glob("*/*.py")) if f.parent.name != "tasks" and header(f)[3] != "cpu_only"]
    if which == "cuda":
        files = [f for f in files if header(f)[3] == "cuda"]
    elif which != "all":  # a comma list of globs over folder/stem
        files = [f for f in files if any(Path(corpus_name(f)).match(g) for g in which.split(","))]
    # the illegal memory access goes first among the CUDA files, so the ones after it prove recovery
    return sorted(files, key=lambda f: (f.stem != "cuda_illegal_memory_access", str(f)))


def matches(path, status, check, speedup):
    """Whether a verdict is one the file's header asks for: its `expect:` (an ok within its max_speedup) or an
    `also:`."""
    _, want, want_check, _ = header(path)
    return (status == want and (want == "ok" or check == want_check) and (speedup or 0) <= max_speedup(path)
            or (status, check) in also(path))


def corpus_row(path, rec):
    """A row of the corpus table from a Result's fields (Result.to_dict, or a record of a partial file)."""
    task, status, check, _ = header(path)
    return dict(file=corpus_name(path), task=task, expect=f"{status} {check}".strip(),
                got=f"{rec['status']} {rec['check']}".strip(),
                match=matches(path, rec["status"], rec["check"], rec["speedup"]), speedup=rec["speedup"],
                kind=rec["speedup_kind"], same=rec["same_as_reference"], seconds=rec["seconds"], device=rec["device"],
                reason=rec["reason"][:600])


def run_corpus(which, device, devices, opts, partial):
    files = corpus_files(which)
    pairs = [(task_src(header(f)[0]), f.read_text()) for f in files]
    t0 = time.time()
    results = E.evaluate_many(pairs, device, devices=devices, on_result=saver(
        [dict(file=corpus_name(f)) for f in files], "corpus", partial), **opts)
    return dict(rows=[corpus_row(f, r.to_dict()) for f, r in zip(files, results)], seconds=time.time() - t0)


def print_corpus(rows, title):
    print(f"\n## {title}\n")
    print("| file | expect | got | match | speedup | kind |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['file']} | {r['expect']} | {r['got']} | {'yes' if r['match'] else 'NO'} | "
              f"{fmt(r['speedup'], '.2f')} | {r['kind']}{' (same)' if r['same'] else ''} |")
    for r in rows:
        if not r["match"]:
            print(f"MISMATCH {r['file']}: {r['reason']}")
    for group in ("hacks", "honest", "failures"):
        g = [r for r in rows if r["file"].startswith(group)]
        print(f"{group}: {sum(r['match'] for r in g)}/{len(g)} as expected")


# ---------------------------------------------------------------------------- the batch

def batch_items(identity, repeats, copies=1, tasks_dir=E.TASKS_DIR, shard=(1, 1)):
    """Identical code for each task in `identity` (`copies` times; found in tasks_dir; of the sorted tasks those at
    positions i with i % N == I - 1 for shard (I, N)), plus each CUDA kernel of the honest corpus `repeats` times."""
    tasks = sorted(E.find_tasks(identity, tasks_dir) if identity else [], key=lambda p: E.task_name(p, tasks_dir))
    items = []
    for p in tasks[shard[0] - 1::shard[1]]:
        src = E.load_task(p)
        items += [dict(kind="identity", task=E.task_name(p, tasks_dir), rep=c, ref=src,
                       cand=re.sub(r"\bModel\b", "ModelNew", src)) for c in range(copies)]
    kernels = [f for f in sorted((CORPUS / "honest").glob("*.py")) if header(f)[3] == "cuda"]
    for rep in range(repeats):
        for f in kernels:
            items.append(dict(kind="kernel", task=header(f)[0], file=f.stem, rep=rep, ref=task_src(header(f)[0]),
                              cand=f.read_text()))
    return items


def mix_items(path, tasks=8, per_task=8):
    """A batch like an RL step's from stage-1 data (bench/real/stage1.jsonl): `tasks` tasks x `per_task` candidates,
    each task's own (faster, slower, wrong, broken; up to per_task - 1) and the reference renamed for the rest."""
    by_task = {}
    for line in Path(path).read_text().splitlines():
        rec = json.loads(line)
        by_task.setdefault(rec["task"], []).append(rec)
    items = []
    for task, recs in list(by_task.items())[:tasks]:
        ref = recs[0]["ref_code"]
        items += [dict(kind="mix", task=task, file=r["candidate"], ref=ref, cand=r["code"])
                  for r in recs[:per_task - 1]]
        items += [dict(kind="mix", task=task, file="copy", rep=c, ref=ref, cand=re.sub(r"\bModel\b", "ModelNew", ref))
                  for c in range(per_task - min(len(recs), per_task - 1))]
    return items


ITEM_FIELDS = ("section", "kind", "task", "file", "rep", "done_at")  # an item's, in a record beside the Result's


def batch_row(rec):
    """A row of the batch tables from an item's fields and its Result's (a record of a partial file holds both): the
    charged ratio and, from the samples, each clock's ratio of the two sides' medians."""
    row = {k: rec[k] for k in ITEM_FIELDS if k in rec}
    row.update(status=rec["status"], check=rec["check"], same=rec["same_as_reference"],
               kind_of_speedup=rec["speedup_kind"], ratio=rec["speedup"], ref_ms=rec["ref_ms"], cand_ms=rec["cand_ms"],
               ref_spread=rec["ref_spread"], cand_spread=rec["cand_spread"], rounds=rec["rounds"],
               seconds=rec["seconds"], phases=rec["phases"], device=rec["device"], reason=rec["reason"][:400],
               by_clock={}, samples=rec["samples"])
    s = rec["samples"]
    for c, name in enumerate(CLOCKS + ("host",) if s else ()):
        if all(len(x) > c and x[c] is not None for x in s["ref"] + s["cand"]):
            ref = statistics.median(x[c] for x in s["ref"])
            row["by_clock"][name] = ref / max(statistics.median(x[c] for x in s["cand"]), 1e-9)
    return row


def run_batch(items, device, devices, opts, partial):
    """The evaluations of items spread over devices, with their builds (a cold cache for the first copy of a source,
    hits for the repeats) running alongside on a GPU (evaluate_many's overlap)."""
    pairs, phases = [(it["ref"], it["cand"]) for it in items], {}
    with GpuBusy() as busy:
        t0 = time.time()
        results = E.evaluate_many(pairs, device, devices=devices, keep_samples=True,
                                  on_result=saver(items, "batch", partial), phases=phases, **opts)
        wall = time.time() - t0
    for it in items:  # seconds from the batch's start
        it["done_at"] = round(it.get("done_at", time.time()) - t0, 3)
    rows = [batch_row({**{k: v for k, v in it.items() if k not in ("ref", "cand")}, **r.to_dict()})
            for it, r in zip(items, results)]
    return dict(rows=rows, wall=wall, phases=phases, busy=busy.mean(), n=len(items), devices=devices)


def is_kernelbench(task):
    return re.match(r"\d+_", task) is not None  # KernelBench's files are named 19_ReLU, ours level1/relu


def print_identity(ident, title, build_s=None):
    """The identical-code table of one set of tasks, its summary and each clock's ratio quantiles."""
    print(f"\n## identical code (reference renamed ModelNew), {title}: {len(ident)} tasks\n")
    print("| task | status | ratio | events | worker | judge | host | ref ms | spread | rounds |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for r in ident:
        c = r["by_clock"]
        why = "" if r["status"] == "ok" else r["reason"][:80]
        print(f"| {r['task']} | {r['status']} {why} | {fmt(r['ratio'])} | {fmt(c.get('events'))} | "
              f"{fmt(c.get('worker'))} | {fmt(c.get('judge'))} | {fmt(c.get('host'))} | {fmt(r['ref_ms'])} | "
              f"{fmt(r['ref_spread'] and 100 * r['ref_spread'], '.1f')}% | {r['rounds']} |")
    ok = [r for r in ident if r["status"] == "ok"]
    ratios = [r["ratio"] for r in ok if r["ratio"]]
    print(f"{title}: ok {len(ok)}/{len(ident)}; within [0.98, 1.02]: {sum(0.98 <= x <= 1.02 for x in ratios)}; "
          f"min ratio {fmt(min(ratios, default=None))}; max seconds {max(r['seconds'] for r in ident):.1f}")
    bad = Counter(f"{r['status']} {r['check']}".strip() for r in ident if r["status"] != "ok")
    if bad:
        print("not ok: " + ", ".join(f"{k}: {n}" for k, n in bad.most_common()))
    for name, get in [("charged (the verdict's)", lambda r: r["ratio"])] + [
            (n, lambda r, n=n: r["by_clock"].get(n)) for n in CLOCKS + ("host",)]:
        xs = [get(r) for r in ident if get(r)]
        if xs:
            inside = sum(0.98 <= x <= 1.02 for x in xs)
            print(f"{name}: {quantiles(xs)}; within [0.98, 1.02]: {inside}/{len(xs)}")
    print(f"all flagged same_as_reference: {all(r['same'] for r in ident)}")
    if build_s is None:  # done_at from a partial file: when the builds ended is not in it
        return
    for when, part in (("while builds ran", [r for r in ident if r["done_at"] <= build_s]),
                       ("after the builds", [r for r in ident if r["done_at"] > build_s])):
        xs = [r["ratio"] for r in part if r["ratio"]]
        if xs:
            print(f"charged ratio, {len(xs)} evaluated {when}: {quantiles(xs)}; within [0.98, 1.02]: "
                  f"{sum(0.98 <= x <= 1.02 for x in xs)}/{len(xs)}")


def print_batch_tables(rows, build_s=None):
    """The identity tables (own tasks, KernelBench's apart), the mix and the kernels' repeat CVs."""
    ident = [r for r in rows if r["kind"] == "identity"]
    for title, part in (("own tasks", [r for r in ident if not is_kernelbench(r["task"])]),
                        ("KernelBench tasks", [r for r in ident if is_kernelbench(r["task"])])):
        if part:
            print_identity(part, title, build_s)
    mix = [r for r in rows if r["kind"] == "mix"]
    if mix:
        print(f"\n## an RL step's mix: {len(mix)} candidates of {len({r['task'] for r in mix})} tasks\n")
        kinds = {}
        for r in mix:
            kinds.setdefault(r["file"].split("_")[0], []).append(r)
        print("| candidates | statuses | median seconds |\n|---|---|---|")
        for k, rs in kinds.items():
            counts = ", ".join(f"{n} {st}" for st, n in sorted(
                {st: sum(r["status"] == st for r in rs) for st in {r["status"] for r in rs}}.items()))
            print(f"| {k} ({len(rs)}) | {counts} | {statistics.median(r['seconds'] for r in rs):.1f} |")
    kern = [r for r in rows if r["kind"] == "kernel"]
    if kern:
        print("\n## repeated evaluations of the corpus's CUDA kernels (CV = stdev / mean over repeats)\n")
        print("| file | task | statuses | speedups | CV speedup | CV cand ms | cand ms | ref, cand us per repeat | "
              "kind |\n|---|---|---|---|---|---|---|---|---|")
        for f in dict.fromkeys(r["file"] for r in kern):
            rs = [r for r in kern if r["file"] == f]
            sp = [r["ratio"] for r in rs if r["ratio"]]
            ms = [r["cand_ms"] for r in rs if r["cand_ms"]]
            cv = (lambda xs: statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else None)
            sides = "; ".join(  # which side moved between repeats
                f"{1e3 * r['ref_ms']:.2f}, {1e3 * r['cand_ms']:.2f}" for r in rs if r["cand_ms"] and r["ref_ms"])
            print(f"| {f} | {rs[0]['task']} | {','.join(sorted({r['status'] for r in rs}))} | "
                  f"{' '.join(f'{x:.2f}' for x in sp)} | {fmt(cv(sp) and 100 * cv(sp), '.1f')}% | "
                  f"{fmt(cv(ms) and 100 * cv(ms), '.1f')}% | {fmt(statistics.median(ms) if ms else None)} | "
                  f"{sides} | {rs[0]['kind_of_speedup']} |")


def print_batch(b):
    rows = b["rows"]
    print_batch_tables(rows, b["phases"]["build_s"])
    p, wall = b["phases"], b["wall"]
    print(f"\n## throughput: {b['n']} candidates on {len(b['devices'])} device(s) {b['devices']}\n")
    print(f"builds: {p['builds']} distinct sources with an extension ({p['compiled']} compiled, {p['build_failed']} "
          f"failed, the rest cached), wall {p['build_s']:.0f} s, of which the devices waited {p['build_wait_s']:.0f} s")
    print(f"reference sides (a judge and the reference's worker) set up: {p.get('sessions', '?')}, for "
          f"{sum(r['phases'] is not None for r in rows)} candidates that reached one with a result")
    working = wall - p["build_wait_s"]  # the devices' time not spent waiting for builds
    print(f"total {wall:.0f} s -> {3600 * b['n'] / wall:.0f} candidates/hour ({3600 * b['n'] / working:.0f}/hour "
          f"without the wait for builds)")
    secs = [r["seconds"] for r in rows]
    print(f"per evaluation: {quantiles(secs)} s")
    phases = {}
    for r in rows:
        for k, v in (r["phases"] or {}).items():
            phases[k] = phases.get(k, 0.0) + v
    other = sum(secs) - sum(phases.values())
    print("where evaluation time goes (summed over evaluations): " + ", ".join(
        f"{k} {v:.0f} s" for k, v in phases.items()) + f", the rest (the judge starting, static checks, the answer) "
        f"{other:.0f} s")
    print("GPU busy fraction (nvidia-smi utilization, mean over the evaluations): "
          + (", ".join(f"GPU{i} {u:.2f}" for i, u in sorted(b["busy"].items())) or "not sampled"))


# ---------------------------------------------------------------------------- --tables: a run cut short

def read_partial(paths):
    """The records of partial files in the order they ended; a later record of the same evaluation (section, kind,
    task, file, rep) replaces an earlier one. Within one file, records alike in all five are copies (files written
    before copies had a rep) and stay apart. A line cut off by a kill is skipped."""
    recs, cut = {}, 0
    for p in map(Path, paths):
        if not p.is_file():
            print(f"{p}: no such file (its check finished no evaluation)")
            continue
        seen = Counter()
        for line in p.read_text().splitlines():
            try:
                r = dict(json.loads(line), source=p.name)
            except json.JSONDecodeError:
                cut += 1
                continue
            key = (r["section"], r.get("kind"), r.get("task"), r.get("file"), r.get("rep") or 0)
            seen[key] += 1
            key += (seen[key],)
            recs.pop(key, None)
            recs[key] = r
    if cut:
        print(f"{cut} unreadable line(s) skipped (a write cut off by the time limit)")
    return list(recs.values())


def print_tables(paths):
    """The tables of a run from its partial records alone: its throughput only as the span of their done_at."""
    recs = read_partial(paths)
    corpus = {r["file"]: r for r in recs if r["section"] == "corpus"}
    if corpus:
        files = corpus_files("all")
        rows = [corpus_row(f, corpus[corpus_name(f)]) for f in files if corpus_name(f) in corpus]
        print_corpus(rows, f"corpus ({len(rows)} files with a record)")
        missing = [corpus_name(f) for f in files if corpus_name(f) not in corpus]
        print(f"not reached: {len(missing)}: {', '.join(missing)}")
        gone = sorted(set(corpus) - {corpus_name(f) for f in files})
        if gone:
            print(f"records of files not among --corpus all's (removed, renamed or cpu_only): {', '.join(gone)}")
    batch = [batch_row(r) for r in recs if r["section"] == "batch"]
    print_batch_tables(sorted(batch, key=lambda r: (r["kind"], r["task"])))
    spans = {}
    for r in recs:
        kind = r.get("kind", "") + (" (KernelBench)" if is_kernelbench(r.get("task", "")) else "")
        spans.setdefault((r["source"], r["section"], kind), []).append(r["done_at"])
    if spans:
        print("\n## throughput (from the records' done_at: evaluate_many's phases are not in them)\n")
    for (source, section, kind), ts in spans.items():
        span = max(ts) - min(ts)
        rate = f", {3600 * (len(ts) - 1) / span:.0f}/hour between the first and the last" if span > 0 else ""
        print(f"{source}, {section}{' ' + kind if kind else ''}: {len(ts)} evaluations finished in {span:.0f} s "
              f"(first to last done_at){rate}")
    if spans:
        print("A span leaves out the time to the first result (workers starting, the first builds): a whole run's "
              "rate is lower than the rate between the first and the last.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--identity", default="level1/*,level2/*,level3/*", help="tasks for the identical-code batch")
    ap.add_argument("--repeats", type=int, default=3, help="copies of each corpus CUDA kernel in the batch")
    ap.add_argument("--identity-copies", type=int, default=1, help="copies of each identical-code candidate")
    ap.add_argument("--tasks-dir", default=str(E.TASKS_DIR), help="where --identity's tasks are (a KernelBench "
                    "checkout's level1/: its own sizes)")
    ap.add_argument("--shard", default="1/1", help="I/N: of the sorted identity tasks, those at i %% N == I - 1")
    ap.add_argument("--corpus", default="all", help="all | cuda | '' | comma list of globs (hacks/flag_*)")
    ap.add_argument("--device", default="cuda", help="cpu only to try the script without a GPU")
    ap.add_argument("--devices", default="", help="comma list (default: every visible GPU)")
    ap.add_argument("--time-budget-s", type=float, default=0.5)
    ap.add_argument("--precision", type=float, default=0.0, help="stop timing once the speedup is known within +-this")
    ap.add_argument("--mix", default="", help="stage-1 JSONL: time a batch like an RL step's from it (8 x 8, "
                    "copies barely timed as rl.py does)")
    ap.add_argument("--no-overlap", action="store_true", help="builds first, then the evaluations (evaluate_many's "
                    "overlap off: the A/B of timing beside compilers)")
    ap.add_argument("--in-flight", type=int, default=None, help="evaluations in flight per device (evaluate_many's "
                    "in_flight; default 2 on CUDA): 1 for the A/B of setting up the next one during the current one")
    ap.add_argument("--no-host-clock", action="store_true", help="the candidate not bounded by the host clock "
                    "(Options.host_clock off: the A/B)")
    ap.add_argument("--no-pin-cpus", action="store_true", help="the timed rounds on whatever CPUs the scheduler picks "
                    "(Options.pin_cpus off: the A/B)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "cuda_corpus.json"))
    ap.add_argument("--tables", nargs="+", metavar="PARTIAL", help="print the tables from partial files alone "
                    "(<out's stem>.partial.jsonl), evaluating nothing")
    a = ap.parse_args()
    if a.tables:
        return print_tables(a.tables)
    m = re.fullmatch(r"(\d+)/(\d+)", a.shard)
    shard = (int(m[1]), int(m[2])) if m else (0, 0)
    if not 1 <= shard[0] <= shard[1]:
        ap.error(f"--shard {a.shard}: I/N with 1 <= I <= N")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.parent / f"{out.stem}.partial.jsonl"
    opts = dict(time_budget_s=a.time_budget_s, precision=a.precision, in_flight=a.in_flight,
                **({"overlap": False} if a.no_overlap else {}), **({"pin_cpus": False} if a.no_pin_cpus else {}),
                **({"host_clock": False} if a.no_host_clock else {}))
    devices = a.devices.split(",") if a.devices else fences.gpus(a.device)
    report = {}
    if a.corpus:  # first: the verdicts matter most
        report["corpus"] = run_corpus(a.corpus, a.device, devices, opts, partial)
        out.write_text(json.dumps(report))
        c = report["corpus"]
        print_corpus(c["rows"], f"corpus on {a.device} ({len(c['rows'])} files, {c['seconds']:.0f} s)")
    if a.mix:  # an RL step's batch, evaluated as rl.py does
        report["mix"] = run_batch(mix_items(a.mix), a.device, devices, dict(opts, time_copies=False), partial)
        out.write_text(json.dumps(report))
        print_batch(report["mix"])
    if a.identity or a.repeats:
        items = batch_items(a.identity, a.repeats, a.identity_copies, a.tasks_dir, shard)
        report["batch"] = run_batch(items, a.device, devices, opts, partial)
        out.write_text(json.dumps(report))
        print_batch(report["batch"])


if __name__ == "__main__":
    main()
