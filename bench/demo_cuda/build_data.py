"""bench/demo_cuda/build_data.py: evaluate the hand-written CUDA candidates in bench/demo_cuda/candidates on a GPU and
write stage-1 data (the CUDA twin of bench/demo/build_data.py).

    python bench/demo_cuda/build_data.py                                  # every task -> bench/demo_cuda/stage1.jsonl
    python bench/demo_cuda/build_data.py --tasks relu_large,elu --out /tmp/s1.jsonl
    python bench/demo_cuda/build_data.py --device cpu --tasks elu         # only checks the script runs (no GPU)

A candidate lives at candidates/<task stem>/<kind>_<name>.py for the task tasks/level1/<task stem>.py, its intended
kind (slower, faster, wrong, broken) being the file name's prefix. Every candidate is run through
evaluator.evaluate_many; each JSONL record holds task, candidate, ref_code, code, kind (intended) and result (the
evaluator's Result.to_dict(), never edited), the same fields as bench/demo's. The table's last column says where the
measured verdict and the intended kind disagree. On a CPU the CUDA candidates fail to build: that is expected.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # H200 (sm_90): build for it only, before torch reads it
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "demo"))
import build_data  # noqa: E402  (bench/demo's: the same records, table and flags)

if __name__ == "__main__":
    build_data.main(here=HERE, device="cuda", time_budget=1.0)
