"""CPU work before forward starts, out of the hold's sight: a thread of the candidate's watches the two input buffers
(a one-element copy to the host per poll) from the first call on; as soon as the judge's write lands and the worker
is continued, it copies the input to the host, computes the ReLU on the CPU and copies the answer back, while the
worker's main thread reads the message, queues the GPU hold and waits for it. Forward returns that answer.

The precise clock (events after the hold) sees nothing, the judge's and the worker's clocks see the hold's window
on both sides, and the host clock used to count other threads' CPU time only from the worker's call on. Now it
counts every other thread's CPU time since the worker's last answer (Worker.run), so the thread's polls and its
ReLU are charged. Unrun on a GPU when written.

task: cpu/relu
device: cuda
expect: ok
max_speedup: 1.0
speedup_kind: framework_ops
also: rejected phase_branch, rejected output_replay, wrong_output values
"""
import threading

import torch
import torch.nn as nn

_seen, _ready, _answers, _lock = [], threading.Event(), {}, threading.Lock()


def _watch():
    last = {}
    while True:
        for x in list(_seen):
            head = float(x.view(-1)[0].item())
            if last.get(id(x)) != head:
                last[id(x)] = head
                y = torch.relu(x.to("cpu")).to(x.device)
                with _lock:
                    _answers[id(x)] = (head, y)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.thread = None

    def forward(self, x):
        if all(s is not x for s in _seen):
            _seen.append(x)
        if self.thread is None:
            self.thread = threading.Thread(target=_watch, daemon=True)
            self.thread.start()
        with _lock:
            head, y = _answers.get(id(x), (None, None))
        if y is not None and head == float(x.view(-1)[0].item()):
            return y.clone()
        return torch.relu(x)
