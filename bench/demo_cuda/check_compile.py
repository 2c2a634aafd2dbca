"""bench/demo_cuda/check_compile.py: compile each candidate's CUDA source with nvcc alone (no GPU, no torch build).

    python bench/demo_cuda/check_compile.py                  # every candidate with a CUDA string
    python bench/demo_cuda/check_compile.py relu_large elu    # only these task folders
    python bench/demo_cuda/check_compile.py --folder bench/real/candidates conv2d   # another candidates folder

Takes the module-level `CUDA = r"..."` string, prepends what load_inline prepends (torch/types.h, cuda.h,
cuda_runtime.h) and runs `nvcc -c -arch=sm_90 -std=c++17 -O3` against torch's headers. A CPU-only torch lacks the
generated c10/cuda/impl/cuda_cmake_macros.h, so an empty one is put on the include path; that is why the kernels
use c10/cuda/CUDAStream.h (which needs nothing else) rather than ATen/cuda/CUDAContext.h (which needs cuBLAS,
cuSPARSE and cuSOLVER headers). The C++ side of load_inline (the pybind11 bindings) is not compiled here.
Torch's headers take about a minute to parse on 2 cores, so the sources not named broken_* are compiled together in
one file, each in its own namespace, and nvcc's error lines are traced back to the candidate they fall in; each
broken_* source is compiled alone, since a syntax error could spill into its neighbour.
"""
import ast
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch.utils.cpp_extension as cpp_extension

HERE = Path(__file__).resolve().parent
PRELUDE = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"


def cuda_source(path):
    """The string assigned to CUDA at module level, or None (PyTorch-only or unparsable candidates)."""
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CUDA" for t in node.targets)
                and isinstance(node.value, ast.Constant)):
            return node.value.value
    return None


def run_nvcc(code, stub, work):
    """(return code, nvcc's error lines as (line number, text)) for one translation unit."""
    cu = work / "k.cu"
    cu.write_text(code)
    includes = [f"-I{stub}"] + [f"-I{p}" for p in cpp_extension.include_paths()]
    cmd = ["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-O3", "-w", *includes, str(cu), "-o", str(work / "k.o")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    errors = []
    for line in (p.stdout + p.stderr).splitlines():
        m = re.match(r".*k\.cu\((\d+)\): error: (.*)", line) or re.match(r".*k\.cu:(\d+):\d+: error: (.*)", line)
        if m:
            errors.append((int(m.group(1)), m.group(2)))
        elif "error" in line:
            errors.append((0, line.strip()))
    return p.returncode, errors


def compile_alone(src, stub, work):
    """(ok, first errors) for one source, with load_inline's prelude."""
    rc, errors = run_nvcc(PRELUDE + src, stub, work)
    return rc == 0, "; ".join(e for _, e in errors[:2])


def compile_together(named, stub, work):
    """{name: (ok, first errors)} for [(name, src)] compiled as one file, each source in namespace cand_<i> (not c<i>:
    the eleventh would join torch's own c10)."""
    lines, spans = PRELUDE.splitlines(), {}
    for i, (name, src) in enumerate(named):
        body = src.splitlines()
        lines += [ln for ln in body if ln.startswith("#include")]  # includes at file scope, not in the namespace
        first = len(lines) + 2  # 1-based number of the first line inside the namespace
        lines += [f"namespace cand_{i} {{"] + [ln for ln in body if not ln.startswith("#include")] + ["}"]
        lines += [f"#undef {ln.split()[1]}" for ln in body if ln.startswith("#define")]
        spans[name] = (first, len(lines))
    rc, errors = run_nvcc("\n".join(lines) + "\n", stub, work)
    out = {}
    for name, (lo, hi) in spans.items():
        mine = [e for n, e in errors if lo <= n <= hi]
        out[name] = (rc == 0 or (not mine and all(n for n, _ in errors)), "; ".join(mine[:2]))
    return out



def main():
    args, folder = sys.argv[1:], HERE / "candidates"
    if "--folder" in args:
        i = args.index("--folder")
        folder, args = Path(args[i + 1]), args[:i] + args[i + 2:]
    only = set(args)
    found = []
    for path in sorted(folder.glob("*/*.py")):
        if only and path.parent.name not in only:
            continue
        src = cuda_source(path)
        name = f"{path.parent.name}/{path.stem}"
        if src is None:
            print(f"{name}: no CUDA source")
        else:
            found.append((name, path.stem.startswith("broken_"), src))
    with tempfile.TemporaryDirectory() as tmp:
        work, stub = Path(tmp), Path(tmp) / "stub"
        (stub / "c10" / "cuda" / "impl").mkdir(parents=True)
        (stub / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").write_text("#pragma once\n")
        verdicts = compile_together([(n, s) for n, b, s in found if not b], stub, work)
        for name, ok_errors in verdicts.items():
            print(f"{name}: {'compiles' if ok_errors[0] else 'FAILS: ' + ok_errors[1]}", flush=True)
        for name, _, src in [f for f in found if f[1]]:
            ok, errors = compile_alone(src, stub, work)
            print(f"{name}: {'compiles' if ok else 'FAILS: ' + errors}", flush=True)


if __name__ == "__main__":
    main()
