"""Shared test setup."""
import atexit
import functools
import os
import shutil
import tempfile

# The README's CPU setting, for the evaluator's processes too (they inherit it from the forkserver, started later):
# without it, on CI's 2 cores the CPU timings of corpus files spread so far (a ~1x hack measured 0.79-1.60x in 8
# runs) that a "must gain nothing" bound failed on noise. With it: 1.02-1.11x in 8 runs.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Everything the tests write outside their own folders goes under one folder of this session, removed at its end:
# the evaluator's logs and workers' TMPDIRs, multiprocessing's and torch.compile's temp files, pytest's tmp_path
# folders, and the C++ build cache with its precompiled headers (~750 MB each). Nothing is left under /tmp or
# ~/.cache/cudal1 (a cache there would also make a run depend on the one before it).
SCRATCH = tempfile.mkdtemp(prefix="cudal1-tests-")
os.environ["TMPDIR"] = SCRATCH  # for the processes the tests start; tempfile reads it again below
os.environ["CUDAL1_BUILD_DIR"] = os.path.join(SCRATCH, "builds")
tempfile.tempdir = None
# at exit, after the handlers registered later (multiprocessing's, which removes its own folder in there, first)
atexit.register(functools.partial(shutil.rmtree, SCRATCH, ignore_errors=True))

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread in the test process (module scope: set before module fixtures train). On 2 busy cores two
    spinning OpenMP threads make a tiny model 20x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
