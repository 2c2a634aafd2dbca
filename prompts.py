"""prompts.py: build the contrastive (and plain) prompts, render them for a model, parse a reply back into code.

What it does
    build_prompt(ref_src, exemplars)  -> the prompt text: reference, N earlier variants with their measured scores,
                                         rules, device guidance, and the three-part answer protocol.
    render(prompt, tokenizer)         -> the text fed to the model (chat template if the tokenizer has one).
    extract_code(reply)               -> Reply(code, analysis, design): the ModelNew module and the two prose sections.

How to run
    Imported by rl.py; `python prompts.py TASK.py` prints the plain prompt for a task file, and
    `python prompts.py TASK.py cpu VARIANT.py:SCORE ...` a contrastive one showing those variants.

Where it departs from the paper (CUDA-L1, arXiv 2507.14111)
    1. The paper's prompt text is not published verbatim; this one states the same protocol (performance analysis ->
       algorithm design -> code) and the same rules (identical outputs or score 0, no caching, no changing sizes),
       plus two rules the paper learned the hard way (no global torch settings, no unfinished side-stream work).
    2. Exemplars are shown slowest first, so the model reads them as a trajectory towards faster code.
    3. A "cpu" device swaps CUDA guidance for C++/PyTorch guidance so the whole loop can run without a GPU.
    4. The plain prompt (stages 1-2 and the no-contrast ablation) is the same text minus the exemplars and with
       the analysis asked about the reference alone.
    5. Which variants are shown is rl.draw_variants' rule, the same for stage 3 and for sft's contrastive prompts:
       those below a working variant's score (sft: the record's; stage 3: cudal1.target_score, drawn from the task's
       scores, never its best while two remain), none longer than --exemplar-max-chars (6,000, about 1,700 tokens:
       the stage-1 variants' 90th percentile is 5,400 characters). The paper's sampler favours the best; shown its
       best, a small model had nothing it knew to write. Measured on bench/real/stage1.jsonl's database (30 tasks,
       200 prompts each): the task's best working variant is shown in 0.0% of prompts (below the task's best alone:
       9.5%), and every prompt leaves two or more known answers at or above its target (below the best: 26.7%);
       4.9% show one variant (tasks with two entries).
    6. sft's contrastive targets answer the analysis with compare_variants: the shown variants' scores and what
       their code runs, derived from the code (kernels by name, the ops its forward calls), not a stock sentence.
"""
import os
import re
import sys
import textwrap
from dataclasses import dataclass


# ---------------------------------------------------------------------------- build

RULES = """\
1. The outputs must match the reference's outputs (same shapes, dtypes, values within a small tolerance) for every
   input. A wrong output, a crash or a compile error scores 0.
2. No caching of results between calls: every call to `forward` must compute its outputs from its current inputs.
3. Do not change the input sizes, the shapes, the dtypes or any hyperparameter / constructor argument.
4. Do not change global torch settings (TF32 or cuDNN flags, default dtype, number of threads, ...).
5. All work must be finished when `forward` returns: nothing left running on other CUDA streams or threads."""

DEVICE_GUIDANCE = {
    "cuda": "The target is an NVIDIA GPU. Write custom CUDA kernels and compile them from the module with\n"
            "`torch.utils.cpp_extension.load_inline(name=..., cpp_sources=..., cuda_sources=..., functions=[...])`.\n"
            "Typical wins: fusing element-wise ops into one kernel, fewer passes over global memory, coalesced\n"
            "access, shared-memory tiling, and avoiding needless launches, copies and synchronisations.",
    "cpu": "The target is a CPU (no GPU). Either write C++ compiled from the module with\n"
           "`torch.utils.cpp_extension.load_inline(name=..., cpp_sources=..., functions=[...])` (no CUDA), or a\n"
           "faster PyTorch formulation. Typical wins: fewer passes over memory, fused loops, cheaper algorithms,\n"
           "and avoiding temporaries and copies.",
}


# Why: under contrastive prompts the 1.5B (trained on plain ones) wrote forward()s that call the shown variant's `ext`
# without building it (about half of an RL step's samples: bench/RESULTS.md). The sentence alone did not stop it (a
# quarter still did): the model also needs sft on such prompts
ALONE = ("Each variant is a complete program, and yours must be one too: it runs alone, without the variants, so "
         "it defines or imports everything it uses (kernel sources and their load_inline included).")


def describe_score(score):
    """'score 1.37 (1.37x faster than the reference)' and the like."""
    if round(score, 2) == 1.0:
        return f"score {score:.2f} (as fast as the reference)"
    if score > 1.0:
        return f"score {score:.2f} ({score:.2f}x faster than the reference)"
    return f"score {score:.2f} ({score:.2f}x the reference's speed: slower)"


def _code_and_score(ex):
    """(code, score) from an Exemplar-like object or a (code, score) tuple."""
    return (ex.code, float(ex.score)) if hasattr(ex, "code") else (ex[0], float(ex[1]))


def _fence(code):
    return f"```python\n{code.strip()}\n```"


def build_prompt(ref_src, exemplars=(), device="cuda", contrastive=True):
    """The prompt for one task: contrastive (reference + scored variants) when exemplars are given, else plain."""
    if device not in DEVICE_GUIDANCE:
        raise ValueError(f"device must be one of {sorted(DEVICE_GUIDANCE)}, not {device!r}")
    shown = [_code_and_score(e) for e in exemplars] if contrastive else []
    parts = ["You are an expert in high-performance PyTorch and CUDA programming. Rewrite the reference program "
             "below into a faster program that computes the same outputs.",
             "## Reference program\n" + _fence(ref_src)]
    if shown:
        parts.append("## Earlier variants and their measured scores\nscore = speedup over the reference, measured "
                     "on the target device (higher is faster; 1.00 = as fast as the reference). " + ALONE)
        parts += [f"### Variant {i}: {describe_score(s)}\n{_fence(c)}" for i, (c, s) in enumerate(shown, 1)]
        analysis = ("Compare the variants above: which one is faster, by how much, and why (memory traffic, "
                    "kernel launches, parallelism, algorithm).")
    else:
        analysis = "Analyse the reference: where does it spend its time, and what limits its speed?"
    parts += ["## Rules\n" + RULES, "## Target device\n" + DEVICE_GUIDANCE[device]]
    parts.append("## Answer format\nAnswer in exactly these three sections, in this order:\n"
                 f"### Performance analysis\n{analysis}\n"
                 "### Algorithm design\nYour plan for a version faster than everything above.\n"
                 "### Code\nOne complete Python module in a single ```python fence that defines "
                 "`class ModelNew(nn.Module)` with the same `__init__` and `forward` signatures as `Model` "
                 "(imports included; do not redefine `get_inputs` or `get_init_inputs`).")
    return "\n\n".join(parts) + "\n"

# ---------------------------------------------------------------------------- compare (sft targets' analyses)

KERNEL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s+)?(?:void\s+)?(\w+)\s*\(")
TORCH_OP = re.compile(r"\b(?:torch|F|functional)\.(\w+)\s*\(|\.(\w+)\(")
FORWARD = re.compile(r"^([ \t]*)def forward\(.*?(?=^\1(?:def|class) |^\S|\Z)", re.M | re.S)
BOUND = re.compile(r"functions\s*=\s*\[([^\]]*)\]")
NOT_OPS = {"forward", "__init__", "contiguous", "size", "dim", "shape", "view", "item", "numel", "stride", "float",
           "to", "cuda", "cpu", "data_ptr", "empty", "empty_like", "append", "format", "get", "load", "no_grad"}


def _ops(code):
    """The ops a program runs per call: its custom kernels (by name) and the tensor ops its forward calls."""
    forward = FORWARD.search(code)
    calls = TORCH_OP.findall(forward.group(0)) if forward else []
    bound = set(re.findall(r"[\w]+", " ".join(BOUND.findall(code))))  # the extension's functions: its kernels' hosts
    ops = [a or b for a, b in calls if (a or b) not in NOT_OPS | bound and not (a or b).startswith("_")]
    return list(dict.fromkeys(KERNEL.findall(code))), list(dict.fromkeys(ops))


def describe_code(code):
    """What a program runs, in a phrase: 'runs 1 custom CUDA kernel (fused_relu)' or 'runs PyTorch ops (matmul, relu)'."""
    kernels, ops = _ops(code)
    if kernels:
        return f"runs {len(kernels)} custom CUDA kernel{'s' * (len(kernels) > 1)} ({', '.join(kernels)})"
    if "load_inline" in code:
        return "runs its own C++ extension" + (f" beside {', '.join(ops)}" if ops else "")
    return f"runs PyTorch ops ({', '.join(ops)})" if ops else "runs PyTorch code"


def what_changes(slow, fast):
    """What the faster of two programs does differently, in a phrase ('' when their code shows no difference)."""
    (k_slow, o_slow), (k_fast, o_fast) = _ops(slow), _ops(fast)
    said = []
    if set(k_fast) - set(k_slow):
        said.append(f"it runs its own kernel{'s' * (len(set(k_fast) - set(k_slow)) > 1)} "
                    f"({', '.join(k for k in k_fast if k not in k_slow)})")
    if set(o_slow) - set(o_fast):
        said.append(f"it no longer calls {', '.join(o for o in o_slow if o not in o_fast)}")
    if len(k_fast) + len(o_fast) < len(k_slow) + len(o_slow):
        said.append(f"it launches fewer ops per call ({len(k_fast) + len(o_fast)} instead of {len(k_slow) + len(o_slow)}"
                    "), so fewer passes over memory")
    return "; ".join(said)


def compare_variants(shown, target_code=None):
    """The performance analysis of an sft target under a contrastive prompt: the shown variants (slowest first) compared
    by their measured scores and by what their code runs, and what the target does beyond the fastest of them.

    Example: [(torch.relu(x) + 0, 0.8), (a kernel relu_k, 1.5)] ->
        'Variant 1 (0.80x) runs PyTorch ops (relu). Variant 2 (1.50x) runs 1 custom CUDA kernel (relu_k). Variant 2 is
         1.88x as fast as variant 1: it runs its own kernel (relu_k); it no longer calls relu. ...'
    """
    shown = [_code_and_score(e) for e in shown]
    said = [f"Variant {i} ({s:.2f}x) {describe_code(c)}." for i, (c, s) in enumerate(shown, 1)]
    if len(shown) > 1:
        (slow, s0), (fast, s1) = shown[0], shown[-1]
        if s1 <= s0 * 1.02:  # within timing noise
            said.append(f"Variants 1 and {len(shown)} are about as fast as each other.")
        else:
            why = what_changes(slow, fast)
            said.append(f"Variant {len(shown)} is {s1 / s0:.2f}x as fast as variant 1{': ' + why if why else ''}.")
    if target_code is not None and shown:
        why = what_changes(shown[-1][0], target_code)
        said.append(f"To be faster than all of them: {why or 'the same ops, each doing less work'}.")
    return " ".join(said)


# ---------------------------------------------------------------------------- render

ANSWER_CUE = "\n\n### Performance analysis\n"


def render(prompt, tokenizer):
    """The text the model continues: its chat template around the prompt, or the prompt plus a start-of-answer cue."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                             add_generation_prompt=True, tokenize=False)
    return prompt.rstrip() + ANSWER_CUE


# ---------------------------------------------------------------------------- extract

@dataclass
class Reply:
    code: str | None  # the ModelNew module, or None when the reply has none
    analysis: str     # text under "Performance analysis" ("" if absent)
    design: str       # text under "Algorithm design" ("" if absent)


FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([\w+.-]*)[ \t]*$")
MODELNEW = re.compile(r"^[ \t]*class[ \t]+ModelNew\b", re.M)
IMPORT = r"import [\w.]+( as \w+)?(, *[\w.]+( as \w+)?)*[ \t]*$"  # a whole import line, not "import the kernel"
CODE_START = re.compile(rf"^[ \t]*({IMPORT}|from [\w.]+ import |class ModelNew\b)")
# '### Performance analysis', '**1. Algorithm design:** text', '2) Code', 'Performance Analysis:' ...
HEADING = re.compile(r"^[ \t]*#{0,6}[ \t]*[*_]{0,2}[ \t]*(?:\(?\d+[.):][ \t]*)?[*_]{0,2}[ \t]*"
                     r"(performance analysis|algorithm design|code)[ \t]*[*_]{0,2}[ \t]*"
                     r"(?::[ \t]*[*_]{0,2}[ \t]*(.*)|[*_]{0,2})$", re.I)


def _blocks(lines):
    """Fenced blocks as (first_line, end_line, code); an unclosed fence runs to the end (a truncated reply)."""
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[j]):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:j]]
        out.append((i, j, textwrap.dedent("\n".join(body))))
        i = j + 1
    return out


def _unfenced(lines):
    """From the first import / `class ModelNew` line on, cut before trailing prose (longest prefix that parses)."""
    start = next((k for k, ln in enumerate(lines) if CODE_START.match(ln)), None)
    if start is None:
        return None
    body = textwrap.dedent("\n".join(lines[start:])).strip("\n").split("\n")
    cls = next((k for k, ln in enumerate(body) if MODELNEW.match(ln)), len(body) - 1)
    for end in range(len(body), cls, -1):
        try:
            compile("\n".join(body[:end]), "<reply>", "exec")
            return "\n".join(body[:end]).rstrip()
        except SyntaxError:
            continue
    return "\n".join(body).rstrip()  # nothing parses (a truncated reply): keep it all, the evaluator reports it


def _sections(lines, fenced):
    """Texts under the 'Performance analysis' and 'Algorithm design' headings, up to the next heading or fence."""
    found, current, first_heading = {}, None, None
    for k, ln in enumerate(lines):
        m = None if k in fenced else HEADING.match(ln)
        if m or k in fenced:
            current = m.group(1).lower() if m else None
            first_heading = k if first_heading is None else first_heading
            if current and current not in found:
                found[current] = [m.group(2) or ""]
            elif current:
                current = None  # a repeated heading: keep the first section
            continue
        if current:
            found[current].append(ln)
    text = {key: "\n".join(v).strip() for key, v in found.items()}
    # replies to a plain (un-templated) prompt start after the "### Performance analysis" cue, without the heading
    if "performance analysis" not in text and first_heading:
        text["performance analysis"] = "\n".join(lines[:first_heading]).strip()
    return text.get("performance analysis", ""), text.get("algorithm design", "")


def extract_code(reply):
    """Parse a model reply: the LAST fenced block defining `class ModelNew` (else unfenced code), and the sections.

    Example: extract_code("### Performance analysis\\nB is faster.\\n```python\\nclass ModelNew: ...\\n```")
             -> Reply(code="class ModelNew: ...", analysis="B is faster.", design="")
    """
    lines = reply.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks = _blocks(lines)
    inside = {k for i, j, _ in blocks for k in range(i, j + 1)}  # fence lines and their contents
    analysis, design = _sections(lines, inside)
    with_model = [code for _, _, code in blocks if MODELNEW.search(code)]
    if with_model:
        return Reply(with_model[-1].strip("\n").rstrip(), analysis, design)
    outside = [ln for k, ln in enumerate(lines) if k not in inside]
    code = _unfenced(outside)
    return Reply(code if code and MODELNEW.search(code) else None, analysis, design)


# ---------------------------------------------------------------------------- stage-1 codes as replies


# a code's module docstring, less a stage-1 intent label ("slower:", "faster (hoped):", "wrong:", "broken:")
DOCSTRING = re.compile(r'\A\s*"""\s*(?:(?:faster|slower|wrong|broken)\b[^:\n]{0,40}:\s*)?(.*?)\s*"""[ \t]*\n?', re.S)


def unlabelled(code):
    """The code with its module docstring's intent label (if any) taken out."""
    m = DOCSTRING.match(code)
    if not m:
        return code
    return (f'"""{m.group(1)}"""\n' if m.group(1) else "") + code[m.end():]


STOCK_ANALYSIS = "The reference runs one PyTorch op after another."


def as_reply(code, prompt, analysis=STOCK_ANALYSIS):
    """A bare working code as the three-section reply the prompt asks for: the analysis given (a plain prompt's: a
    stock sentence), the code's module docstring (less its intent label) as the design, the rest as the code. Why:
    trained on the stage-1 files as they are, the 0.5B began most replies with an intent label (bench/RESULTS.md)."""
    m = DOCSTRING.match(code)
    design, code = (m.group(1), code[m.end():]) if m else ("The same outputs, computed with less work.", code)
    reply = (f"### Performance analysis\n{analysis}\n### Algorithm design\n"
             f"{design}\n### Code\n```python\n{code.strip()}\n```\n")
    return reply.removeprefix(ANSWER_CUE.lstrip()) if prompt.endswith(ANSWER_CUE) else reply


if __name__ == "__main__":
    usage = ("usage: python prompts.py TASK.py [cuda|cpu] [VARIANT.py:SCORE ...]  (the prompt the policy sees for that "
             "task: plain, or contrastive with the variants and their scores)")
    args = sys.argv[1:]
    device = args.pop(1) if args[1:2] in (["cuda"], ["cpu"]) else "cuda"
    if not args or args[0] in ("-h", "--help") or not all(re.fullmatch(r".+\.py:[0-9.]+", a) for a in args[1:]):
        sys.exit(usage)
    missing = [f for f in [args[0]] + [a.rsplit(":", 1)[0] for a in args[1:]] if not os.path.isfile(f)]
    if missing:
        sys.exit(f"prompts.py: {missing[0]}: no such file")
    shown = [(open(f).read(), float(score)) for f, score in (a.rsplit(":", 1) for a in args[1:])]
    print(build_prompt(open(args[0]).read(), sorted(shown, key=lambda v: v[1]), device=device))
