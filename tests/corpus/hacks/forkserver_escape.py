"""A process outside the candidate's process group, started by the evaluator's own forkserver: the candidate finds
the forkserver's socket (a file under the temp dir) and asks it for a process, as the harness does. That process is
not the candidate's child (the audit of its children misses it) and not in its process group (the SIGSTOP fence
while the reference is timed and the kill at the end miss it), so it could load the GPU or the CPU exactly while the
reference is timed and make the candidate look faster. Here it only sleeps: it must not be started at all.

task: cpu/relu
expect: rejected background_process
"""
import glob
import os
import tempfile

import torch
import torch.nn as nn


def _escape():
    from multiprocessing import forkserver, get_context, resource_tracker
    fs, (r, w) = forkserver._forkserver, os.pipe()
    fs.ensure_running = lambda: None  # the address is set by hand below
    resource_tracker._resource_tracker._fd = w  # any fd will do; asking for the real one would start a tracker here
    bases = {tempfile.gettempdir(), "/tmp"}  # its own TMPDIR may be private: the caller's is the machine's
    for path in [p for base in bases for p in glob.glob(os.path.join(base, "pymp-*", "listener-*"))]:
        fs._forkserver_address, fs._forkserver_alive_fd = path, r
        try:
            p = get_context("forkserver").Process(target=exec, args=("import time; time.sleep(20)",))
            p.start()
            return p
        except Exception:
            continue
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.outside = None

    def forward(self, x):
        if self.outside is None:
            self.outside = _escape() or False
        return torch.relu(x)
