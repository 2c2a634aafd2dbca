"""Stages 1 and 2 of rl.py on CPU, offline, with the tiny policy: SFT maths (likelihood rises, prompt masked), exact
SFT resume, and a toy policy that really writes a working cpu/relu candidate, run through ssl, collect and rl.

The random tiny model never writes working code, so the toy policy is made honestly: SFT hard on one working
ModelNew for cpu/relu (the real evaluator says ok) until sampling reproduces it. Prompts are shortened (as in
test_rl) so that 200 SFT steps take seconds; the mask test uses the real plain prompt.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import evaluator  # noqa: E402
import prompts  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import cudal1  # noqa: E402
import runs  # noqa: E402
from prompts import build_prompt, extract_code  # noqa: E402
from test_rl import TIMING, same_checkpoints  # noqa: E402

RELU = (REPO / "tasks/cpu/relu.py").read_text()
ADD_MUL = (REPO / "tasks/cpu/add_mul.py").read_text()
CLAMP = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0.0)\n"
TINY = ["--model", "tiny", "--device", "cpu", "--ckpt-every", "0", "--no-mask-truncated"]  # (random: replies cut)
EOS = torch.tensor([0])



def short_prompt(ref_src, exemplars=(), device="cuda", contrastive=True):
    """Stands in for prompts.build_prompt: 'Rewrite: ' + the start of the task's docstring (differs per task)."""
    return "Rewrite: " + ref_src.splitlines()[0][3:40]


@pytest.fixture(scope="module")
def short_prompts():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rl, "build_prompt", short_prompt)
        yield


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def mean_logp(cfg, model, examples):
    """Mean log-prob per completion token of the examples (temperature 1)."""
    with torch.no_grad():
        logp, mask = engine.token_logps(cfg, model, examples, temperature=1.0)
    return float(logp[mask].mean())


def weights(folder):
    return torch.load(Path(folder) / "ckpt.pt", weights_only=False)["model"]

# ---------------------------------------------------------------------------- SFT maths


def test_sft_masks_the_prompt_exactly(monkeypatch):
    """The SFT loss equals transformers' own loss with every prompt label set to -100 (real plain prompt), and not
    the loss with prompt labels kept; the target is the code wrapped as a reply, plus eos."""
    monkeypatch.setattr(rl, "build_prompt", build_prompt)
    cfg = rl.Config(model="tiny", device="cpu")
    model, tok = engine.load_policy(cfg)
    [(p, c, k)] = rl.sft_examples(cfg, model, tok, [dict(ref_code=RELU, code=CLAMP)])
    assert tok.decode(p) == rl.render(build_prompt(RELU, device="cpu", contrastive=False), tok) and len(p) > 2000
    assert c[-1] == tok.eos_token_id and bool(k.all()) and len(k) == len(c)
    target = tok.decode(c[:-1])
    assert "### Algorithm design" in target and extract_code(target).code == CLAMP.strip()
    ids = torch.cat([p, c])[None]
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)
    ours = rl.sft_step(cfg, model, opt, [(p, c, k)])["loss"]
    with torch.no_grad():
        masked = model(input_ids=ids, labels=torch.cat([torch.full_like(p, -100), c])[None]).loss.item()
        unmasked = model(input_ids=ids, labels=ids).loss.item()
    assert ours == pytest.approx(masked, rel=1e-4) and abs(unmasked - masked) > 1e-3


def test_sft_reply_takes_its_design_from_the_docstring_less_the_intent_label():
    """A stage-1 file's docstring (its intent label dropped) is the reply's design section, not part of its code."""
    code = '"""slower (on purpose): one thread per row.\nNo shared memory."""\nimport torch\n'
    reply = rl.as_reply(code, "a prompt")
    assert reply.endswith("### Algorithm design\none thread per row.\nNo shared memory.\n### Code\n"
                          "```python\nimport torch\n```\n"), reply
    assert "slower" not in reply and '"""' not in reply
    assert "design\nThe same outputs, computed with less work.\n### Code\n```python\nimport torch\n```" in \
        rl.as_reply("import torch\n", "a prompt")


def test_sft_min_speedup_keeps_only_the_records_measured_that_fast(tmp_path):
    recs = [{"task": "cpu/relu", "ref_code": RELU, "code": CLAMP, "result": {"status": "ok", "speedup": s}}
            for s in (0.5, 1.2, 3.0)] + [{"task": "cpu/relu", "ref_code": RELU, "code": CLAMP,
                                           "result": {"status": "wrong_output", "speedup": None}}]
    data = write_jsonl(tmp_path / "d.jsonl", recs)
    assert runs.sft_records(rl.Config(data=data)) == (recs[:3], recs[:3])
    assert runs.sft_records(rl.Config(data=data, sft_min_speedup=1.2)) == (recs[:3], recs[1:3])
    with pytest.raises(rl.ConfigError, match="at least 4x"):
        runs.sft_records(rl.Config(data=data, sft_min_speedup=4.0))


def test_sft_raises_the_likelihood_of_its_records(tmp_path, short_prompts):
    """30 SFT steps on 4 code-only records: the loss falls by > 2 nats/token and the mean completion log-prob under
    the trained weights rises by > 2 nats/token (random start: about -5.6 = log(1/259))."""
    codes = {"cpu/relu": (RELU, CLAMP), "cpu/add_mul": (ADD_MUL, CLAMP.replace("x.clamp_min(0.0)", "x"))}
    records = [dict(task=t, ref_code=r, code=c.replace("0.0", v)) for t, (r, c) in codes.items() for v in "01"]
    out = tmp_path / "sft"
    cfg = rl.run(rl.parse_config(TINY + ["--stage", "sft", "--data", write_jsonl(tmp_path / "d.jsonl", records),
                                         "--steps", "30", "--sft-batch", "2", "--lr", "3e-3", "--out", str(out)]))
    log = runs.read_jsonl(out / "log.jsonl")
    assert [r["step"] for r in log] == list(range(1, 31)) and all(r["tokens"] > 100 for r in log)
    model, tok = engine.load_policy(cfg)
    examples = rl.sft_examples(cfg, model, tok, records)
    before = mean_logp(cfg, model, examples)
    model.load_state_dict(weights(out))
    after = mean_logp(cfg, model, examples)
    assert before < -5 and after > before + 2.0, (before, after)
    assert np.mean([r["loss"] for r in log[-3:]]) < log[0]["loss"] - 2.0


def test_sft_resume_is_exact(tmp_path, short_prompts, monkeypatch):
    """6 SFT steps straight == a run whose checkpoint stopped at step 2 while its log ran on to 3 (a crash), resumed
    to 6: same log, same weights, same AdamW moments. 3 records in batches of 2: steps cross reshuffled epochs."""
    data = write_jsonl(tmp_path / "d.jsonl", [dict(ref_code=RELU, code=CLAMP.replace("0.0", v)) for v in "012"])
    flags = TINY + ["--stage", "sft", "--data", data, "--sft-batch", "2", "--lr", "3e-3", "--ckpt-every", "2"]
    straight, crashed = tmp_path / "straight", tmp_path / "crashed"
    rl.run(rl.parse_config(flags + ["--steps", "6", "--out", str(straight)]))
    save = runs.save_checkpoint
    monkeypatch.setattr(runs, "save_checkpoint", lambda cfg, m, o, step, last: step == 2 and save(cfg, m, o, step, last))
    rl.run(rl.parse_config(flags + ["--steps", "3", "--out", str(crashed)]))
    assert torch.load(crashed / "ckpt.pt", weights_only=False)["step"] == 2
    assert len(runs.read_jsonl(crashed / "log.jsonl")) == 3
    monkeypatch.setattr(runs, "save_checkpoint", save)
    rl.run(rl.parse_config(["--resume", "--out", str(crashed), "--steps", "6"]))
    a, b = (runs.read_jsonl(d / "log.jsonl") for d in (straight, crashed))
    assert [r["step"] for r in b] == list(range(1, 7))
    assert [{k: v for k, v in r.items() if k != "step_s"} for r in a] == [
        {k: v for k, v in r.items() if k != "step_s"} for r in b]
    same_checkpoints(straight, crashed)

def test_sft_contrastive_adds_each_record_under_contrastive_prompts(tmp_path, monkeypatch):
    """--sft-contrastive: each step trains its records twice, under the plain prompt and under a contrastive one
    that shows variants of the record's task from the database (the data's measured codes, the reference at 1.0),
    redrawn per step; the target is the same reply. Records without a task get the plain prompt alone."""
    codes = [CLAMP.replace("0.0", v) for v in "012"]
    records = [dict(task="cpu/relu", ref_code=RELU, code=c, result=dict(status="ok", speedup=1.5 + i))
               for i, c in enumerate(codes)] + [dict(ref_code=RELU, code=CLAMP)]
    seen, sft_step = [], rl.sft_step
    monkeypatch.setattr(rl, "sft_step", lambda cfg, m, o, ex: seen.append(ex) or sft_step(cfg, m, o, ex))
    monkeypatch.setattr(rl, "build_prompt", build_prompt)  # the real one, also after short_prompts ran
    flags = TINY + ["--stage", "sft", "--data", write_jsonl(tmp_path / "d.jsonl", records), "--task", "cpu/relu",
                    "--sft-batch", "4", "--steps", "4", "--lr", "1e-3", "--sft-contrastive", "--out", str(tmp_path)]
    cfg = rl.run(rl.parse_config(flags))
    tok = engine.load_policy(cfg)[1]
    shown = {}  # record's code -> the contrastive prompts it was trained under
    for ex in seen:
        assert len(ex) == 4 + 3  # 4 plain + 3 contrastive (the task-less record has none)
        assert not any("Earlier variants" in tok.decode(p) for p, _, _ in ex[:4])
        for p, t, _ in ex[4:]:
            text, reply = tok.decode(p), extract_code(tok.decode(t))
            assert "Earlier variants" in text and text.endswith(prompts.ANSWER_CUE) and RELU.strip() in text
            assert reply.analysis.startswith("Variant 1 (") and reply.code in [c.strip() for c in codes]
            shown.setdefault(reply.code, set()).add(text)
    assert len(shown) == 3 and max(map(len, shown.values())) > 1  # the variants shown change between steps


def test_sft_contrastive_shows_neither_the_target_nor_faster_codes(monkeypatch):
    """The records' own codes are in the database (sft puts them there); the contrastive prompt of a record must draw
    its exemplars from the others (and the reference), never from the record's code or a whitespace twin of it, and
    only from those scored below the record's own speedup (the prompt asks for a version faster than all it shows)."""
    monkeypatch.setattr(rl, "build_prompt", build_prompt)
    cfg = rl.Config(model="tiny", device="cpu", task="cpu/relu", sft_contrastive=True)
    tok = engine.tiny_policy(0)[1]
    codes = [CLAMP.replace("0.0", v) for v in "0123"]
    records = [dict(task="cpu/relu", ref_code=RELU, code=c, result=dict(status="ok", speedup=1.5 + i))
               for i, c in enumerate(codes)]
    db = cudal1.ExemplarDB()
    db.seed_reference("cpu/relu", RELU)
    runs.add_measured(cfg, db, records)
    db.add("cpu/relu", codes[0] + "   \n", 1.9)  # the same code up to trailing whitespace: a re-measurement
    others = 0
    for step in range(1, 11):
        for i, r in enumerate(records):
            [(p, _, _)] = rl.contrastive_example(cfg, db, tok, EOS, r, step, i)
            text = tok.decode(p)
            assert r["code"].strip() not in text and text.count("### Variant") == min(2, i + 1)
            assert not any(c.strip() in text for c in codes[i + 1:])  # measured faster than the target
            others += sum(c.strip() in text for c in codes)
    # record 0 (1.5x) is shown the reference alone, record 1 the reference and codes[0] (1.5x and 1.9x: 1.7x), records
    # 2 and 3 two of three and four: the exemplars not the reference are the other, slower records' codes
    assert others >= 30


def test_contrastive_prompts_show_codes_without_their_intent_labels(monkeypatch):
    """Stage-1 files begin with their author's intent ("faster (hoped): ..."); a prompt shows each variant's measured
    score instead, in stage 3's prompts and in sft's contrastive ones alike. The rest of the docstring stays."""
    monkeypatch.setattr(rl, "build_prompt", build_prompt)  # the whole prompt (short_prompts shortens it)
    cfg = rl.Config(model="tiny", device="cpu", task="cpu/relu", n_exemplars=2)
    tok = engine.tiny_policy(0)[1]
    labelled = '"""faster (hoped): clamp in place.\nOne pass."""\n' + CLAMP
    db = cudal1.ExemplarDB()
    db.seed_reference("cpu/relu", RELU)
    db.add("cpu/relu", labelled, 0.9)
    [prompt] = rl.build_prompts(cfg, db, [("cpu/relu", RELU)], 1, tok)
    record = dict(task="cpu/relu", ref_code=RELU, code=CLAMP.replace("0.0", "0"), result=dict(speedup=1.2))
    [(p, _, _)] = rl.contrastive_example(cfg, db, tok, EOS, record, 1, 0)
    for text in (prompt, tok.decode(p)):
        assert '"""clamp in place.\nOne pass."""\n' + CLAMP.strip() in text and "score 0.90" in text
        assert "hoped" not in text
    assert rl.unlabelled('"""slower:"""\n' + CLAMP) == CLAMP and rl.unlabelled(CLAMP) == CLAMP

# ---------------------------------------------------------------------------- a toy policy that writes working code


@pytest.fixture(scope="module")
def relu_writer(tmp_path_factory, short_prompts):
    """An sft folder whose tiny model, asked for cpu/relu, writes CLAMP (checked below) and junk for other tasks."""
    tmp = tmp_path_factory.mktemp("relu_writer")
    data = write_jsonl(tmp / "d.jsonl", [dict(task="cpu/relu", ref_code=RELU, completion=CLAMP)])
    cfg = rl.run(rl.parse_config(TINY + ["--stage", "sft", "--data", data, "--steps", "200", "--sft-batch", "1",
                                         "--lr", "5e-3", "--task", "cpu/relu", "--out", str(tmp / "sft")]))
    model, tok = engine.initial_policy(rl.replace(cfg, init_from=cfg.out))
    prompt = rl.render(short_prompt(RELU), tok)
    texts = engine.generate(rl.replace(cfg, group_size=4, max_new_tokens=120), model, tok, [prompt], seed=0)[0]["texts"]
    assert texts == [CLAMP] * 4, texts
    return Path(cfg.out)


@pytest.fixture(scope="module")
def ssl_round(relu_writer, tmp_path_factory):
    """One ssl round from relu_writer on cpu/relu (2 samples, both working) and cpu/add_mul (2 failures), with the
    rollouts and results the round evaluated, every evaluator call, and the examples each sft_step received."""
    seen, trained, many = {}, [], []
    evaluate_all, sft_step, evaluate_many = runs.evaluate_all, rl.sft_step, evaluator.evaluate_many

    def spy_evaluate(cfg, batch, rollouts, timing=None, phases=None):
        seen.update(batch=batch, rollouts=rollouts, timing=timing,
                    results=evaluate_all(cfg, batch, rollouts, timing, phases))
        return seen["results"]

    def spy_sft_step(cfg, model, opt, examples):
        trained.extend(examples)
        return sft_step(cfg, model, opt, examples)

    def spy_many(pairs, device="cpu", **opts):
        many.append(([c for _, c in pairs], opts, evaluate_many(pairs, device, **opts)))
        return many[-1][2]

    out = tmp_path_factory.mktemp("ssl") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs, "evaluate_all", spy_evaluate)
        mp.setattr(rl, "sft_step", spy_sft_step)
        mp.setattr(evaluator, "evaluate_many", spy_many)
        rl.run(rl.parse_config(["--stage", "ssl", "--init-from", str(relu_writer), "--task", "cpu/relu,cpu/add_mul",
                                "--group-size", "2", "--ssl-rounds", "1", "--max-new-tokens", "120", "--lr", "1e-3",
                                "--device", "cpu", "--out", str(out)]))
    return out, seen | dict(many=many), trained


def test_ssl_trains_on_its_successes_only(ssl_round, relu_writer):
    out, seen, trained = ssl_round
    results = seen["results"]
    assert seen["timing"] == runs.correctness_only(rl.Config())  # correctness only: 1-2 timed rounds
    assert [r.status for r in results[:2]] == ["ok", "ok"], [r.reason for r in results]  # cpu/relu, the real verdict
    assert not any(r.same_as_reference for r in results[:2]) and seen["rollouts"][0]["codes"] == [CLAMP.strip()] * 2
    assert all(r.status != "ok" for r in results[2:])  # cpu/add_mul: the relu writer writes junk there
    wins = [s for s, r in zip(rl.flat_samples(seen["rollouts"]), results) if r.status == "ok"]
    assert len(trained) == len(wins) == 2  # the failures were not trained on
    assert all(torch.equal(p, q) and torch.equal(c, d) for (p, c, _), (q, d, _) in zip(trained, wins))
    [log] = runs.read_jsonl(out / "log.jsonl")
    assert log["kept"] == 2 and log["pass_rate"] == 0.5 and log["updated"] and log["tokens"] > 2 * 90
    before, after = weights(relu_writer), weights(out)
    assert any(not torch.equal(before[k], after[k]) for k in before)  # it trained
    gained = [e for e in runs.read_jsonl(out / "exemplars.jsonl") if not e["meta"].get("reference")]
    assert [(e["task"], e["code"], e["step"]) for e in gained] == [("cpu/relu", CLAMP.strip(), 1)]
    # correctness in 1-2 timed rounds; the success is timed again with the normal budget before it is a score
    (_, checked, _), (again, opts, timed) = seen["many"]
    assert checked["time_budget_s"] == 0.0 and opts["time_budget_s"] == rl.Config().eval_time_budget
    assert checked["max_rounds"] == rl.Config().ssl_check_rounds
    assert opts["tol"] == checked["tol"] == rl.Config().eval_tol
    assert again == [CLAMP.strip()] and timed[0].status == "ok" and timed[0].rounds > checked["max_rounds"]
    assert gained[0]["score"] == pytest.approx(runs.rounded(rl.Config(), timed[0].speedup))


def test_ssl_rounds_of_ssl_tasks_sample_the_tasks_drawn_for_them(relu_writer, tmp_path):
    """--ssl-tasks 1 over two tasks: each round samples one task, the one drawn from (seed, round) as rl draws a
    step's, and logs it; its G samples are all the round evaluates."""
    cfg = rl.run(rl.parse_config(["--stage", "ssl", "--init-from", str(relu_writer), "--task", "cpu/relu,cpu/add_mul",
                                  "--group-size", "2", "--ssl-rounds", "3", "--ssl-tasks", "1", "--max-new-tokens",
                                  "120", "--eval-time-budget", "0", "--device", "cpu", "--out", str(tmp_path / "run")]))
    logs = runs.read_jsonl(tmp_path / "run" / "log.jsonl")
    drawn = [[name for name, _ in rl.pick_tasks(rl.replace(cfg, tasks_per_step=1), runs.load_tasks(cfg), r)]
             for r in (1, 2, 3)]
    assert [rec["tasks"] for rec in logs] == drawn and all(sum(rec["status"].values()) == 2 for rec in logs)


def test_ssl_resume_is_exact(relu_writer, tmp_path):
    """2 ssl rounds straight == 1 round, then --resume to 2: same weights, same AdamW moments, same log (but the
    measured speedups and wall times, which are timings)."""
    flags = ["--stage", "ssl", "--init-from", str(relu_writer), "--task", "cpu/relu", "--group-size", "2",
             "--max-new-tokens", "120", "--lr", "1e-3", "--device", "cpu", "--eval-time-budget", "0"]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    rl.run(rl.parse_config(flags + ["--ssl-rounds", "2", "--out", str(straight)]))
    rl.run(rl.parse_config(flags + ["--ssl-rounds", "1", "--out", str(resumed)]))
    rl.run(rl.parse_config(["--resume", "--out", str(resumed), "--ssl-rounds", "2"]))
    timed = {"best_speedup", "per_task"} | TIMING
    a, b = ([{k: v for k, v in r.items() if k not in timed} for r in runs.read_jsonl(d / "log.jsonl")]
            for d in (straight, resumed))
    assert [r["step"] for r in b] == [1, 2] and a == b and all(r["kept"] == 2 and r["updated"] for r in b)
    assert same_checkpoints(straight, resumed)[1]["step"] == 2


def test_collect_resume_starts_over(relu_writer, tmp_path):
    """collect keeps no checkpoint: --resume (after a crash, say) starts over and ends as the first run did, with one
    record per attempt and one log line per task, not the first run's appended to."""
    out = tmp_path / "collect"
    flags = ["--stage", "collect", "--init-from", str(relu_writer), "--task", "cpu/relu,cpu/add_mul",
             "--collect-attempts", "2", "--collect-successes", "1", "--group-size", "2", "--max-new-tokens", "120",
             "--eval-time-budget", "0", "--device", "cpu"]
    rl.run(rl.parse_config(flags + ["--out", str(out)]))
    first = [(r["task"], r["code"], r["result"]["status"]) for r in runs.read_jsonl(out / "collected.jsonl")]
    rl.run(rl.parse_config(["--resume", "--out", str(out)]))
    again = [(r["task"], r["code"], r["result"]["status"]) for r in runs.read_jsonl(out / "collected.jsonl")]
    assert again == first and [t for t, _, _ in first] == ["cpu/relu"] + ["cpu/add_mul"] * 2
    assert [(r["task"], r["attempts"], r["successes"]) for r in runs.read_jsonl(out / "log.jsonl")] == [
        ("cpu/relu", 1, 1), ("cpu/add_mul", 2, 0)]


def test_init_from_carries_weights_optimizer_and_database(ssl_round, tmp_path):
    """rl --init-from the ssl folder with --optimizer-state keep: the run starts from its weights and AdamW moments (a
    step whose advantages are all zero does not update, so the checkpoint must equal them exactly), at its own lr;
    its database holds the ssl round's success. (By default rl after ssl starts a fresh AdamW: test_signal.)"""
    ssl_out = ssl_round[0]
    out = tmp_path / "rl"
    cfg = rl.run(rl.parse_config(["--init-from", str(ssl_out), "--task", "cpu/relu", "--steps", "1", "--group-size",
                                  "2", "--max-new-tokens", "8", "--device", "cpu", "--optimizer-state", "keep",
                                  "--out", str(out)]),
                 reward_fn=lambda task, texts: [0.0] * len(texts))
    assert cfg.model == "tiny"  # taken from the earlier stage's config
    before, after = weights(ssl_out), weights(out)
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    o_before, o_after = (torch.load(d / "ckpt.pt", weights_only=False)["optim"] for d in (ssl_out, out))
    assert o_before["state"] and o_before["state"].keys() == o_after["state"].keys()
    for k, st in o_before["state"].items():
        assert all(torch.equal(st[m], o_after["state"][k][m]) for m in ("step", "exp_avg", "exp_avg_sq"))
    lrs = {g["lr"] for g in o_before["param_groups"]}, {g["lr"] for g in o_after["param_groups"]}
    assert lrs[1] == {cfg.lr} and lrs[0] != lrs[1]
    won = [(e["task"], e["code"]) for e in runs.read_jsonl(ssl_out / "exemplars.jsonl") if e["step"] == 1]
    carried = [(e["task"], e["code"]) for e in runs.read_jsonl(out / "exemplars.jsonl")]
    assert won and set(won) <= set(carried)


def test_resume_before_the_first_checkpoint_keeps_init_froms_moments(tmp_path):
    """A run with --init-from that is resumed before it wrote its first checkpoint (a crash in step 1) has nothing to
    restore: it must start from --init-from's AdamW moments as a fresh run does, not from a new AdamW."""
    init = tmp_path / "init"
    init.mkdir()
    model, _ = engine.tiny_policy(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(input_ids=torch.arange(8)[None], labels=torch.arange(8)[None]).loss.backward()
    opt.step()
    torch.save(dict(step=1, model=model.state_dict(), optim=opt.state_dict()), init / "ckpt.pt")
    (init / "config.json").write_text(json.dumps(dict(model="tiny")))
    out = tmp_path / "rl"
    out.mkdir()
    (out / "log.jsonl").write_text("")  # the crashed first attempt: a run folder, no ckpt.pt
    cfg = rl.Config(model="tiny", device="cpu", init_from=str(init), task="cpu/relu", steps=1, group_size=2,
                    max_new_tokens=8, resume=True, out=str(out))
    rl.run(cfg, reward_fn=lambda task, texts: [0.0] * len(texts))  # all-zero advantages: no update, moments kept
    saved = torch.load(out / "ckpt.pt", weights_only=False)["optim"]["state"]
    assert saved.keys() == opt.state_dict()["state"].keys()
    for k, st in opt.state_dict()["state"].items():
        assert all(torch.equal(st[m], saved[k][m]) for m in ("step", "exp_avg", "exp_avg_sq"))


def test_collect_stops_after_m_successes_then_sft_reads_it(relu_writer, tmp_path):
    """collect: cpu/relu stops at 2 successes (2 attempts of the 3 allowed), cpu/add_mul spends all 3 attempts; one
    record per attempt. sft on that file trains on the 2 working ones and puts them into its database."""
    out = tmp_path / "collect"
    rl.run(rl.parse_config(["--stage", "collect", "--init-from", str(relu_writer), "--task", "cpu/relu,cpu/add_mul",
                            "--collect-attempts", "3", "--collect-successes", "2", "--group-size", "4",
                            "--max-new-tokens", "120", "--eval-time-budget", "0", "--device", "cpu",
                            "--out", str(out)]))
    recs = runs.read_jsonl(out / "collected.jsonl")
    assert [(r["task"], r["result"]["status"] == "ok") for r in recs] == [("cpu/relu", True)] * 2 + [
        ("cpu/add_mul", False)] * 3, [r["result"]["reason"] for r in recs]
    assert all(set(r) == {"task", "ref_code", "prompt", "completion", "code", "result"} for r in recs)
    assert recs[0]["ref_code"] == RELU and recs[0]["code"] == CLAMP.strip() and recs[0]["result"]["speedup"] > 0
    log = runs.read_jsonl(out / "log.jsonl")
    assert [(r["task"], r["attempts"], r["successes"]) for r in log] == [("cpu/relu", 2, 2), ("cpu/add_mul", 3, 0)]

    cfg = rl.parse_config(TINY + ["--stage", "sft", "--data", str(out / "collected.jsonl"), "--steps", "1",
                                  "--task", "cpu/relu", "--out", str(tmp_path / "sft")])
    assert runs.sft_records(cfg)[1] == recs[:2]
    rl.run(cfg)
    [stored] = [e for e in runs.read_jsonl(tmp_path / "sft" / "exemplars.jsonl") if not e["meta"].get("reference")]
    assert (stored["task"], stored["code"], stored["score"]) == ("cpu/relu", CLAMP.strip(),
                                                                 recs[0]["result"]["speedup"])
