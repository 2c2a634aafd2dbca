"""A process started at build time that outlives the evaluation: the module names load_inline (a comment is
enough), so build_all runs it in a build process first; there (a session leader) it forks a child that moves to a process group of its own
(setpgid is allowed in builds: ninja needs it; only setsid is denied), starts a thread, and ends its main thread
with pthread_exit. The child's leader then shows as a zombie ('Z' in /proc/PID/stat) while its thread runs on.
The build's end kills its process group, which the child left, and every process of its session that
fences.group_pids lists, which skips zombies: the child is never signalled and lives on after the evaluation, free
to load the CPU while this or another candidate's reference is timed. Here its thread, named cudal1-stray (comm of
both the leader and the thread), only sleeps, for 60 s at most.
fences.group_pids counts a process whose leader is a zombie while its threads run, so the build's answer finds the
child still running in its session: `background_process`, and the child is killed with the build.
today: ok 0.90x (cpu/relu, the CLI at --time-budget-s 0.05), and the cudal1-stray process (leader Z, its
thread alive) still running after the CLI returned

task: cpu/relu
expect: rejected background_process
"""
import ctypes
import os

# (load_inline named here: build_all runs this module in a build process first)
import threading
import time

import torch
import torch.nn as nn


PR_SET_NAME = 15
LIFETIME_S = 60


def _stray():
    """In the child: a group of its own, a thread that sleeps, and the main thread gone (the leader a zombie)."""
    os.setpgid(0, 0)
    os.closerange(3, 1 << 16)  # none of the build's pipes or locks
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_NAME, b"cudal1-stray", 0, 0, 0)

    def live():
        libc.prctl(PR_SET_NAME, b"cudal1-stray", 0, 0, 0)
        end = time.monotonic() + LIFETIME_S
        while time.monotonic() < end:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=live).start()
    libc.pthread_exit(None)  # ctypes releases the GIL first: the thread goes on


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


if os.getsid(0) == os.getpid():  # a build process is a session leader; a worker leads a process group only
    child = os.fork()
    if child == 0:
        try:
            _stray()
        finally:
            os._exit(0)
    deadline = time.monotonic() + 5  # the build answers (and is killed) only once the child's leader is a zombie
    while _state(child) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
