"""Can the RL stage act? The five ways the 1.5B's RL steps learnt nothing, each pinned on the CPU with the tiny model and
hand-made records: the optimizer state follows the objective, the KL anchor is the stage's start, the exemplar database
keeps every working variant, the reward keeps the speed order inside a group, and stage 3 asks the question sft's
contrastive prompts trained (never the task's best shown, the analysis a comparison of what is shown).
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import evaluator  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import prompts  # noqa: E402
import cudal1  # noqa: E402
import runs  # noqa: E402
from prompts import build_prompt, compare_variants, extract_code  # noqa: E402
from test_stages import CLAMP, RELU, TINY, short_prompt, write_jsonl  # noqa: E402

RECORD = dict(task="cpu/relu", ref_code=RELU, code=CLAMP, result=dict(status="ok", speedup=1.5))


def ranked(texts):
    """A toy reward with a different value per sample: every group carries a signal."""
    return [float(i) for i in range(len(texts))]


def adam_steps(folder):
    """AdamW's step count per parameter in a run folder's checkpoint."""
    state = torch.load(Path(folder) / "ckpt.pt", weights_only=False)["optim"]["state"]
    return {int(s["step"]) for s in state.values()}


@pytest.fixture(scope="module")
def sft_lora(tmp_path_factory):
    """A 2-step sft run with LoRA rank 4 (its adapters moved off zero) on one record of cpu/relu."""
    out = tmp_path_factory.mktemp("sft")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rl, "build_prompt", short_prompt)
        rl.run(rl.parse_config(TINY + ["--stage", "sft", "--data", write_jsonl(out / "d.jsonl", [RECORD]), "--task",
                                       "cpu/relu", "--steps", "2", "--lr", "1e-2", "--lora-rank", "4",
                                       "--out", str(out / "run")]))
    return out


def test_optimizer_state_follows_the_objective(sft_lora, tmp_path, monkeypatch):
    """sft after sft keeps AdamW's moments (one objective); rl after sft starts a fresh AdamW (the sft momentum was 74%
    of the 1.5B's RL update); --optimizer-state keep carries them anyway. config.json says which happened."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    init, data = str(sft_lora / "run"), str(sft_lora / "d.jsonl")
    assert adam_steps(init) == {2}
    more = rl.run(rl.parse_config(["--stage", "sft", "--init-from", init, "--data", data, "--task", "cpu/relu",
                                   "--steps", "1", "--device", "cpu", "--out", str(tmp_path / "sft")]))
    assert more.optimizer_state == "keep" and adam_steps(tmp_path / "sft") == {3}
    common = ["--init-from", init, "--task", "cpu/relu", "--steps", "1", "--group-size", "2", "--max-new-tokens", "8",
              "--device", "cpu", "--no-mask-truncated"]  # (the random policy's replies are all cut at the cap)
    fresh = rl.run(rl.parse_config(common + ["--out", str(tmp_path / "rl")]), reward_fn=lambda t, x: ranked(x))
    assert fresh.optimizer_state == "fresh" and adam_steps(tmp_path / "rl") == {1}
    assert json.loads((tmp_path / "rl" / "config.json").read_text())["optimizer_state"] == "fresh"
    kept = rl.run(rl.parse_config(common + ["--optimizer-state", "keep", "--out", str(tmp_path / "keep")]),
                  reward_fn=lambda t, x: ranked(x))
    assert kept.optimizer_state == "keep" and adam_steps(tmp_path / "keep") == {3}


def test_the_kl_anchor_is_the_policy_the_stage_started_from(sft_lora, tmp_path, monkeypatch):
    """With LoRA and beta > 0, the anchor is a frozen copy of the starting adapters (sft's), not the base with adapters
    off (the pre-sft model): at step 1, before any update, the KL is 0, and the anchor scores as the starting policy."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    init = sft_lora / "run"
    cfg = rl.run(rl.parse_config(["--init-from", str(init), "--task", "cpu/relu", "--steps", "2", "--group-size", "2",
                                  "--max-new-tokens", "8", "--device", "cpu", "--beta", "0.5", "--lr", "1e-2",
                                  "--no-mask-truncated", "--out", str(tmp_path / "rl")]),
                 reward_fn=lambda t, x: ranked(x))
    log = runs.read_jsonl(tmp_path / "rl" / "log.jsonl")
    assert log[0]["updated"] and log[0]["kl"] == 0.0 and log[1]["kl"] > 0  # step 2: the policy has moved
    anchor = torch.load(tmp_path / "rl" / "anchor.pt", weights_only=True)
    start = torch.load(init / "ckpt.pt", weights_only=False)["model"]
    assert anchor.keys() == start.keys() and all(torch.equal(anchor[k], start[k]) for k in start)
    assert any(start[k].abs().sum() > 0 for k in start if ".lora_b" in k)  # sft moved them: adapters off differ
    starting, _ = engine.initial_policy(rl.replace(cfg, resume=False))  # --init-from's weights
    now, _ = engine.initial_policy(rl.replace(cfg, init_from=str(tmp_path / "rl"), resume=False))  # after 2 steps
    ids = torch.arange(3, 40)[None]
    with torch.no_grad(), engine.scored_by(now, anchor) as scored:
        assert torch.equal(scored(ids).logits, starting(ids).logits)
    assert not torch.allclose(now(ids).logits, starting(ids).logits)


def test_a_resume_keeps_its_full_weights_anchor_when_init_from_is_gone(tmp_path, monkeypatch):
    """Full weights, beta > 0: the anchor (--init-from's weights) is kept in OUT/anchor.pt, so a resume anchors to the
    same start after --init-from's folder is gone (it read --init-from's ckpt.pt again: a missing file ended it), and
    the resumed run's steps are those of a run never cut."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    init = tmp_path / "sft"
    rl.run(rl.parse_config(TINY + ["--stage", "sft", "--data", write_jsonl(tmp_path / "d.jsonl", [RECORD]), "--task",
                                   "cpu/relu", "--steps", "1", "--lr", "1e-2", "--out", str(init)]))
    flags = ["--init-from", str(init), "--task", "cpu/relu", "--group-size", "2", "--max-new-tokens", "8", "--device",
             "cpu", "--beta", "0.5", "--lr", "1e-2", "--ckpt-every", "1", "--no-mask-truncated"]
    rl.run(rl.parse_config(flags + ["--steps", "3", "--out", str(tmp_path / "straight")]),
           reward_fn=lambda t, x: ranked(x))
    rl.run(rl.parse_config(flags + ["--steps", "2", "--out", str(tmp_path / "cut")]), reward_fn=lambda t, x: ranked(x))
    start = torch.load(init / "ckpt.pt", weights_only=False)["model"]
    anchor = torch.load(tmp_path / "cut" / "anchor.pt", weights_only=True)
    assert anchor.keys() == start.keys() and all(torch.equal(anchor[k], start[k]) for k in start)
    (init / "ckpt.pt").unlink()
    rl.run(rl.parse_config(["--resume", "--out", str(tmp_path / "cut"), "--steps", "3"]),
           reward_fn=lambda t, x: ranked(x))
    straight, cut = (runs.read_jsonl(tmp_path / name / "log.jsonl") for name in ("straight", "cut"))
    assert [r["kl"] for r in cut] == [r["kl"] for r in straight] and cut[2]["kl"] > 0


def test_a_lora_resume_without_its_anchor_is_an_error(sft_lora, tmp_path, monkeypatch):
    """With LoRA, a resumed step without OUT/anchor.pt cannot know the stage's starting adapters: an error naming the
    file, not a silent anchor on the adapters of now (a KL to where the policy is: zero, and no pull back)."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    out = tmp_path / "rl"
    rl.run(rl.parse_config(["--init-from", str(sft_lora / "run"), "--task", "cpu/relu", "--steps", "1", "--group-size",
                            "2", "--max-new-tokens", "8", "--device", "cpu", "--beta", "0.5", "--lr", "1e-2",
                            "--no-mask-truncated", "--out", str(out)]), reward_fn=lambda t, x: ranked(x))
    (out / "anchor.pt").unlink()
    with pytest.raises(engine.PolicyError, match="anchor.pt"):
        rl.run(rl.parse_config(["--resume", "--out", str(out), "--steps", "2"]), reward_fn=lambda t, x: ranked(x))
    assert len(runs.read_jsonl(out / "log.jsonl")) == 1


def test_the_database_gets_every_working_variant_whatever_sft_trains_on(tmp_path, monkeypatch):
    """--sft-min-speedup narrows what sft trains on, not the exemplar database: slower variants are the speed choices
    GRPO learns from (after sft on fast ones alone, each group recited one program)."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    records = [dict(RECORD, code=CLAMP.replace("0.0", v), result=dict(status="ok", speedup=s))
               for v, s in (("0", 0.6), ("1", 1.5))] + [dict(RECORD, code="broken", result=dict(status="wrong_output"))]
    rl.run(rl.parse_config(TINY + ["--stage", "sft", "--data", write_jsonl(tmp_path / "d.jsonl", records), "--task",
                                   "cpu/relu", "--steps", "1", "--sft-min-speedup", "1", "--out", str(tmp_path / "o")]))
    stored = {e["score"] for e in runs.read_jsonl(tmp_path / "o" / "exemplars.jsonl") if not e["meta"].get("reference")}
    assert stored == {0.6, 1.5}
    assert rl.Config().sft_min_speedup == 0  # by default sft trains on every working variant too


def result(speedup):
    """A hand-made evaluator result: correct at that speedup, or a failure (None)."""
    return evaluator.Result("ok" if speedup else "wrong_output", correct=bool(speedup), speedup=speedup)


def test_the_default_reward_keeps_the_speed_order_inside_a_group():
    """Hand-computed: speedups [fail, 0.89, 1.19, 1.5] in a group of 4, beside two groups of failures. Log speedups,
    failures -2, minus the group mean, no std: rewards [-2, -0.1165, 0.1740, 0.4055], mean -0.3843 -> [-1.6157,
    0.2677, 0.5582, 0.7897]. The paper's shape (normalised over the step, clipped at 1.5) gives 1.19 and 1.5 the
    same advantage."""
    results = [result(s) for s in (None, 0.89, 1.19, 1.5)] + [result(None)] * 8
    cfg = rl.Config(group_size=4)
    adv = rl.advantages_of(cfg, rl.rewards_of(cfg, results)[1])
    torch.testing.assert_close(adv[:4], torch.tensor([-1.6157, 0.2677, 0.5582, 0.7897]), atol=1e-4, rtol=0)
    assert adv[1] < adv[2] < adv[3]
    assert not adv[4:].any()  # the flat groups: no signal
    paper = rl.Config(group_size=4, reward_normalize=True, adv_std_floor=0.0, std_normalize=True, log_speedup=False,
                      fail_reward=0.0)
    old = rl.advantages_of(paper, rl.rewards_of(paper, results)[1])
    assert old[2] == old[3]  # what the clip did to the 1.5B's steps


def test_a_lone_fast_program_outranks_a_lone_slow_one_and_noise_earns_little():
    """Among failures a lone correct 5x gets +2.71 and a lone 0.5x +0.98 (the group std made both +1.73); +-3% timing
    noise at 3x earns at most 0.03, a sixth of what 1.5x beside 1.0x earns (0.20; the std made the noise +-1.41)."""
    cfg = rl.Config(group_size=4)
    adv = lambda speedups: rl.advantages_of(cfg, rl.rewards_of(cfg, [result(x) for x in speedups])[1])  # noqa: E731
    fast, slow = adv([None, None, None, 5.0])[3], adv([None, None, None, 0.5])[3]
    assert fast == pytest.approx(2.7071, abs=1e-4) and slow == pytest.approx(0.9801, abs=1e-4)
    noise, real = adv([3.0, 3.09, 2.91, 3.0]).abs().max(), adv([1.5, 1.0, 1.0, 1.5]).abs().max()
    assert real == pytest.approx(0.2027, abs=1e-4) and noise < real / 6


def test_flat_groups_get_exact_zeros_and_stay_out_of_the_update(monkeypatch):
    """Equal rewards in a group of 7 (not a power of two: the mean rounds) are exact zeros, not ~1e-15; the update
    forwards only the groups with a signal, and with one AdamW step per batch no old log-prob forward runs."""
    flat = rl.advantages_of(rl.Config(group_size=7), rl.rewards_of(rl.Config(), [result(0.7)] * 7)[1])
    assert flat.eq(0).all()
    cfg = rl.Config(model="tiny", device="cpu", group_size=4, grad_accum=1, lr=1e-3)
    model, _ = engine.load_policy(cfg)
    g = torch.Generator().manual_seed(0)
    rollouts = [dict(prompt=torch.randint(0, 256, (6,), generator=g), ids=torch.randint(0, 256, (4, 8), generator=g),
                     mask=torch.ones(4, 8, dtype=torch.bool)) for _ in range(2)]
    adv = torch.tensor([0.0] * 4 + [1.0, -1.0, 0.5, -0.5])  # group 1 flat, group 2 with a signal
    seen, token_logps = [], engine.token_logps
    monkeypatch.setattr(engine, "token_logps", lambda cfg, model, samples, **kw: (
        seen.append((torch.is_grad_enabled(), [s[1][0].item() for s in samples])), token_logps(cfg, model, samples,
                                                                                              **kw))[1])
    stats = rl.update(cfg, model, None, torch.optim.AdamW(model.parameters(), lr=cfg.lr), rollouts, adv)
    second = [int(x) for x in rollouts[1]["ids"][:, 0]]
    assert seen == [(True, second)] and stats["trained"] == 4  # one forward, with grad, of group 2 alone


def test_a_fresh_adamw_warms_up_and_a_continued_one_does_not():
    cfg = rl.Config(lr=1e-3, warmup_steps=4)
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.AdamW([w], lr=cfg.lr)
    lrs = []
    for _ in range(6):
        w.grad = torch.ones(3)
        engine.optimizer_step(cfg, torch.nn.Linear(1, 1), opt)  # (the norm is of another module's: none)
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3])
    later = torch.optim.AdamW([w], lr=cfg.lr)
    later.load_state_dict(opt.state_dict())  # moments kept from --init-from: past the warmup already
    w.grad = torch.ones(3)
    engine.optimizer_step(cfg, torch.nn.Linear(1, 1), later)
    assert later.param_groups[0]["lr"] == pytest.approx(1e-3)


def test_the_group_variance_diagnostic_counts_groups_with_a_signal():
    """Groups with a non-zero advantage, groups whose correct speeds differ by more than the timing noise
    (round_to_one 0.02), and the flat ones; hand-made: one speed group, one pass/fail group, one flat group."""
    cfg = rl.Config(group_size=3)
    results = ([result(s) for s in (1.0, 1.3, None)] + [result(s) for s in (1.1, 1.11, None)]
               + [result(None)] * 3)
    adv = rl.advantages_of(cfg, rl.rewards_of(cfg, results)[1])
    assert runs.group_signal(cfg, adv, results) == dict(groups=3, groups_signal=2, groups_speed=1, groups_flat=1)


def test_every_rl_step_logs_the_diagnostic_and_no_update_leaves_the_weights(tmp_path, monkeypatch):
    """log.jsonl carries groups / groups_signal / groups_flat per step; --no-update samples, rewards and logs, and the
    checkpoint's weights are the start's (a start's groups are checked before steps are spent)."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    out = tmp_path / "o"
    rl.run(rl.parse_config(TINY + ["--task", "cpu/relu,cpu/add_mul", "--steps", "1", "--group-size", "2",
                                   "--max-new-tokens", "8", "--lr", "1e-2", "--no-update", "--out", str(out)]),
           reward_fn=lambda t, x: ranked(x))
    [rec] = runs.read_jsonl(out / "log.jsonl")
    assert (rec["groups"], rec["groups_signal"], rec["groups_flat"], rec["updated"]) == (2, 2, 0, False)
    start, _ = engine.tiny_policy(0)
    saved = torch.load(out / "ckpt.pt", weights_only=False)["model"]
    assert all(torch.equal(saved[k], v) for k, v in start.state_dict().items())


LONG = CLAMP.replace("return", "# " + "x" * 3000 + "\n        return")


def test_stage_3_never_shows_the_best_and_sft_asks_the_same_question(monkeypatch):
    """One rule (draw_variants) for stage 3's prompts and sft's contrastive ones: variants scored below a working
    variant's score (stage 3: target_score, never the best while two remain; sft: the record's own speedup), none
    longer than --exemplar-max-chars. And sft's contrastive target answers the analysis by comparing the variants it
    shows; a record with no measured speedup has no contrastive example."""
    monkeypatch.setattr(rl, "build_prompt", build_prompt)
    cfg = rl.Config(model="tiny", device="cpu", task="cpu/relu", exemplar_max_chars=2000)
    tok = engine.tiny_policy(0)[1]
    codes = {0.7: CLAMP.replace("0.0", "0"), 1.3: CLAMP.replace("0.0", "0."), 2.1: CLAMP.replace("0.0", "0.00"),
             1.9: LONG}
    db = cudal1.ExemplarDB()
    db.seed_reference("cpu/relu", RELU)
    for score, code in codes.items():
        db.add("cpu/relu", code, score)
    seen, targets = set(), set()
    for step in range(1, 25):
        [prompt] = rl.build_prompts(cfg, db, [("cpu/relu", RELU)], step, tok)
        seen |= {s for s, c in codes.items() if c.strip() in prompt}
        rng = np.random.default_rng([rl.seed_for(cfg, step, "cpu/relu"), 1])
        targets.add(cudal1.target_score(db, "cpu/relu", rng)[0])
        assert prompt.count("### Variant") == 2
    assert seen == {0.7, 1.3} and targets == {1.3, 1.9}  # never the best (2.1) nor the long one (1.9)
    record = dict(task="cpu/relu", ref_code=RELU, code=codes[1.3], result=dict(status="ok", speedup=1.3))
    [(p, t, _)] = rl.contrastive_example(cfg, db, tok, torch.tensor([0]), record, 1, 0)
    prompt, reply = tok.decode(p), extract_code(tok.decode(t))
    assert codes[0.7].strip() in prompt and codes[2.1].strip() not in prompt and codes[1.3].strip() not in prompt
    assert reply.code == codes[1.3].strip() and reply.analysis != prompts.STOCK_ANALYSIS
    assert "0.70x" in reply.analysis and "1.00x" in reply.analysis  # the two shown: 0.7 and the reference
    unmeasured = dict(record, result=dict(status="ok"))
    assert rl.contrastive_example(cfg, db, tok, torch.tensor([0]), unmeasured, 1, 0) == []


def test_target_score_by_hand():
    db = cudal1.ExemplarDB()
    db.seed_reference("t", "ref")
    draws = lambda: {cudal1.target_score(db, "t", np.random.default_rng(i)) for i in range(40)}  # noqa: E731
    assert draws() == {(math.inf, 2)}  # the reference alone: shown
    db.add("t", "a", 0.7)
    assert draws() == {(1.0, 2)}  # (one known answer: no smaller prompt keeps two)
    for code, score in (("b", 1.3), ("c", 1.9), ("d", 2.1)):
        db.add("t", code, score)
    assert draws() == {(1.3, 2), (1.9, 2)}  # two below each, the best (2.1) left out


def database(*scores):
    """A task's database: the reference at 1.0 and a code per further score."""
    db = cudal1.ExemplarDB()
    db.seed_reference("t", "ref")
    for i, score in enumerate(scores):
        db.add("t", f"code {i}", score)
    return db


def known_answers(db, shown):
    """The codes a prompt does not show that score at least as much as every variant it shows."""
    top = max(e.score for e in shown)
    return [e for e in db.entries("t") if e.code not in {s.code for s in shown} and e.score >= top]


@pytest.mark.parametrize("scores, target, n_shown", [((0.7, 1.3), 1.0, 1), ((1.0, 1.5), 1.5, 1)],
                         ids=["0.7-1.0-1.3", "1.0-1.0-1.5"])
def test_a_small_database_shows_one_variant_fewer_to_keep_two_known_answers(scores, target, n_shown):
    """{0.7, 1.0, 1.3}: two shown (0.7, 1.0) leave the best (1.3) the one known answer; one shown (0.7, below a
    target of 1.0) leaves two (1.0, 1.3). {1.0, 1.0, 1.5} (round_to_one makes ties at 1.0 common): both 1.0s shown
    leave the best alone; one shown leaves the other 1.0 and 1.5. A group that writes either has a speed to learn."""
    db, cfg = database(*scores), rl.Config(n_exemplars=2)
    for seed in range(30):
        shown = rl.draw_variants(cfg, db, "t", seed)
        assert len(shown) == n_shown and len(known_answers(db, shown)) >= 2
        assert cudal1.target_score(db, "t", np.random.default_rng(seed), 2) == (target, n_shown)


def test_ties_that_already_keep_two_known_answers_show_every_variant():
    """{1.0, 1.0, 1.0, 1.5}: two of the three 1.0s shown leave the third and 1.5: two known answers, two shown."""
    db, cfg = database(1.0, 1.0, 1.5), rl.Config(n_exemplars=2)
    for seed in range(30):
        shown = rl.draw_variants(cfg, db, "t", seed)
        assert len(shown) == 2 and len(known_answers(db, shown)) >= 2


def test_compare_variants_says_what_the_faster_code_does_differently():
    """Derived from scores and code: the kernels by name, the ops a forward calls, how many it launches."""
    slow = "class ModelNew:\n    def forward(self, x):\n        return torch.relu(x).sum(dim=1) + x.mean()\n"
    fast = ('ext = load_inline(name="k", cpp_sources="", cuda_sources="__global__ void relu_sum_k(float* x) {}", '
            'functions=["relu_sum"])\n\nclass ModelNew:\n    def forward(self, x):\n        return ext.relu_sum(x)\n')
    text = compare_variants([(slow, 0.8), (fast, 1.5)], fast)
    assert text.startswith("Variant 1 (0.80x) runs PyTorch ops (relu, sum, mean). Variant 2 (1.50x) runs 1 custom "
                           "CUDA kernel (relu_sum_k). Variant 2 is 1.88x as fast as variant 1: it runs its own kernel "
                           "(relu_sum_k); it no longer calls relu, sum, mean; it launches fewer ops per call (1 instead "
                           "of 3)")
    assert "about as fast" in compare_variants([(slow, 1.0), (slow, 1.01)])


def test_the_default_loss_weighs_every_token_alike():
    """Token mean (DAPO): a 1-token reply with A = -1 and a 3-token one with A = +1, ratios 1 -> loss (1 - 3) / 4 =
    -0.5; per sequence (grpo, the flag) the short failing reply weighs as much as the long one: (1 - 1) / 2 = 0."""
    logp = torch.zeros(2, 3)
    mask = torch.tensor([[1, 0, 0], [1, 1, 1]])
    args = (logp, logp, torch.tensor([-1.0, 1.0]), mask)
    assert rl.grpo_loss(*args, variant=rl.Config().loss_variant)[0] == pytest.approx(-0.5)
    assert rl.grpo_loss(*args, variant="grpo")[0] == pytest.approx(0.0)


def test_replies_cut_at_the_cap_are_marked_logged_and_masked_on_request(tmp_path, monkeypatch):
    """A reply with no eos before max_new_tokens is cut: generate marks it (cut), the log counts it, and
    --mask-truncated leaves it out of the update (under a token mean the longest failures would weigh most)."""
    cfg = rl.Config(model="tiny", device="cpu", group_size=4, max_new_tokens=6, grad_accum=1, lr=1e-3)
    model, tok = engine.load_policy(cfg)
    eos = engine.eos_ids(model, tok)
    [rollout] = engine.generate(cfg, model, tok, ["def f(x):\n"], seed=0)
    assert rollout["cut"].tolist() == [not bool(torch.isin(row, eos).any()) for row in rollout["ids"]]
    g = torch.Generator().manual_seed(0)
    rollouts = [dict(prompt=torch.randint(0, 256, (6,), generator=g), ids=torch.randint(0, 256, (4, 8), generator=g),
                     mask=torch.ones(4, 8, dtype=torch.bool), cut=torch.tensor([True, False, False, True]))]
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])
    trained = {flag: rl.update(rl.replace(cfg, mask_truncated=flag), model, None,
                               torch.optim.AdamW(model.parameters(), lr=cfg.lr), rollouts, adv)["trained"]
               for flag in (False, True)}
    assert trained == {False: 4, True: 2}
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    rl.run(rl.parse_config(TINY + ["--task", "cpu/relu", "--steps", "1", "--group-size", "4", "--max-new-tokens", "6",
                                   "--mask-truncated", "--out", str(tmp_path / "o")]), reward_fn=lambda t, x: ranked(x))
    [rec] = runs.read_jsonl(tmp_path / "o" / "log.jsonl")
    assert rec["cut"] > 0 and rec["trained"] == 4 - rec["cut"]  # (the random tiny model rarely ends in 6 tokens)


def test_the_loss_scores_the_chosen_tokens_alone_as_a_full_log_softmax_would():
    """engine.chosen_logps: the chosen tokens' log-probs at a temperature, each chosen logit less its row's
    logsumexp, without a (m, T, V) tensor of every log-prob; the values and gradients of the full log-softmax."""
    logits = torch.randn(3, 5, 11, generator=torch.Generator().manual_seed(0)).requires_grad_()
    ids = torch.randint(0, 11, (3, 5), generator=torch.Generator().manual_seed(1))
    full = torch.log_softmax(logits / 0.7, -1).gather(-1, ids[..., None]).squeeze(-1)
    ours = engine.chosen_logps(logits, ids, 0.7)
    torch.testing.assert_close(ours, full)
    grad_full, = torch.autograd.grad(full.sum(), logits)
    grad_ours, = torch.autograd.grad(ours.sum(), logits)
    torch.testing.assert_close(grad_ours, grad_full)
    assert engine.chosen_logps(torch.tensor([[[2.0, 0.0]]]), torch.tensor([[0]]), 1.0).item() == \
        pytest.approx(2 - math.log(math.exp(2) + 1))
