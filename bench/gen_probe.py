"""How long one generated token of the tiny policy takes, by position, in the first and in later generate calls of a
fresh process: G=8 samples of a 1,512-byte prompt, N new tokens forced (no early eos), bf16 autocast as rl.py.

    python bench/gen_probe.py --tokens 3000 --calls 2 --device cuda   # ms per token over each 500-token stretch

Why: on the H200 (bench/RESULTS.md section 7) a process's first step generated at ~25-40 ms per token and its later
steps at ~5; this separates the first call from the rest and, with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
in the environment, tests whether the caching allocator's growth (the KV cache is re-allocated one token longer
each step) is the cost. A logits processor stamps the CPU clock at every step; generate reads a flag from the GPU
each step (has every sample ended?), so the stamps follow the GPU.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import rl  # noqa: E402


def stamps(model, tok, device, tokens):
    """Seconds from the call to the first step, and the CPU clock at every step."""
    from transformers import GenerationConfig, LogitsProcessorList
    times = []

    def stamp(input_ids, scores):
        times.append(time.perf_counter())
        return scores
    enc = tok("x = torch.relu(x)\n" * 84, return_tensors="pt", add_special_tokens=False).to(device)
    gen = GenerationConfig(do_sample=True, temperature=0.7, max_new_tokens=tokens, min_new_tokens=tokens,
                           num_return_sequences=8, eos_token_id=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                           **rl.PURE_SAMPLING)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.no_grad(), rl.autocast(rl.Config(device=device)):
        model.generate(**enc, generation_config=gen, logits_processor=LogitsProcessorList([stamp]))
    return times[0] - t0, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=3000)
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    model, tok = rl.tiny_policy(0)
    model = model.to(args.device).eval()
    for call in range(1, args.calls + 1):
        first, t = stamps(model, tok, args.device, args.tokens)
        spans = [f"{1e3 * (t[min(i + 500, len(t) - 1)] - t[i]) / (min(i + 500, len(t) - 1) - i):.2f}"
                 for i in range(0, len(t) - 1, 500)]
        print(f"call {call}: {t[-1] - t[0] + first:6.1f} s (prefill {first:.2f} s) | ms/token per 500 tokens: "
              f"{' '.join(spans)}", flush=True)


if __name__ == "__main__":
    main()
