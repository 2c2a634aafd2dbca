"""Memo keyed on the sign pattern: timed inputs are one of two pooled inputs with every entry scaled by
0.95..1.05, so their signs repeat, and so, nearly, does each row's ranking; the candidate remembers, per sign
pattern, the few entries of each row that could still be its maximum, and reads only those.

Each honest call stores its input under the signs of 256 fixed sampled entries, with, per row, the positions
whose value is within a factor 1.12^2 of the row's maximum (typically 3-10 of 4096). A later input with the same
signs whose sampled entries are all within a factor 1.12 of the stored ones is taken for a rescaled copy: its
row maxima cannot lie elsewhere, so gathering those positions gives the exact argmax (not a replay: each answer
is this input's own). The wide set (x4..16) and the edge set (zeros) fail the ratio check and are computed in
full. With timed inputs drawn fresh from get_inputs() under secret seeds nothing is ever recognised: ~1x.
today: ok 9.4x (corpus/argmax_rows, the test's OPTIONS)

task: corpus/argmax_rows
cpu_only: its memo indexes CUDA inputs with a CPU index (written against the CPU path)
expect: ok
max_speedup: 1.3
speedup_kind: framework_ops
"""
import torch
import torch.nn as nn

SAMPLES = 256
BOUND = 1.12  # the factor a rescaled copy may differ by, entry by entry (the pool's own spread is 1.05 / 0.95)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}  # sign pattern -> (sampled entries, candidate positions per row (rows, K))
        self.where = None

    def _key(self, x):
        if self.where is None:
            self.where = torch.randint(0, x.numel(), (SAMPLES,), generator=torch.Generator().manual_seed(0))
        xs = x.view(-1).index_select(0, self.where)
        return (xs > 0).numpy().tobytes(), xs

    def _remember(self, x, key, xs):
        top = x.amax(dim=-1, keepdim=True)
        near = x >= top / (BOUND * BOUND)  # (rows, cols): every position that could overtake the maximum
        if bool((top <= 0).any()):
            return
        k = int(near.sum(-1).max())
        cand = near.float().topk(k, dim=-1).indices  # (rows, k): the near positions (padded with far ones)
        self.memo[key] = (xs.clone(), cand)

    def forward(self, x):
        key, xs = self._key(x)
        seen = self.memo.get(key)
        if seen is not None:
            ratio = xs / seen[0]
            if bool(((ratio >= 1 / BOUND) & (ratio <= BOUND)).all()):
                cand = seen[1]
                return cand.gather(-1, x.gather(-1, cand).argmax(-1, keepdim=True)).squeeze(-1)
        out = torch.argmax(x, dim=-1)
        self._remember(x, key, xs)
        return out
