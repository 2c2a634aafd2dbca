"""bench/real/sitting.py's bookkeeping on the CPU with the tiny model: each piece comes in the protocol's order, a cut
piece goes on where it stopped, the go/no-go and the reward's gate hold the campaign, and a pack comes back whole."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "real"))
import sitting  # noqa: E402

SMALL = dict(data="bench/demo/stage1.jsonl", s_tasks="cpu/relu,cpu/softmax", tasks="cpu/relu", heldout="cpu/add_mul",
             s_steps=1, arm_steps=2, stretch=1, samples=2)
EXTRA = "--device cpu --max-new-tokens 24 --group-size 2 --tasks-per-step 1 --gen-batch 1 --sft-batch 2"


def sit(proof, *args):
    sitting.main([*args, "--model", "tiny", "--proof", str(proof), "--scale", json.dumps(SMALL), "--extra", EXTRA])


def statuses(proof):
    c = sitting.Campaign(proof=Path(proof))
    for k, v in SMALL.items():
        setattr(c, k, v)
    rows, nxt = sitting.plan(c)
    return dict(rows), (nxt[1] if nxt else None)


def test_the_campaign_runs_piece_by_piece_and_comes_back_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    proof = tmp_path / "proof"
    rows, cmd = statuses(proof)
    assert rows["S"] == "next" and "--sft-contrastive" in cmd and "--resume" not in cmd
    sit(proof, "next", "--pack", str(tmp_path / "out"))
    assert sitting.last_step(proof / "S") == 1 and (proof / "S" / "ckpt.pt").exists()
    sit(proof, "next", "--more")  # both go pieces in one call; then nothing can run (no-go)
    rows, cmd = statuses(proof)
    assert [rows[k] for k in ("S", "go_plain", "go_contrastive")] == ["done"] * 3
    go = json.loads((proof / "campaign.json").read_text())["go"]
    assert go["go"] is False  # the random tiny model writes nothing correct: no signal
    assert cmd is None and rows["measure_start"].startswith("waits: no-go")

    state = json.loads((proof / "campaign.json").read_text())
    state["go"]["go"] = True
    (proof / "campaign.json").write_text(json.dumps(state))
    rows, cmd = statuses(proof)
    assert cmd is None and "reward is not settled" in rows["measure_start"]  # S is measured on the settled reward

    state["reward_settled"] = True
    (proof / "campaign.json").write_text(json.dumps(state))
    sit(proof, "next")
    assert "start" in json.loads((proof / "summary.json").read_text())["checkpoints"]
    rows, cmd = statuses(proof)
    assert rows["rl_plain"] == "next" and cmd[cmd.index("--steps") + 1] == "1" and "--no-contrastive" in cmd
    sit(proof, "next", "--pack", str(tmp_path / "out2"))  # one stretch: step 1 of 2
    rows, cmd = statuses(proof)
    assert rows["rl_plain"] == "next" and cmd[cmd.index("--steps") + 1] == "2" and "--resume" in cmd

    back = tmp_path / "back"  # what a GPU call returns, unpacked into another checkout's campaign folder
    (back / "rl_plain").mkdir(parents=True)
    (back / "rl_plain" / "stale.txt").write_text("gone after take")
    sitting.take(tmp_path / "out2", back)
    assert (back / "rl_plain" / "log.jsonl").read_text() == (proof / "rl_plain" / "log.jsonl").read_text()
    assert not (back / "rl_plain" / "stale.txt").exists()
    assert json.loads((back / "campaign.json").read_text())["reward_settled"] is True
    piece = tmp_path / "out2" / "state.tgz.00"
    piece.write_bytes(piece.read_bytes()[:-10])
    with pytest.raises(SystemExit, match="do not match"):
        sitting.take(tmp_path / "out2", back)


def test_the_stop_rule_halves_once_per_two_low_steps():
    log = [dict(step=1, pass_rate=0.4), dict(step=2, pass_rate=0.1), dict(step=3, pass_rate=0.15)]
    assert sitting.stop_rule_lr(log, 5e-5, [], "rl_plain") == (2.5e-5, True)
    changes = [dict(arm="rl_plain", after_step=3, lr=2.5e-5)]
    assert sitting.stop_rule_lr(log, 5e-5, changes, "rl_plain") == (2.5e-5, False)  # not again on the same steps
    assert sitting.stop_rule_lr(log + [dict(step=4, pass_rate=0.3)], 5e-5, changes, "rl_plain") == (2.5e-5, False)
    low = [dict(step=4, pass_rate=0.1), dict(step=5, pass_rate=0.1)]  # the two steps at the halved rate
    assert sitting.stop_rule_lr(log + low[:1], 5e-5, changes, "rl_plain") == (2.5e-5, False)
    assert sitting.stop_rule_lr(log + low, 5e-5, changes, "rl_plain") == (1.25e-5, True)
    assert sitting.stop_rule_lr(log, 5e-5, changes, "rl_contrastive") == (2.5e-5, True)  # each arm its own


def test_go_verdict_by_hand():
    plain = [dict(groups=8, groups_signal=4, groups_speed=2, pass_rate=0.5)]
    assert sitting.go_verdict(plain, [dict(groups=8, groups_signal=5, groups_speed=2, pass_rate=0.35)])["go"]
    assert not sitting.go_verdict(plain, [dict(groups=8, groups_signal=5, groups_speed=1, pass_rate=0.4)])["go"]
    assert not sitting.go_verdict(plain, [dict(groups=8, groups_signal=3, groups_speed=3, pass_rate=0.4)])["go"]
    assert not sitting.go_verdict(plain, [dict(groups=8, groups_signal=5, groups_speed=2, pass_rate=0.34)])["go"]


def test_a_no_go_changes_s_and_runs_the_go_no_go_again(tmp_path):
    """change-s after a no-go: S goes on from its last step to the new length, the go verdict and folders go, the
    change and the verdict it answers stay in campaign.json."""
    proof = tmp_path / "proof"
    for name, steps in (("S", 2), ("go_plain", 1), ("go_contrastive", 1)):
        (proof / name).mkdir(parents=True)
        (proof / name / "log.jsonl").write_text("".join(json.dumps(dict(step=i + 1)) + "\n" for i in range(steps)))
    no_go = dict(go=False, checks={"plain signal 2/8 >= 1/2": False})
    (proof / "campaign.json").write_text(json.dumps(dict(reward_settled=True, lr_changes=[], go=no_go)))
    SMALL_S = dict(SMALL, s_steps=2)
    args = ["--proof", str(proof), "--scale", json.dumps(SMALL_S)]
    with pytest.raises(SystemExit, match="needs --s-steps"):
        sitting.main(["change-s", *args])
    sitting.main(["change-s", "--s-steps", "5", "--why", "undertrained", *args])
    st = json.loads((proof / "campaign.json").read_text())
    assert st["go"] is None and st["s_changes"][0]["after"] == no_go and st["s_changes"][0]["s_steps"] == 5
    assert not (proof / "go_plain").exists() and not (proof / "go_contrastive").exists()
    rows, cmd = statuses(proof)
    assert rows["S"] == "next" and cmd[cmd.index("--steps") + 1] == "5" and "--resume" in cmd  # on from step 2
    with pytest.raises(SystemExit, match="answers a no-go"):
        sitting.main(["change-s", "--s-steps", "6", "--why", "again", *args])
