"""bench/real/measure.py: one measurement protocol for every checkpoint of the real-model proof, and its statistics.

Each checkpoint (the base model, or a stage's run folder) writes 16 samples per task from the same prompts under the
same seeds, every sample evaluated with the full time budget and handled as the RL stage handles speedups
(runs.measure: within 0.02 of 1 counts as 1, above 3x evaluated again and the lower kept). The seeds are those of step
PAIRED_STEP: rl.py draws every training sample from rl.seed_for(cfg, step, task) with the step (or ssl round) of the
run, and check_fresh_seeds refuses a run folder (or one it started from) that logged or planned a step that high, so
no training step drew the protocol's samples; every checkpoint draws the same ones (paired samples).
Per checkpoint and per split (training tasks, held-out tasks) it reports:

    samples        how many samples
    ok             share of samples that are correct (reference copies included)
    copies         share that are the reference renamed (or run exactly its ops)
    faster         share that are correct, not copies, and faster than eager (speedup > 1)
    fast_1         share of tasks with at least one such sample
    geomean_best   geomean over tasks of the best correct non-copy speedup (1.0 where there is none)
    custom_kernel  how many of the faster samples ran a kernel of their own (speedup_kind custom_kernel)
    R              the mean over tasks of R, the primary metric (task_metrics)
    secondary      the means over tasks of the secondary metrics (task_metrics)
    tasks          task_metrics per task, from which the tests are computed

and merges it into a summary JSON (default bench/real/summary.json), so checkpoints measured in different sittings
end in one file; each merge computes the protocol's tests again over every checkpoint the summary holds (add_tests:
each checkpoint against the start S, one-sided; the contrastive end against the plain end, two-sided; per split).
The decision (bench/real/PROTOCOL.md): rl_plain against start on the training tasks, one-sided exact Wilcoxon
signed-rank over tasks on R, alpha 0.05. Samples and results are kept in --work (default runs/measure/LABEL) as they
finish (a generate call's --gen-batch tasks, then each evaluation), and the same command after a cut (or after
--stop-after) goes on from there:

    python bench/real/measure.py start runs/S --train T1,T2 --heldout H1,H2 -- --model M.gguf --lora-rank 8
    python bench/real/measure.py rl_plain runs/r3p --train ... --heldout ... -- --model M.gguf
    (after --: rl.py's flags: --model, --device, --max-new-tokens, --temperature, --eval-time-budget, ...)

torch.compile's times are not measured here: fast_p against torch.compile takes each task's eager and compiled
reference times from --compile-baselines (bench/real/compile_baselines.json: bench/time_tasks.py --compile on an
H200), a task missing there has none.
"""
import argparse
import functools
import hashlib
import json
import math
import platform
import subprocess
import sys
import threading
import time
from copy import copy
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
import cudal1  # noqa: E402
import engine  # noqa: E402
import rl  # noqa: E402
import runs  # noqa: E402
from evaluator import Result  # noqa: E402

PAIRED_STEP = 10**6  # the seeds of a step no run reaches (check_fresh_seeds): training never drew them
SAMPLES = 16
HERE = Path(__file__).resolve().parent
SUMMARY, BASELINES = HERE / "summary.json", HERE / "compile_baselines.json"
START, PLAIN, CONTRASTIVE = "start", "rl_plain", "rl_contrastive"  # the labels the protocol's tests name
ALPHA, BOOT_SEED, BOOT_N = 0.05, 0, 10_000
SECONDARY = ("log_speedup", "pass_rate", "fast_1", "fast_1.2", "fast_1_compiled", "fast_1.2_compiled",
             "custom_share")


def split_stats(tasks, results, group_size):
    """The protocol's numbers for one split: results are group_size per task, in task order."""
    n, best, faster = len(results), [], []
    for i, _ in enumerate(tasks):
        mine = [r for r in results[i * group_size:(i + 1) * group_size] if rl.is_success(r) and r.speedup]
        best.append(max([r.speedup for r in mine], default=1.0))
        faster.append([r for r in mine if r.speedup > 1.0])
    return dict(samples=n, ok=sum(r.status == "ok" for r in results) / n,
                copies=sum(map(cudal1.is_copy, results)) / n, faster=sum(map(len, faster)) / n,
                fast_1=sum(bool(f) for f in faster) / len(tasks),
                geomean_best=math.exp(sum(math.log(b) for b in best) / len(best)),
                custom_kernel=sum(r.speedup_kind == "custom_kernel" for f in faster for r in f))



def task_metrics(results, eager_over_compiled=None):
    """One task's numbers from its samples' settled results. R (the primary metric): the mean over samples of the
    speedup of a correct non-copy sample, 0 for any other; log_speedup: the mean log-speedup of the correct non-copy
    samples; pass_rate: their share; fast_p: the share of samples that are correct, not copies and faster than p
    times eager (fast_p_compiled: than p times torch.compile of the reference, eager_over_compiled = eager ms /
    compiled ms); custom_share: the share of the samples faster than eager that ran a kernel of their own. A metric
    with nothing to average over (no correct sample, no baseline) is None.

    Example: speedups 2.0 (custom kernel), 0.5, a copy, a build error; compiled 1.6x eager -> R = 0.625,
    log_speedup = 0.0, pass_rate = 0.5, fast_1 = fast_1.2 = 0.25, fast_1_compiled = 0.25 (2.0 > 1.6),
    fast_1.2_compiled = 0.25 (2.0 > 1.92), custom_share = 1.0.
    """
    won = [r.speedup for r in results if rl.is_success(r) and r.speedup]
    faster = [r for r in results if rl.is_success(r) and r.speedup and r.speedup > 1.0]
    n, c = len(results), eager_over_compiled
    return {"R": sum(won) / n, "log_speedup": sum(map(math.log, won)) / len(won) if won else None,
            "pass_rate": sum(map(rl.is_success, results)) / n,
            **{f"fast_{p:g}": sum(s > p for s in won) / n for p in (1, 1.2)},
            **{f"fast_{p:g}_compiled": sum(s > p * c for s in won) / n if c else None for p in (1, 1.2)},
            "custom_share": sum(r.speedup_kind == "custom_kernel" for r in faster) / len(faster) if faster else None}


def split_summary(tasks, results, group_size, baselines):
    """split_stats, R and each secondary metric's mean over tasks (over the tasks where it is defined), and the
    per-task numbers (task_metrics); baselines: {task: eager ms / compiled ms}."""
    per_task = {name: task_metrics(results[i * group_size:(i + 1) * group_size], baselines.get(name))
                for i, name in enumerate(tasks)}
    def mean(key):
        have = [m[key] for m in per_task.values() if m[key] is not None]
        return sum(have) / len(have) if have else None
    return dict(split_stats(tasks, results, group_size), R=mean("R"),
                secondary={key: mean(key) for key in SECONDARY}, tasks=per_task)


def compile_baselines(path):
    """{task: eager ms / torch.compile ms} from a baselines file ({"tasks": {task: {eager_ms, compiled_ms}}})."""
    rows = json.loads(Path(path).read_text())["tasks"] if path else {}
    return {task: t["eager_ms"] / t["compiled_ms"] for task, t in rows.items()}

# ---------------------------------------------------------------------------- statistics: the tests over tasks


def wilcoxon(diffs, alternative="greater"):
    """(W+, p) of the exact Wilcoxon signed-rank test of paired differences (one per task). Zero differences are
    dropped (Wilcoxon's rule: a tie between the checkpoints says nothing about the direction); tied |differences| get
    their mean rank, and the null distribution is exact given those ranks: each of the 2^n sign patterns of the
    non-zero differences equally likely, W+ the sum of the ranks with a + sign, counted by dynamic programming over
    the doubled (integer) ranks. p: P(W+ >= observed) for "greater", P(W+ <= observed) for "less", twice the smaller
    tail (at most 1) for "two-sided"; no non-zero difference: p = 1.

    Example: 6 tasks, all differences positive -> W+ = 21, p("greater") = 1/64 = 0.0156;
    [1, -1, 2, 0] -> ranks 1.5, 1.5, 3 (the 0 dropped), W+ = 4.5, p("greater") = 3/8 (of the 8 patterns, the sums
    4.5, 4.5 and 6 reach it).
    """
    d = [x for x in diffs if x != 0]
    order = sorted(range(len(d)), key=lambda i: abs(d[i]))
    ranks2, i = [0] * len(d), 0  # twice each rank: ties' mean ranks are halves
    while i < len(order):
        j = i
        while j + 1 < len(order) and abs(d[order[j + 1]]) == abs(d[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks2[order[k]] = i + j + 2  # 2 * the mean of ranks i+1 .. j+1
        i = j + 1
    w2 = sum(r for r, x in zip(ranks2, d) if x > 0)
    counts = [1] + [0] * sum(ranks2)  # counts[w]: sign patterns whose doubled W+ is w
    for r in ranks2:
        counts = [c + (counts[w - r] if w >= r else 0) for w, c in enumerate(counts)]
    upper, lower = sum(counts[w2:]) / 2 ** len(d), sum(counts[:w2 + 1]) / 2 ** len(d)
    return w2 / 2, {"greater": upper, "less": lower, "two-sided": min(1.0, 2 * min(upper, lower))}[alternative]


def bootstrap_ci(diffs, seed=BOOT_SEED, n=BOOT_N, level=0.95):
    """Percentile bootstrap interval of the mean difference over tasks: tasks drawn with replacement, n times, from a
    generator seeded with seed (the same numbers give the same interval); None without differences."""
    if not diffs:
        return None
    d = np.asarray(diffs, dtype=float)
    means = d[np.random.default_rng(seed).integers(0, len(d), size=(n, len(d)))].mean(axis=1)  # (n,)
    return [float(q) for q in np.quantile(means, [(1 - level) / 2, (1 + level) / 2])]


def holm(pvalues):
    """Holm's step-down adjusted p-values, in the input order: the k-th smallest of the m p-values times (m - k + 1),
    then no smaller than the one before it, at most 1. Example: [0.01, 0.04, 0.03] -> [0.03, 0.06, 0.06]."""
    order, out, running = sorted(range(len(pvalues)), key=lambda i: pvalues[i]), [0.0] * len(pvalues), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - k) * pvalues[i]))
        out[i] = running
    return out


def paired_test(a, b, alternative):
    """a against b ({task: task_metrics} of one split): the primary test on R (W+, p, the bootstrap CI of the mean
    difference) and each secondary metric's, Holm-adjusted as one family; a metric is compared over the tasks where
    both checkpoints define it. Differences are rounded to 1e-12, so that equal means tie exactly."""
    def test(key):
        d = [round(a[t][key] - b[t][key], 12) for t in a if t in b and None not in (a[t][key], b[t][key])]
        w, p = wilcoxon(d, alternative)
        return dict(tasks=len(d), mean_diff=sum(d) / len(d) if d else None, W=w, p=p, ci=bootstrap_ci(d))
    secondary = {key: test(key) for key in SECONDARY}
    tested = [key for key in SECONDARY if secondary[key]["tasks"]]
    for key, p in zip(tested, holm([secondary[key]["p"] for key in tested])):
        secondary[key]["p_holm"] = p
    return dict(alternative=alternative, **test("R"), secondary=secondary)


def add_tests(summary):
    """The protocol's tests over the checkpoints the summary holds, per split, under each checkpoint's "tests"
    ({against: paired_test}): every checkpoint against START (one-sided: training is to improve on it), CONTRASTIVE
    against PLAIN (two-sided); and the decision: PLAIN against START on the training tasks, p < ALPHA."""
    ck = summary["checkpoints"]
    pairs = [(label, START, "greater") for label in ck if label != START and START in ck]
    pairs += [(CONTRASTIVE, PLAIN, "two-sided")] * (CONTRASTIVE in ck and PLAIN in ck)
    for a, b, alternative in pairs:
        for split, s in ck[a].items():
            s.setdefault("tests", {})[b] = paired_test(s["tasks"], ck[b][split]["tasks"], alternative)
    if PLAIN in ck and START in ck:
        t = ck[PLAIN]["train"]["tests"][START]
        summary["decision"] = dict(rule=f"{PLAIN} against {START} on the training tasks: one-sided exact Wilcoxon "
                                        f"signed-rank over tasks on R, alpha {ALPHA}", W=t["W"], p=t["p"],
                                   ci=t["ci"], beats=t["p"] < ALPHA)
    return summary


def check_fresh_seeds(folder):
    """Refuse a run folder, or one it started from (config.json's init_from, where present), whose config or log
    reaches PAIRED_STEP: its steps and ssl rounds drew rl.seed_for(cfg, step, task), so below PAIRED_STEP none drew
    the protocol's seeds."""
    seen = set()
    while folder and (Path(folder) / "config.json").exists() and Path(folder).resolve() not in seen:
        seen.add(Path(folder).resolve())
        c = json.loads((Path(folder) / "config.json").read_text())
        steps = [r.get("step", 0) for r in runs.read_jsonl(Path(folder) / "log.jsonl")]
        if max(steps + [c.get("steps", 0), c.get("ssl_rounds", 0)]) >= PAIRED_STEP:
            raise SystemExit(f"{folder}: its steps reach {PAIRED_STEP}, whose seeds the protocol's samples use")
        folder = c.get("init_from")


def policy_config(cfg, folder):
    """cfg for a checkpoint: the base model (folder None) or a run folder's weights or adapters (its LoRA rank)."""
    if folder is None:
        return replace(cfg, init_from="")
    earlier = json.loads((Path(folder) / "config.json").read_text())
    return runs.inherit_lora(replace(cfg, init_from=str(folder)), earlier, given=set())


def measure(cfg, folder, splits, work, samples=SAMPLES, stop_after=0.0, baselines=None):
    """{split: split_summary} for one checkpoint; splits: {name: [(task, ref)]}, baselines: {task: eager ms /
    compiled ms}. Generated --gen-batch tasks at a time (one generate call, its samples kept in work/samples.jsonl as
    it ends), then every sample evaluated in ONE
    evaluator call, each result kept in work/evaluated.jsonl as it ends (a build that hangs holds one build slot,
    not the rest), then settled as runs.measure settles them (work/results.jsonl). After a cut the same command goes
    on where it stopped, with the samples an uncut run draws (a generate call's seed comes from its tasks' names).
    stop_after (seconds, 0 = never): no generate call starts that would end later, going by the longest so far;
    then None."""
    c = replace(policy_config(cfg, folder), group_size=samples, contrastive=False)
    tasks = [t for ts in splits.values() for t in ts]
    texts, results = kept(work, "samples.jsonl", c), kept(work, "results.jsonl", c)
    t0, longest, model = time.time(), 0.0, None
    for ch in [tasks[i:i + c.gen_batch] for i in range(0, len(tasks), c.gen_batch)]:
        if all(name in texts for name, _ in ch):
            continue
        if stop_after and time.time() - t0 + longest > stop_after:
            print(f"measure: stopped after {time.time() - t0:.0f} s (--stop-after {stop_after:.0f}), before "
                  f"generating for {ch[0][0]}...: the same command goes on from {work}", flush=True)
            return None
        start = time.time()
        if model is None:
            model, tok = engine.initial_policy(c)
        rollouts = rl.generate_all(c, model, tok, ch, rl.build_prompts(c, None, ch, PAIRED_STEP, tok), PAIRED_STEP)
        texts.update(keep(work, "samples.jsonl", c, {name: r["texts"] for (name, _), r in zip(ch, rollouts)}))
        longest = max(longest, time.time() - start)
    del model
    engine.DECODERS.clear()  # (--gen-cache graphs holds the model there)
    todo = [(name, ref) for name, ref in tasks if name not in results]
    if todo:
        settled = evaluate(c, todo, [dict(codes=[rl.extract_code(t).code for t in texts[name]]) for name, _ in todo],
                           work)
        per_task = {name: [r.to_dict() for r in settled[i * samples:(i + 1) * samples]] for i, (name, _) in
                    enumerate(todo)}
        results.update(keep(work, "results.jsonl", c, per_task))
    return {name: split_summary([t for t, _ in ts], [Result(**r) for t, _ in ts for r in results[t]], samples,
                                baselines or {}) for name, ts in splits.items()}


def evaluate(cfg, batch, rollouts, work):
    """runs.measure's results for the rollouts' codes (in (B*G) order), the first evaluation of each (task, code) kept
    in work/evaluated.jsonl (under the code's sha256: samples.jsonl holds the code) as it ends and taken from there
    when a cut run goes on."""
    kept_first = kept(work, "evaluated.jsonl", cfg, key=lambda rec: (rec["task"], rec["code_sha256"]))
    first = {k: Result(**v) for k, v in kept_first.items()}
    task_of, lock = {ref: name for name, ref in batch}, threading.Lock()
    pairs = runs.code_pairs(batch, rollouts)

    def key(pair):
        return task_of[pair[0]], hashlib.sha256(pair[1].encode()).hexdigest()
    left = [p for p in dict.fromkeys(pairs) if key(p) not in first]

    def kept_one(pair, res):  # from the evaluator's device threads
        with lock:
            keep(work, "evaluated.jsonl", cfg, {key(pair): res.to_dict()},
                 record=lambda k, v: dict(task=k[0], code_sha256=k[1], items=v))
            first[key(pair)] = res
    if left:
        runs.evaluate_pairs(cfg, left, on_result=kept_one)
    return runs.settle(cfg, pairs, [copy(first[key(p)]) for p in pairs])


def setup_of(cfg):
    """What makes two measurements the same one: the policy (a run folder's checkpoint by its content: a stage run
    again into the same folder is another policy) and how it samples."""
    return dict(model=cfg.model, init_from=cfg.init_from, lora_rank=cfg.lora_rank, samples=cfg.group_size,
                max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p, seed=cfg.seed,
                **({"ckpt_sha256": file_sha256(Path(cfg.init_from) / "ckpt.pt")} if cfg.init_from else {}))


@functools.lru_cache(maxsize=None)
def file_sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def kept(work, file, cfg, key=lambda rec: rec["task"]):
    """{key: items} of the records kept in work/file (key: a task's samples' texts or results, or a (task, code)'s
    first result); a record of another measurement is a one-line error."""
    path, out = Path(work) / file, {}
    for rec in runs.read_jsonl(path):
        if rec["setup"] != setup_of(cfg):
            raise SystemExit(f"{path} holds another measurement ({rec['setup']}): give another --work folder")
        out[key(rec)] = rec["items"]
    return out


def keep(work, file, cfg, items, record=lambda task, v: dict(task=task, items=v)):
    """Append {key: items} to work/file, one record each (after cutting off a torn last line); returns items."""
    path = Path(work) / file
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and (text := path.read_bytes()) and not text.endswith(b"\n"):
        path.write_bytes(text[:text.rfind(b"\n") + 1])  # a line torn by a kill: runs.read_jsonl drops it too
    with open(path, "a") as f:
        for key, v in items.items():
            f.write(json.dumps(dict(record(key, v), setup=setup_of(cfg))) + "\n")
    return items


def commit():
    """HEAD, with "-dirty" when tracked files differ from it (the device's copy of a tree keeps an older HEAD)."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine(cfg):
    """The device the samples were evaluated on, by name (the protocol compares checkpoints measured on one)."""
    if cfg.device == "cuda":
        import torch
        return torch.cuda.get_device_name()
    return platform.processor() or platform.machine()


def merge(path, label, cfg, splits, stats, command):
    """Add one checkpoint's stats (and the machine it was measured on) to the summary at path (a new summary for
    another model or other tasks), then compute the protocol's tests again (add_tests)."""
    tasks = {f"tasks_{k}": [name for name, _ in ts] for k, ts in splits.items()}
    old = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    if old.get("model") != cfg.model or any(old.get(k) != v for k, v in tasks.items()):
        old = {}
    summary = dict(model=cfg.model, **tasks, checkpoints={**old.get("checkpoints", {}), label: stats},
                   machines={**old.get("machines", {}), label: machine(cfg)},
                   commands=old.get("commands", []) + [command], date=time.strftime("%Y-%m-%d"), commit=commit())
    add_tests(summary)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    runs.save_json(path, summary)
    return summary


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    argv += ["--"] * ("--" not in argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("label", help=f"the summary's key: {START} (S), {PLAIN}, {CONTRASTIVE} are the ones tested")
    p.add_argument("folder", nargs="?", help="a run folder with ckpt.pt (none: the base model)")
    p.add_argument("--train", required=True, help="training tasks (rl.py's --task syntax)")
    p.add_argument("--heldout", required=True, help="held-out tasks (never in the stage-1 data or a run's --task)")
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--summary", default=str(SUMMARY))
    p.add_argument("--compile-baselines", default=str(BASELINES),
                   help="eager and torch.compile ms of each reference (bench/time_tasks.py --compile), for fast_p "
                        "against torch.compile; '' for none")
    p.add_argument("--work", help="where samples and results are kept as they finish (default runs/measure/LABEL)")
    p.add_argument("--stop-after", type=float, default=0.0,
                   help="seconds: start no generate call that would end later (0: never); the same command goes on")
    args = p.parse_args(argv[:argv.index("--")])
    cfg, given = rl.parse_flags(argv[argv.index("--") + 1:] + ["--stage", "collect"])  # a stage that takes top_p < 1
    cfg = rl.decide_config(replace(cfg, task=args.train), given)
    splits = {"train": runs.load_tasks(cfg), "heldout": runs.load_tasks(replace(cfg, task=args.heldout))}
    check_fresh_seeds(args.folder)
    stats = measure(cfg, args.folder, splits, args.work or Path("runs/measure") / args.label, args.samples,
                    args.stop_after, compile_baselines(args.compile_baselines))
    if stats is None:
        return
    merge(args.summary, args.label, cfg, splits, stats, "python bench/real/measure.py " + " ".join(argv))
    print(json.dumps({args.label: {split: {k: v for k, v in s.items() if k != "tasks"} for split, s in stats.items()}},
                     indent=1))


if __name__ == "__main__":
    main()
