"""How long one generated token of the tiny policy takes, by position, in the first and in later generate calls of a
fresh process: G=8 samples of a 1,512-byte prompt (or of --batch such prompts in one call), N new tokens forced (no
early eos), bf16 autocast as rl.py (or fp32 with --no-autocast).

    python bench/gen_probe.py --tokens 2000 --calls 2 --device cuda   # ms per token over each 500-token stretch
    python bench/gen_probe.py --tokens 400 --calls 1 --profile        # + torch.profiler's top ops of the call

Why: on the H200 (bench/RESULTS.md section 7) a process's first RL step generated at ~25-40 ms per token and its
later steps at ~5. This separates the first call from the rest, gives the allocator's cudaMalloc count per call
(with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the environment it tests the allocator), and --profile
found the cause (section 8): cuDNN's attention planning every new length, now left out by rl.autocast. A logits
processor stamps the CPU clock at every step; generate reads a flag from the GPU each step (has every sample
ended?), so the stamps follow the GPU.
"""
import argparse
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import rl  # noqa: E402


def stamps(model, tok, args):
    """Seconds from the call to the first step, and the CPU clock at every step."""
    from transformers import GenerationConfig, LogitsProcessorList
    times = []

    def stamp(input_ids, scores):
        times.append(time.perf_counter())
        return scores
    prompts = ["x = torch.relu(x)\n" * (84 - i) for i in range(args.batch)]  # lengths differ: left padding as rl.py
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(args.device)
    gen = GenerationConfig(do_sample=True, temperature=0.7, max_new_tokens=args.tokens, min_new_tokens=args.tokens,
                           num_return_sequences=8, eos_token_id=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                           **rl.PURE_SAMPLING)
    torch.manual_seed(0)
    amp = nullcontext() if args.no_autocast else rl.autocast(rl.Config(device=args.device))
    t0 = time.perf_counter()
    with torch.no_grad(), amp:
        model.generate(**enc, generation_config=gen, logits_processor=LogitsProcessorList([stamp]))
    return times[0] - t0, times


def mallocs():
    """cudaMalloc calls of the caching allocator so far (0 off CUDA)."""
    return torch.cuda.memory_stats().get("segment.all.allocated", 0) if torch.cuda.is_initialized() else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=3000)
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1, help="prompts per generate call (8 samples each)")
    ap.add_argument("--no-autocast", action="store_true")
    ap.add_argument("--profile", action="store_true", help="torch.profiler over the first call: top 15 ops")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    model, tok = rl.tiny_policy(0)
    tok.padding_side = "left"
    model = model.to(args.device).eval()
    for call in range(1, args.calls + 1):
        m0 = mallocs()
        prof = None
        if args.profile and call == 1:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
            prof = profile(activities=acts)
        with prof or nullcontext():
            first, t = stamps(model, tok, args)
        spans = [f"{1e3 * (t[min(i + 500, len(t) - 1)] - t[i]) / (min(i + 500, len(t) - 1) - i):.2f}"
                 for i in range(0, len(t) - 1, 500)]
        print(f"call {call}: {t[-1] - t[0] + first:6.1f} s (prefill {first:.2f} s, {mallocs() - m0} cudaMalloc) | "
              f"ms/token per 500 tokens: {' '.join(spans)}", flush=True)
        if prof is not None:
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15), flush=True)


if __name__ == "__main__":
    main()
