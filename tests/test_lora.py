"""LoRA in rl.py on the CPU with the tiny policy: a fresh adapter changes nothing, only adapters learn, the base
(adapters off) stays the base, GRPO through adapters follows the advantage, and checkpoints hold adapters alone."""
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
import rl  # noqa: E402
import engine  # noqa: E402
from test_rl import TOY, read_log, short_prompt, toy_reward  # noqa: E402

IDS = torch.tensor([[5, 17, 99, 3, 41, 200, 7]])


def tiny(rank=0, **kw):
    return engine.initial_policy(rl.Config(model="tiny", device="cpu", seed=3, lora_rank=rank, **kw))[0]


def test_a_fresh_adapter_changes_nothing():
    base, adapted = tiny(), tiny(rank=8)
    layers = base.config.num_hidden_layers
    assert sum(hasattr(m, "lora_a") for m in adapted.modules()) == len(rl.Config().lora_targets.split(",")) * layers
    assert torch.equal(base(IDS).logits, adapted(IDS).logits)  # B = 0: the term adds exact zeros
    attention = tiny(rank=8, lora_targets="q_proj,v_proj")
    assert sum(hasattr(m, "lora_a") for m in attention.modules()) == 2 * layers
    with pytest.raises(engine.PolicyError, match="no projection named"):
        tiny(rank=8, lora_targets="c_attn")


def test_a_bf16_base_keeps_its_buffers_and_its_tied_weights():
    """On CUDA the frozen base is bf16: its weights, not its buffers (RoPE's inv_freq stays fp32), and the tied
    embedding and lm_head stay one tensor."""
    model = engine.add_lora(engine.tiny_policy(3)[0], 4, 8.0, 0, "q_proj,v_proj", base_dtype=torch.bfloat16)
    assert {p.dtype for n, p in model.named_parameters() if ".lora_" not in n} == {torch.bfloat16}
    assert {p.dtype for n, p in model.named_parameters() if ".lora_" in n} == {torch.float32}
    assert {b.dtype for b in model.buffers()} == {torch.float32}
    assert model.lm_head.weight is model.model.embed_tokens.weight


def test_only_adapters_learn_and_the_base_stays_the_base():
    base, model = tiny(), tiny(rank=4)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all(".lora_a" in n or ".lora_b" in n for n in names)
    start = {k: v.clone() for k, v in engine.saved_weights(model).items()}  # the stage's start: B = 0, so the base
    opt = torch.optim.AdamW(engine.trainable(model), lr=1e-2)
    for _ in range(2):  # the second step: A gets gradients once B is no longer zero
        opt.zero_grad()
        torch.log_softmax(model(IDS).logits, -1)[..., 42].sum().backward()
        opt.step()
    assert all(p.grad is None for n, p in model.named_parameters() if n not in names)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for n, p in model.named_parameters() if n in names)
    assert not torch.allclose(model(IDS).logits, base(IDS).logits, atol=1e-3)
    with engine.scored_by(model, start) as anchor:  # the KL anchor: the adapters at the start, here the base
        assert torch.equal(anchor(IDS).logits, base(IDS).logits)
    assert not torch.allclose(model(IDS).logits, base(IDS).logits, atol=1e-3)  # and back on


@torch.no_grad()
def letter_mass(model, tok):
    """The policy's probability that its first token is a lowercase letter (the toy reward's aim), exactly."""
    p = torch.softmax(model(tok(short_prompt(""), return_tensors="pt").input_ids).logits[0, -1], -1)
    return float(p[[tok.convert_tokens_to_ids(c) for c in "abcdefghijklmnopqrstuvwxyz"]].sum())


@pytest.mark.parametrize("sign", [1, -1], ids=["advantage", "flipped"])
def test_grpo_through_adapters_follows_the_advantage(tmp_path, monkeypatch, sign):
    """12 RL steps, rank 16, on the toy reward (share of lowercase letters): the letters' probability mass rises when
    paid for them and falls with every advantage flipped. (The random tiny model caps what adapters can do: its
    frozen tied embeddings keep logits within ~±2.6, so the sampled share moves less than full fine-tuning's.)"""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    out = tmp_path / "run"
    flags = TOY + ["--steps", "12", "--ckpt-every", "0", "--lora-rank", "16", "--lora-alpha", "16", "--out", str(out),
                   "--std-normalize", "--warmup-steps", "0"]  # advantages of a toy reward's scale, the lr at once
    rl.run(rl.parse_config(flags), reward_fn=lambda task, texts: [sign * x for x in toy_reward(task, texts)])
    start = tiny(rank=16)
    trained, tok = engine.initial_policy(rl.Config(model="tiny", device="cpu", seed=3, init_from=str(out),
                                               lora_rank=16, lora_alpha=16.0))
    before, after = letter_mass(start, tok), letter_mass(trained, tok)
    assert (after > 1.15 * before) if sign > 0 else (after < 0.9 * before), (before, after)
    assert all(r["updated"] and r["grad_norm"] > 0 for r in read_log(out))


def test_checkpoints_hold_adapters_and_init_from_continues_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    full, lora = tmp_path / "full", tmp_path / "lora"
    for out, extra in ((full, []), (lora, ["--lora-rank", "4"])):
        rl.run(rl.parse_config(TOY + ["--steps", "1", "--out", str(out)] + extra), reward_fn=toy_reward)
    state = torch.load(lora / "ckpt.pt", weights_only=False)
    assert state["model"] and all(".lora_" in k for k in state["model"])
    assert (lora / "ckpt.pt").stat().st_size < 0.2 * (full / "ckpt.pt").stat().st_size
    assert len(state["optim"]["state"]) == len(state["model"])  # AdamW moments of the adapters alone

    # --init-from a LoRA folder: its rank and alpha, its adapters and moments
    cfg = rl.run(rl.parse_config(TOY + ["--steps", "1", "--lr", "0", "--init-from", str(lora),
                                        "--out", str(tmp_path / "next")]), reward_fn=toy_reward)
    assert (cfg.lora_rank, cfg.lora_alpha) == (4, 32.0)
    after = torch.load(tmp_path / "next" / "ckpt.pt", weights_only=False)["model"]
    assert all(torch.equal(after[k], v) for k, v in state["model"].items())  # lr 0: the adapters as they came
    with pytest.raises(rl.ConfigError, match="rank 4: run with --lora-rank 4") as e:
        rl.run(rl.parse_config(TOY + ["--init-from", str(lora), "--lora-rank", "8", "--out", str(tmp_path / "x")]))
    assert "\n" not in str(e.value)
    # fresh adapters on an earlier stage's full weights: those weights are the base
    cfg = rl.run(rl.parse_config(TOY + ["--steps", "1", "--init-from", str(full), "--lora-rank", "4",
                                        "--out", str(tmp_path / "onfull")]), reward_fn=toy_reward)
    model = engine.initial_policy(cfg)[0]
    full_state = torch.load(full / "ckpt.pt", weights_only=False)["model"]
    assert all(torch.equal(model.state_dict()[k], v) for k, v in full_state.items())
    with pytest.raises(engine.PolicyError, match="LoRA adapters that do not fit"):
        engine.load_weights(tiny(), state["model"], lora / "ckpt.pt")
    # a resume reads its own checkpoint alone: the earlier stage's ckpt.pt may have gone since (it had, at d8d8238)
    (lora / "ckpt.pt").unlink()
    rl.run(rl.parse_config(["--resume", "--out", str(tmp_path / "next"), "--steps", "2"]), reward_fn=toy_reward)
    assert [r["step"] for r in read_log(tmp_path / "next")] == [1, 2]
    after = torch.load(tmp_path / "next" / "ckpt.pt", weights_only=False)
    assert after["step"] == 2 and all(torch.equal(after["model"][k], v) for k, v in state["model"].items())


@pytest.mark.parametrize("cache", ["dynamic", "static"])  # rl.py's --gen-cache
@torch.no_grad()
def test_sampling_and_the_loss_see_the_same_adapted_distribution(cache):
    """generate (KV-cached, one token at a time, in either cache) and token_logps (the training forward, all tokens
    at once) agree on every sampled token's log-prob with trained-looking adapters (B random): the hooks act the same
    in both."""
    from transformers import GenerationConfig
    cfg = rl.Config(model="tiny", device="cpu", temperature=0.7, lora_rank=4)
    model, tok = engine.initial_policy(cfg)
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if hasattr(m, "lora_b"):
            m.lora_b.copy_(0.3 * torch.randn(m.lora_b.shape, generator=g))
    prompt = tok("def f(x):\n", return_tensors="pt", add_special_tokens=False).input_ids[0]
    gen = GenerationConfig(do_sample=True, temperature=0.7, max_new_tokens=10, min_new_tokens=10,
                           pad_token_id=tok.pad_token_id, **engine.PURE_SAMPLING,
                           cache_implementation=None if cache == "dynamic" else cache)
    torch.manual_seed(0)
    out = model.generate(prompt[None], attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                         generation_config=gen, output_logits=True, return_dict_in_generate=True)
    ids = out.sequences[0, len(prompt):]  # the raw logits at temperature 0.7 (min_new_tokens masks eos in scores)
    sampled = torch.stack([torch.log_softmax(s[0] / 0.7, -1)[t] for s, t in zip(out.logits, ids)])
    scored, _ = engine.token_logps(cfg, model, [(prompt, ids, torch.ones(len(ids), dtype=torch.bool))])
    torch.testing.assert_close(scored[0], sampled, rtol=0, atol=1e-5)
    off = {k: torch.zeros_like(v) if ".lora_b" in k else v for k, v in engine.saved_weights(model).items()}
    with engine.scored_by(model, off):
        base, _ = engine.token_logps(cfg, model, [(prompt, ids, torch.ones(len(ids), dtype=torch.bool))])
    assert (base[0] - sampled).abs().max() > 1e-2  # the adapters matter here


@pytest.mark.parametrize("rank", [0, 4])
def test_a_gradient_pass_with_layers_recomputed_gives_the_same_gradients_and_keeps_less(rank):
    """Activation checkpointing (engine.layers_recomputed, in the update and sft): the same log-probs and gradients,
    adapters alone (the frozen base's embeddings need no grad: a reentrant checkpoint would have given them none) or
    every weight; far fewer numbers kept for backward; the layers' own forward afterwards."""
    model = tiny(rank=rank, lora_targets="q_proj,v_proj")
    for p in engine.trainable(model):  # B != 0, so that the adapters' term is not zeros
        p.data.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))
    cfg = rl.Config(model="tiny", device="cpu", temperature=0.7, recompute="on")
    samples = [(torch.tensor([5, 17, 99, 3]), torch.tensor([41, 200, 7, 8, 9]), torch.tensor([1, 1, 1, 1, 0]).bool()),
               (torch.tensor([6, 16]), torch.tensor([40, 201, 8, 1, 2]), torch.tensor([1, 1, 1, 1, 1]).bool())]

    def gradient_pass(recompute):
        model.zero_grad(set_to_none=True)
        kept = []
        with engine.layers_recomputed(cfg, model) if recompute else torch.enable_grad(), \
                torch.autograd.graph.saved_tensors_hooks(lambda t: kept.append(t.numel()) or t, lambda t: t):
            logp, mask = engine.token_logps(cfg, model, samples)
            (-(logp * mask).sum()).backward()
        return logp.detach(), [p.grad.clone() for p in engine.trainable(model)], sum(kept)
    lp0, g0, kept0 = gradient_pass(False)
    lp1, g1, kept1 = gradient_pass(True)
    assert torch.allclose(lp0, lp1, atol=1e-6) and len(g0) == len(g1) > 0
    assert all(g.abs().sum() > 0 and torch.allclose(g, h, atol=1e-6) for g, h in zip(g0, g1))
    assert kept1 < kept0 / 2
    for recompute, device, on in (("auto", "cpu", False), ("off", "cpu", False), ("auto", "cuda", True)):
        with engine.layers_recomputed(rl.replace(cfg, recompute=recompute, device=device), model):  # (nothing runs)
            assert all(("forward" in layer.__dict__) == on for layer in model.model.layers), (recompute, device)
    assert all("forward" not in layer.__dict__ for layer in model.model.layers)


def test_the_recomputed_layers_run_under_the_forwards_autocast(monkeypatch):
    """The recompute runs in backward, outside token_logps' autocast(cfg): it must enter it again. On the H200 the
    forward's sdpa_kernel chose memory-efficient attention and the recompute cuDNN's, and checkpoint raised
    CheckpointError (different saved tensors). Here the same on the CPU: autocast(cfg) allows the math backend only
    (the CPU's default is its flash kernel)."""
    from contextlib import contextmanager

    from torch.nn.attention import SDPBackend, sdpa_kernel

    @contextmanager
    def math_attention(cfg):
        with sdpa_kernel([SDPBackend.MATH]):
            yield
    monkeypatch.setattr(engine, "autocast", math_attention)
    model = tiny(rank=4, lora_targets="q_proj,v_proj")
    cfg = rl.Config(model="tiny", device="cpu", temperature=0.7, recompute="on")
    samples = [(torch.tensor([5, 17, 99, 3]), torch.tensor([41, 200, 7]), torch.tensor([1, 1, 0]).bool()),
               (torch.tensor([6, 16]), torch.tensor([40, 201, 8]), torch.tensor([1, 1, 1]).bool())]
    with engine.layers_recomputed(cfg, model):
        logp, mask = engine.token_logps(cfg, model, samples)
        (-(logp * mask).sum()).backward()
    assert all(p.grad is not None for p in engine.trainable(model))
