"""Task suite checks: every file under tasks/ loads, runs on the meta device at full size within the size budget,
and is non-degenerate at a small size; the CPU tasks run for real; the loader selects and rejects the right files.

Small sizes: `shrink_source` divides every module-level integer constant >= 32 by 8 (so 4096 -> 512, 128 -> 16,
3 and 16 stay) and the test runs the shrunk copy on CPU. A task whose sizes only work together at full scale must
keep its derived sizes as expressions (e.g. `image_size // 8`), never as a second literal.
"""
import ast
import re
import sys
import time
import types
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import evaluator  # noqa: E402
from evaluator import TaskError, find_tasks, load_task, task_name  # noqa: E402

TASKS = find_tasks("all")
CPU_TASKS = [p for p in TASKS if task_name(p).startswith("cpu/")]
LEVEL_TASKS = [p for p in TASKS if not task_name(p).startswith("cpu/")]
ids = [task_name(p) for p in TASKS]

SHRINK = 8                           # small copies divide size constants >= 32 by this
H200_BYTES_PER_S = 4.3e12            # H200 HBM bandwidth
H200_FLOPS = 50e12                   # H200 fp32 without TF32
H200_L2 = 60e6
MAX_TASK_BYTES = 2 * 2**30           # inputs + outputs + params of one task


# ---------------------------------------------------------------------------- helpers

def load_module(src, name):
    """Execute task source into a fresh module (never shared with another task or another test)."""
    mod = types.ModuleType(f"task_{re.sub(r'[^0-9a-zA-Z_]', '_', name)}")
    exec(compile(src, name, "exec"), mod.__dict__)
    return mod


def shrink_source(src, factor=SHRINK):
    """The same task with every module-level `NAME = <int >= 32>` divided by `factor`."""
    tree = ast.parse(src)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int and node.value.value >= 32):
            node.value = ast.Constant(node.value.value // factor)
    return ast.unparse(tree)


def build(mod, seed=0, device=None):
    """(model, inputs) built the way a harness would: fixed seed for weights, then inputs."""
    with torch.device(device) if device else torch.device("cpu"):
        torch.manual_seed(seed)
        model = mod.Model(*mod.get_init_inputs())
        inputs = mod.get_inputs()
    return model, inputs


def make_inputs(mod, seed):
    torch.manual_seed(seed)
    return mod.get_inputs()


def run(model, inputs):
    with torch.no_grad():
        return model(*inputs)


def tensors(out):
    """The output as a list of tensors; fails on anything else."""
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    assert outs and all(isinstance(t, torch.Tensor) for t in outs), f"output must be a tensor or tuple, got {type(out)}"
    return outs


def nbytes(ts):
    return sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))


def same(a, b):
    return all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(tensors(a), tensors(b)))


def docstring(path):
    return ast.get_docstring(ast.parse(Path(path).read_text())) or ""


@pytest.fixture(scope="module")
def small():
    """Shrunk module per task, loaded once."""
    cache = {}

    def get(path):
        if path not in cache:
            cache[path] = load_module(shrink_source(load_task(path)), task_name(path) + "_small")
        return cache[path]
    return get


# ---------------------------------------------------------------------------- suite shape

def test_suite_has_the_required_tasks():
    names = {task_name(p) for p in TASKS}
    cpu = {n for n in names if n.startswith("cpu/")}
    assert cpu == {f"cpu/{s}" for s in ("relu", "add_mul", "linear_relu", "softmax", "sum_rows", "layernorm",
                                         "rmsnorm", "loop_rownorm")}
    assert sum(n.startswith("level1/") for n in names) >= 20
    assert sum(n.startswith("level2/") for n in names) >= 15
    assert sum(n.startswith("level3/") for n in names) >= 5


def test_stems_are_unique():
    stems = [p.stem for p in TASKS]
    dupes = sorted({s for s in stems if stems.count(s) > 1})
    assert not dupes, f"task stems must be unique across tasks/ (selection by stem): {dupes}"


# the CPU tasks' interface is a contract: candidates are written against these exact shapes and constructor args
CPU_CONTRACT = {
    "relu": ([(512, 1024)], []),
    "add_mul": ([(512, 1024)] * 3, []),
    "linear_relu": ([(256, 512)], [512, 512]),
    "softmax": ([(256, 1024)], []),
    "sum_rows": ([(512, 2048)], []),
    "layernorm": ([(256, 1024)], [1024]),
    "rmsnorm": ([(256, 1024)], [1024]),
    "loop_rownorm": ([(256, 512)], []),
}


@pytest.mark.parametrize("path", CPU_TASKS, ids=[task_name(p) for p in CPU_TASKS])
def test_cpu_task_contract(path):
    mod = load_module(load_task(path), task_name(path))
    shapes, init = CPU_CONTRACT[path.stem]
    with torch.device("meta"):
        inputs = mod.get_inputs()
    assert [tuple(x.shape) for x in inputs] == shapes
    assert all(x.dtype == torch.float32 for x in inputs)
    assert mod.get_init_inputs() == init


# ---------------------------------------------------------------------------- every task, full size, on meta

@pytest.mark.parametrize("path", TASKS, ids=ids)
def test_task_loads_and_runs_on_meta(path):
    src = load_task(path)  # parses; defines Model, get_inputs, get_init_inputs
    doc = docstring(path)
    assert doc, "a task starts with a docstring naming the op and the shapes"
    mod = load_module(src, task_name(path))
    for name in evaluator.TASK_NAMES:
        assert callable(getattr(mod, name)), name
    model, inputs = build(mod, device="meta")  # no full-size data is allocated
    assert inputs and all(isinstance(x, torch.Tensor) and x.is_meta for x in inputs)
    flops = FlopCounterMode(display=False)
    try:
        with flops:
            outs = tensors(run(model, inputs))
    except NotImplementedError as e:  # none of the current tasks hits this; a new op without a meta kernel would
        pytest.skip(f"an op of {task_name(path)} has no meta kernel, shape not checked: {e}")
    for out in outs:
        assert out.is_meta
        if out.dim() == 0:
            assert "scalar" in doc.lower(), "a scalar output must be announced in the docstring ('-> scalar')"
        else:
            assert out.numel() > 0
    params = list(model.parameters()) + list(model.buffers())
    total = nbytes(inputs) + nbytes(outs) + nbytes(params)
    assert total < MAX_TASK_BYTES, f"inputs + outputs + params = {total / 2**30:.2f} GiB"
    if path in LEVEL_TASKS:
        # sized for an H200: even at roofline speed the task takes >= 50 us; memory-bound ones overflow L2 several times
        assert re.search(r"\d\s*(MiB|GiB|MB|GB|KiB|GFLOP)", doc), "docstring must carry a bytes/FLOPs estimate"
        ideal_s = max(total / H200_BYTES_PER_S, flops.get_total_flops() / H200_FLOPS)
        assert ideal_s >= 50e-6, f"roofline time {ideal_s * 1e6:.1f} us on an H200 is too small"
        if flops.get_total_flops() / total < H200_FLOPS / H200_BYTES_PER_S:
            assert total >= 3 * H200_L2, f"memory-bound task moves only {total / 1e6:.0f} MB"


# ---------------------------------------------------------------------------- every task, small size, on CPU

@pytest.mark.parametrize("path", TASKS, ids=ids)
def test_task_is_not_degenerate(path, small):
    mod = small(path)
    model, in1 = build(mod, seed=0)
    in2 = make_inputs(mod, seed=1)
    floats = [x for x in in1 if x.is_floating_point()]
    assert floats, "every task has a floating input"
    # every floating input is signed (torch.randn): ReLU of non-negative data is the identity. Integer inputs (class
    # labels) are exempt; no current task has a floating input where signs make no sense.
    for i, x in enumerate(in1):
        if x.is_floating_point():
            assert (x < 0).any() and (x > 0).any(), f"floating input {i} is not signed"

    out1, out2 = run(model, in1), run(model, in2)
    for o in tensors(out1) + tensors(out2):
        assert torch.isfinite(o.float()).all()
    assert not same(out1, out2), "output must change when the input changes"
    for o in tensors(out1):
        if o.dim() > 0:
            assert (o != o.flatten()[0]).any(), "output is constant"
    # every input matters: swapping one input for fresh content changes the output
    for i in range(len(in1)):
        mixed = in1[:i] + [in2[i]] + in1[i + 1:]
        assert not same(run(model, mixed), out1), f"input {i} does not affect the output"


@pytest.mark.parametrize("path", TASKS, ids=ids)
def test_task_is_deterministic_and_meta_agrees(path, small):
    mod = small(path)
    model_a, inputs = build(mod, seed=0)
    model_b, _ = build(mod, seed=0)
    out = run(model_a, inputs)
    assert same(run(model_a, inputs), out), "same inputs, same weights, different output"
    assert same(run(model_b, inputs), out), "same seed must build the same weights"
    meta_model, meta_inputs = build(mod, device="meta")
    meta_out = tensors(run(meta_model, meta_inputs))
    assert [o.shape for o in meta_out] == [o.shape for o in tensors(out)]
    assert [o.dtype for o in meta_out] == [o.dtype for o in tensors(out)]


# ---------------------------------------------------------------------------- CPU tasks, full size, for real

@pytest.mark.parametrize("path", CPU_TASKS, ids=[task_name(p) for p in CPU_TASKS])
def test_cpu_task_runs_fast_and_varies(path):
    mod = load_module(load_task(path), task_name(path))
    model, in1 = build(mod, seed=0)
    in2 = make_inputs(mod, seed=1)
    out1, out2 = tensors(run(model, in1)), tensors(run(model, in2))
    for o in out1 + out2:
        assert torch.isfinite(o).all()
    assert not same(out1, out2)
    for o in out1:
        assert o.dim() == 0 or (o != o.flatten()[0]).any(), "output is constant"
    # one intra-op thread: on a shared 2-core box, two OpenMP threads wait on each other for whole scheduler slices
    # (10-30 ms for a 2 MB ReLU when other jobs run), which measures the neighbours rather than the task
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            run(model, in1)
            times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(threads)
    assert min(times) < 0.050, f"{task_name(path)} takes {min(times) * 1e3:.1f} ms on CPU"


def test_shrink_source_scales_sizes_only():
    src = "n = 4096\nk = 3\nf = 0.5\nflag = True\ndef get_inputs():\n    m = 4096\n    return m\n"
    ns = {}
    exec(shrink_source(src), ns)
    assert (ns["n"], ns["k"], ns["f"], ns["flag"], ns["get_inputs"]()) == (512, 3, 0.5, True, 4096)


# ---------------------------------------------------------------------------- loader (evaluator.find_tasks & co.)

TASK_SRC = '''"""Toy task."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def tree(tmp_path):
    """tasks/{cpu/relu, level1/gelu, level1/matmul, level2/gemm_relu}.py plus an ignored _helper.py."""
    d = tmp_path / "tasks"
    for rel in ("cpu/relu.py", "level1/gelu.py", "level1/matmul.py", "level2/gemm_relu.py", "level1/_helper.py"):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(TASK_SRC)
    return d


def rel(paths, root):
    return [Path(p).relative_to(root).as_posix() for p in paths]


def test_find_all_skips_underscore_files(tree):
    assert rel(find_tasks("all", tree), tree) == ["cpu/relu.py", "level1/gelu.py", "level1/matmul.py",
                                                  "level2/gemm_relu.py"]


def test_find_by_stem_glob_and_commas(tree):
    assert rel(find_tasks("relu", tree), tree) == ["cpu/relu.py"]
    assert rel(find_tasks("gelu.py", tree), tree) == ["level1/gelu.py"]
    assert rel(find_tasks("level1/*", tree), tree) == ["level1/gelu.py", "level1/matmul.py"]
    assert rel(find_tasks("*relu", tree), tree) == ["cpu/relu.py", "level2/gemm_relu.py"]
    # comma lists keep the given order and drop repeats
    assert rel(find_tasks("level2/*, relu,gemm_relu", tree), tree) == ["level2/gemm_relu.py", "cpu/relu.py"]


def test_find_explicit_path_outside_the_folder(tree, tmp_path):
    other = tmp_path / "elsewhere" / "my_task.py"
    other.parent.mkdir()
    other.write_text(TASK_SRC)
    assert find_tasks(str(other), tree) == [other]
    assert task_name(other, tree) == "my_task"
    assert task_name(tree / "level1" / "gelu.py", tree) == "level1/gelu"


def test_find_in_a_kernelbench_folder(tmp_path):
    kb = tmp_path / "KernelBench" / "level1"
    kb.mkdir(parents=True)
    for name in ("19_ReLU.py", "1_Square_matrix_multiplication_.py", "23_Softmax.py"):
        (kb / name).write_text(TASK_SRC)
    assert sorted(rel(find_tasks("all", kb), kb)) == ["19_ReLU.py", "1_Square_matrix_multiplication_.py",
                                                      "23_Softmax.py"]
    assert rel(find_tasks("19_ReLU", kb), kb) == ["19_ReLU.py"]
    assert rel(find_tasks("1_*", kb), kb) == ["1_Square_matrix_multiplication_.py"]
    assert rel(find_tasks("*Softmax*,19_ReLU", kb), kb) == ["23_Softmax.py", "19_ReLU.py"]
    assert task_name(kb / "19_ReLU.py", kb) == "19_ReLU"


def test_find_reports_missing_matches(tree, tmp_path):
    with pytest.raises(TaskError, match=r"no task matches 'nope'"):
        find_tasks("nope", tree)
    with pytest.raises(TaskError, match=r"no task matches 'level9/\*'"):
        find_tasks("relu,level9/*", tree)  # one bad part fails the whole selection
    with pytest.raises(TaskError, match="does not exist"):
        find_tasks("relu", tmp_path / "no_such_folder")


def test_load_task_accepts_a_task_and_returns_its_source(tree):
    path = tree / "cpu" / "relu.py"
    assert load_task(path) == TASK_SRC


@pytest.mark.parametrize("drop,missing", [("class Model", "Model"), ("def get_inputs", "get_inputs"),
                                          ("def get_init_inputs", "get_init_inputs")])
def test_load_task_names_what_is_missing(tmp_path, drop, missing):
    renamed = drop.split()[0] + " Other" + drop.split()[1]  # e.g. 'class OtherModel'
    path = tmp_path / "broken.py"
    path.write_text(TASK_SRC.replace(drop + "(", renamed + "("))
    with pytest.raises(TaskError, match=rf"missing {missing}\b") as err:
        load_task(path)
    assert str(path) in str(err.value)
    others = [n for n in evaluator.TASK_NAMES if n != missing]
    assert not any(f"missing {n}" in str(err.value) for n in others)


def test_load_task_rejects_bad_files(tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "absent.py")
    bad = tmp_path / "bad.py"
    bad.write_text("class Model(:\n")
    with pytest.raises(TaskError, match="syntax error on line 1"):
        load_task(bad)
    with pytest.raises(TaskError, match=r"^where: missing Model, get_inputs, get_init_inputs"):
        evaluator.check_task_source("x = 1\n", where="where")
