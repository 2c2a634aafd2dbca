"""The repository's shape: it speaks of itself in dates, commits, GPUs and questions (no team-process numbers), each
root module stays within the size the README states, and a clone stays small."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A team-process reference is the word session, issue or call (singular or plural, any case) standing alone, one
# space, then a whole number ("#" allowed), or a section sign before a number. Whole words only, so no longer word
# that ends in those letters counts ("recalls 5", "reissues 2", "samples 12" has no such word), nor a flag
# ("--calls_2"); a word without a number after it is prose ("3 calls a step", "the call's 10 s"), and so is a
# measurement ("first call_9.8 s", "one session_8.99 us", a column gap "per call   800 calls"). A run of numbers
# (two sessions joined by "and", a range of calls) is caught at its first number. The examples in the test below are
# spelt with "_" for the space, so that this file passes its own test.
PROCESS_REF = re.compile(r"(?<![\w-])(?:sessions?|issues?|calls?)\s#?\d+(?![\d.]*\d)|§\s*\d", re.IGNORECASE)

# Lines and bytes per root module: growth past these is a decision (raise the number here), not a drift. evaluator.py
# and README.md are the targets of the reading-order rewrite; the others their size plus ~10%.
BUDGETS = {  # file: (lines, bytes)
    "evaluator.py": (1100, 61_000),
    "README.md": (250, 25_000),
    "rl.py": (560, 38_000),  # the method: the Config, the RL loop and its parts, the stages before it
    "engine.py": (560, 33_000),  # the policy engine: loading, LoRA, sampling, log-probs, the optimizer step, data
    # parallel
    "runs.py": (1040, 64_000),  # the run plumbing: help, config checks and the config decided, the policy choice,
    # the measurement protocol, files, resume, stage-1 data
    "chain.py": (240, 14_000),  # --stage all: the recipe, the stages in turn, the plan and the closing table
    "cudal1.py": (400, 23_000),  # the maths: the database, exemplar draws and their target score, rewards, GRPO
    "prompts.py": (340, 20_000),
    "fences.py": (2250, 118_000),  # the walls, the caller's side and the trust boundary (the wire, survivors, the
    # privileges, the build cache by owner): its size plus ~10%
}
NOT_MET_YET = {"evaluator.py"}  # the walls and the caller's side are in fences.py; the procedure's own length
# (1,419 lines, 80 KB) still stands between evaluator.py and its budget
TREE_BUDGET = 25_000_000  # bytes of tracked files: a clone stays small; run outputs live in git history


def tracked(*patterns):
    """Tracked files matching the git pathspecs, as paths that exist in the work tree (skips without a checkout)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", *patterns], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def test_the_pattern_finds_process_references_and_nothing_else():
    hits = [h.replace("_", " ") for h in ("session_29", "Sessions_11 and 13", "ISSUE_22's", "issue_#7", "Calls_1-22",
                                          "(call_4)", "session_24.", "§_1", "§_" + "8")] + ["§" + "8"]
    misses = [m.replace("_", " ") for m in ("samples_12", "recalls_5", "3 calls a step", "the call's 10 s", "--calls_2",
                                            "first call_9.8 s", "one session_8.99 us", "per call   800 calls", "level_1")]
    assert [h for h in hits if not PROCESS_REF.search(h)] == []
    assert [m for m in misses if PROCESS_REF.search(m)] == []


def test_no_team_process_references_in_tracked_text():
    found = []
    for path in tracked("*.py", "*.md", "*.sh", "*.txt"):
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if PROCESS_REF.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not found, f"{len(found)} lines cite a session, issue, call or section number:\n" + "\n".join(found[:40])


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=False, reason="not met yet"))
                                  if name in NOT_MET_YET else name for name in BUDGETS])
def test_root_module_within_its_budget(name):
    text = (ROOT / name).read_bytes()
    lines, size = text.count(b"\n"), len(text)
    max_lines, max_bytes = BUDGETS[name]
    assert lines <= max_lines and size <= max_bytes, f"{name}: {lines} lines, {size} bytes; budget {BUDGETS[name]}"


def test_tracked_tree_within_its_budget():
    sizes = sorted(((p.stat().st_size, p) for p in tracked()), reverse=True)
    total = sum(s for s, _ in sizes)
    biggest = ", ".join(f"{p.relative_to(ROOT)} {s / 1e6:.1f} MB" for s, p in sizes[:5])
    assert total <= TREE_BUDGET, f"tracked files: {total / 1e6:.1f} MB > {TREE_BUDGET / 1e6:.0f} MB; biggest: {biggest}"


def test_root_modules_comments_keep_invariants_not_lab_notes():
    """No GPU names, dates or commit hashes in the root modules' comments and docstrings: the measurement history is
    bench/RESULTS.md's (a comment keeps the invariant and its reason)."""
    import ast
    import io
    import tokenize
    note = re.compile(r"\bH[12]00\b|\b20\d\d-\d\d-\d\d\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7}\b")
    found = []
    for path in sorted(ROOT.glob("*.py")):
        text = path.read_text()
        texts = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
                 if t.type == tokenize.COMMENT]
        texts += [(n.body[0].lineno, ast.get_docstring(n, clean=False)) for n in ast.walk(ast.parse(text))
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(n)]
        found += [f"{path.name}:{line}: {m.group(0)}" for line, t in texts for m in note.finditer(t)]
    assert not found, found


ROOT_MODULES = ("rl", "runs", "engine", "chain", "cudal1", "prompts", "evaluator", "fences")
MODULE_NAME = re.compile(r"(?<![\w./-])(" + "|".join(ROOT_MODULES) + r")\.([A-Za-z_]\w*)")  # rl.run, not bench/rl.x


def test_every_module_name_the_docs_mention_exists(capsys):
    """Each `module.name` of a root module that the README, a root module's docstrings and comments, or --help name
    resolves (rl.py, a file, is not a name): a name moved or renamed is found here, not by a reader."""
    import ast
    import importlib
    import io
    import sys
    import tokenize
    sys.path.insert(0, str(ROOT))
    import rl
    texts = [("README.md", (ROOT / "README.md").read_text())]
    for path in sorted(ROOT.glob("*.py")):
        text = path.read_text()
        texts += [(f"{path.name}:{t.start[0]}", t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type == tokenize.COMMENT]
        texts += [(f"{path.name}:{n.body[0].lineno}", ast.get_docstring(n, clean=False))
                  for n in ast.walk(ast.parse(text))
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(n)]
    with pytest.raises(SystemExit):
        rl.parse_config(["--help"])
    texts.append(("--help", capsys.readouterr().out))
    named = [(where, m.group(0)) for where, text in texts for m in MODULE_NAME.finditer(text) if m.group(2) != "py"]
    missing = [(where, name) for where, name in named if not hasattr(importlib.import_module(name.split(".")[0]),
                                                                      name.split(".")[1])]
    assert len(named) > 50 and not missing, missing
