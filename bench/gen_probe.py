"""How long one generated token takes, by position, for the tiny policy with transformers' growing KV cache and with
rl.STATIC_CACHE: G=8 samples of a 1,500-byte prompt, N new tokens forced (no early eos), bf16 autocast as rl.py.

    python bench/gen_probe.py --tokens 3000 --device cuda     # prints ms per token over each 500-token stretch

A logits processor stamps the CPU clock at every step; generate reads a flag from the GPU each step (has every
sample ended?), so the stamps follow the GPU.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import rl  # noqa: E402


def stamps(model, tok, device, tokens, cache):
    from transformers import GenerationConfig, LogitsProcessorList
    times = []

    def stamp(input_ids, scores):
        times.append(time.perf_counter())
        return scores
    enc = tok("x = torch.relu(x)\n" * 84, return_tensors="pt", add_special_tokens=False).to(device)  # 1,512 bytes
    gen = GenerationConfig(do_sample=True, temperature=0.7, max_new_tokens=tokens, min_new_tokens=tokens,
                           num_return_sequences=8, eos_token_id=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                           **rl.PURE_SAMPLING, **cache)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.no_grad(), rl.autocast(rl.Config(device=device)):
        model.generate(**enc, generation_config=gen, logits_processor=LogitsProcessorList([stamp]))
    return t0, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=3000)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    model, tok = rl.tiny_policy(0)
    model = model.to(args.device).eval()
    stamps(model, tok, args.device, 50, rl.STATIC_CACHE)  # warm-up: kernels loaded, allocator primed
    for name, cache in (("static", rl.STATIC_CACHE), ("growing", {})):
        t0, t = stamps(model, tok, args.device, args.tokens, cache)
        spans = [f"{1e3 * (t[min(i + 500, len(t) - 1)] - t[i]) / (min(i + 500, len(t) - 1) - i):.2f}"
                 for i in range(0, len(t) - 1, 500)]
        print(f"{name:8s} total {t[-1] - t0:6.1f} s | ms/token per 500 tokens: {' '.join(spans)}", flush=True)


if __name__ == "__main__":
    main()
