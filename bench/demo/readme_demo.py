"""The README's CPU demo block, made from a run, so that it says what the command prints:

    python bench/demo/readme_demo.py          # runs COMMAND in a fresh folder (~2-3 min on 2 cores), keeps its
                                              # output in bench/demo/readme_demo.txt, writes the README's block

The block (between the README's BEGIN and END markers) is render() of that output: the sentence naming the command,
the date, the machine and the commit, then the fallback line, the first config line, the stage line and the step
lines, with the run's folder as COMMAND gave it. tests/test_readme.py checks that the block is render() of
readme_demo.txt, and that a new run's first step says what the kept output's does (stable(): the pass rate, the
groups with a signal and the flat ones, the fallback and stage lines; rewards, speedups and seconds are measured and
move from run to run).
"""
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUTPUT = Path(__file__).resolve().parent / "readme_demo.txt"
COMMAND = ["rl.py", "--task", "all", "--steps", "2", "--out", "runs/demo-rl"]
BEGIN, END = "<!-- demo -->", "<!-- /demo -->"


def run(steps=2):
    """The printed output (stdout) of COMMAND with --steps steps, run in a fresh folder; that folder's path is
    taken out, so that the run's folder reads as COMMAND gave it (runs/demo-rl)."""
    argv = [a if a != "2" else str(steps) for a in COMMAND]
    with tempfile.TemporaryDirectory(prefix="readme-demo-") as here:
        out = subprocess.run([sys.executable, str(REPO / argv[0]), *argv[1:]], cwd=here, capture_output=True,
                             text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=1200)
        if out.returncode:
            sys.exit(f"readme_demo.py: the run failed:\n{out.stderr[-2000:]}")
        return out.stdout.replace(os.path.realpath(here) + "/", "").replace(here + "/", "")


def render(output):
    """The README's block of a run's output: the lines a reader needs, in a code block after one sentence."""
    head, lines = output.split("\n", 1)[0], output.splitlines()
    said = head.split("\t", 1)[1] if head.startswith("#\t") else ""
    keep = [line for line in lines if line.startswith(("cudal1: ", "stage ", "step "))]
    config = [line for line in lines if line.startswith("config (every field in ")]
    keep[1:1] = [config[0] + " ..."] if config else []
    return "\n".join([f"`OMP_NUM_THREADS=1 python {' '.join(COMMAND)}` printed {said} (config lines abridged):",
                      "```", *keep, "```"])


STEP = re.compile(r"^step +(\d+) \| reward \S+ \| pass +([\d.]+%) \| signal (\d+/\d+)(?: \(\d+ by speed\))?, (\d+) flat")


def stable(block, steps=None):
    """What does not move from run to run on one machine: the fallback and stage lines, and per step its pass rate,
    groups with a signal and flat groups (the first `steps` steps, or all)."""
    lines = block.splitlines()
    fixed = [line for line in lines if line.startswith(("cudal1: ", "stage "))]
    per_step = [STEP.match(line).groups() for line in lines if STEP.match(line)]
    return fixed, per_step[:steps]


def commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip() or "unknown"


if __name__ == "__main__":
    output = run()
    said = f"on {time.strftime('%Y-%m-%d')} ({os.cpu_count()}-core CPU, {commit()})"
    OUTPUT.write_text(f"#\t{said}\n{output}")
    readme = (REPO / "README.md").read_text()
    before, rest = readme.split(BEGIN + "\n", 1)
    (REPO / "README.md").write_text(before + BEGIN + "\n" + render(OUTPUT.read_text()) + "\n" + END +
                                    rest.split(END, 1)[1])
    print(f"README.md's demo block: from {OUTPUT.relative_to(REPO)}")
