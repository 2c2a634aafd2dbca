"""bench/real/measure.py: one measurement protocol for every checkpoint of the real-model proof.

Each checkpoint (the base model, or a stage's run folder) writes 8 samples per task from the same prompts under the
same seeds (those of a step no run reaches), every sample evaluated with the full time budget and handled as the RL
stage handles speedups (rl.measure: within 0.02 of 1 counts as 1, above 3x evaluated again and the lower kept).
Per checkpoint and per split (training tasks, held-out tasks) it reports:

    samples        how many samples
    ok             share of samples that are correct (reference copies included)
    copies         share that are the reference renamed (or run exactly its ops)
    faster         share that are correct, not copies, and faster than eager (speedup > 1)
    fast_1         share of tasks with at least one such sample
    geomean_best   geomean over tasks of the best correct non-copy speedup (1.0 where there is none)
    custom_kernel  how many of the faster samples ran a kernel of their own (speedup_kind custom_kernel)

and merges it into a summary JSON (default bench/real/summary.json), so checkpoints measured in different sittings
end in one file. Samples and results are kept in --work (default runs/measure/LABEL) as they finish (a generate
call's --gen-batch tasks, then each evaluation), and the same command after a cut (or after --stop-after) goes on
from there:

    python bench/real/measure.py base --train 'level1/*' --heldout level2/bias_gelu -- --model M.gguf --lora-rank 8
    python bench/real/measure.py ssl runs/q-ssl --train ... --heldout ... -- --model M.gguf
    (after --: rl.py's flags: --model, --device, --max-new-tokens, --temperature, --eval-time-budget, ...)
"""
import argparse
import functools
import hashlib
import json
import math
import subprocess
import sys
import threading
import time
from copy import copy
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
import rl  # noqa: E402
from evaluator import Result  # noqa: E402

PAIRED_STEP = 10**6  # the seeds of a step no run reaches: training never drew them
SAMPLES = 8
SUMMARY = Path(__file__).resolve().parent / "summary.json"


def split_stats(tasks, results, group_size):
    """The protocol's numbers for one split: results are group_size per task, in task order."""
    n, best, faster = len(results), [], []
    for i, _ in enumerate(tasks):
        mine = [r for r in results[i * group_size:(i + 1) * group_size] if rl.is_success(r) and r.speedup]
        best.append(max([r.speedup for r in mine], default=1.0))
        faster.append([r for r in mine if r.speedup > 1.0])
    return dict(samples=n, ok=sum(r.status == "ok" for r in results) / n,
                copies=sum(map(rl.is_copy, results)) / n, faster=sum(map(len, faster)) / n,
                fast_1=sum(bool(f) for f in faster) / len(tasks),
                geomean_best=math.exp(sum(math.log(b) for b in best) / len(best)),
                custom_kernel=sum(r.speedup_kind == "custom_kernel" for f in faster for r in f))


def policy_config(cfg, folder):
    """cfg for a checkpoint: the base model (folder None) or a run folder's weights or adapters (its LoRA rank)."""
    if folder is None:
        return replace(cfg, init_from="")
    earlier = json.loads((Path(folder) / "config.json").read_text())
    return rl.inherit_lora(replace(cfg, init_from=str(folder)), earlier, given=set())


def measure(cfg, folder, splits, work, samples=SAMPLES, stop_after=0.0):
    """{split: split_stats} for one checkpoint; splits: {name: [(task, ref)]}. Generated --gen-batch tasks at a time
    (one generate call, its samples kept in work/samples.jsonl as it ends), then every sample evaluated in ONE
    evaluator call, each result kept in work/evaluated.jsonl as it ends (a build that hangs holds one build slot,
    not the rest), then settled as rl.measure settles them (work/results.jsonl). After a cut the same command goes
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
            model, tok = rl.initial_policy(c)
        rollouts = rl.generate_all(c, model, tok, ch, rl.build_prompts(c, None, ch, PAIRED_STEP, tok), PAIRED_STEP)
        texts.update(keep(work, "samples.jsonl", c, {name: r["texts"] for (name, _), r in zip(ch, rollouts)}))
        longest = max(longest, time.time() - start)
    del model
    rl.DECODERS.clear()  # (--gen-cache graphs holds the model there)
    todo = [(name, ref) for name, ref in tasks if name not in results]
    if todo:
        settled = evaluate(c, todo, [dict(codes=[rl.extract_code(t).code for t in texts[name]]) for name, _ in todo],
                           work)
        per_task = {name: [r.to_dict() for r in settled[i * samples:(i + 1) * samples]] for i, (name, _) in
                    enumerate(todo)}
        results.update(keep(work, "results.jsonl", c, per_task))
    return {name: split_stats(ts, [Result(**r) for t, _ in ts for r in results[t]], samples)
            for name, ts in splits.items()}


def evaluate(cfg, batch, rollouts, work):
    """rl.measure's results for the rollouts' codes (in (B*G) order), the first evaluation of each (task, code) kept
    in work/evaluated.jsonl (under the code's sha256: samples.jsonl holds the code) as it ends and taken from there
    when a cut run goes on."""
    kept_first = kept(work, "evaluated.jsonl", cfg, key=lambda rec: (rec["task"], rec["code_sha256"]))
    first = {k: Result(**v) for k, v in kept_first.items()}
    task_of, lock = {ref: name for name, ref in batch}, threading.Lock()
    pairs = rl.code_pairs(batch, rollouts)

    def key(pair):
        return task_of[pair[0]], hashlib.sha256(pair[1].encode()).hexdigest()
    left = [p for p in dict.fromkeys(pairs) if key(p) not in first]

    def kept_one(pair, res):  # from the evaluator's device threads
        with lock:
            keep(work, "evaluated.jsonl", cfg, {key(pair): res.to_dict()},
                 record=lambda k, v: dict(task=k[0], code_sha256=k[1], items=v))
            first[key(pair)] = res
    if left:
        rl.evaluate_pairs(cfg, left, on_result=kept_one)
    return rl.settle(cfg, pairs, [copy(first[key(p)]) for p in pairs])


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
    for rec in rl.read_jsonl(path):
        if rec["setup"] != setup_of(cfg):
            raise SystemExit(f"{path} holds another measurement ({rec['setup']}): give another --work folder")
        out[key(rec)] = rec["items"]
    return out


def keep(work, file, cfg, items, record=lambda task, v: dict(task=task, items=v)):
    """Append {key: items} to work/file, one record each (after cutting off a torn last line); returns items."""
    path = Path(work) / file
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and (text := path.read_bytes()) and not text.endswith(b"\n"):
        path.write_bytes(text[:text.rfind(b"\n") + 1])  # a line torn by a kill: rl.read_jsonl drops it too
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


def merge(path, label, cfg, splits, stats, command):
    """Add one checkpoint's stats to the summary at path (a new summary for another model or other tasks)."""
    tasks = {f"tasks_{k}": [name for name, _ in ts] for k, ts in splits.items()}
    old = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    if old.get("model") != cfg.model or any(old.get(k) != v for k, v in tasks.items()):
        old = {}
    summary = dict(model=cfg.model, **tasks, checkpoints={**old.get("checkpoints", {}), label: stats},
                   commands=old.get("commands", []) + [command], date=time.strftime("%Y-%m-%d"), commit=commit())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    rl.save_json(path, summary)
    return summary


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    argv += ["--"] * ("--" not in argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("label", help="base, sft, ssl, sftc, rl_contrastive, rl_plain (the summary's key)")
    p.add_argument("folder", nargs="?", help="a run folder with ckpt.pt (none: the base model)")
    p.add_argument("--train", required=True, help="training tasks (rl.py's --task syntax)")
    p.add_argument("--heldout", required=True, help="held-out tasks (never in the stage-1 data or a run's --task)")
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--summary", default=str(SUMMARY))
    p.add_argument("--work", help="where samples and results are kept as they finish (default runs/measure/LABEL)")
    p.add_argument("--stop-after", type=float, default=0.0,
                   help="seconds: start no generate call that would end later (0: never); the same command goes on")
    args = p.parse_args(argv[:argv.index("--")])
    cfg = rl.parse_config(argv[argv.index("--") + 1:] + ["--stage", "collect"])  # a stage that takes top_p < 1 too
    cfg = rl.resolve_config(rl.check_config(replace(cfg, task=args.train)), rl.given_fields(cfg))
    splits = {"train": rl.load_tasks(cfg), "heldout": rl.load_tasks(replace(cfg, task=args.heldout))}
    stats = measure(cfg, args.folder, splits, args.work or Path("runs/measure") / args.label, args.samples,
                    args.stop_after)
    if stats is None:
        return
    merge(args.summary, args.label, cfg, splits, stats, "python bench/real/measure.py " + " ".join(argv))
    print(json.dumps({args.label: stats}, indent=1))


if __name__ == "__main__":
    main()
