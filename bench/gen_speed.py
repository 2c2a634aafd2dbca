"""bench/gen_speed.py: how fast rl.py's policy generates one RL step's samples, per KV-cache kind (issue 19).

    python bench/gen_speed.py --caches dynamic,static -- --model M.gguf --lora-rank 16 --tasks-per-step 8 \\
        --group-size 8 --max-new-tokens 1200 --temperature 0.7

The flags after -- are rl.py's. Step 1's prompts (contrastive, references only in the database) go through
rl.generate_all twice per cache kind, with the same seed: the first call pays any compile, the second is the steady
state. Per call: generated tokens (up to each sample's first eos), the padded slots the batch ran (samples x longest),
seconds and generated tokens per second. Nothing is evaluated or trained.
"""
import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import rl  # noqa: E402


def timed_generation(cfg, model, tok, batch, prompts):
    """(generated tokens, padded slots, seconds) of one generate_all over the step's prompts."""
    if cfg.device == "cuda":
        rl.torch.cuda.synchronize()
    t0 = time.perf_counter()
    rollouts = rl.generate_all(cfg, model, tok, batch, prompts, step=1)
    if cfg.device == "cuda":
        rl.torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return (sum(int(r["mask"].sum()) for r in rollouts), sum(r["ids"].numel() for r in rollouts), seconds)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ours, theirs = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(description="generation throughput of rl.py's policy on one step's prompts")
    p.add_argument("--caches", default="dynamic,static", help="comma list of rl.py --gen-cache kinds to time")
    p.add_argument("--calls", type=int, default=2, help="generate_all calls per cache kind (the first compiles)")
    args = p.parse_args(ours)
    with tempfile.TemporaryDirectory() as out:
        cfg = rl.resolve_config(rl.check_config(replace(rl.parse_config(theirs), out=out)))
        tasks = rl.load_tasks(cfg)
        model, tok = rl.initial_policy(cfg)
        db, _ = rl.open_database(cfg, tasks)
        batch = rl.pick_tasks(cfg, tasks, 1)
        prompts = rl.build_prompts(cfg, db, batch, 1, tok)
        lengths = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        print(f"model {cfg.model}, {len(batch)} tasks x {cfg.group_size} samples, gen_batch {cfg.gen_batch}, "
              f"max_new_tokens {cfg.max_new_tokens}, prompt tokens {min(lengths)}-{max(lengths)}")
        for cache in args.caches.split(","):
            for call in range(1, args.calls + 1):
                tokens, slots, seconds = timed_generation(replace(cfg, gen_cache=cache), model, tok, batch, prompts)
                print(f"cache {cache} call {call}: {tokens} tokens ({slots} slots) in {seconds:.1f} s = "
                      f"{tokens / seconds:.0f} tok/s", flush=True)


if __name__ == "__main__":
    main()
