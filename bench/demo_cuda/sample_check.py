"""How faithfully does an sft checkpoint copy its training programs? Plain prompt, temperature 0.7, 8 samples per
task; counts the samples whose code is byte for byte one of the task's working programs in the data.

    python bench/demo_cuda/sample_check.py RUN_FOLDER DATA.jsonl [cpu|cuda]
"""
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import rl  # noqa: E402
from prompts import build_prompt, extract_code, render  # noqa: E402

ckpt, data = sys.argv[1], sys.argv[2]
device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
cfg = replace(rl.Config(), model="tiny", device=device, init_from=ckpt, group_size=8, temperature=0.7,
              max_new_tokens=3800, top_p=1.0, data=data)
keep = rl.sft_records(cfg)  # the records sft trained on
model, tok = rl.initial_policy(cfg)
tot = exact = broken = 0  # broken: no code block came out of the reply (extract_code found none that parses)
for task in sorted({r["task"] for r in keep}):
    progs = {r["code"].strip() for r in keep if r["task"] == task}
    ref = next(r["ref_code"] for r in keep if r["task"] == task)
    t0 = time.time()
    out = rl.generate(cfg, model, tok, [render(build_prompt(ref, device=device, contrastive=False), tok)], 1)[0]
    codes = [extract_code(t).code or "" for t in out["texts"]]
    e, b = sum(c.strip() in progs for c in codes), sum(not c for c in codes)
    tot, exact, broken = tot + len(codes), exact + e, broken + b
    print(f"{task}: exact {e}/{len(codes)}, no code {b}/{len(codes)}, {time.time() - t0:.0f} s, "
          f"lengths {[len(c) for c in codes]}", flush=True)
print(f"all: exact {exact}/{tot}, no code {broken}/{tot}")
