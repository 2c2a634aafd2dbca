"""Shared test setup."""
import atexit
import contextlib
import functools
import glob
import os
import shutil
import socket
import tempfile

# The README's CPU setting, for the evaluator's processes too (they inherit it from the forkserver, started later):
# without it, on CI's 2 cores the CPU timings of corpus files spread so far (a ~1x hack measured 0.79-1.60x in 8
# runs) that a "must gain nothing" bound failed on noise. With it: 1.02-1.11x in 8 runs.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# What the tests write outside their own folders goes under one folder of this session, removed at exit: the C++
# build cache with its precompiled headers (~750 MB each), torch.compile's cache and pytest's tmp_path folders.
# The evaluator removes its own temp folders, and multiprocessing its own. Nothing is left under /tmp or
# ~/.cache/cudal1 (a cache there would also make one session depend on the one before). TMPDIR stays the machine's:
# tests/corpus/hacks/forkserver_escape looks for the evaluator's forkserver socket there, as an attacker would.
SCRATCH = tempfile.mkdtemp(prefix="cudal1-tests-")
os.environ["CUDAL1_BUILD_DIR"] = os.path.join(SCRATCH, "builds")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(SCRATCH, "inductor")
os.environ["PYTEST_DEBUG_TEMPROOT"] = SCRATCH  # pytest's tmp_path root (read when the first test asks for one)
# at exit, after the handlers registered later (multiprocessing's, the evaluator's) have run
atexit.register(functools.partial(shutil.rmtree, SCRATCH, ignore_errors=True))


def _in_tmp(pattern):
    return set(glob.glob(os.path.join(tempfile.gettempdir(), pattern)))


def _listened(folder):
    """Does a process still accept connections on a socket in this folder (a live forkserver's listener)?"""
    for path in glob.glob(os.path.join(folder, "*")):
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(path)
                return True
            except OSError:
                pass
    return False


BEFORE = _in_tmp("cudal1-cpus-*.lock") | _in_tmp("pymp-*")  # what was there before the tests


def _remove_what_the_tests_left():
    """What the tests created in TMPDIR and nothing removes: fences.pin's lock files (one per CPU pair, shared by every
    process on the machine, so pin never removes them), and multiprocessing's folders of processes a test killed
    (SIGKILL skips their exit handlers) whose forkserver is gone."""
    for lock in _in_tmp("cudal1-cpus-*.lock") - BEFORE:
        with contextlib.suppress(OSError):
            os.remove(lock)
    for folder in _in_tmp("pymp-*") - BEFORE:
        if not _listened(folder):
            shutil.rmtree(folder, ignore_errors=True)


atexit.register(_remove_what_the_tests_left)

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
