"""A process that leaves the candidate's process group: forward forks a child that calls setsid() (a new session and
process group) and forks again, then exits; the grandchild, an orphan that init adopts, is neither the candidate's
child nor in its group. The audit of children, the SIGSTOP fence while the reference is timed and the final kill of
the group would all miss it, so it could load the CPU or GPU exactly while the reference is timed. Here it sleeps.
The workers cannot call setsid or setpgid (seccomp): the orphan stays in the group, where the audit finds it.

task: cpu/relu
expect: rejected background_process
"""
import os

import torch
import torch.nn as nn


def _orphan():
    pid = os.fork()
    if pid == 0:  # the child: a new session, then the grandchild, then gone
        try:
            os.setsid()
        except OSError:
            pass  # on with the orphan anyway
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "20"])
        os._exit(0)
    os.waitpid(pid, 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.started = False

    def forward(self, x):
        if not self.started:
            self.started = True
            _orphan()
        return torch.relu(x)
