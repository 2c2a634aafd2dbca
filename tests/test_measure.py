"""bench/real/measure.py, the proof's measurement protocol: its numbers from hand-made results, and end to end with
the tiny model on two CPU tasks (real evaluations), the random base against the shipped demo policy."""
import json
import math
import re
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench" / "real")]
import measure  # noqa: E402
import rl  # noqa: E402
import engine  # noqa: E402
import runs  # noqa: E402
from evaluator import Result  # noqa: E402


def ok(speedup, kind="framework_ops", copy=False):
    return Result(status="ok", correct=True, speedup=speedup, speedup_kind=kind, same_as_reference=copy)


def test_split_stats_by_hand():
    """Task a: a 2x custom kernel, a 0.5x rewrite, a copy, a build error; task b: two wrong, a 1.0x, a 1.5x."""
    results = [ok(2.0, "custom_kernel"), ok(0.5), ok(1.0, "reference_ops", copy=True), Result("compile_error"),
               Result("wrong_output"), Result("wrong_output"), ok(1.0), ok(1.5)]
    s = measure.split_stats(["a", "b"], results, 4)
    assert s == dict(samples=8, ok=5 / 8, copies=1 / 8, faster=2 / 8, fast_1=1.0,
                     geomean_best=pytest.approx(math.sqrt(2.0 * 1.5)), custom_kernel=1)
    none_faster = measure.split_stats(["a"], [ok(0.9), Result("timeout")], 2)  # the best is slower: it counts
    assert (none_faster["fast_1"], none_faster["geomean_best"]) == (0.0, pytest.approx(0.9))
    nothing = measure.split_stats(["a"], [Result("timeout")] * 2, 2)
    assert (nothing["ok"], nothing["geomean_best"]) == (0.0, 1.0)


def test_task_metrics_by_hand():
    """task_metrics' docstring example: a 2x custom kernel, a 0.5x rewrite, a copy, a build error; torch.compile
    1.6x eager. Then a task with nothing correct: R 0, no log-speedup, no custom-kernel share, no compile baseline."""
    m = measure.task_metrics([ok(2.0, "custom_kernel"), ok(0.5), ok(1.0, "reference_ops", copy=True),
                              Result("compile_error")], eager_over_compiled=1.6)
    assert m == {"R": 0.625, "log_speedup": pytest.approx(0.0), "pass_rate": 0.5, "fast_1": 0.25, "fast_1.2": 0.25,
                 "fast_1_compiled": 0.25, "fast_1.2_compiled": 0.25, "custom_share": 1.0}
    slow_compiled = measure.task_metrics([ok(1.5), ok(1.1, "custom_kernel")], eager_over_compiled=1.4)
    assert (slow_compiled["fast_1.2"], slow_compiled["fast_1_compiled"], slow_compiled["fast_1.2_compiled"],
            slow_compiled["custom_share"]) == (0.5, 0.5, 0.0, 0.5)  # 1.5 > 1.4, not > 1.68; 1 of 2 faster ones
    none = measure.task_metrics([Result("wrong_output"), ok(1.0, "reference_ops", copy=True)])
    assert none == {"R": 0.0, "log_speedup": None, "pass_rate": 0.0, "fast_1": 0.0, "fast_1.2": 0.0,
                    "fast_1_compiled": None, "fast_1.2_compiled": None, "custom_share": None}


def test_exact_wilcoxon_by_hand():
    """n = 6, all positive: W+ = 1+...+6 = 21, reached by 1 of the 2^6 sign patterns: p = 1/64 one-sided, 2/64
    two-sided, 1 the other way. Zeros dropped and ties at their mean rank: [1, -1, 2, 0] -> ranks 1.5, 1.5, 3, W+ =
    4.5, reached or passed by 3 of the 8 patterns (4.5, 4.5, 6)."""
    assert measure.wilcoxon([0.1, 0.5, 0.2, 0.3, 1.0, 0.05]) == (21.0, 1 / 64)
    assert measure.wilcoxon([0.1, 0.5, 0.2, 0.3, 1.0, 0.05], "two-sided") == (21.0, 2 / 64)
    assert measure.wilcoxon([0.1, 0.5, 0.2, 0.3, 1.0, 0.05], "less") == (21.0, 1.0)
    assert measure.wilcoxon([1.0, -1.0, 2.0, 0.0]) == (4.5, 3 / 8)
    assert measure.wilcoxon([1.0, -1.0, 2.0, 0.0], "less") == (4.5, 7 / 8)  # all but the 6
    # ranks 3, 1, 2: W+ = 3; of the sums 0, 1, 2, 3, 3, 4, 5, 6, five reach 3 and four stay at or below: 2 * 4/8
    assert measure.wilcoxon([-3.0, 1.0, 2.0], "two-sided") == (3.0, 1.0)
    assert measure.wilcoxon([0.0, 0.0]) == (0.0, 1.0)  # nothing but ties: no evidence


def test_holm_and_the_bootstrap_by_hand():
    """Holm: [0.01, 0.04, 0.03] -> 3*0.01, then 2*0.03 = 0.06, then 1*0.04 kept at 0.06 (monotone); capped at 1.
    The bootstrap interval: the same under one seed, another under another, inside the differences' range, and a
    single point when every difference is the same."""
    assert measure.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert measure.holm([0.5, 0.6]) == [1.0, 1.0] and measure.holm([]) == []
    d = [0.3, -0.1, 0.5, 0.2, 0.0, 0.9]
    ci = measure.bootstrap_ci(d, seed=7)
    assert ci == measure.bootstrap_ci(d, seed=7) != measure.bootstrap_ci(d, seed=8)
    assert -0.1 <= ci[0] < sum(d) / len(d) < ci[1] <= 0.9
    assert measure.bootstrap_ci([0.25] * 5) == [0.25, 0.25] and measure.bootstrap_ci([]) is None


def metrics(r, pass_rate=0.5, log_speedup=0.0, custom=None):
    return {"R": r, "log_speedup": log_speedup, "pass_rate": pass_rate, "fast_1": 0.25, "fast_1.2": 0.0,
            "fast_1_compiled": None, "fast_1.2_compiled": None, "custom_share": custom}


def test_the_decision_and_its_family_on_a_hand_made_summary():
    """6 training tasks where the plain end's R beats the start's on every one: W+ = 21, p = 1/64 < 0.05, the
    target met. pass rate higher on 5 (1/64 -> 2/64... W+ = 20: 2 of 64 patterns reach it: p = 2/64) and equal on
    one; log-speedup equal everywhere (p = 1); fast_1 equal; compiled baselines absent (no test); custom kernel
    share defined on 2 tasks only, both higher (p = 1/4). Holm over the 5 tested metrics. The contrastive end
    against the plain end, two-sided: lower on all 6 -> p = 2/64."""
    tasks = [f"t{i}" for i in range(6)]
    start = {t: metrics(0.1 * i) for i, t in enumerate(tasks)}
    plain = {t: metrics(0.1 * i + 0.05 * (i + 1), pass_rate=0.5 + 0.05 * i, custom=(1.0 if i < 2 else None))
             for i, t in enumerate(tasks)}
    for i, t in enumerate(tasks[:2]):
        start[t]["custom_share"] = 0.5
    contrastive = {t: metrics(0.1 * i) for i, t in enumerate(tasks)}
    split = lambda m: {"train": {"tasks": m}, "heldout": {"tasks": {"h": metrics(0.0)}}}  # noqa: E731
    summary = measure.add_tests({"checkpoints": {"start": split(start), "rl_plain": split(plain),
                                                 "rl_contrastive": split(contrastive)}})
    t = summary["checkpoints"]["rl_plain"]["train"]["tests"]["start"]
    assert (t["alternative"], t["tasks"], t["W"], t["p"]) == ("greater", 6, 21.0, 1 / 64)
    assert t["mean_diff"] == pytest.approx(0.05 * 3.5) and t["ci"][0] > 0
    sec = t["secondary"]
    assert (sec["pass_rate"]["W"], sec["pass_rate"]["p"]) == (15.0, 1 / 32)  # t0 ties: 5 tasks, all higher
    assert sec["log_speedup"]["p"] == sec["fast_1"]["p"] == 1.0
    assert (sec["custom_share"]["tasks"], sec["custom_share"]["p"]) == (2, 1 / 4)
    assert sec["fast_1_compiled"]["tasks"] == 0 and "p_holm" not in sec["fast_1_compiled"]
    # Holm over log_speedup 1, pass_rate 1/32, fast_1 1, fast_1.2 1 (equal: all zero), custom_share 1/4
    assert [sec[k]["p_holm"] for k in ("pass_rate", "custom_share", "log_speedup")] == \
        pytest.approx([5 / 32, 1.0, 1.0])
    assert summary["decision"]["p"] == 1 / 64 and summary["decision"]["beats"] is True
    c = summary["checkpoints"]["rl_contrastive"]["train"]["tests"]
    assert set(c) == {"start", "rl_plain"} and c["rl_plain"]["alternative"] == "two-sided"
    assert (c["rl_plain"]["W"], c["rl_plain"]["p"]) == (0.0, 2 / 64)
    assert c["start"]["tasks"] == 6 and c["start"]["p"] == 1.0  # equal on every task: no evidence
    held = summary["checkpoints"]["rl_plain"]["heldout"]["tests"]["start"]
    assert (held["tasks"], held["p"]) == (1, 1.0)  # held-out tasks are tested for every checkpoint too
    assert "tests" not in summary["checkpoints"]["start"]["train"]


def test_protocol_end_to_end_start_and_demo_policy(tmp_path):
    """The protocol with its statistics on two CPU tasks: the random tiny model as the start S, the shipped demo
    policy as the plain end (it writes correct non-copies of both tasks: R above S's 0 on each); the decision over
    one training task is W+ = 1, p = 1/2; compile baselines from a file (cpu/relu only)."""
    summary, baselines = tmp_path / "summary.json", tmp_path / "compiled.json"
    baselines.write_text(json.dumps({"tasks": {"cpu/relu": {"eager_ms": 1.0, "compiled_ms": 2.0}}}))
    flags = ["--model", "tiny", "--device", "cpu", "--max-new-tokens", "700", "--temperature", "0.7",
             "--eval-time-budget", "0.05"]
    split = ["--train", "cpu/relu", "--heldout", "cpu/add_mul", "--samples", "4", "--summary", str(summary),
             "--compile-baselines", str(baselines)]
    measure.main(["start"] + split + ["--work", str(tmp_path / "start"), "--"] + flags)
    measure.main(["rl_plain", str(runs.DEMO_POLICY)] + split + ["--work", str(tmp_path / "demo"), "--"] + flags)
    s = json.loads(summary.read_text())
    assert (s["model"], s["tasks_train"], s["tasks_heldout"]) == ("tiny", ["cpu/relu"], ["cpu/add_mul"])
    assert set(s["checkpoints"]) == set(s["machines"]) == {"start", "rl_plain"} and len(s["commands"]) == 2
    assert s["commit"]
    keys = {"samples", "ok", "copies", "faster", "fast_1", "geomean_best", "custom_kernel", "R", "secondary", "tasks"}
    for label, split_stats in s["checkpoints"].items():
        assert set(split_stats) == {"train", "heldout"}
        for st in split_stats.values():  # the start is what the others are tested against: no tests of its own
            assert set(st) == (keys if label == "start" else keys | {"tests"}) and st["samples"] == 4
            assert st["R"] == sum(m["R"] for m in st["tasks"].values()) / len(st["tasks"])
            assert set(st["secondary"]) == set(measure.SECONDARY) and st["fast_1"] in (0.0, 1.0)  # 1 task a split
    start, demo = s["checkpoints"]["start"], s["checkpoints"]["rl_plain"]
    assert start["train"]["ok"] == start["heldout"]["ok"] == 0.0  # a random byte model writes no program
    assert start["train"]["R"] == start["heldout"]["R"] == 0.0
    assert demo["train"]["R"] > 0 and demo["heldout"]["R"] > 0, demo  # the demo policy has learnt both tasks
    relu, add_mul = demo["train"]["tasks"]["cpu/relu"], demo["heldout"]["tasks"]["cpu/add_mul"]
    assert relu["fast_1_compiled"] is not None and add_mul["fast_1_compiled"] is None  # no baseline for add_mul
    test = demo["train"]["tests"]["start"]
    assert (test["tasks"], test["W"], test["p"]) == (1, 1.0, 0.5) and test["ci"] == pytest.approx([relu["R"]] * 2)
    assert s["decision"]["p"] == 0.5 and s["decision"]["beats"] is False
    assert demo["heldout"]["tests"]["start"]["p"] == 0.5


def test_fresh_seeds_refuse_a_run_that_reached_the_protocols_step(tmp_path):
    """The protocol's samples come from step PAIRED_STEP's seeds: a run folder (or the one it started from) whose
    log or config reaches that step is refused; one below it passes."""
    start, run = tmp_path / "start", tmp_path / "run"
    for folder, steps, init in ((start, 40, ""), (run, 24, str(start))):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(dict(steps=steps, init_from=init)))
        (folder / "log.jsonl").write_text(json.dumps(dict(step=steps)) + "\n")
    measure.check_fresh_seeds(run)
    (start / "log.jsonl").write_text(json.dumps(dict(step=measure.PAIRED_STEP)) + "\n")
    with pytest.raises(SystemExit, match="whose seeds the protocol's samples use"):
        measure.check_fresh_seeds(run)


def fake_evaluations(asked, cut=None):
    """runs.evaluate_pairs that reports each pair's result as it ends: the first pair of a call ok at 2x, the rest
    compile errors; KeyboardInterrupt (a device call's time limit) at pair `cut` of the first call."""
    def evaluate_pairs(cfg, pairs, timing=None, phases=None, on_result=None):
        asked.append(list(pairs))
        results = [Result("ok", correct=True, speedup=2.0)] + [Result("compile_error")] * (len(pairs) - 1)
        for j, (pair, res) in enumerate(zip(pairs, results)):
            if len(asked) == 1 and j == cut:
                raise KeyboardInterrupt
            if on_result:
                on_result(pair, res)
        return results
    return evaluate_pairs


def test_a_cut_measurement_goes_on_from_its_work_folder(tmp_path, monkeypatch):
    """--gen-batch 1 on three tasks of two samples, every sample's code its own: a run cut after its first evaluation
    keeps the three tasks' samples and that evaluation; the same command then generates nothing, evaluates only the
    five other samples and counts the kept one, and the samples are those an uncut run draws. Another setup (here
    --temperature) in the same folder is a one-line error."""
    flags = ["--model", "tiny", "--device", "cpu", "--max-new-tokens", "40", "--temperature", "0.7", "--gen-batch", "1"]
    split = ["--train", "cpu/relu,cpu/add_mul", "--heldout", "cpu/softmax", "--samples", "2"]
    asked, loads, real_load = [], [], engine.initial_policy
    monkeypatch.setattr(rl, "extract_code", lambda text: types.SimpleNamespace(code=text))  # 6 distinct codes
    monkeypatch.setattr(runs, "evaluate_pairs", fake_evaluations(asked, cut=1))
    monkeypatch.setattr(engine, "initial_policy", lambda cfg: loads.append(1) or real_load(cfg))
    work = tmp_path / "w"
    run = ["base"] + split + ["--summary", str(tmp_path / "s.json"), "--work", str(work), "--"] + flags
    with pytest.raises(KeyboardInterrupt):
        measure.main(run)
    assert len((work / "samples.jsonl").read_text().splitlines()) == 3 and not (work / "results.jsonl").exists()
    assert len((work / "evaluated.jsonl").read_text().splitlines()) == 1
    measure.main(run)
    assert loads == [1] and [len(a) for a in asked] == [6, 5] and asked[1] == asked[0][1:]
    stats = json.loads((tmp_path / "s.json").read_text())["checkpoints"]["base"]
    assert stats["train"]["ok"] == 0.5 and stats["train"]["fast_1"] == 0.5  # cpu/relu: the kept 2x and the new one
    assert stats["heldout"]["ok"] == 0.0 and stats["train"]["samples"] == 4
    uncut = tmp_path / "uncut"
    measure.main([str(uncut) if a == str(work) else a for a in run])
    samples = (work / "samples.jsonl").read_text()
    assert samples == (uncut / "samples.jsonl").read_text() and len(samples.splitlines()) == 3
    with pytest.raises(SystemExit, match="holds another measurement"):
        measure.main(["0.9" if a == "0.7" else a for a in run])


def test_a_checkpoint_trained_again_in_its_folder_is_another_measurement(tmp_path):
    """The run folder's path alone would let samples of the old weights stand for the new ones."""
    (tmp_path / "ckpt.pt").write_bytes(b"weights after 40 steps")
    cfg = rl.parse_config(["--model", "tiny", "--init-from", str(tmp_path)])
    measure.keep(tmp_path, "samples.jsonl", cfg, {"a": ["text"]})
    assert measure.kept(tmp_path, "samples.jsonl", cfg) == {"a": ["text"]}
    (tmp_path / "ckpt.pt").write_bytes(b"weights after 200 steps")
    measure.file_sha256.cache_clear()  # (one measurement reads its checkpoint once)
    with pytest.raises(SystemExit, match="holds another measurement"):
        measure.kept(tmp_path, "samples.jsonl", cfg)


def test_a_torn_last_record_is_cut_off_before_the_next_is_kept(tmp_path):
    """A kill mid-write leaves half a line: the next record starts on a line of its own, and both readers agree."""
    cfg = rl.parse_config(["--model", "tiny"])
    measure.keep(tmp_path, "r.jsonl", cfg, {"a": [1]})
    with open(tmp_path / "r.jsonl", "a") as f:
        f.write('{"task": "b", "ite')
    assert set(measure.kept(tmp_path, "r.jsonl", cfg)) == {"a"}
    measure.keep(tmp_path, "r.jsonl", cfg, {"c": [3]})
    assert measure.kept(tmp_path, "r.jsonl", cfg) == {"a": [1], "c": [3]}


def test_stop_after_starts_no_generate_call_that_would_end_past_it(tmp_path, monkeypatch, capsys):
    """--stop-after 25 with generate calls of 10 s (a fake clock): the first two tasks' calls end at 10 and 20 s,
    the third would end at 30 s and does not start; nothing is evaluated and no summary is written; the same command
    without it generates only the third, then evaluates all."""
    clock, generated, asked = [0.0], [], []

    def fake_generate_all(cfg, model, tok, batch, prompts, step):
        clock[0] += 10
        generated.append(batch[0][0])
        return [dict(texts=["x"] * cfg.group_size) for _ in batch]
    monkeypatch.setattr(rl, "generate_all", fake_generate_all)
    monkeypatch.setattr(runs, "evaluate_pairs", fake_evaluations(asked))
    monkeypatch.setattr(measure.time, "time", lambda: clock[0])
    summary = tmp_path / "s.json"
    run = ["base", "--train", "cpu/relu,cpu/add_mul", "--heldout", "cpu/softmax", "--samples", "2",
           "--summary", str(summary), "--work", str(tmp_path / "w"), "--", "--model", "tiny", "--device", "cpu",
           "--max-new-tokens", "20", "--gen-batch", "1"]
    measure.main(run[:1] + ["--stop-after", "25"] + run[1:])
    assert generated == ["cpu/relu", "cpu/add_mul"] and not asked and not summary.exists()
    assert "stopped after 20 s (--stop-after 25), before generating for cpu/softmax" in capsys.readouterr().out
    measure.main(run)
    assert generated == ["cpu/relu", "cpu/add_mul", "cpu/softmax"] and len(asked) == 1 and summary.exists()


def test_held_out_tasks_never_reach_the_stage1_data(tmp_path, monkeypatch):
    """split.json splits every level-1/2 task into training or held-out, never both; make_stage1 reads candidates of
    training tasks only and refuses a folder for a held-out one."""
    import make_stage1
    split = make_stage1.SPLIT
    tasks = sorted(f"{p.parent.name}/{p.stem}" for p in (REPO / "tasks").glob("level[12]/*.py"))
    assert sorted(split["train"] + split["heldout"]) == tasks and len(split["heldout"]) >= 10
    found = {task for task, *_ in make_stage1.candidates([])}
    assert found and found <= set(split["train"])
    (tmp_path / split["heldout"][0].split("/")[1]).mkdir()
    (tmp_path / split["heldout"][0].split("/")[1] / "faster_x.py").write_text("class ModelNew: pass\n")
    monkeypatch.setattr(make_stage1, "FOLDERS", [tmp_path])
    with pytest.raises(SystemExit, match="outside split.json's training tasks"):
        make_stage1.candidates([])


def test_stage1_data_goes_on_from_where_a_cut_run_stopped(tmp_path, monkeypatch):
    """bench/demo/build_data.py (make_stage1's engine): each record is kept in OUT.partial as it finishes; a run cut
    after 2 of cpu/relu's 5 candidates leaves them there, the second torn by the kill (no newline): the same command
    cuts the torn line off and evaluates the other 4."""
    import importlib.util
    import evaluator
    spec = importlib.util.spec_from_file_location("demo_build_data", REPO / "bench" / "demo" / "build_data.py")
    bd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bd)
    asked = []

    def fake_many(pairs, device="cpu", on_result=None, cut=None, **opts):
        asked.append(len(pairs))
        for j, _ in enumerate(pairs):
            if j == cut:
                raise KeyboardInterrupt  # the device call's time limit
            on_result(j, Result(status="ok", correct=True, speedup=1.0 + j))
        return [Result(status="ok", correct=True, speedup=1.0 + j) for j in range(len(pairs))]
    out = tmp_path / "s1.jsonl"
    monkeypatch.setattr(evaluator, "evaluate_many", lambda *a, **k: fake_many(*a, cut=2, **k))
    with pytest.raises(KeyboardInterrupt):
        bd.main(["--tasks", "cpu/relu", "--out", str(out)])
    partial = Path(str(out) + ".partial")
    assert not out.exists() and len(partial.read_text().splitlines()) == 2
    partial.write_text(partial.read_text()[:-40])  # the second record torn by a kill mid-write
    monkeypatch.setattr(evaluator, "evaluate_many", fake_many)
    bd.main(["--tasks", "cpu/relu", "--out", str(out)])
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert asked == [5, 4] and len(recs) == 5 and not partial.exists()
    assert [r["candidate"] for r in recs] == sorted(p.stem for p in (REPO / "bench/demo/candidates/relu").glob("*.py"))
    assert [r["result"]["speedup"] for r in recs] == [1.0, 1.0, 2.0, 3.0, 4.0]  # 1 kept, then 4 new ones


def stats(faster, fast_1, copies, samples=8):
    return dict(samples=samples, ok=0.5, copies=copies, faster=faster, fast_1=fast_1, geomean_best=1.2,
                custom_kernel=1)


def test_report_table_and_targets_from_a_summary(capsys, tmp_path):
    """bench/real/report.py: a row per checkpoint and split in the stages' order; each of the proof's targets
    judged against the base (the faster share must also be above 0: three times a base of 0 is 0)."""
    import report
    summary = dict(model="M", date="2026-12-01", commit="abc", tasks_train=["a", "b"], tasks_heldout=["c"],
                   checkpoints={"rl_contrastive": {"train": stats(0.25, 0.5, 0.0), "heldout": stats(0.0, 0.0, 0.25)},
                                "base": {"train": stats(0.0, 0.0, 0.25), "heldout": stats(0.0, 0.0, 0.25)},
                                "rl_plain": {"train": stats(0.0, 0.0, 0.5), "heldout": stats(0.0, 0.0, 0.5)}})
    rows = report.table(summary).splitlines()
    assert [r.split(" | ")[0:2] for r in rows[2:]] == [["| base", "train (2)"], ["| base", "heldout (1)"],
                                                       ["| rl_contrastive", "train (2)"],
                                                       ["| rl_contrastive", "heldout (1)"],
                                                       ["| rl_plain", "train (2)"], ["| rl_plain", "heldout (1)"]]
    assert rows[4] == "| rl_contrastive | train (2) | 8 | 50.0% | 0.0% | 25.0% | 50.0% | 1.20x | 1 | - |"
    got = report.targets(summary)  # per arm: fast_1 on training tasks, faster share, held-out fast_1, copies
    assert [what.split(":")[0] for what, _, _ in got] == ["rl_contrastive"] * 4 + ["rl_plain"] * 4
    assert [met for _, _, met in got] == [True, True, False, True, False, False, False, False]
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    report.main([str(path)])
    out = capsys.readouterr().out
    assert "- rl_contrastive: fast_1 on training tasks >= 50%: 50.0%, met" in out
    assert "- rl_plain: reference copies below the base's (25.0%): 50.0%, MISSED" in out
    with pytest.raises(SystemExit, match="measure a checkpoint first"):
        report.main([str(tmp_path / "none.json")])


def test_report_plot_of_both_arms(tmp_path):
    """Each arm's own steps: pass rate, mean reward, the geomean of the best speedups so far, and the variance
    diagnostic, None in a log from before it (the contrastive arm's step 1 here); no log, no line."""
    pytest.importorskip("matplotlib")
    import report
    for arm in ("c", "p"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "log.jsonl").write_text("".join(json.dumps(dict(
            step=s, pass_rate=s / 10, mean_reward=s / 5, best_speedup={"a": 2.0, "b": 2.0 * s},
            **({} if (arm, s) == ("c", 1) else dict(groups_signal=s, groups_speed=s - 1, groups_flat=8 - s))))
            + "\n" for s in (1, 2, 3)))
    arms = {"rl_contrastive": tmp_path / "c", "rl_plain": tmp_path / "p", "rl_other": tmp_path / "none"}
    got = report.arm_steps(arms)
    assert set(got) == {"rl_contrastive", "rl_plain"}
    assert got["rl_plain"] == {"step": [1, 2, 3], "pass_rate": [0.1, 0.2, 0.3], "mean_reward": [0.2, 0.4, 0.6],
                               "best_speedup": pytest.approx([2.0, 2.0 * math.sqrt(2), 2.0 * math.sqrt(3)]),
                               "groups_signal": [1, 2, 3], "groups_speed": [0, 1, 2], "groups_flat": [7, 6, 5]}
    assert got["rl_contrastive"]["groups_signal"] == [None, 2, 3]
    out = report.plot(tmp_path / "p.png", arms)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit, match="no RL step logged in"):  # no arm has run yet: a message, not an empty plot
        report.plot(tmp_path / "q.png", {"rl_contrastive": tmp_path / "none"})
    assert not (tmp_path / "q.png").exists()


def test_report_shows_the_tests_and_the_decision(tmp_path, capsys):
    """The hand-made summary's tests as rows (the plain end against the start, the contrastive end against both),
    with R, the mean difference, W+ and the exact p, and the decision's line."""
    import report
    tasks = [f"t{i}" for i in range(6)]
    def split(r):
        return {"train": dict(R=sum(r) / 6, tasks={t: metrics(x) for t, x in zip(tasks, r)}),
                "heldout": dict(R=0.0, tasks={"h": metrics(0.0)})}
    summary = measure.add_tests(dict(model="M", date="2026-12-06", commit="abc", checkpoints={
        "start": split([0.0] * 6), "rl_plain": split([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
        "rl_contrastive": split([0.0] * 6)}, machines={"start": "GPU A", "rl_plain": "GPU A"}))
    rows = report.tests_table(summary).splitlines()
    assert [r.split(" | ")[:3] for r in rows[2:]] == [
        ["| rl_contrastive", "train (6)", "start (greater)"], ["| rl_contrastive", "train (6)", "rl_plain (two-sided)"],
        ["| rl_contrastive", "heldout (1)", "start (greater)"],
        ["| rl_contrastive", "heldout (1)", "rl_plain (two-sided)"],
        ["| rl_plain", "train (6)", "start (greater)"], ["| rl_plain", "heldout (1)", "start (greater)"]]
    plain = rows[6].split(" | ")
    assert plain[3:5] == ["0.350", "0.000"] and plain[5].startswith("+0.350 [+") and plain[6:8] == ["21", "0.01562"]
    assert rows[3].split(" | ")[7] == "0.03125"  # contrastive below plain on all 6, two-sided: 2/64
    (tmp_path / "s.json").write_text(json.dumps(summary))
    report.main([str(tmp_path / "s.json")])
    out = capsys.readouterr().out
    assert "- decision (rl_plain against start on the training tasks: one-sided exact Wilcoxon signed-rank over " \
           "tasks on R, alpha 0.05): W+ = 21, p = 0.01562: beats the start" in out
    assert "measured on: start GPU A, rl_plain GPU A" in out


def test_best_kernel_per_task_from_a_measured_work_folder(tmp_path, capsys):
    """report.py --best: per task the fastest sample that beats eager, not a copy and correct (a faster copy and a
    faster wrong one do not count), written with its speedup; a task with nothing faster gets no file."""
    import report
    def reply(code):
        return f"### Performance analysis\nx\n### Algorithm design\ny\n### Code\n```python\n{code}\n```\n"
    def res(status, speedup, copy=False):
        return dict(status=status, speedup=speedup, same_as_reference=copy, speedup_kind="custom_kernel")
    work = tmp_path / "w"
    work.mkdir()
    lines = lambda recs: "".join(json.dumps(dict(task=t, items=v)) + "\n" for t, v in recs.items())  # noqa: E731
    (work / "samples.jsonl").write_text(lines({"level1/a": [reply(f"class ModelNew: A = {i}") for i in range(4)],
                                               "level2/b": [reply(f"class ModelNew: B = {i}") for i in range(2)]}))
    (work / "results.jsonl").write_text(lines({
        "level1/a": [res("ok", 1.5), res("ok", 9.0, copy=True), res("wrong_output", None), res("ok", 2.5)],
        "level2/b": [res("ok", 1.0), res("compile_error", None)]}))
    report.main(["--best", str(work), str(tmp_path / "best")])
    assert capsys.readouterr().out == "level1/a: 2.50x\n"
    assert [f.name for f in (tmp_path / "best").iterdir()] == ["level1_a.py"]
    text = (tmp_path / "best" / "level1_a.py").read_text()
    assert text.startswith("# level1/a: 2.50x eager") and text.rstrip().endswith("A = 3")


def test_the_proofs_tasks_by_the_rule_and_never_held_out():
    """proof_tasks' rule on hand-made records (speedups, and tokens as characters): in when fastest / slowest >= 1.3
    and a variant above 1.02x fits the cap; copies and failures are not variants. PROTOCOL.md's list holds training
    tasks only."""
    import proof_tasks
    def rec(task, speedup, n, status="ok", copy=False):
        return dict(task=task, candidate=f"c{n}", code="x" * n,
                    result=dict(status=status, same_as_reference=copy, speedup=speedup))
    records = [rec("a", 1.5, 900), rec("a", 1.1, 4000), rec("a", 0.9, 600), rec("a", 9.0, 10, copy=True),
               rec("b", 1.25, 100), rec("b", 1.0, 100), rec("b", 0.5, 100, status="wrong_output"),
               rec("c", 2.0, 5000), rec("c", 1.0, 100)]
    found = proof_tasks.variants(records, count=len)
    assert found["a"] == [(1.5, len(rl.as_reply("x" * 900, "")) + 1, "c900"),
                          (1.1, len(rl.as_reply("x" * 4000, "")) + 1, "c4000"),
                          (0.9, len(rl.as_reply("x" * 600, "")) + 1, "c600")]
    rows = {task: (ok, fits and fits[0], [b[0] for b in beyond])
            for task, ok, _, fits, beyond in proof_tasks.select(["a", "b", "c", "d"], found, cap=3200)}
    # a: spread 1.67, its 1.5x fits, its 1.1x does not; b: spread 1.25; c: its only fast one is beyond the cap
    assert rows == {"a": (True, 1.5, [1.1]), "b": (False, 1.25, []), "c": (False, None, [2.0]),
                    "d": (False, None, [])}
    text = (REPO / "bench/real/PROTOCOL.md").read_text()
    listed = "".join(re.findall(r"^    (level\S+)$", text, re.M)).split(",")  # the indented list
    split = json.loads((REPO / "bench/real/split.json").read_text())
    assert len(listed) == 16 and set(listed) <= set(split["train"]) and not set(listed) & set(split["heldout"])
