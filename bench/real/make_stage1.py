"""bench/real/make_stage1.py: stage-1 data for the real-model proof: evaluate the hand-written candidates of
the training tasks (bench/real/candidates and bench/demo_cuda/candidates) on a GPU and write them as JSONL.

    python bench/real/make_stage1.py                            # every training task -> bench/real/stage1.jsonl
    python bench/real/make_stage1.py --tasks 'level2/*' --out /tmp/s1.jsonl

Candidates live at candidates/<task stem>/<kind>_<name>.py (kind: faster, slower, wrong, broken: what the author
intended; bench/demo/build_data.py's conventions, records and table). split.json names the training and the
held-out tasks; a candidate for a held-out task is refused, so held-out tasks never reach the stage-1 data.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # H200 (sm_90): build for it only, before torch reads it
HERE = Path(__file__).resolve().parent
FOLDERS = [HERE / "candidates", HERE.parent / "demo_cuda" / "candidates"]
SPLIT = json.loads((HERE / "split.json").read_text())
sys.path.insert(0, str(HERE.parent / "demo"))
import build_data  # noqa: E402  (bench/demo's: the same records, table and flags)


def candidates(task_filter, folder=None):
    """bench/demo/build_data.find_candidates over every folder of FOLDERS, training tasks only."""
    items = [it for f in FOLDERS if f.is_dir() for it in build_data.find_candidates(task_filter, f)]
    leaked = sorted({task for task, *_ in items if task not in SPLIT["train"]})
    if leaked:
        raise SystemExit(f"candidates for tasks outside split.json's training tasks: {', '.join(leaked)}")
    return items


if __name__ == "__main__":
    build_data.main(here=HERE, device="cuda", time_budget=1.0, find=candidates)
