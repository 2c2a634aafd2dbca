"""rl.py --stage all on the CPU, offline, with the tiny policy: sft on a small stage-1 file -> ssl -> sftc -> rl, each
in its own folder from the one before; a second invocation skips the finished stages; Ctrl-C in ssl, then --resume
continues ssl and runs the rest; the recipe fills only what is not given; --stage auto picks the chain for a real
model on a GPU and rl otherwise. Prompts are shortened (as in test_stages) so that the whole chain takes seconds."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import chain  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import runs  # noqa: E402
from test_rl import TIMING  # noqa: E402
from test_stages import ADD_MUL, CLAMP, RELU, short_prompt  # noqa: E402

FMA = ("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b, c):\n"
       "        return torch.mul(a + b, c)\n")
CHAIN = ["--model", "tiny", "--stage", "all", "--task", "cpu/relu,cpu/add_mul", "--sft-steps", "2", "--ssl-rounds",
         "2", "--sftc-steps", "2", "--steps", "1", "--group-size", "2", "--max-new-tokens", "16"]
STAGES = [("sft", "sft", 2), ("ssl", "ssl", 2), ("sftc", "sft", 2), ("rl", "rl", 1)]  # folder, stage, steps


def stage1_file(folder):
    """A stage-1 file of one measured working candidate per task (bench/real/stage1.jsonl's format)."""
    records = [dict(task="cpu/relu", candidate="faster_clamp", ref_code=RELU, code=CLAMP,
                    result=dict(status="ok", correct=True, speedup=1.3)),
               dict(task="cpu/add_mul", candidate="faster_mul", ref_code=ADD_MUL, code=FMA,
                    result=dict(status="ok", correct=True, speedup=1.1))]
    path = Path(folder) / "stage1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def untimed(out):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in runs.read_jsonl(Path(out) / "log.jsonl")]


@pytest.fixture(scope="module")
def chain_run(tmp_path_factory):
    """One whole chain run: (its folder, its flags, what it printed)."""
    folder = tmp_path_factory.mktemp("chain")
    flags = CHAIN + ["--data", stage1_file(folder), "--out", str(folder / "run")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rl, "build_prompt", short_prompt)
        printed = []
        mp.setattr("builtins.print", lambda *a, **kw: printed.append(" ".join(map(str, a))))
        t0 = time.time()
        rl.run(rl.parse_config(flags))
        assert time.time() - t0 < 120
    return folder / "run", flags, "\n".join(printed)


def test_the_chain_runs_each_stage_in_its_folder_from_the_one_before(chain_run):
    out, _, printed = chain_run
    plan = printed.split("\nconfig:")[0]
    assert plan.startswith("plan: sft -> ssl -> sftc -> rl") and "2 training tasks: cpu/relu, cpu/add_mul" in plan
    assert "held out: none" in plan and "tasks with none of them (ssl and rl alone train them): none" in plan
    assert [line.split()[0] for line in plan.splitlines()[-4:]] == ["sft", "ssl", "sftc", "rl"]
    assert json.loads((out / "config.json").read_text())["stage"] == "all"
    before = ""
    for name, stage, steps in STAGES:
        saved = json.loads((out / name / "config.json").read_text())
        assert saved["stage"] == stage and saved["init_from"] == before and saved["out"] == str(out / name)
        assert (saved["lora_rank"], saved["lora_targets"], saved["temperature"]) == (8, "q_proj,v_proj", 0.7)
        assert [r["step"] for r in runs.read_jsonl(out / name / "log.jsonl")] == list(range(1, steps + 1))
        assert torch.load(out / name / "ckpt.pt", weights_only=False)["step"] == steps
        before = str(out / name)
    lrs = {name: json.loads((out / name / "config.json").read_text())["lr"] for name, _, _ in STAGES}
    assert lrs == {"sft": 2e-4, "ssl": 1e-4, "sftc": 1e-4, "rl": 5e-5}
    assert json.loads((out / "sftc" / "config.json").read_text())["sft_contrastive"] is True
    # the stage-1 codes reach rl's exemplar database through every --init-from
    codes = {e["code"] for e in runs.read_jsonl(out / "rl" / "exemplars.jsonl")}
    assert {CLAMP, FMA} <= codes
    ends = [line for line in printed.splitlines() if " done: " in line]
    assert [line.split()[0] for line in ends] == ["sft", "ssl", "sftc", "rl"]
    assert "loss" in ends[0] and "8 samples: pass 0.0%, faster than eager 0.0%" in ends[1]
    table = printed.splitlines()[-5:]
    assert table[0].startswith("stage") and [row.split()[:2] for row in table[1:]] == [
        ["sft", "2"], ["ssl", "2"], ["sftc", "2"], ["rl", "1"]]


def test_a_second_invocation_skips_the_finished_stages(chain_run, monkeypatch, capsys):
    out, flags, _ = chain_run
    logs = {name: (out / name / "log.jsonl").read_text() for name, _, _ in STAGES}
    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    rl.run(rl.parse_config(flags))
    said = capsys.readouterr().out
    assert all(f"{name}: finished in {out / name} " in said for name in logs) and "\nconfig:" not in said
    assert {name: (out / name / "log.jsonl").read_text() for name in logs} == logs
    longer = flags + ["--steps", "2"]  # rl's log short of its steps now: a cut stage needs --resume
    with pytest.raises(rl.ConfigError, match="--resume"):
        rl.run(rl.parse_config(longer))


CTRL_C_DRIVER = """
import signal, sys, time
sys.path[:0] = [{repo!r}, {tests!r}]
import rl
import runs
import engine

if __name__ == "__main__":  # the evaluator's processes re-import this file
    from tqdm import tqdm
    import fences, test_stages
    signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever SIGINT's disposition this process inherited
    rl.tqdm = lambda *a, **kw: tqdm(*a, **dict(kw, disable=True))  # stderr: only what the run itself says
    bar = fences.progress_bar
    fences.progress_bar = lambda total, desc, progress: bar(total, desc, False)
    rl.build_prompt = test_stages.short_prompt
    generate_all = rl.generate_all
    def waiting_in_ssl_round_2(cfg, model, tok, batch, prompts, step, phases=None):
        if cfg.stage == "ssl" and step == 2:
            open({marker!r}, "w").close()
            time.sleep(600)  # Ctrl-C comes here
        return generate_all(cfg, model, tok, batch, prompts, step, phases)
    rl.generate_all = waiting_in_ssl_round_2
    rl.main(sys.argv[1:])
"""


def test_ctrl_c_in_ssl_then_resume_continues_ssl_and_runs_the_rest(chain_run, tmp_path, monkeypatch):
    """SIGINT during ssl's round 2: one line on stderr naming the chain's --resume, exit 130,
    ssl checkpointed at round 1 and nothing after it; --resume goes on from round 2, then sftc and rl, and ends as
    the chain never interrupted."""
    straight, flags, _ = chain_run
    out, marker = tmp_path / "run", tmp_path / "in-ssl-round-2"
    flags = flags[:flags.index("--out")] + ["--out", str(out)]
    driver = tmp_path / "driver.py"
    driver.write_text(CTRL_C_DRIVER.format(repo=str(REPO), tests=str(REPO / "tests"), marker=str(marker)))
    proc = subprocess.Popen([sys.executable, str(driver), *flags], env=dict(os.environ, OMP_NUM_THREADS="1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not marker.exists():
            assert proc.poll() is None, f"driver exited early: {proc.stderr.read()[-2000:]}"
            assert time.time() < deadline, "the driver did not reach ssl's round 2 in time"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)  # (to the process group, it may land in a forkserver importing torch)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130 and len(lines) == 1, err
    assert lines[0].startswith("cudal1: interrupted in ssl step 2") and lines[0].endswith(", then runs sftc and rl")
    assert f"python rl.py --resume --out {out} continues from step 2" in lines[0], err
    assert torch.load(out / "ssl" / "ckpt.pt", weights_only=False)["step"] == 1
    assert len(runs.read_jsonl(out / "ssl" / "log.jsonl")) == 1 and not (out / "sftc").exists()

    monkeypatch.setattr(rl, "build_prompt", short_prompt)
    rl.run(rl.parse_config(["--resume", "--out", str(out)]))
    for name, _, _ in STAGES:
        assert untimed(out / name) == untimed(straight / name), name


@pytest.mark.parametrize("argv, gpu, chained", [
    (["--model", "Qwen/Qwen2.5-Coder-1.5B-Instruct"], True, True),  # a real model on a GPU: the chain
    (["--model", "tiny"], True, False),
    (["--model", "Qwen/Qwen2.5-Coder-1.5B-Instruct"], False, False),  # no GPU
    (["--model", "Qwen/Qwen2.5-Coder-1.5B-Instruct", "--init-from", "EARLIER"], True, False),
    (["--model", "tiny", "--stage", "all"], False, True),
], ids=["real-gpu", "tiny-gpu", "real-cpu", "init-from", "all-tiny-cpu"])
def test_auto_is_the_chain_for_a_real_model_on_a_gpu_and_rl_otherwise(monkeypatch, tmp_path, argv, gpu, chained):
    monkeypatch.setattr(rl.torch.cuda, "is_available", lambda: gpu)
    (tmp_path / "ckpt.pt").write_bytes(b""), (tmp_path / "config.json").write_text("{}")  # an earlier stage's folder
    argv = [str(tmp_path) if a == "EARLIER" else a for a in argv]
    cfg = rl.decide_config(*rl.parse_flags(argv + ["--task", "cpu/relu", "--out", str(tmp_path / "out")]))
    assert cfg.stage == ("all" if chained else "rl") and cfg.model == argv[1]


def test_the_recipe_fills_what_is_not_given(tmp_path, capsys):
    """--task all takes split.json's training tasks; each stage gets the recipe's lr and its own steps; a flag
    given wins in every stage that reads it; --help says the recipe."""
    with pytest.raises(SystemExit):
        rl.parse_config(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "every stage --lora-rank 8 --lora-targets q_proj,v_proj --max-new-tokens 3200 --temperature 0.7" in said
    assert "sft (--steps: --sft-steps) --lr 0.0002; ssl --lr 0.0001" in said and "rl --lr 5e-05" in said
    split = json.loads(chain.SPLIT.read_text())
    for argv, lrs in [([], [2e-4, 1e-4, 1e-4, 5e-5]), (["--lr", "3e-4"], [3e-4] * 4)]:
        cfg, given = rl.parse_flags(["--stage", "all", "--model", "tiny", "--max-new-tokens", "64", "--out",
                                     str(tmp_path), *argv])
        whole = rl.decide_config(cfg, given)
        chosen = set(given) | runs.changed_fields(whole)
        assert whole.task == ",".join(split["train"]) and not set(split["heldout"]) & set(whole.task.split(","))
        assert (whole.max_new_tokens, whole.temperature, whole.lora_rank, whole.ssl_rounds) == (64, 0.7, 8, 4)
        stages = [chain.stage_config(whole, chosen, name, "")[0] for name in chain.CHAIN]
        assert [s.lr for s in stages] == lrs
        assert [chain.stage_length(s)[0] for s in stages] == [200, 4, 40, 200]


def test_auto_on_a_gpu_without_a_model_to_load_is_the_demo_policys_rl(monkeypatch, tmp_path, capsys):
    """No --model, a GPU, no hub and no offline copy: the demo fallback's line, and rl alone on the CPU tasks."""
    monkeypatch.setattr(rl.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(engine, "hub_reachable", lambda: False)
    monkeypatch.setattr(engine, "hub_cached", lambda model: False)
    monkeypatch.setattr(runs, "FETCHED", tmp_path)
    cfg = rl.decide_config(*rl.parse_flags([]))
    assert (cfg.stage, cfg.model, cfg.init_from, cfg.task) == ("rl", "tiny", str(runs.DEMO_POLICY), "cpu/*")
    assert "demo policy bench/demo/policy" in capsys.readouterr().out  # the fallback's one line
