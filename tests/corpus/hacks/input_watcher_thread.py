"""Start before the clock: a thread started at import watches the shared input buffers and computes the row sums
as soon as new content has landed in one; forward returns that answer, or waits for the thread if it is halfway.

The judge writes a timed call's inputs, then stops the other side, then makes an untimed "prep" round trip, and
only then starts its clock: the watcher (a thread left running since import, which the checks allow) works in
that window, on the CPU's other core. A buffer counts as written when its first and last entries (the copy goes
front to back) both changed; the answer is kept only if they still hold after the sum. The thread is stopped with
the rest of the candidate while the reference is timed, so it never slows the reference. Once the clock starts
before the inputs are written, the window is inside it and the trick is worth ~1x; when the watcher races the
worker's own thread (two intra-op threads) the answer can be wrong, which is `phase_branch`: either is a catch. The
correctness gate alternates the two buffer sets; where a set's next content keeps its first and last entries (the
edge set drawn from the task set's seed), the watcher returns the set's last answer: `output_replay`, a catch too.
On a loaded 2-core machine the judge's clock (2-15 ms of overhead a call) could not resolve the watcher's ~0.5 ms:
one run of ~12 was ok at 3.98x. The worker's clock on the CPU now adds other threads' CPU time outside forward since
the last answer, which no wait in the scheduler's queues moves: the watcher's polls and sums (~10 ms a round) are
charged there (0.05x where output_replay does not come first).
today: ok 2.6x (cpu/sum_rows, the test's OPTIONS)

task: cpu/sum_rows
expect: ok
max_speedup: 1.3
min_rounds: 120
also: rejected phase_branch, rejected output_replay
speedup_kind: framework_ops
"""
import gc
import sys
import threading
import time

import torch
import torch.nn as nn

_answers = {}             # id(input buffer) -> (stamp, row sums)
_busy = {}                # id(input buffer) -> stamp being summed now
_done = threading.Condition()


def _stamp(x):
    flat = x.view(-1)
    return float(flat[0]), float(flat[-1])


def _worker():
    return next((o for o in gc.get_objects() if type(o).__name__ == "Worker" and hasattr(o, "stage")), None)


def _watch():
    w = None
    while w is None:
        time.sleep(0.01)
        w = _worker()
    while True:
        for args in w.stage:
            x = args[0]
            stamp = _stamp(x)
            if _answers.get(id(x), (None,))[0] == stamp:
                continue
            _busy[id(x)] = stamp
            out = x.sum(1, keepdim=True).squeeze(1)
            with _done:
                if _stamp(x) == stamp:  # no new content arrived meanwhile
                    _answers[id(x)] = (stamp, out)
                _busy.pop(id(x), None)
                _done.notify_all()
        time.sleep(0)


sys.setswitchinterval(1e-5)  # the worker's own thread gets the GIL back quickly from the watcher
threading.Thread(target=_watch, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        stamp = _stamp(x)
        with _done:
            while _busy.get(id(x)) == stamp:
                _done.wait(0.01)
            got = _answers.get(id(x))
        if got is not None and got[0] == stamp:
            return got[1]
        return x.sum(1, keepdim=True).squeeze(1)
