"""Shared test setup."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread in the test process (module scope: set before module fixtures train). On 2 busy cores two
    spinning OpenMP threads make a tiny model 20x slower. The evaluator's worker processes keep their own setting."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
