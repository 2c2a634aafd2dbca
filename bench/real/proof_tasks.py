"""bench/real/proof_tasks.py: the proof's training tasks, computed from the stage-1 data before any run (PROTOCOL.md).

A training task of split.json is in when its working stage-1 variants (status ok, not the reference renamed) differ
in speed by at least --min-spread (fastest / slowest measured speedup) and one of them above --above fits the
generation cap: written as the three-section reply sft trains on (rl.as_reply, with its headings), then the end of
sequence, it takes at most --cap tokens. Held-out tasks are never in. Tokens are counted with the Qwen2.5 tokenizer
of a GGUF file (the 0.5B and 1.5B share it); without one, as characters / 3.5, and the output says so.

    python bench/real/proof_tasks.py                 # a markdown table: each training task, in or out, and why
    python bench/real/proof_tasks.py --cap 2048      # what another cap would leave out
"""
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import rl  # noqa: E402
import runs  # noqa: E402

MODELS = Path("~/.cache/cudal1/models").expanduser()


def token_counter(gguf):
    """(count(text) -> tokens, what counts them): the GGUF's tokenizer, or characters / 3.5 without one."""
    found = [Path(gguf)] if gguf else sorted(MODELS.glob("*.gguf"))
    if found and found[0].exists():
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(found[0].parent), gguf_file=found[0].name)
        return (lambda text: len(tok(text, add_special_tokens=False)["input_ids"])), f"tokenizer of {found[0].name}"
    return (lambda text: round(len(text) / 3.5)), "characters / 3.5 (no GGUF found)"


def variants(records, count):
    """{task: [(speedup, tokens as a reply + eos, candidate)]} of the working variants, fastest first."""
    out = {}
    for r in records:
        res = r["result"]
        if res["status"] == "ok" and not res["same_as_reference"] and res["speedup"]:
            out.setdefault(r["task"], []).append((res["speedup"], count(rl.as_reply(r["code"], "")) + 1,
                                                  r["candidate"]))
    return {task: sorted(v, reverse=True) for task, v in out.items()}


def select(tasks, found, cap, min_spread=1.3, above=1.02):
    """[(task, in?, fastest / slowest, the fastest variant above `above` within the cap or None, the variants above
    `above` beyond the cap)] for each of the tasks. Example: variants 1.5x (900 tokens), 1.1x (4000), 0.9x (600) with
    cap 3200 -> in: spread 1.67, fits 1.5x, 1.1x out of reach."""
    rows = []
    for task in tasks:
        v = found.get(task, [])
        spread = v[0][0] / v[-1][0] if v else 1.0
        fits = next((x for x in v if x[0] > above and x[1] <= cap), None)
        beyond = [x for x in v if x[0] > above and x[1] > cap]
        rows.append((task, spread >= min_spread and fits is not None, spread, fits, beyond))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(HERE / "stage1.jsonl"))
    p.add_argument("--gguf", default="", help="a Qwen2.5 GGUF whose tokenizer counts (default: the first cached one)")
    p.add_argument("--cap", type=int, default=3200, help="max new tokens of the runs and the measurement")
    p.add_argument("--min-spread", type=float, default=1.3)
    p.add_argument("--above", type=float, default=1.02)
    a = p.parse_args(argv)
    count, how = token_counter(a.gguf)
    split = json.loads((HERE / "split.json").read_text())
    rows = select(split["train"], variants(runs.read_jsonl(a.data), count), a.cap, a.min_spread, a.above)
    print(f"tokens: {how}; cap {a.cap}; in: spread >= {a.min_spread}x and a variant above {a.above}x within the cap\n")
    print("| task | in | fastest / slowest | fastest within the cap (x, tokens) | above 1.02x beyond the cap |")
    print("|---|---|---|---|---|")
    for task, ok, spread, fits, beyond in rows:
        fit = f"{fits[2]} {fits[0]:.2f}x, {fits[1]}" if fits else "-"
        out = ", ".join(f"{c} {s:.2f}x, {n}" for s, n, c in beyond) or "-"
        print(f"| {task} | {'yes' if ok else 'no'} | {spread:.2f} | {fit} | {out} |")
    chosen = [task for task, ok, *_ in rows if ok]
    print(f"\n{len(chosen)} tasks: {','.join(chosen)}")
    return chosen


if __name__ == "__main__":
    main()
