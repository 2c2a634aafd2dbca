"""What a new user copies from the README works as written: its install lines give the test command what it needs
(and CI runs those same lines, then that command), and its evaluator example has a candidate to evaluate. What it
states about the repository holds: the corpus's file counts, its own length (a fork that changes a module's size
need not edit the README: it names the modules' jobs, not their line counts)."""
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def section(title):
    """The README's text under '## title', up to the next '## ' heading."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def bare(command):
    """A pip or pytest command without the interpreter prefix, quiet flags and a trailing comment."""
    return re.sub(r"\s+#.*$", "", command).replace("python -m ", "").replace(" -q", "").strip()


CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"  # PyTorch's CPU wheels (pytorch.org's CPU line)


def test_install_lines_keep_a_cpu_machine_cpu_only_and_ci_runs_them():
    installs = [bare(line) for line in section("Install").splitlines() if line.startswith("pip install")]
    [cpu_torch] = [line for line in installs if CPU_INDEX in line]  # torch from the CPU index, before requirements
    assert cpu_torch.split()[:3] == ["pip", "install", "torch"] and installs.index(cpu_torch) == 0, installs
    [rest] = [line for line in installs if "-r requirements.txt" in line]
    assert {"pytest", "matplotlib"} <= set(rest.split()), rest  # the tests and progress.png need nothing else
    [test_command] = [line for line in section("The two commands").splitlines() if line.startswith("python -m pytest")]
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line.startswith("python -m ")]
    assert bare(ci[-1]) == bare(test_command)  # exactly the README's test command, last
    ci_installs = [bare(line) for line in ci if "pip install" in line and "--upgrade pip" not in line]
    # CI cannot reach the CPU index: its one departure is where that CPU torch comes from (a pinned copy on disk)
    assert ci_installs[0].startswith("pip install torch==") and ci_installs[1:] == installs[1:], (installs, ci_installs)


def test_the_readme_evaluator_example_runs_on_its_candidate():
    [command] = [line for line in README.splitlines() if line.startswith("python evaluator.py tasks/cpu/relu.py ")]
    args = command.split()[1:]
    assert (REPO / args[2]).is_file(), args
    out = subprocess.run([sys.executable, *args, "--time-budget-s", "0"], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.returncode == 0 and result["status"] == "ok" and not result["same_as_reference"], out.stdout[-2000:]


def test_the_readme_states_the_corpus_counts_as_they_are():
    stated = re.findall(r"tests/corpus/(hacks|honest|failures)/\W*?(\d[\d,]*)\b", README)
    for folder, n in stated:
        files = len(list((REPO / "tests" / "corpus" / folder).glob("*.py")))
        assert int(n.replace(",", "")) == files, f"the README says {n} files in tests/corpus/{folder}/; it has {files}"


def test_the_readme_is_at_most_250_lines():
    assert README.count("\n") <= 250, f"README.md: {README.count(chr(10))} lines (at most 250: the lab notebook is bench/RESULTS.md)"


def test_the_demo_block_is_a_runs_output_and_a_new_run_says_the_same():
    """The README's CPU demo block is bench/demo/readme_demo.py's rendering of the run it kept (readme_demo.txt),
    and a new run of its command says what that run's first step said: the fallback and stage lines, the pass
    rate, the groups with a signal and the flat ones (speedups, rewards and seconds are measured: left out)."""
    sys.path.insert(0, str(REPO / "bench" / "demo"))
    import readme_demo
    block = README.split(readme_demo.BEGIN + "\n", 1)[1].split(readme_demo.END, 1)[0].rstrip("\n")
    assert block == readme_demo.render(readme_demo.OUTPUT.read_text())
    fixed, steps = readme_demo.stable(block)
    assert len(steps) == 2 and any("demo policy" in line for line in fixed) and "out runs/demo-rl" in block
    assert readme_demo.stable(readme_demo.run(steps=1)) == (fixed, steps[:1])
