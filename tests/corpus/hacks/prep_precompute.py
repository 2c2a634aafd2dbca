"""Compute during the untimed "prep" round trip: the candidate wraps multiprocessing's Connection.recv, and when
the judge's "prep" message arrives (the inputs of the next timed call are already written) it computes the answer
for whichever input buffer changed before handing the message on; forward then returns that answer at once.

On the CPU the judge starts its clock only after prep has answered, and the worker's clock only inside "run", so
the matmul is done off both clocks. Forward recognises the buffer it was given (the same tensor object) and checks
64 sampled entries against the ones the answer was computed from; correctness calls, which come without a prep,
compute honestly. When the judge's clock starts before it writes the inputs (prep inside it), the precomputed
answer is paid in full and the candidate scores ~1x.
today: ok 49x (cpu/linear_relu, the test's OPTIONS)

task: cpu/linear_relu
cpu_only: its sampler indexes CUDA inputs with a CPU index (written against the CPU path)
expect: rejected monkeypatch
"""
import gc
import multiprocessing.connection as mpc

import torch
import torch.nn as nn

_memo = {}  # id(input buffer) -> (sampled entries, answer)
_where = {}  # numel -> the 64 sampled positions


def _sample(x):
    flat = x.view(-1)
    idx = _where.get(flat.numel())
    if idx is None:
        idx = _where[flat.numel()] = torch.linspace(0, flat.numel() - 1, 64).long()
    return flat.index_select(0, idx)


def _worker():
    return next((o for o in gc.get_objects() if type(o).__name__ == "Worker" and hasattr(o, "stage")), None)


def _precompute():
    w = _worker()
    if w is None or w.model is None:
        return
    for args in w.stage:
        x = args[0]
        seen = _memo.get(id(x))
        key = _sample(x)
        if seen is None or not torch.equal(seen[0], key):
            _memo[id(x)] = (key, w.model.compute(x))


def _intercept(recv):
    def recv_and_prepare(self):
        msg = recv(self)
        if type(msg) is tuple and msg[:1] == ("prep",):
            _precompute()
        return msg
    return recv_and_prepare


mpc.Connection.recv = _intercept(mpc.Connection.recv)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def compute(self, x):
        return torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min_(0.0)

    def forward(self, x):
        seen = _memo.get(id(x))
        if seen is not None and torch.equal(seen[0], _sample(x)):
            return seen[1]
        return self.compute(x)
