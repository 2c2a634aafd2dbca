"""The demo policy on CPU: bench/demo/policy is the tiny model after sft + ssl on bench/demo/stage1.jsonl,
shipped so that `python rl.py --task all` without a GPU or network starts from it (with rl.PRESETS["demo"]: plain
prompts, temperature 0.7, lr, mu 2). A few RL steps from it, rewarded only by the real evaluator (evaluate_many on the
CPU), must make the sampled kernels faster and the failed samples rarer. Measured paired: the shipped policy and the
policy after RL each sample the same prompts with the same seeds (a step training never uses), so the samples differ
only where RL changed the policy, not by the luck of the draw; every sample is evaluated. Numbers and their reading:
bench/demo/README.md.
"""
import json
import sys
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "demo"))
import evaluator  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import runs  # noqa: E402
from policy import compare, pooled  # noqa: E402  (bench/demo/policy.py)


TASKS = ["cpu/relu", "cpu/loop_rownorm"]  # the policy samples slow and fast variants of both (5-50x apart)
RL_FLAGS = ["--steps", "8", "--tasks-per-step", "2", "--group-size", "8", "--eval-time-budget", "0",
            "--ckpt-every", "0"]  # the rest (temperature, lr, mu, plain prompts) from rl.PRESETS["demo"]
N_PAIRED = 24  # samples per task for the before/after comparison (policy.compare: the same seeds for both)
FEWER_FAILED, FASTER = 0.10, 1.2   # the margins asserted (bench/demo/README.md says what they were set from)


def test_the_shipped_policy_is_small_and_trained():
    sizes = {f.name: f.stat().st_size for f in runs.DEMO_POLICY.iterdir()}
    assert {"ckpt.pt", "config.json"} <= set(sizes) and sum(sizes.values()) < 5e6, sizes
    state = torch.load(runs.DEMO_POLICY / "ckpt.pt", weights_only=True)  # weights only: no optimizer, no RNG states
    assert set(state) == {"step", "model"}
    random_init = engine.tiny_policy(0)[0].state_dict()
    assert state["model"].keys() == random_init.keys()
    assert all(v.dtype == torch.float32 for v in state["model"].values())
    assert not torch.equal(state["model"]["model.embed_tokens.weight"], random_init["model.embed_tokens.weight"])
    assert json.loads((runs.DEMO_POLICY / "config.json").read_text())["model"] == "tiny"
    flags = rl.PRESETS["demo"]
    assert set(flags) <= {f for f in rl.asdict(rl.Config())}
    assert runs.check_config(rl.replace(rl.Config(), **flags))  # names and types of Config fields


def test_a_repeated_code_is_evaluated_once(monkeypatch):
    """evaluate_all sends each distinct (reference, code) of a step to the evaluator once; the samples that repeat
    it get their own copy of that one result, in sample order."""
    calls = []

    def fake_many(pairs, device, **opts):
        calls.append(list(pairs))
        return [evaluator.Result("ok", correct=True, speedup=float(i + 1)) for i in range(len(pairs))]

    monkeypatch.setattr(evaluator, "evaluate_many", fake_many)
    code = "class ModelNew:\n    version = {!r}".format
    rollouts = [dict(texts=[f"```python\n{code(c)}\n```" for c in "ABAA"]),
                dict(texts=[f"```python\n{code('A')}\n```"] * 2)]
    results = runs.evaluate_all(rl.Config(device="cpu"), [("r1", "R1"), ("r2", "R2")], rollouts)
    assert calls == [[("R1", code("A")), ("R1", code("B")), ("R2", code("A"))]]
    assert [r.speedup for r in results] == [1.0, 2.0, 1.0, 1.0, 3.0, 3.0]
    assert results[0] is not results[2]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """A few RL steps through the default path: no --model, --device cpu -> the shipped demo policy."""
    out = tmp_path_factory.mktemp("demo") / "rl"
    t0 = time.time()
    cfg = rl.run(rl.parse_config(["--device", "cpu", "--task", ",".join(TASKS), "--out", str(out)] + RL_FLAGS))
    return cfg, runs.read_jsonl(out / "log.jsonl"), time.time() - t0


def test_rl_from_the_demo_policy_writes_faster_kernels_and_fails_less(demo_run):
    cfg, log, seconds = demo_run
    assert (cfg.model, cfg.init_from, cfg.contrastive) == ("tiny", str(runs.DEMO_POLICY), False)  # the fallback
    assert [r["step"] for r in log] == list(range(1, cfg.steps + 1)) and all(sorted(r["tasks"]) == sorted(TASKS)
                                                                           for r in log)
    print(f"\ndemo RL, {cfg.steps} steps in {seconds:.0f} s; in the run (step 1: the shipped policy, the last two: "
          "after RL; different seeds per step):")
    for name, recs in (("step 1", log[:1]), (f"steps {cfg.steps - 1}-{cfg.steps}", log[-2:])):
        n = pooled(recs, cfg.group_size)
        print(f"  {name}: failed {n['failed']:.0%}, mean speedup of correct samples {n['speedup']:.2f}x; "
              f"per task and step {n['per_task']}")
    # the measure: the shipped policy and the policy after RL, sampled with the same seeds, every sample evaluated
    t0 = time.time()
    before, after = compare(cfg, [runs.DEMO_POLICY, cfg.out], N_PAIRED)
    print(f"paired, {N_PAIRED} samples per task with the same seeds ({time.time() - t0:.0f} s):")
    for name, n in (("before rl", before), ("after rl", after)):
        print(f"  {name}: failed {n['failed']:.0%}, mean speedup of correct samples {n['speedup']:.2f}x; "
              f"per task {n['per_task']}")
    assert after["failed"] <= before["failed"] - FEWER_FAILED
    assert after["speedup"] >= FASTER * before["speedup"]
