"""Prompt building, rendering, and reply parsing on messy replies (CPU, offline, fast)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prompts import Reply, build_prompt, extract_code, render  # noqa: E402

CODE = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)")
OLD = "import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    pass"
REF = ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
       "        return torch.relu(x)\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
       "def get_init_inputs():\n    return []\n")
TRUNCATED = ("import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
             "    def forward(self, x):\n        return tor")
STRING_FENCE = 'DOC = """\n```\n"""\n' + CODE
HEAD = "### Performance analysis\nV2 is faster.\n\n### Algorithm design\nFuse.\n\n### Code\n"


# ---------------------------------------------------------------------------- extract_code: (reply, expected code)

REPLIES = {
    "clean": (HEAD + f"```python\n{CODE}\n```\n", CODE),
    "no fence": (f"Here is the faster version.\n\n{CODE}\n", CODE),
    "no fence, prose after": (f"Sure.\n{CODE}\n\nThis fuses the two passes into one.\nIt should be 2x faster.", CODE),
    "no fence, prose says import": (f"We import the kernel lazily.\n{CODE}", CODE),
    "two fences, ModelNew in both": (f"```python\n{OLD}\n```\nBetter:\n```python\n{CODE}\n```", CODE),
    "ModelNew in first block only": (f"```python\n{CODE}\n```\nUsage:\n```python\nm = ModelNew()\nm(x)\n```", CODE),
    "cuda block then python block": (f"```cpp\n__global__ void k(float* x) {{}}\n```\n```python\n{CODE}\n```", CODE),
    "truncated, no closing fence": (HEAD + f"```python\n{TRUNCATED}", TRUNCATED),
    "tilde fence": (f"~~~python\n{CODE}\n~~~", CODE),
    "py fence": (f"```py\n{CODE}\n```", CODE),
    "bare fence": (f"```\n{CODE}\n```", CODE),
    "crlf": ((HEAD + f"```python\n{CODE}\n```\n").replace("\n", "\r\n"), CODE),
    "prose around": (f"Let me think.\n\n```python\n{CODE}\n```\n\nThat's it! Hope it helps.", CODE),
    "indented in a list": ("1. Code:\n   ```python\n" + "\n".join("   " + ln if ln else "" for ln in CODE.split("\n"))
                           + "\n   ```\n2. Done.", CODE),
    "four-backtick fence holding ```": (f"````python\n{STRING_FENCE}\n````", STRING_FENCE),
    "no ModelNew at all": (f"```python\n{REF}```", None),
    "ModelNew only mentioned in prose": ("I would write a `class ModelNew` that fuses the ops.", None),
    "empty": ("", None),
}


@pytest.mark.parametrize("name", list(REPLIES))
def test_extract_code_table(name):
    reply, expected = REPLIES[name]
    assert extract_code(reply).code == expected


def test_extract_sections_heading_styles():
    styles = [
        "### Performance analysis\nV2 is faster.\n\n### Algorithm design\nFuse.\n\n### Code\n",
        "**Performance analysis**\nV2 is faster.\n**Algorithm design**\nFuse.\n**Code**\n",
        "**Performance Analysis:** V2 is faster.\n\n**Algorithm Design:** Fuse.\n\n**Code:**\n",
        "1. Performance analysis\nV2 is faster.\n2. Algorithm design\nFuse.\n3. Code\n",
        "## 1) Performance analysis:\nV2 is faster.\n## 2) Algorithm design:\nFuse.\n",
    ]
    for head in styles:
        r = extract_code(head + f"```python\n{CODE}\n```\nDone.")
        assert (r.analysis, r.design, r.code) == ("V2 is faster.", "Fuse.", CODE), head


def test_extract_sections_absent_and_cue_continuation():
    assert extract_code(f"```python\n{CODE}\n```") == Reply(CODE, "", "")
    # a reply to render()'s plain cue starts inside the analysis, without its heading
    r = extract_code("V2 launches one kernel.\n\n### Algorithm design\nFuse.\n```python\n" + CODE + "\n```")
    assert (r.analysis, r.design) == ("V2 launches one kernel.", "Fuse.")
    # a heading-like comment inside the code does not start a section
    r = extract_code("```python\n# Performance analysis: none\n" + CODE + "\n```")
    assert r.analysis == ""


# ---------------------------------------------------------------------------- build_prompt

class Ex:
    def __init__(self, code, score):
        self.code, self.score = code, score


def test_contrastive_prompt_has_reference_exemplars_scores_sections_rules():
    p = build_prompt(REF, [Ex("# variant slow", 0.8), ("# variant fast", 1.37)], device="cuda")
    assert REF.strip() in p
    assert "# variant slow" in p and "# variant fast" in p
    assert "score 1.37 (1.37x faster than the reference)" in p and "score 0.80" in p
    assert p.index("# variant slow") < p.index("# variant fast")  # shown in the given order
    for heading in ("Performance analysis", "Algorithm design", "### Code", "class ModelNew(nn.Module)"):
        assert heading in p
    for rule in ("scores 0", "No caching", "input sizes", "global torch settings", "other CUDA streams"):
        assert rule in p
    assert "Compare the variants" in p
    assert "yours must be one too: it runs alone, without the variants" in p


def test_plain_prompt_has_no_exemplars():
    exemplars = [("# variant slow", 0.8), ("# variant fast", 1.37)]
    for p in (build_prompt(REF, exemplars, contrastive=False), build_prompt(REF)):
        assert REF.strip() in p and "# variant" not in p and "score 1.37" not in p and "Variant 1" not in p
        assert "without the variants" not in p  # the plain prompt (the measurement protocol's) is unchanged
        assert "Performance analysis" in p and "Algorithm design" in p and "No caching" in p


def test_device_guidance_differs():
    cuda, cpu = build_prompt(REF, device="cuda"), build_prompt(REF, device="cpu")
    assert "cuda_sources" in cuda and "NVIDIA GPU" in cuda
    assert "cpp_sources" in cpu and "cuda_sources" not in cpu and "CPU" in cpu
    with pytest.raises(ValueError, match="cuda"):
        build_prompt(REF, device="tpu")


# ---------------------------------------------------------------------------- render

class ChatTok:
    chat_template = "{{ messages }}"

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True):
        assert add_generation_prompt and not tokenize
        return "<user>" + messages[0]["content"] + "</user><assistant>" + messages[0]["role"]


class PlainTok:
    chat_template = None


def test_render_uses_chat_template_when_present():
    assert render("hello", ChatTok()) == "<user>hello</user><assistant>user"
    out = render("hello", PlainTok())
    assert out.startswith("hello") and out.endswith("### Performance analysis\n")
    assert render("hello", object()) == out  # no chat_template attribute at all


@pytest.mark.parametrize("args, says", [(["--help"], "usage: python prompts.py"), (["no/such.py"], "no such file"),
                                        (["tasks/cpu/relu.py", "gpu"], "usage: python prompts.py")])
def test_the_command_line_errors_are_one_line(args, says):
    import subprocess
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "prompts.py"), *args], capture_output=True, text=True, cwd=root,
                         timeout=60)
    assert out.returncode == 1 and out.stderr.strip().count("\n") == 0 and says in out.stderr, out.stderr


def test_the_command_line_prints_a_contrastive_prompt_with_the_variants_given():
    import subprocess
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "prompts.py"), "tasks/cpu/relu.py", "cpu",
                          "examples/relu_candidate.py:1.31", "tasks/cpu/relu.py:1.0"], capture_output=True, text=True,
                         cwd=root, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.index("### Variant 1: score 1.00"), out.stdout.index("### Variant 2: score 1.31")
    assert first < second and "ModelNew" in out.stdout[second:] and "C++" in out.stdout  # slowest first; cpu guidance
