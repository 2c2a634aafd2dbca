"""bench/real/sitting.py: the proof's campaign (bench/real/PROTOCOL.md) in pieces that each fit one short GPU command.

The campaign's state is the repo's: bench/real/proof/ holds every piece's run folder (config, log, checkpoint,
database), campaign.json (whether the reward is settled, the go/no-go verdict, learning-rate changes) and the
measurements' work folders. This script reads it, says where the campaign stands, and runs the next piece for at most
--limit seconds; what that leaves is packed into --pack (a GPU call's $OUT), and `take` unpacks it here for a commit.
A piece cut by the limit (SIGINT: the run checkpoints its last finished step) goes on at the next call.

    python bench/real/sitting.py                               # the plan: each piece, done or not, and the next
    python bench/real/sitting.py next --model M.gguf --limit 280 --pack "$OUT"   # on the GPU: the next piece
    python bench/real/sitting.py take /work/.device/...        # here: what came back, into bench/real/proof/
    python bench/real/sitting.py change-s --s-steps 200 --why "..."   # after a no-go: S longer, the go/no-go again

The GGUF travels in pieces first (here: `split -b 58m -d -a 2 M .gguf/p`; one GPU call each, carrying
.gguf/pNN and moving it to /root/m/); `next` joins /root/m/p00, p01, ... into --model and checks its sha256.

The pieces, in order: S (sft of the base on every working stage-1 variant of the 30 training tasks, plain and
contrastive prompts), go_plain and go_contrastive (one step without update from S, the go/no-go), measure_start
(waits until campaign.json says the reward is settled), rl_plain (the protocol's primary arm, 24 steps in stretches,
the stop rule checked at each), measure_rl_plain (then the decision), rl_contrastive, measure_rl_contrastive, and
main_job (`rl.py --task all` with short stages, from a fresh folder). CPU test: tests/test_sitting.py.
"""
import argparse
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SPLIT = json.loads((HERE / "split.json").read_text())
PROOF_TASKS = ("level1/batchnorm2d,level1/cross_entropy,level1/layernorm_wide,level1/maxpool2d,level1/mean_dim1,"
               "level1/mse_loss,level1/rmsnorm_wide,level1/softmax_wide,level1/sum_lastdim,"
               "level2/attention_scores_softmax,level2/bias_gelu,level2/conv3d_leakyrelu_sum,level2/conv_bn_relu,"
               "level2/conv_groupnorm_gelu,level2/conv_relu_maxpool,level2/rmsnorm_modulate")  # PROTOCOL.md's 16
PACK_PIECE = 15 << 20  # bytes per packed file: a GPU call returns files of at most 16 MiB


@dataclass
class Campaign:
    """What the pieces run: the protocol's numbers by default; the CPU test shrinks them."""
    proof: Path = HERE / "proof"            # the campaign's state
    data: str = str(HERE / "stage1.jsonl")  # the stage-1 variants, measured
    s_tasks: str = ",".join(SPLIT["train"])  # S's data: every working stage-1 variant of the 30 training tasks
    tasks: str = PROOF_TASKS                # the RL arms' tasks and the measurements' training split
    heldout: str = ",".join(SPLIT["heldout"])  # the 13 tasks no stage trains on, measured at every checkpoint
    s_steps: int = 80                       # S: AdamW steps of 16 records (~9.5 epochs), each under both prompts
    arm_steps: int = 24                     # each RL arm
    samples: int = 16                       # a measurement's samples per task
    stretch: int = 1                        # RL steps per command (one step: ~2-4 minutes at 64 x 3,200 tokens)
    s_stretch: int = 80                     # S steps per command (~4.5 s a step on an H100)
    model: list = field(default_factory=lambda: ["--model", ""])  # the policy flags every piece gets
    extra: list = field(default_factory=list)  # more rl.py flags for every piece (the CPU test's --device cpu)

    @property
    def summary(self):  # the proof's own: bench/real/summary.json keeps the earlier 30-task measurements
        return self.proof / "summary.json"


def read_log(folder):
    path = Path(folder) / "log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def last_step(folder):
    log = read_log(folder)
    return log[-1]["step"] if log else 0


def state(c):
    path = c.proof / "campaign.json"
    return json.loads(path.read_text()) if path.exists() else dict(reward_settled=False, lr_changes=[], go=None)


def change_s(c, steps, why):
    """PROTOCOL.md's answer to a no-go: change S (here: train it longer, from where it stopped) and run the go/no-go
    again. campaign.json keeps every change and the verdict it answers; the go folders go (git history keeps them)."""
    st = state(c)
    if not st.get("go") or st["go"]["go"]:
        sys.exit("sitting: change-s answers a no-go; the campaign has none")
    st.setdefault("s_changes", []).append(dict(s_steps=steps, why=why, after=st["go"], date=time.strftime("%Y-%m-%d")))
    st["go"] = None
    for name in ("go_plain", "go_contrastive"):
        shutil.rmtree(c.proof / name, ignore_errors=True)
    save_state(c, st)
    print(f"sitting: S goes on to step {steps}; the go/no-go runs again after it", flush=True)


def save_state(c, st):
    c.proof.mkdir(parents=True, exist_ok=True)
    (c.proof / "campaign.json").write_text(json.dumps(st, indent=1) + "\n")


# ---------------------------------------------------------------------------- the rules the protocol fixes


def go_verdict(plain_log, contrastive_log):
    """PROTOCOL.md's go/no-go over the two one-step logs: in each, at least half the groups carry a signal and a
    quarter a speed signal; the contrastive pass rate at least 70% of the plain one.
    >>> go_verdict([dict(groups=8, groups_signal=4, groups_speed=2, pass_rate=0.5)],
    ...            [dict(groups=8, groups_signal=5, groups_speed=2, pass_rate=0.3)])["go"]
    False
    """
    checks = {}
    for name, rec in (("plain", plain_log[0]), ("contrastive", contrastive_log[0])):
        checks[f"{name} signal {rec['groups_signal']}/{rec['groups']} >= 1/2"] = 2 * rec["groups_signal"] >= rec["groups"]
        checks[f"{name} speed {rec['groups_speed']}/{rec['groups']} >= 1/4"] = 4 * rec["groups_speed"] >= rec["groups"]
    p, q = plain_log[0]["pass_rate"], contrastive_log[0]["pass_rate"]
    checks[f"contrastive pass {q:.3f} >= 0.7 x plain {p:.3f}"] = q >= 0.7 * p
    return dict(go=all(checks.values()), checks=checks)


def stop_rule_lr(log, lr, changes, arm):
    """The learning rate of the arm's next stretch: halved when the pass rate was below half of step 1's in the last
    two steps, and not halved already after those steps (changes: campaign.json's lr_changes).
    >>> stop_rule_lr([dict(step=1, pass_rate=0.4), dict(step=2, pass_rate=0.1), dict(step=3, pass_rate=0.15)],
    ...              5e-5, [], "rl_plain")
    (2.5e-05, True)
    """
    mine = [ch for ch in changes if ch["arm"] == arm]
    lr = mine[-1]["lr"] if mine else lr
    if len(log) < 3 or (mine and mine[-1]["after_step"] >= log[-2]["step"]):
        return lr, False
    low = all(r["pass_rate"] < 0.5 * log[0]["pass_rate"] for r in log[-2:])
    return (lr / 2, True) if low else (lr, False)


# ---------------------------------------------------------------------------- the pieces


RL_FLAGS = ["--max-new-tokens", "3200", "--temperature", "0.7", "--lr", "5e-5", "--grad-accum", "16",
            "--eval-precision", "0.01", "--tasks-per-step", "8", "--group-size", "8", "--ckpt-every", "1"]
RL_LR = 5e-5


def rl_cmd(*args):
    return [sys.executable, str(REPO / "rl.py"), *args]


def piece_s(c, st):
    out, at = c.proof / "S", last_step(c.proof / "S")
    steps = min(c.s_steps, at + c.s_stretch)
    return rl_cmd("--stage", "sft", *c.model, "--lora-rank", "8", "--lora-targets", "q_proj,v_proj",
                  "--data", c.data, "--sft-contrastive", "--task", c.s_tasks, "--lr", "2e-4",
                  "--max-new-tokens", "3200", "--temperature", "0.7", "--steps", str(steps), "--ckpt-every", "10",
                  "--out", str(out), *["--resume"] * bool(at), *c.extra)


def piece_go(contrastive):
    def piece(c, st):
        out = c.proof / ("go_contrastive" if contrastive else "go_plain")
        if last_step(c.proof / "S") < c.s_steps or st.get("go"):
            return None
        return rl_cmd("--stage", "rl", "--init-from", str(c.proof / "S"), *c.model, "--task", c.tasks, *RL_FLAGS,
                      "--steps", "1", "--no-update", "--contrastive" if contrastive else "--no-contrastive",
                      "--out", str(out), *["--resume"] * (out / "config.json").exists(), *c.extra)
    return piece


def measured(c, label):
    return c.summary.exists() and label in json.loads(c.summary.read_text()).get("checkpoints", {})


def piece_measure(label, folder_name, after):
    def piece(c, st):
        if not after(c, st):
            return None
        return [sys.executable, str(HERE / "measure.py"), label, str(c.proof / folder_name), "--train", c.tasks,
                "--heldout", c.heldout, "--summary", str(c.summary), "--work", str(c.proof / f"measure_{label}"), "--samples", str(c.samples),
                "--", *c.model, "--max-new-tokens", "3200", "--temperature", "0.7", *c.extra]
    return piece


def piece_arm(arm):
    def piece(c, st):
        out, at = c.proof / arm, last_step(c.proof / arm)
        if not measured(c, "start") or not (st.get("go") or {}).get("go"):
            return None
        lr, _ = stop_rule_lr(read_log(out), RL_LR, st["lr_changes"], arm)
        flags = [f if f != str(RL_LR) else repr(lr) for f in RL_FLAGS]
        return rl_cmd("--stage", "rl", "--init-from", str(c.proof / "S"), *c.model, "--task", c.tasks, *flags,
                      "--no-contrastive" if arm == "rl_plain" else "--contrastive",
                      "--steps", str(min(c.arm_steps, at + c.stretch)), "--out", str(out),
                      *["--resume"] * (out / "config.json").exists(), *c.extra)
    return piece


def piece_main_job(c, st):
    out = c.proof / "main_job"
    if not measured(c, "rl_contrastive"):
        return None
    return rl_cmd("--task", "all", *c.model, "--sft-steps", "4", "--sftc-steps", "2", "--ssl-rounds", "1",
                  "--steps", "1", "--out", str(out), *["--resume"] * out.exists(), *c.extra)


def settled(c, st):
    return bool(st.get("reward_settled")) and (st.get("go") or {}).get("go", False)


def arm_done(arm):
    return lambda c, st: last_step(c.proof / arm) >= c.arm_steps


PIECES = {  # name -> the command that continues it (None: not yet due), in the campaign's order; plan asks done first
    "S": piece_s,
    "go_plain": piece_go(False),
    "go_contrastive": piece_go(True),
    "measure_start": piece_measure("start", "S", settled),
    "rl_plain": piece_arm("rl_plain"),
    "measure_rl_plain": piece_measure("rl_plain", "rl_plain", arm_done("rl_plain")),
    "rl_contrastive": piece_arm("rl_contrastive"),
    "measure_rl_contrastive": piece_measure("rl_contrastive", "rl_contrastive", arm_done("rl_contrastive")),
    "main_job": piece_main_job,
}


def done(c, name):
    """Is the piece finished, read from the committed state alone?"""
    if name == "S":
        return last_step(c.proof / "S") >= c.s_steps
    if name.startswith("go_"):
        return last_step(c.proof / name) >= 1
    if name.startswith("measure_"):
        return measured(c, name[len("measure_"):])
    if name == "main_job":
        return last_step(c.proof / "main_job" / "rl") >= 1
    return last_step(c.proof / name) >= c.arm_steps


def plan(c):
    """[(piece, 'done' | 'next' | 'waits: why' | 'later')], and the next piece's command (None: none can run)."""
    st, rows, nxt = state(c), [], None
    if st.get("s_changes"):  # S as the last change-s made it
        c.s_steps = st["s_changes"][-1]["s_steps"]
    for name, make in PIECES.items():
        if done(c, name):
            rows.append((name, "done"))
            continue
        cmd = make(c, st) if nxt is None else None
        if nxt is None and cmd is not None:
            nxt = (name, cmd)
            rows.append((name, "next"))
        else:
            rows.append((name, "waits: " + why_waiting(c, st, name) if nxt is None else "later"))
    return rows, nxt


def why_waiting(c, st, name):
    if name.startswith("go_"):
        return "S is not finished"
    if name == "measure_start":
        if st.get("go") is None:
            return "the go/no-go has no verdict"
        if not st["go"]["go"]:
            return "no-go: change S or the temperature as PROTOCOL.md allows, and record it"
        return "the reward is not settled (campaign.json reward_settled)"
    return "the piece before it"


# ---------------------------------------------------------------------------- a sitting: run, check, pack, take


def run_next(c, limit):
    """Run the next piece for at most `limit` seconds (SIGINT at the limit: it checkpoints); returns its name."""
    rows, nxt = plan(c)
    if nxt is None:
        print("sitting: nothing can run now: " + "; ".join(f"{n} {s}" for n, s in rows if s != "done"), flush=True)
        return None
    name, cmd = nxt
    if name.startswith("rl_"):  # the stop rule, recorded as it acts (the command already has the halved rate)
        st = state(c)
        lr, halved = stop_rule_lr(read_log(c.proof / name), RL_LR, st["lr_changes"], name)
        if halved:
            st["lr_changes"].append(dict(arm=name, after_step=last_step(c.proof / name), lr=lr,
                                         reason="pass rate below half of step 1's for 2 steps (the stop rule)"))
            save_state(c, st)
            print(f"sitting: {name}: the stop rule halves the learning rate to {lr:g}", flush=True)
    print(f"sitting: {name}: {' '.join(cmd)}", flush=True)
    rc = subprocess.run(["timeout", "-s", "INT", "-k", "60", str(int(limit)), *cmd], cwd=REPO).returncode
    print(f"sitting: {name} exited {rc}" + (" (cut at the limit; it goes on next time)" * (rc in (124, 130))),
          flush=True)
    after_piece(c, name)
    return name


def after_piece(c, name):
    """Verdicts the campaign records as a piece ends: the go/no-go, the decision's report."""
    st = state(c)
    if name.startswith("go_") and all(last_step(c.proof / g) >= 1 for g in ("go_plain", "go_contrastive")):
        st["go"] = go_verdict(read_log(c.proof / "go_plain"), read_log(c.proof / "go_contrastive"))
        save_state(c, st)
        print(f"sitting: go/no-go: {'GO' if st['go']['go'] else 'NO-GO'}: {st['go']['checks']}", flush=True)
    if name.startswith("measure_") and measured(c, name[len("measure_"):]):
        subprocess.run([sys.executable, str(HERE / "report.py"), str(c.summary)], cwd=REPO)


def pack(c, dest):
    """The campaign's folder as dest/state.tgz.NN (files under 16 MiB each) and its sha256."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(c.proof, arcname=".")
    data, dest = buf.getvalue(), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("state.tgz.*"):
        old.unlink()
    for i in range(0, len(data), PACK_PIECE):
        (dest / f"state.tgz.{i // PACK_PIECE:02d}").write_bytes(data[i:i + PACK_PIECE])
    (dest / "state.sha256").write_text(hashlib.sha256(data).hexdigest() + "\n")
    print(f"sitting: packed {c.proof} ({len(data) / 2**20:.1f} MiB) into {dest}", flush=True)


def take(src, root):
    """Unpack what a sitting sent back (src/state.tgz.NN) into the campaign's folder: each packed folder replaced
    whole, campaign.json and summary.json overwritten."""
    src = Path(src)
    data = b"".join(p.read_bytes() for p in sorted(src.glob("state.tgz.*")))
    if not data:
        sys.exit(f"sitting: no state.tgz.* in {src}")
    if hashlib.sha256(data).hexdigest() != (src / "state.sha256").read_text().strip():
        sys.exit(f"sitting: {src}'s pieces do not match state.sha256: a piece is missing or cut")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            if m.name.startswith("/") or ".." in Path(m.name).parts or not (m.isfile() or m.isdir()):
                sys.exit(f"sitting: refusing {m.name!r} in the pack")
        tops = {Path(m.name).parts[0] for m in members if len(Path(m.name).parts) > 1}  # "./S/log.jsonl" -> "S"
        for top in tops:  # a run folder comes back whole: what it no longer holds goes
            shutil.rmtree(root / top, ignore_errors=True)
        tar.extractall(root, filter="data")
    print(f"sitting: took {len(members)} files into {root}", flush=True)


def check_model(path):
    """The GGUF, joined from the pieces beside it (p00, p01, ...: a GPU call carries at most 64 MiB) if it is not
    there yet; it must hash as bench/fetch_model.py lists it."""
    sys.path.insert(0, str(REPO / "bench"))
    from fetch_model import MODELS, sha256
    path, want = Path(path), {name: digest for _, _, name, digest in MODELS.values()}.get(Path(path).name)
    pieces = sorted(path.parent.glob("p[0-9][0-9]"))
    if not path.exists() and pieces:
        with open(path, "wb") as f:
            for piece in pieces:
                f.write(piece.read_bytes())
    if not path.exists() or want and sha256(path) != want:
        sys.exit(f"sitting: {path} is missing or does not hash as bench/fetch_model.py lists it "
                 f"({len(pieces)} pieces beside it): carry the rest")
    print(f"sitting: {path.name}: sha256 as listed", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("verb", nargs="?", default="plan", choices=["plan", "next", "take", "change-s"])
    p.add_argument("src", nargs="?", help="take: the folder a sitting's files came back in")
    p.add_argument("--model", default="", help="the policy: the GGUF's path on the GPU machine (tiny in the test)")
    p.add_argument("--limit", type=float, default=280, help="seconds the sitting may run (then SIGINT: the piece "
                                                                "checkpoints its last finished step)")
    p.add_argument("--more", action="store_true", help="next: go on to the following pieces while a minute is left")
    p.add_argument("--pack", help="where to pack the piece's state (a GPU call's $OUT)")
    p.add_argument("--proof", default=str(Campaign.proof), help="the campaign's state folder")
    p.add_argument("--scale", help="JSON of Campaign fields to change (the CPU test's small campaign)")
    p.add_argument("--extra", default="", help="more rl.py flags for every piece, space-separated")
    p.add_argument("--s-steps", type=int, help="change-s: S's new length in steps")
    p.add_argument("--why", help="change-s: the reason, as campaign.json records it")
    a = p.parse_args(argv)
    c = Campaign(proof=Path(a.proof).resolve(), model=["--model", a.model] if a.model else [], extra=a.extra.split())
    for k, v in json.loads(a.scale or "{}").items():
        setattr(c, k, v)
    if a.verb == "change-s":
        if not (a.s_steps and a.why):
            sys.exit("sitting: change-s needs --s-steps and --why")
        return change_s(c, a.s_steps, a.why)
    if a.verb == "take":
        return take(a.src, c.proof)
    if a.verb == "next":
        if a.model.endswith(".gguf"):
            check_model(a.model)
        t0 = time.monotonic()
        while (left := a.limit - (time.monotonic() - t0)) >= 60 or left == a.limit:  # pieces while a minute is left
            name = run_next(c, left)
            if name and a.pack:
                pack(c, a.pack)  # after each piece: a call killed at its limit still returns the pieces before
            if not name or not a.more:
                return
        return
    rows, nxt = plan(c)
    for name, status in rows:
        print(f"{name:24s} {status}")
    print(f"next: {' '.join(nxt[1]) if nxt else 'nothing can run now'}")


if __name__ == "__main__":
    main()
