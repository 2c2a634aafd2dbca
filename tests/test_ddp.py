"""Data-parallel RL (torchrun) on CPU: the ranks' shares of the loss add up to the whole batch's gradient for every
loss variant, and 2 gloo processes train exactly as 1 process does (same weights, logs, exemplar database), also when
they stop and resume.

The two-process run uses a stand-in evaluator (speedup = 1 + 4 * share of lowercase letters in the reply) so that the
whole reward path runs (evaluation split over the ranks and gathered, rewards normalised over the step, winners into
the database), and a short prompt that shows the exemplars' scores, so a rank whose database drifted would prompt,
sample and train differently.
"""
import os
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import evaluator  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import runs  # noqa: E402
from test_rl import letter_fraction  # noqa: E402

# ---------------------------------------------------------------------------- shares of the loss


class NoStep:
    """An optimizer that zeroes gradients but never steps: update() then leaves the gradient in p.grad."""

    def __init__(self, model):
        self.model, self.state, self.param_groups = model, {}, [{}]

    def zero_grad(self, set_to_none=True):
        self.model.zero_grad(set_to_none=set_to_none)

    def step(self):
        pass


def random_rollouts(G=3):
    """3 groups of G samples: prompts of 5, 9, 7 tokens, completions of 1..6 tokens (uneven token counts)."""
    g = torch.Generator().manual_seed(0)
    return [dict(prompt=torch.randint(0, 256, (p,), generator=g), ids=torch.randint(0, 256, (G, 6), generator=g),
                 mask=torch.arange(6) < torch.randint(1, 7, (G, 1), generator=g)) for p in (5, 9, 7)]


@pytest.mark.parametrize("variant", ["grpo", "dapo", "drgrpo"])
def test_shares_of_the_loss_add_up_to_the_whole_batch(monkeypatch, variant):
    """update() on samples 0-4 plus update() on samples 5-8 (what 2 ranks do before the all_reduce sum) == update() on
    all 9: gradient and logged loss. dapo needs the whole batch's token count, grpo and drgrpo its sample count."""
    cfg = rl.Config(model="tiny", device="cpu", loss_variant=variant, grad_accum=2, max_grad_norm=0.0, seed=1)
    model, _ = engine.load_policy(cfg)
    rollouts, adv = random_rollouts(), torch.linspace(-1.5, 1.5, 9)

    def gradient(part):
        monkeypatch.setattr(engine, "shard", part)
        stats = rl.update(cfg, model, None, NoStep(model), rollouts, adv)
        return [p.grad.clone() for p in model.parameters()], stats["loss"]

    whole, loss = gradient(lambda items: items)
    first, loss0 = gradient(lambda items: items[:5])
    second, loss1 = gradient(lambda items: items[5:])
    assert loss0 + loss1 == pytest.approx(loss, rel=1e-5)
    for w, a, b in zip(whole, first, second):
        torch.testing.assert_close(a + b, w, rtol=1e-5, atol=1e-7)
    flat = lambda grads: torch.cat([g.flatten() for g in grads])  # noqa: E731
    assert (flat(first) - flat(whole)).norm() > 0.1 * flat(whole).norm()  # a share alone is far from it

# ---------------------------------------------------------------------------- 2 processes == 1 process


def scores_prompt(ref_src, exemplars=(), device="cuda", contrastive=True):
    """A short prompt that depends on the database: the scores of the exemplars drawn for it."""
    return "Reply in lowercase letters only. Scores so far: " + " ".join(f"{e.score:.2f}" for e in exemplars)


def fake_evaluate_many(pairs, device="cpu", **opts):
    """A deterministic evaluator: every candidate ok, speedup 1 + 4 * its share of lowercase letters."""
    return [evaluator.Result("ok", correct=True, speedup=1.0 + 4.0 * letter_fraction(code), ref_ms=1.0)
            for _, code in pairs]


def fake_evaluation(setattr):
    """Short database-dependent prompts, the reply itself as its code, the stand-in evaluator (setattr: the builtin in
    a rank's process, monkeypatch.setattr in the test's)."""
    setattr(rl, "build_prompt", scores_prompt)
    setattr(runs, "extract_code", lambda text: types.SimpleNamespace(code=text))
    setattr(evaluator, "evaluate_many", fake_evaluate_many)


RANK = """
import sys
sys.path[:0] = [{repo!r}, {tests!r}]
import torch
torch.set_num_threads(1)
import rl, test_ddp
test_ddp.fake_evaluation(setattr)
run = rl.run
def left_the_group(cfg, **kw):
    out = run(cfg, **kw)
    assert not torch.distributed.is_initialized()  # a gloo rank exiting in its group aborted: 1 exit in 240
    return out
rl.run = left_the_group
rl.main(sys.argv[1:])  # as `torchrun rl.py` does; its end skips the teardown where a rank could abort (SIGABRT)
"""
# 3 tasks over 2 ranks (1 + 2 generated), 9 samples (5 + 4 trained), dapo (needs the global token count), mu = 2.
# grad_accum 9: one sample per micro-batch in both runs, as batching pads prompts to different lengths, which moves
# log-probs by ~1e-6 (test_rl: alone vs left-padded); test_shares_of_the_loss_add_up... covers bigger micro-batches.
# --gen-batch 1: each task's group sampled alone, so 1 and 2 processes draw the same samples
FLAGS = ["--model", "tiny", "--device", "cpu", "--task", "cpu/relu,cpu/add_mul,cpu/softmax", "--tasks-per-step",
         "3", "--group-size", "3", "--max-new-tokens", "16", "--lr", "1e-2", "--seed", "3", "--steps", "2",
         "--loss-variant", "dapo", "--mu", "2", "--grad-accum", "9", "--gen-batch", "1", "--no-mask-truncated"]
EXACT = ("step", "tasks", "mean_reward", "max_reward", "pass_rate", "best_speedup", "status", "mean_tokens", "updated")
CLOSE = ("loss", "clip_frac", "kl", "ratio", "grad_norm")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_ranks(driver, args, n=2):
    """n rank processes with torchrun's environment set by hand; each rank a Popen."""
    env = dict(os.environ, WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), OMP_NUM_THREADS="1")
    return [subprocess.Popen([sys.executable, str(driver), *args], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(n)]


def finish(ranks):
    """Each rank's (stdout, stderr) once all exited 0 (killed and failed if one hangs)."""
    try:
        outs = [p.communicate(timeout=120) for p in ranks]
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in ranks] == [0] * len(ranks), "\n".join(err[-3000:] for _, err in outs)
    return outs


def test_two_gloo_processes_train_as_one(tmp_path, monkeypatch):
    """2 ranks (torchrun's environment set by hand) and 1 process, 2 RL steps of the same config: same weights. The
    2 ranks stop after step 1 and resume to step 2 (same N), so the resume is checked on the way.

    Tolerance: the runs differ only in the order the gradient is summed (two partial sums, then the all_reduce),
    ~1e-7 relative to the summed terms. AdamW steps by lr * m / sqrt(v), about lr * sign(g) whatever |g|, so on a
    coordinate whose gradient nearly cancels that rounding can move the step by a fair part of lr: the bound is
    lr / 100 = 1e-4 per weight (measured: 3e-5 on 1 of 361600 weights, all others under 1e-5) and 1e-4 for the norm
    of the difference over the norm of the change training made (measured 4e-6). With the all_reduce taken out each
    rank steps on its own half-gradient: measured 7.8e-2 and 1.1. The logged grad_norm (of the summed gradient)
    also catches a wrong scale of the shares, which AdamW alone would hide.
    """
    driver = tmp_path / "rank.py"
    driver.write_text(RANK.format(repo=str(REPO), tests=str(REPO / "tests")))
    t0 = time.time()
    two = ["--out", str(tmp_path / "two")]
    ranks = launch_ranks(driver, FLAGS + two + ["--steps", "1"])  # the later --steps wins
    try:
        fake_evaluation(monkeypatch.setattr)
        rl.run(rl.parse_config(FLAGS + ["--out", str(tmp_path / "one")]))  # meanwhile, in this process
    finally:
        first = finish(ranks)
    assert "step    1 |" in first[0][0] and first[1][0] == ""  # rank 0 alone prints
    outs = finish(launch_ranks(driver, ["--resume", *two, "--steps", "2"]))
    assert "from step 2" in outs[0][0] and "step    2 |" in outs[0][0] and "step    1 |" not in outs[0][0]
    print(f"1 + 2 processes, then the 2 resumed: {time.time() - t0:.1f} s")

    log_one, log_two = (runs.read_jsonl(tmp_path / d / "log.jsonl") for d in ("one", "two"))
    assert len(log_two) == 2 and all(r["updated"] and r["grad_norm"] > 0 for r in log_one)  # rank 0 alone logged
    for a, b in zip(log_one, log_two):
        assert {k: a[k] for k in EXACT} == {k: b[k] for k in EXACT}
        assert {k: b[k] for k in CLOSE} == pytest.approx({k: a[k] for k in CLOSE}, rel=1e-4, abs=1e-7)
    db_one, db_two = ((tmp_path / d / "exemplars.jsonl").read_text() for d in ("one", "two"))
    assert db_one == db_two and len(db_one.splitlines()) > 3  # the same winners, written once
    best_one, best_two = ({f.name: f.read_text() for f in (tmp_path / d / "best").iterdir()} for d in ("one", "two"))
    assert best_one == best_two and len(best_one) == 3

    start, _ = engine.load_policy(rl.Config(model="tiny", device="cpu", seed=3))
    states = [start.state_dict()] + [torch.load(tmp_path / d / "ckpt.pt", weights_only=False)["model"]
                                     for d in ("one", "two")]
    w0, w1, w2 = (torch.cat([s[k].flatten() for k in sorted(states[0])]) for s in states)  # start, one, two
    diff, rel = float((w1 - w2).abs().max()), float((w1 - w2).norm() / (w1 - w0).norm())
    print(f"max weight difference {diff:.1e}, relative to the training change {rel:.1e}")
    assert float((w1 - w0).abs().max()) > 1e-2 and diff < 1e-4 and rel < 1e-4
