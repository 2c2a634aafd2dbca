"""bench/gen_speed.py: how fast rl.py's policy generates one RL step's samples, per KV-cache kind (issue 19).

    python bench/gen_speed.py --caches static,graphs --attn cudal1_sdpa,sdpa -- --model M.gguf --lora-rank 16 \\
        --tasks-per-step 8 --group-size 8 --max-new-tokens 1200 --temperature 0.7

The flags after -- are rl.py's. Step 1's prompts (contrastive, references only in the database) go through
rl.generate_all twice per cache kind (rl.py's --gen-cache: graphs is rl.decode, the others transformers' generate)
and attention (rl.packed_attention's cudal1_sdpa, or transformers' sdpa), with the same seed: the first call pays
any compile, the second is the steady state. Per call: generated tokens (up to each sample's first eos), the padded
slots the batch ran (samples x longest), seconds and generated tokens per second. Nothing is evaluated or trained.
--profile N: then one more call per cache kind, N new tokens under torch.profiler, and its ops by own CPU time and by
GPU time (where a decoding step goes).
"""
import argparse
import sys
import tempfile
import time
import traceback
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
    p.add_argument("--attn", default="cudal1_sdpa", help="comma list of attention implementations to time")
    p.add_argument("--calls", type=int, default=2, help="generate_all calls per cache kind (the first compiles)")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="profile a call of N new tokens per kind")
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
        for attn, cache in [(a, c) for a in args.attn.split(",") for c in args.caches.split(",")]:  # attn first
            model.set_attn_implementation(attn)
            rl.torch._dynamo.reset()  # a fresh compile for each: the first call's time says what it costs
            rl.DECODERS.clear()
            for call in range(1, args.calls + 1):
                try:
                    tokens, slots, seconds = timed_generation(replace(cfg, gen_cache=cache), model, tok, batch,
                                                              prompts)
                except Exception as e:  # one kind failing (a compile, say) leaves the others to be timed
                    traceback.print_exc()
                    print(f"cache {cache} attention {attn} call {call}: FAILED, {type(e).__name__}: {e}", flush=True)
                    break
                print(f"cache {cache} attention {attn} call {call}: {tokens} tokens ({slots} slots) in "
                      f"{seconds:.1f} s = {tokens / seconds:.0f} tok/s", flush=True)
            if args.profile:
                profile(replace(cfg, gen_cache=cache, max_new_tokens=args.profile), model, tok, batch, prompts)


def profile(cfg, model, tok, batch, prompts):
    """Print the ops of one generate_all call by their own CPU time and by GPU time (15 of each)."""
    from torch.profiler import ProfilerActivity
    kinds = [ProfilerActivity.CPU] + [ProfilerActivity.CUDA] * (cfg.device == "cuda")
    with rl.torch.profiler.profile(activities=kinds) as prof:
        tokens, slots, seconds = timed_generation(cfg, model, tok, batch, prompts)
    print(f"cache {cfg.gen_cache}, profiled: {slots // len(batch) // cfg.group_size} steps in {seconds:.1f} s")
    table = prof.key_averages()
    for key in ["self_cpu_time_total"] + ["cuda_time_total"] * (cfg.device == "cuda"):
        print(table.table(sort_by=key, row_limit=15), flush=True)


if __name__ == "__main__":
    main()
