"""The trust boundary's second round: what an untrusted process sends is plain data (finite numbers in range, text
that encodes), no trusted process runs a tool on anything a candidate chose, an `ok` verdict has a speedup a clock
can give, and an exception one evaluation raises is that candidate's verdict: the CLI prints strict JSON and the RL
loop goes on. (The corpus files that attack each class: tests/corpus/hacks/wire_*, pch_*, flags_*.)"""
import ast
import inspect
import json
import math
import multiprocessing as mp
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import cudal1  # noqa: E402
import evaluator as E  # noqa: E402
import fences  # noqa: E402
import rl  # noqa: E402
import runs  # noqa: E402

RELU = (ROOT / "tasks/cpu/relu.py").read_text()
CLAMP = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0.0)\n"


def reject(name):
    raise ValueError(f"not strict JSON: {name}")


@pytest.mark.parametrize("raw", [b'["ok", NaN]', b'["ok", [Infinity, 1.0]]', b'["ok", -Infinity]', b'["ok", 1e999]',
                                 b'["ok", ' + b"9" * 400 + b"]", b'["ok", 9007199254740993]', b'["fail", "\\ud800"]',
                                 b'["ok", {"\\udfff": 1}]'])
def test_the_wire_refuses_numbers_no_clock_gives_and_strings_that_cannot_be_encoded(raw):
    """NaN slipped through max() in the charge (ok, speedup NaN); a huge int overflowed the judge's statistics (blamed
    on the reference); a lone surrogate raised wherever the text was printed or encoded. Each is `wire` now."""
    a, b = mp.Pipe()
    a.send_bytes(raw)
    with pytest.raises(fences.Verdict) as v:
        fences.recv_data(b, "candidate")
    assert v.value.status == "rejected" and v.value.check == "wire"
    v.value.reason.encode()  # the refusal itself is text


def test_the_wire_keeps_plain_data():
    a, b = mp.Pipe()
    a.send_bytes(b'["ok", [0.25, 9007199254740992, -3, null, true, "\\ud83d\\ude00 \\u00e9"]]')  # a pair is text
    assert fences.recv_data(b, "candidate") == ["ok", [0.25, 2 ** 53, -3, None, True, "\U0001F600 \u00e9"]]


class _Session:
    """A session whose judge answers with the given result (what a candidate's forged reports could make of it)."""

    def __init__(self, **res):
        self.ref_src, self.device, self.res = RELU, "cpu", res

    def evaluate(self, cand_src, o, logdir):
        return dict(dict(status="ok", reason="", check="", correct=True, ref_ms=1.0, cand_ms=0.5, ref_spread=0.01,
                         cand_spread=0.01, speedup=2.0), **self.res)


@pytest.mark.parametrize("res", [dict(speedup=math.nan), dict(speedup=math.inf), dict(speedup=-2.0),
                                 dict(speedup=2e4), dict(cand_ms=math.nan), dict(cand_spread=math.inf)])
def test_an_ok_verdict_has_a_finite_positive_speedup_the_clocks_can_give(res):
    """Whatever the judge's numbers became on the way, an `ok` leaves evaluate with a finite speedup in (0, 1e4]
    (charge never charges less than 1e-4 of the reference's time) and finite times, else it is `rejected wire`."""
    r = E.evaluate(RELU, CLAMP, "cpu", built=True, session=_Session(**res))
    assert (r.status, r.check) == ("rejected", "wire") and not r.correct and r.reason.startswith("wire:"), r
    fine = E.evaluate(RELU, CLAMP, "cpu", built=True, session=_Session())
    assert fine.status == "ok" and fine.speedup == 2.0


def test_the_cli_turns_any_exception_into_a_verdict_and_prints_strict_json(monkeypatch, capsys, tmp_path):
    """An exception out of the evaluation (a candidate's data that broke the caller's side) is that candidate's
    `runtime_error harness`, exit 0, one JSON line; text no encoding takes is escaped, never a traceback."""
    def broken(*a, **k):
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
    monkeypatch.setattr(E, "evaluate", broken)
    (tmp_path / "c.py").write_text(CLAMP)
    assert E.main([str(ROOT / "tasks/cpu/relu.py"), str(tmp_path / "c.py"), "--device", "cpu", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out.splitlines()[-1], parse_constant=reject)
    assert rec["status"] == "runtime_error" and rec["check"] == "harness" and "UnicodeEncodeError" in rec["reason"]
    line = E.json_line(E.Result("ok", speedup=math.nan, ref_ms=math.inf, reason="odd \ud800 text"))
    rec = json.loads(line, parse_constant=reject)
    assert rec["speedup"] is None and rec["ref_ms"] is None and line.isascii()


ROOT_MODULES = sorted(p.stem for p in ROOT.glob("*.py"))
TOOLS = ("subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn", "pty.spawn")


def test_no_trusted_process_runs_a_tool_on_anything_a_candidate_chose():
    """The root modules start one tool: the compiler that precompiles torch/extension.h (fences.make_pch), whose only
    argument is the device (its flags are the harness' fixed sets, as torch writes them), called from its own
    sandboxed build process (pch_main) alone. A build's message never reaches it (the wish it once was: `wire`)."""
    runs_tools, callers = set(), set()
    for module in ROOT_MODULES:
        tree = ast.parse((ROOT / f"{module}.py").read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                for call in ast.walk(fn):
                    if isinstance(call, ast.Call):
                        name = ast.unparse(call.func)
                        runs_tools |= {f"{module}.{fn.name}"} if name.startswith(TOOLS) else set()
                        callers |= {f"{module}.{fn.name}"} if name.endswith("make_pch") else set()
    assert runs_tools == {"fences.make_pch"} and callers == {"fences.pch_main"}, (runs_tools, callers)
    assert list(inspect.signature(fences.make_pch).parameters) == ["device"]
    a, b = mp.Pipe()
    fences.send_data(a, ["pch", "c++", "-fopt-info-all=cudal1_pch_probe.txt"])
    v = fences._build_answer(b, 0)
    assert (v.status, v.check) == ("rejected", "wire"), v


# ---------------------------------------------------------------------------- the RL loop survives any one verdict

PLAN = [  # one step's group, in sample order: what the (fake) evaluator answers for each
    ("nan", E.Result("ok", correct=True, speedup=math.nan, ref_ms=1.0, cand_ms=math.nan)),
    ("inf", E.Result("ok", correct=True, speedup=math.inf, ref_ms=1.0, cand_ms=0.0)),
    ("negative", E.Result("ok", correct=True, speedup=-1.5, ref_ms=1.0, cand_ms=-0.7)),
    ("missing", E.Result("ok", correct=True, speedup=None)),
    ("odd text", E.Result("rejected", check="wire", reason="wire: \ud800\x00\u202e odd text")),
    ("raises", None),
    ("honest", E.Result("ok", correct=True, speedup=1.5, ref_ms=1.0, cand_ms=0.667)),
]


def test_the_rl_loop_survives_any_one_verdict(tmp_path, monkeypatch):
    """Two RL steps (the tiny model on cpu/relu, a group of 7) whose evaluations answer NaN, infinite, negative and
    missing speedups, a `rejected` with odd text, and an exception for one sample: each step ends, each of those
    earns the failure reward (a missing speedup is an untimed run: 1.0x), the database keeps the honest code alone
    and refuses the rest quietly, and the run goes on to its checkpoint."""
    codes = iter(range(10 ** 6))
    monkeypatch.setattr(rl, "build_prompt", lambda ref_src, *a, **k: "Rewrite: " + ref_src[:20])
    monkeypatch.setattr(runs, "extract_code", lambda text: type("Code", (), {"code": f"# sample {next(codes)}\n"})())

    def fake_evaluate(ref_src, cand_src, device="cpu", **kw):
        name, res = PLAN[int(cand_src.split()[2]) % len(PLAN)]
        if res is None:
            raise RuntimeError(f"the evaluation of sample '{name}' raised")
        return E.Result(**res.to_dict())
    monkeypatch.setattr(E, "evaluate", fake_evaluate)
    seen = []
    real_rewards = rl.rewards_of
    monkeypatch.setattr(rl, "rewards_of", lambda cfg, results: seen.append(results) or real_rewards(cfg, results))
    out = tmp_path / "run"
    rl.run(rl.parse_config(["--model", "tiny", "--device", "cpu", "--task", "cpu/relu", "--steps", "2",
                            "--group-size", str(len(PLAN)), "--max-new-tokens", "8", "--out", str(out)]))
    log = runs.read_jsonl(out / "log.jsonl")
    assert [r["step"] for r in log] == [1, 2]
    cfg = rl.Config(group_size=len(PLAN))
    for results in seen:
        assert [(r.status, r.check) for r in results][4:6] == [("rejected", "wire"), ("runtime_error", "harness")]
        raw = real_rewards(cfg, results)[0]
        fail = cfg.fail_reward
        assert raw.tolist() == pytest.approx([fail, fail, fail, 0.0, fail, fail, math.log(1.5)])
    stored = [e for e in runs.read_jsonl(out / "exemplars.jsonl") if not e["meta"].get("reference")]
    assert [e["score"] for e in stored] == [1.5, 1.5] and all(cudal1._speedup(e["score"]) for e in stored)
    assert all(r["pass_rate"] == pytest.approx(2 / 7) for r in log)  # the honest sample and the untimed one
