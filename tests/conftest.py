"""Shared test setup."""
import os

# The README's CPU setting, for the evaluator's processes too (they inherit it from the forkserver, started later):
# without it, on CI's 2 cores the CPU timings of corpus files spread so far (a ~1x hack measured 0.79-1.60x in 8
# runs) that a "must gain nothing" bound failed on noise. With it: 1.02-1.11x in 8 runs.
os.environ.setdefault("OMP_NUM_THREADS", "1")

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
