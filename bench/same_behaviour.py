"""Did a change of the code change what a run does? Three seeded CPU runs, summarised without their clocks:

    python bench/same_behaviour.py runs/before      # on the tree before the change
    python bench/same_behaviour.py runs/after       # on the tree after it
    diff runs/before/summary.txt runs/after/summary.txt   # nothing: the same logs, samples, weights and configs

1. rl with a toy reward (no evaluator): 3 steps of 2 tasks x 4 samples of the tiny model, each updated.
2. the chain (--stage all) with the tiny model: sft, ssl, sftc and rl with the real evaluator (tiny's replies
   fail to compile, so their verdicts do not depend on the machine's speed).
3. the demo policy (no --model on a CPU) for one step, --no-update: its replies and their verdicts.
summary.txt: every log.jsonl record without its seconds (the demo's speedups and the rewards made of them are
measured and move from run to run: left out too), each sample's task, status and a hash of its reply, the sum of
each checkpoint's weights, and each config.json without its paths. About 3 minutes on 2 cores.
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SECONDS = {"gen_s", "gen_tok_s", "eval_s", "update_s", "step_s", "build_s", "evaluate_s", "build_wait_s",
           "ahead_wait_s"}
TOY = """import sys, rl
def reward(task, texts):
    return [float(len(t) % 7) - 3.0 for t in texts]
rl.run(rl.Config(model="tiny", task="cpu/relu,cpu/add_mul,cpu/softmax", steps=3, group_size=4, tasks_per_step=2,
                 max_new_tokens=24, out=sys.argv[1], device="cpu", lr=1e-3, gen_batch=2, mask_truncated=False),
       reward_fn=reward)
"""


def three_runs(out):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    for argv in ([sys.executable, "-c", TOY, str(out / "toy")],
                 [sys.executable, "rl.py", "--stage", "all", "--model", "tiny", "--task", "cpu/relu,cpu/add_mul",
                  "--sft-steps", "2", "--ssl-rounds", "1", "--sftc-steps", "1", "--steps", "1", "--max-new-tokens",
                  "48", "--group-size", "2", "--tasks-per-step", "2", "--out", str(out / "chain")],
                 [sys.executable, "rl.py", "--task", "cpu/relu,cpu/add_mul", "--steps", "1", "--no-update", "--out",
                  str(out / "demo")]):
        print("+", " ".join(argv[:2] + argv[3:] if argv[1] == "-c" else argv[1:]), flush=True)
        with open(out / "output.txt", "a") as f:
            subprocess.run(argv, cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT, check=True)


def summary(out):
    import torch
    lines = []
    for log in sorted(out.rglob("log.jsonl")):
        for line in log.read_text().splitlines():
            rec = {k: v for k, v in json.loads(line).items() if k not in SECONDS}
            if log.parent.name == "demo":  # measured on this machine's clock
                for k in ("best_speedup", "mean_reward", "max_reward"):
                    rec.pop(k, None)
                for task in rec.get("per_task", {}).values():
                    task.pop("mean_speedup", None)
            lines.append(f"{log.relative_to(out)} {json.dumps(rec, sort_keys=True)}")
    for samples in sorted(out.rglob("samples.jsonl")):
        for line in samples.read_text().splitlines():
            s = json.loads(line)
            reply = hashlib.sha1(s["reply"].encode()).hexdigest()[:12]
            lines.append(f"{samples.relative_to(out)} {s['step']} {s['task']} {s['status']} {reply}")
    for ckpt in sorted(out.rglob("ckpt.pt")):
        state = torch.load(ckpt, weights_only=False)["model"]
        lines.append(f"{ckpt.relative_to(out)} {sum(float(v.double().abs().sum()) for v in state.values()):.10e}")
    for config in sorted(out.rglob("config.json")):
        saved = {k: v for k, v in json.loads(config.read_text()).items() if k not in ("out", "init_from", "data",
                                                                                       "tasks_dir")}
        lines.append(f"{config.relative_to(out)} {json.dumps(saved, sort_keys=True)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__.split("\n\n")[1])
    out = Path(sys.argv[1]).absolute()
    if out.exists():
        sys.exit(f"same_behaviour.py: {out} exists: give a new folder")
    out.mkdir(parents=True)
    three_runs(out)
    (out / "summary.txt").write_text(summary(out))
    print(f"{out / 'summary.txt'}: {len(summary(out).splitlines())} lines")
