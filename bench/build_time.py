"""bench/build_time.py: seconds per compile step of load_inline candidates built by evaluator._compile, with the
shared precompiled torch/extension.h (evaluator._use_pch) and without it.

    MAX_JOBS=1 python bench/build_time.py bench/real/candidates/bias_gelu/faster_column_owner.py     # on a GPU machine
    MAX_JOBS=1 python bench/build_time.py --cpu-stub FILE.py ...                                      # here, no GPU

Each file is built twice with the .gch (the first build also makes it, in a fresh build folder of its own) and twice
without, names made unique; printed: each build's wall seconds and ninja's seconds per object. MAX_JOBS=1 makes ninja
compile one object at a time, so the sum is the build's core-seconds. --cpu-stub: on a CPU-only torch, which lacks
c10/cuda's generated header and libc10_cuda, an empty header is put on the include path and the failing link is
skipped (the objects are compiled all the same); CUDA_HOME defaults to /usr/local/cuda there.
"""
import argparse
import ast
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_inline_args(path):
    """The keyword arguments of the file's module-level load_inline call, its string constants resolved."""
    tree = ast.parse(Path(path).read_text())
    consts = {n.targets[0].id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)}
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "load_inline")
    value = lambda v: consts[v.id] if isinstance(v, ast.Name) else ast.literal_eval(v)  # noqa: E731
    return {k.arg: value(k.value) for k in call.keywords if k.arg != "verbose"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--cpu-stub", action="store_true", help="a CPU-only torch: stub header, link failure skipped")
    a = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cudal1_build_time_"))
    os.environ["CUDAL1_BUILD_DIR"] = str(root)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    sys.path.insert(0, str(ROOT))
    import torch.utils.cpp_extension as ce
    import evaluator as E
    stub = root / "stub"
    if a.cpu_stub:
        ce.CUDA_HOME = ce.CUDA_HOME or os.environ.get("CUDA_HOME", "/usr/local/cuda")
        (stub / "c10/cuda/impl").mkdir(parents=True)
        (stub / "c10/cuda/impl/cuda_cmake_macros.h").write_text("#pragma once\n")
    use_pch = E._use_pch
    for path in a.files:
        args = load_inline_args(path)
        if a.cpu_stub:
            args["extra_include_paths"] = [*args.get("extra_include_paths", []), str(stub)]
        for i, pch in enumerate([True, True, False, False]):
            E._use_pch = use_pch if pch else (lambda folder: None)
            name = f"{args['name']}_{i}"
            t = time.perf_counter()
            try:
                E._compile({"kind": "load_inline", "args": {**args, "name": name}}, root / name)
            except RuntimeError:
                if not a.cpu_stub:
                    raise
            log = [line.split("\t") for line in (root / name / ".ninja_log").read_text().splitlines()[1:]]
            steps = ", ".join(f"{out} {(int(end) - int(start)) / 1000:.1f} s" for start, end, _, out, _ in log)
            print(f"{Path(path).parent.name}/{Path(path).stem} pch={'on ' if pch else 'off'} "
                  f"wall {time.perf_counter() - t:5.1f} s: {steps}", flush=True)


if __name__ == "__main__":
    main()
