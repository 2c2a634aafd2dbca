"""bench/real/measure.py: one measurement protocol for every checkpoint of the real-model proof (issue 22).

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
end in one file. Samples and results are kept in --work (default runs/measure/LABEL) as each chunk of tasks finishes
(--gen-batch tasks a generate call, --eval-tasks an evaluator call), and the same command after a cut (or after
--stop-after) goes on from there:

    python bench/real/measure.py base --train 'level1/*' --heldout level2/bias_gelu -- --model M.gguf --lora-rank 8
    python bench/real/measure.py ssl runs/q-ssl --train ... --heldout ... -- --model M.gguf
    (after --: rl.py's flags: --model, --device, --max-new-tokens, --temperature, --eval-time-budget, ...)
"""
import argparse
import json
import math
import subprocess
import sys
import time
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


def measure(cfg, folder, splits, work, samples=SAMPLES, eval_tasks=4, stop_after=0.0):
    """{split: split_stats} for one checkpoint; splits: {name: [(task, ref)]}. Generated --gen-batch tasks at a time
    (one generate call) and evaluated eval_tasks at a time (one evaluator call), each chunk kept in the work folder
    as it finishes (samples.jsonl, then results.jsonl): after a cut the same command goes on where it stopped, with
    the samples an uncut run draws (a generate call's seed comes from its tasks' names). stop_after (seconds, 0 =
    never): no chunk starts that would end later, going by the longest one of its kind so far; then None."""
    c = replace(policy_config(cfg, folder), group_size=samples, contrastive=False)
    tasks = [t for ts in splits.values() for t in ts]
    texts, results = kept(work, "samples.jsonl", c), kept(work, "results.jsonl", c)
    t0, longest = time.time(), {}

    def chunks(size, done, kind):  # the chunks of tasks not yet done, while there is time for them
        for ch in [tasks[i:i + size] for i in range(0, len(tasks), size)]:
            if all(name in done for name, _ in ch):
                continue
            if stop_after and time.time() - t0 + longest.get(kind, 0.0) > stop_after:
                print(f"measure: stopped after {time.time() - t0:.0f} s (--stop-after {stop_after:.0f}), before "
                      f"{kind} of {ch[0][0]}...: the same command goes on from {work}", flush=True)
                return
            start = time.time()
            yield ch
            longest[kind] = max(longest.get(kind, 0.0), time.time() - start)
    model = None
    for ch in chunks(c.gen_batch, texts, "generating"):
        if model is None:
            model, tok = rl.initial_policy(c)
        rollouts = rl.generate_all(c, model, tok, ch, rl.build_prompts(c, None, ch, PAIRED_STEP, tok), PAIRED_STEP)
        keep(work, "samples.jsonl", c, texts, {name: r["texts"] for (name, _), r in zip(ch, rollouts)})
    del model
    rl.DECODERS.clear()  # (--gen-cache graphs holds the model there)
    for ch in chunks(eval_tasks, results, "evaluating"):
        if any(name not in texts for name, _ in ch):
            break  # generation stopped short of these
        res = rl.measure(c, ch, [dict(texts=texts[name]) for name, _ in ch])
        keep(work, "results.jsonl", c, results, {name: [r.to_dict() for r in res[i * samples:(i + 1) * samples]]
                                                 for i, (name, _) in enumerate(ch)})
    if any(name not in results for name, _ in tasks):
        return None
    return {name: split_stats(ts, [Result(**r) for t, _ in ts for r in results[t]], samples)
            for name, ts in splits.items()}


def setup_of(cfg):
    """What makes two measurements the same one: the policy and how it samples."""
    return dict(model=cfg.model, init_from=cfg.init_from, lora_rank=cfg.lora_rank, samples=cfg.group_size,
                max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p, seed=cfg.seed)


def kept(work, file, cfg):
    """{task: its samples' texts or results} kept in work/file; a record of another measurement is a one-line error."""
    path, out = Path(work) / file, {}
    for rec in rl.read_jsonl(path):
        if rec["setup"] != setup_of(cfg):
            raise SystemExit(f"{path} holds another measurement ({rec['setup']}): give another --work folder")
        out[rec["task"]] = rec["items"]
    return out


def keep(work, file, cfg, into, items):
    """Append {task: items} to work/file, and to the dict into."""
    Path(work).mkdir(parents=True, exist_ok=True)
    with open(Path(work) / file, "a") as f:
        for task, v in items.items():
            f.write(json.dumps(dict(task=task, setup=setup_of(cfg), items=v)) + "\n")
            into[task] = v


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
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
    p.add_argument("label", help="base, sft, ssl, rl_contrastive, rl_plain (the summary's key)")
    p.add_argument("folder", nargs="?", help="a run folder with ckpt.pt (none: the base model)")
    p.add_argument("--train", required=True, help="training tasks (rl.py's --task syntax)")
    p.add_argument("--heldout", required=True, help="held-out tasks (never in the stage-1 data or a run's --task)")
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--summary", default=str(SUMMARY))
    p.add_argument("--work", help="where samples and results are kept as they finish (default runs/measure/LABEL)")
    p.add_argument("--eval-tasks", type=int, default=4, help="tasks per evaluator call (each call's results kept)")
    p.add_argument("--stop-after", type=float, default=0.0,
                   help="seconds: start no chunk that would end later (0: never); the same command goes on")
    args = p.parse_args(argv[:argv.index("--")])
    cfg = rl.parse_config(argv[argv.index("--") + 1:] + ["--stage", "collect"])  # a stage that takes top_p < 1 too
    cfg = rl.resolve_config(rl.check_config(replace(cfg, task=args.train)), rl.given_fields(cfg))
    splits = {"train": rl.load_tasks(cfg), "heldout": rl.load_tasks(replace(cfg, task=args.heldout))}
    if args.eval_tasks < 1:
        raise SystemExit(f"--eval-tasks must be at least 1, got {args.eval_tasks}")
    stats = measure(cfg, args.folder, splits, args.work or Path("runs/measure") / args.label, args.samples,
                    args.eval_tasks, args.stop_after)
    if stats is None:
        return
    merge(args.summary, args.label, cfg, splits, stats, "python bench/real/measure.py " + " ".join(argv))
    print(json.dumps({args.label: stats}, indent=1))


if __name__ == "__main__":
    main()
