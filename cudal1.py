"""cudal1.py: the contrastive-RL core of CUDA-L1: exemplar database and sampling, reward shaping, GRPO.

What it does, in the order data flows through one RL step
    ExemplarDB / sample_exemplars -> the N = 2 scored variants shown in a contrastive prompt (prompts.build_prompt)
    target_score                  -> the score they stay below, so that the policy knows a faster answer
    compute_rewards               -> evaluator results -> shaped, normalised, clipped rewards
    group_advantages              -> rewards (B, G) -> group-relative advantages (B, G)
    grpo_loss                     -> per-token clipped policy-gradient loss (+ optional KL), aggregated by name

How to run
    Imported by rl.py. `python cudal1.py RUN/exemplars.jsonl` prints what a run's database holds, per task.
    Tests: `python -m pytest -q tests/test_cudal1.py`.

Where it departs from the paper (CUDA-L1, arXiv 2507.14111). The defaults are what rl.py runs (a fork that calls these
functions gets the same maths); the paper's settings are keyword arguments (and rl.py's flags)
    1. Bucket width and temperature tau are not published: `bucket_width=0.5`, `tau=1.0`. Subtracting the global mean
       before the softmax is kept as written, though softmax is shift-invariant so it changes nothing.
    2. With fewer score buckets than N, the missing exemplars are drawn uniformly from the remaining entries (the
       paper does not say). Exemplars come back sorted by score, slowest first. `mode="random"|"best"` are ablations.
    3. Rewards are log speedups (at least log 0.25; failures -2), not normalised over the batch: the paper's are raw
       speedups (failures 0), normalised and clipped at 1.5 std (`log_speedup=False, fail_reward=0, normalize=True,
       clip=1.5`). A candidate flagged `same_as_reference` earns `copy_reward` (default: what a failure earns), not its
       measured speedup: with the reward of 1.0x a renamed reference was the best an untrained policy could do (a
       failure earns 0, an honest 0.8x less). The paper's conservative rounding of near-1 speedups and re-check of
       large ones act on the measurements before they get here (runs.measure), so scores and rewards agree.
    4. Reward normalisation uses the mean and std of the batch it is given (the caller picks: one group or a step).
    5. Group advantages are the rewards less the group mean, not over the std (Dr. GRPO); `std_normalize=True` (the
       paper's) divides by the population std, at least `std_floor` (ours), so timing noise cannot earn a win's.
    6. KL uses the k3 estimator and is off by default (beta=0); the paper does not give beta.
    7. Loss aggregation `variant="dapo"` (token mean: every token weighs alike); "grpo" (per-sequence mean, then
       mean) is the paper's GRPO, "drgrpo" (constant normaliser) an ablation, as is `eps_high != eps_low` (DAPO's).
    8. The database keeps one entry per distinct code of a task (up to trailing whitespace), so a policy that
       repeats itself cannot flood a bucket; a code measured again is combined (score = median of its measured
       speedups, each measurement one line), so one lucky timing does not stay its score.
"""
import hashlib
import json
import math
import numbers
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch


# ---------------------------------------------------------------------------- exemplar database

@dataclass
class Exemplar:
    task: str
    code: str
    score: float  # speedup over the reference (1.0 = the reference itself): the median of `measured`
    step: int = 0  # when it was first measured
    meta: dict = field(default_factory=dict)  # of its first measurement
    measured: list = field(default_factory=list)  # every measured speedup of this code, in order


def _code_key(code):
    """Dedup key: the code with trailing whitespace stripped per line and trailing blank lines dropped."""
    text = "\n".join(line.rstrip() for line in code.splitlines()).rstrip("\n")
    return hashlib.sha1(text.encode()).hexdigest()


LINE_FIELDS = ("task", "code", "score", "step", "meta")  # one stored line = one measurement of one code


def _parse_line(line):
    """One stored JSON line -> Exemplar of that one measurement; ValueError if it is not one (other keys ignored)."""
    obj = json.loads(line)
    if not isinstance(obj, dict) or not {"task", "code", "score"} <= obj.keys():
        raise ValueError("not an exemplar record")
    return Exemplar(**{k: obj[k] for k in LINE_FIELDS if k in obj})


class ExemplarDB:
    """Successful codes with their scores, per task, in an append-only JSONL file (path=None: in memory only).
    Each line is one measurement; a code measured again (up to trailing whitespace) is one entry whose score is the
    median of its measurements, so a lucky first timing does not stay its score. The reference stays at 1.0."""

    def __init__(self, path=None):
        self.path = Path(path) if path is not None else None
        self._by_task, self._keys = {}, {}  # task -> [Exemplar]; (task, code key) -> its Exemplar
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self):
        raw = self.path.read_bytes()
        lines, good = raw.split(b"\n"), 0  # good: byte offset just past the last line that parsed
        for i, line in enumerate(lines):
            if line.strip():
                try:
                    self._remember(_parse_line(line))
                except ValueError as e:
                    if any(rest.strip() for rest in lines[i + 1:]):
                        raise ValueError(f"{self.path}:{i + 1}: corrupt line in the middle of the file: {e}") from e
                    warnings.warn(f"{self.path}:{i + 1}: skipping a torn last line (crash mid-write?)")
                    break
            good += len(line) + 1
        good = min(good, len(raw))
        if good < len(raw):  # cut the torn tail so that the next append starts on a clean line
            with open(self.path, "r+b") as f:
                f.truncate(good)
        if raw[:good] and not raw[:good].endswith(b"\n"):  # the last line parsed but lacks its newline
            with open(self.path, "ab") as f:
                f.write(b"\n")

    def _remember(self, ex):
        """"new" (a code the task did not hold), "again" (a re-measurement, combined) or None (the reference)."""
        key = (ex.task, _code_key(ex.code))
        known = self._keys.get(key)
        if known is None:
            ex.measured = [ex.score]
            self._keys[key] = ex
            self._by_task.setdefault(ex.task, []).append(ex)
            return "new"
        if known.meta.get("reference"):
            return None
        known.measured.append(ex.score)
        known.score = float(np.median(known.measured))
        return "again"

    def add(self, task, code, score, step=0, meta=None):
        """Store one measurement of a code: True for a code the task did not hold, False for one it did (its score
        becomes the median of its measurements; the reference's stays 1.0 and nothing is stored) or for a score that
        is no speedup (not a finite positive number: nothing is stored)."""
        if not _speedup(score):
            return False
        ex = Exemplar(task, code, float(score), int(step), dict(meta or {}))
        line = json.dumps({k: getattr(ex, k) for k in LINE_FIELDS}) + "\n"  # first: bad meta must not half-store
        kind = self._remember(ex)
        if kind is None:
            return False
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())  # a crash loses at most the line being written
        return kind == "new"

    def holds(self, task, code):
        """Does the task hold this code (up to trailing whitespace)?"""
        return (task, _code_key(code)) in self._keys

    def seed_reference(self, task, ref_code):
        """Store the task's reference at score 1.0 (once)."""
        return not self.holds(task, ref_code) and self.add(task, ref_code, 1.0, step=0, meta={"reference": True})

    def entries(self, task, excluding=None):
        """The task's entries; excluding: a code left out (with its twins up to trailing whitespace)."""
        drop = _code_key(excluding) if excluding is not None else None
        return [e for e in self._by_task.get(task, []) if drop is None or _code_key(e.code) != drop]

    def best(self, task):
        return max(self._by_task.get(task, []), key=lambda e: e.score, default=None)

    def tasks(self):
        return list(self._by_task)

    def __len__(self):
        return sum(len(v) for v in self._by_task.values())


# ---------------------------------------------------------------------------- exemplar sampling

def _buckets(entries, bucket_width, tau):
    """Bucket ids, their softmax logits (mean - global mean) / tau, and the entry indices in each bucket."""
    scores = np.array([e.score for e in entries], dtype=np.float64)  # (E,)
    ids = np.floor(scores / bucket_width).astype(np.int64)            # (E,)
    buckets = sorted(set(ids.tolist()))
    members = [np.flatnonzero(ids == b) for b in buckets]
    logits = np.array([(scores[m].mean() - scores.mean()) / tau for m in members])  # (K,)
    return buckets, logits, members


def _softmax(logits):
    p = np.exp(logits - logits.max())
    return p / p.sum()


def bucket_probabilities(entries, bucket_width=0.5, tau=1.0):
    """{bucket id: probability of drawing it first}, bucket id = floor(score / bucket_width)."""
    buckets, logits, _ = _buckets(entries, bucket_width, tau)
    return dict(zip(buckets, _softmax(logits).tolist()))


def _draw_contrastive(entries, n, rng, bucket_width, tau):
    _, logits, members = _buckets(entries, bucket_width, tau)
    left = list(range(len(logits)))  # buckets not drawn yet
    picked = []
    for _ in range(min(n, len(left))):
        j = left.pop(rng.choice(len(left), p=_softmax(logits[left])))  # renormalised over the rest
        picked.append(int(rng.choice(members[j])))
    rest = [i for i in range(len(entries)) if i not in picked]  # fewer buckets than n: fill uniformly
    picked += rng.choice(rest, size=n - len(picked), replace=False).tolist()
    return picked


SAMPLERS = {
    "contrastive": _draw_contrastive,
    "random": lambda entries, n, rng, *_: rng.choice(len(entries), size=n, replace=False).tolist(),
    "best": lambda entries, n, *_: sorted(range(len(entries)), key=lambda i: -entries[i].score)[:n],
}


def sample_exemplars(entries, n=2, *, bucket_width=0.5, tau=1.0, mode="contrastive", rng):
    """Pick n exemplars for a contrastive prompt, returned sorted by score ascending (slowest first).

    mode="contrastive" (the paper): bucket scores by floor(score / bucket_width); softmax over buckets of
    (bucket mean - global mean) / tau; draw n DISTINCT buckets one after another, renormalising over those left;
    one entry uniformly from each. Fewer buckets than n: every bucket once, then the rest uniformly from the
    entries not yet chosen. Fewer entries than n: all of them. "random": n distinct entries uniformly.
    "best": the n highest scores.

    Example: scores [0.2, 0.4, 1.0, 1.1, 1.3, 2.6], width 0.5, tau 1 -> buckets {0: [0.2, 0.4], 2: [1.0, 1.1, 1.3],
    5: [2.6]}, means 0.3, 1.133, 2.6, global mean 1.1, logits -0.8, 0.033, 1.5 -> P(bucket) 0.075, 0.173, 0.751;
    n=2 might give buckets 5 then 2 and return [entry 1.1, entry 2.6].
    """
    if mode not in SAMPLERS:
        raise ValueError(f"mode must be one of {sorted(SAMPLERS)}, not {mode!r}")
    entries = list(entries)
    chosen = range(len(entries)) if len(entries) <= n else SAMPLERS[mode](entries, n, rng, bucket_width, tau)
    return sorted((entries[i] for i in chosen), key=lambda e: e.score)


def target_score(db, task, rng, n=2):
    """(the score the variants of a stage-3 prompt stay below, how many it shows: rl.draw_variants), drawn as sft's
    targets are (a working record's speedup): uniformly among the task's scores that keep two known answers, entries
    the prompt does not show that score at least as much as all it shows (whatever the draw); with n variants, else
    with n - 1 (a group that writes either answer has a speed to learn from); else the old rule: a score with n
    entries below (fewer where it has fewer), the best left out while two remain. Only a reference: inf.

    Example: n 2, scores 0.7, 1.0 (the reference), 1.3, 1.9, 2.1 -> (1.3 or 1.9, 2); 0.7, 1.0, 1.3 -> (1.0, 1): two
    shown would leave 1.3 alone; 1.0, 1.0, 1.5 -> (1.5, 1); 1.0, 1.0, 1.0, 1.5 -> (1.5, 2); 0.7, 1.0 -> (1.0, 2).
    """
    scores = sorted(e.score for e in db.entries(task))
    if len(set(scores)) < 2:
        return math.inf, n

    def known(x, k):  # fewest known answers over the draws of k variants below x (the k fastest shown), or -1
        pool = [y for y in scores if y < x]
        return sum(y >= x for y in scores) + max(0, pool.count(pool[-1]) - k) if len(pool) >= k else -1
    for k in range(n, max(n - 2, 0), -1):  # n, then n - 1
        fits = [x for x in sorted(set(scores)) if known(x, k) >= 2]
        if fits:
            return float(rng.choice(fits)), k
    fits = [x for x in sorted(set(scores)) if sum(y < x for y in scores) >= min(n, len(scores) - 1)]
    return float(rng.choice(fits[:-1] if len(fits) > 1 else fits or scores[-1:])), n


# ---------------------------------------------------------------------------- reward

def _get(result, name, default=None):
    return result.get(name, default) if isinstance(result, dict) else getattr(result, name, default)


LOG_FLOOR = 0.25  # log rewards: a correct speedup below this counts as this, so it earns log(0.25) = -1.39 at least


def _speedup(x):
    """Is x a speedup a clock can give: a finite positive number (a bool is none)?"""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def is_success(res):
    """A correct candidate that is not the reference renamed, with a speedup that is one (or none: not timed): what
    the database keeps and stage 2 trains on."""
    return res.status == "ok" and not res.same_as_reference and (res.speedup is None or _speedup(res.speedup))


def is_copy(res):
    """A correct candidate that is the reference renamed (or runs exactly its ops): ok, but no work of the policy's."""
    return res.status == "ok" and res.same_as_reference


def _raw_reward(result, fail_reward, copy_reward, log_speedup):
    if _get(result, "status", "ok") != "ok" or not _get(result, "correct", True):
        return fail_reward
    if _get(result, "same_as_reference", False):  # the reference renamed: correct, but no work of the policy's
        return copy_reward
    speedup = _get(result, "speedup")
    if speedup is None:  # an untimed run
        speedup = 1.0
    if not _speedup(speedup):
        return fail_reward
    return math.log(max(speedup, LOG_FLOOR)) if log_speedup else speedup


def compute_rewards(results, *, fail_reward=-2.0, copy_reward=None, log_speedup=True, normalize=False, clip=None):
    """Evaluator results -> rewards (len(results),): speedup (or log speedup, at least log(LOG_FLOOR)) if correct
    else fail_reward, then (r - mu) / sigma with mu, sigma the mean and population std of THIS batch (all-equal ->
    zeros), then clipped to [-clip, clip] (clip None or <= 0: no clip). A correct result without a speedup counts as
    speedup 1.0; one flagged same_as_reference earns copy_reward (None: fail_reward), as given (not logged).
    With log_speedup a correct candidate earns log(0.25) = -1.39 at least: give a fail_reward below that (rl: -2).

    Example: speedups 4, 1, 0.5, failed -> [log 4, 0, log 0.5, -2] = [1.386, 0, -0.693, -2]. The paper's shape
             (log_speedup=False, fail_reward=0, normalize=True, clip=1.5) of speedups 4, 1, 1, 1, 1: mu 1.6, sigma
             1.2 -> [2.0, -0.5, -0.5, -0.5, -0.5] -> clipped [1.5, -0.5, -0.5, -0.5, -0.5].
    """
    copy_reward = fail_reward if copy_reward is None else copy_reward
    r = np.array([_raw_reward(x, fail_reward, copy_reward, log_speedup) for x in results], dtype=np.float64)
    if normalize and r.size:
        std = r.std()
        r = (r - r.mean()) / (std + 1e-8) if std > 1e-12 else np.zeros_like(r)
    if clip is not None and clip > 0:
        r = np.clip(r, -clip, clip)
    return r


# ---------------------------------------------------------------------------- advantages

def group_advantages(rewards, std_normalize=False, eps=1e-4, std_floor=0.05):
    """Rewards (B, G) of G samples per prompt -> advantages (B, G): minus the group mean, over (max(population std,
    std_floor) + eps). The floor keeps a group whose rewards differ by timing noise alone from full-size advantages.
    A flat group (max - min below 1e-9) gets exact zeros: its mean's rounding is no signal.

    Example: [[1, 2, 3, 4]] -> [[-1.5, -0.5, 0.5, 1.5]]; std_normalize=True: mean 2.5, std sqrt(1.25) = 1.118 ->
             [[-1.342, -0.447, 0.447, 1.342]]. A group of equal rewards gets zeros (no signal). [[1.00, 1.05, 0.95,
             1.00]], std 0.035, std_normalize=True: std_floor 0 -> [[0, 1.41, -1.41, 0]]; 0.1 -> [[0, 0.5, -0.5, 0]].
    """
    flat = rewards.amax(dim=-1, keepdim=True) - rewards.amin(dim=-1, keepdim=True) < 1e-9  # (B, 1)
    centred = torch.where(flat, 0.0, rewards - rewards.mean(dim=-1, keepdim=True))  # (B, G)
    if not std_normalize:
        return centred
    return centred / (rewards.std(dim=-1, unbiased=False, keepdim=True).clamp(min=std_floor) + eps)  # (B, G)


# ---------------------------------------------------------------------------- GRPO loss

def _masked_sum(x, mask):
    return torch.where(mask > 0, x, torch.zeros_like(x)).sum(dim=-1)  # (N,); where: padding may hold junk


AGGREGATIONS = {  # per-token loss (N, T), mask (N, T), max_tokens -> scalar
    "grpo": lambda loss, mask, _: (_masked_sum(loss, mask) / mask.sum(-1).clamp(min=1)).mean(),
    "dapo": lambda loss, mask, _: _masked_sum(loss, mask).sum() / mask.sum().clamp(min=1),
    "drgrpo": lambda loss, mask, max_tokens: _masked_sum(loss, mask).sum() / (loss.shape[0] * max_tokens),
}


def grpo_loss(logp, old_logp, advantages, mask, *, ref_logp=None, variant="dapo", eps_low=0.2, eps_high=0.2,
              beta=0.0, max_tokens=None):
    """Clipped policy-gradient loss over sampled tokens. logp, old_logp, ref_logp, mask: (N, T); advantages: (N,).
    old_logp and ref_logp are treated as constants. Returns (loss, {"clip_frac", "kl", "ratio"}).

    per token: ratio = exp(logp - old_logp); obj = min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A);
    kl = exp(ref - logp) - (ref - logp) - 1; loss = -(obj - beta * kl); then aggregated by `variant`:
    "grpo" mean per sequence then over sequences, "dapo" mean over all tokens, "drgrpo" sum / (N * max_tokens).

    Example: A = [1], ratios [1.5, 1.0, 0.5], eps 0.2 -> obj [1.2 (clipped), 1.0, 0.5] -> loss -2.7 / 3 = -0.9 (one
             sequence: "dapo" and "grpo" agree), clip_frac 1/3.
    """
    if variant not in AGGREGATIONS:
        raise ValueError(f"variant must be one of {sorted(AGGREGATIONS)}, not {variant!r}")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (log-probs of the reference policy)")
    mask = mask.to(logp.dtype)                                       # (N, T)
    adv = advantages.to(logp.dtype).reshape(-1, 1)                   # (N, 1)
    ratio = torch.exp(logp - old_logp.detach())                      # (N, T)
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)          # (N, T)
    objective = torch.min(ratio * adv, clipped * adv)                # (N, T)
    kl = torch.zeros_like(logp)
    if ref_logp is not None:
        d = ref_logp.detach() - logp                                 # (N, T)
        kl = torch.exp(d) - d - 1                                    # k3: unbiased, always >= 0
    per_token = -(objective - beta * kl) if beta > 0 else -objective  # (N, T)
    loss = AGGREGATIONS[variant](per_token, mask, max_tokens or logp.shape[-1])
    with torch.no_grad():  # clipping binds: ratio above 1 + eps_high with A > 0, or below 1 - eps_low with A < 0
        binds = ((ratio > 1 + eps_high) & (adv > 0)) | ((ratio < 1 - eps_low) & (adv < 0))
        count = mask.sum().clamp(min=1)
        stats = {name: float(_masked_sum(x.to(logp.dtype), mask).sum() / count)
                 for name, x in (("clip_frac", binds), ("kl", kl), ("ratio", ratio))}
    return loss, stats


# ---------------------------------------------------------------------------- inspect a database

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit("usage: python cudal1.py RUN/exemplars.jsonl  (what a run's exemplar database holds, per task)")
    if not Path(sys.argv[1]).is_file():
        sys.exit(f"cudal1.py: {sys.argv[1]}: no such file")
    try:
        db = ExemplarDB(sys.argv[1])
    except ValueError as e:
        sys.exit(f"cudal1.py: {e}")
    print(f"{len(db)} exemplars, {len(db.tasks())} tasks")
    for task in db.tasks():
        best = db.best(task)
        print(f"{task:40s} {len(db.entries(task)):5d} codes  best {best.score:6.2f}x (step {best.step})")
