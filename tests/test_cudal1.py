"""cudal1 core math against hand-computed numbers: GRPO loss, advantages, rewards, exemplar sampling, the database."""
import inspect
import json
import math
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cudal1 import (Exemplar, ExemplarDB, bucket_probabilities, compute_rewards, group_advantages,  # noqa: E402
                    grpo_loss, sample_exemplars)

LN2 = math.log(2)


# ---------------------------------------------------------------------------- GRPO loss

# Two sequences, T = 3, old_logp = 0 so ratio = exp(logp) is exactly the ratios below; eps_low = eps_high = 0.2.
#   seq 0: A = +1, ratios [1.5, 1.0, 0.5], mask [1, 1, 1]
#          obj = min(r*A, clip(r, .8, 1.2)*A) = [min(1.5, 1.2), 1.0, min(0.5, 0.8)] = [1.2 (clip binds), 1.0, 0.5]
#          loss = -obj = [-1.2, -1.0, -0.5]                      sum -2.7, 3 tokens
#   seq 1: A = -1, ratios [1.5, 0.5, 0.5], mask [1, 1, 0]
#          obj = [min(-1.5, -1.2), min(-0.5, -0.8), masked] = [-1.5, -0.8 (clip binds), (would bind, masked)]
#          loss = [1.5, 0.8]                                     sum 2.3, 2 tokens
RATIOS = [[1.5, 1.0, 0.5], [1.5, 0.5, 0.5]]
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
ADV = torch.tensor([1.0, -1.0])


def _logp():
    return torch.tensor(RATIOS, dtype=torch.float64).log().requires_grad_()


def _loss(**kw):
    logp = _logp()
    return grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, **{"variant": "grpo", **kw})


@pytest.mark.parametrize("variant, kw, expected", [
    ("grpo", {}, (-2.7 / 3 + 2.3 / 2) / 2),             # (-0.9 + 1.15) / 2 = 0.125
    ("dapo", {}, (-2.7 + 2.3) / 5),                     # -0.4 / 5 = -0.08
    ("drgrpo", {}, (-2.7 + 2.3) / (2 * 3)),             # max_tokens defaults to T = 3: -0.0666...
    ("drgrpo", {"max_tokens": 4}, (-2.7 + 2.3) / 8),    # -0.05
])
def test_each_loss_variant_averages_its_tokens_as_its_paper_does(variant, kw, expected):
    loss, stats = _loss(variant=variant, **kw)
    assert loss.item() == pytest.approx(expected, abs=1e-9)
    assert stats["clip_frac"] == pytest.approx(2 / 5)    # seq0 tok0 and seq1 tok1; the masked tok would be a 3rd
    assert stats["ratio"] == pytest.approx(5.0 / 5)      # (1.5 + 1 + .5 + 1.5 + .5) / 5 masked tokens
    assert stats["kl"] == 0.0


def test_clip_higher_lets_positive_ratios_reach_one_plus_eps_high():
    # eps_high 0.28: seq0 tok0 becomes min(1.5, 1.28) = 1.28 -> seq0 loss [-1.28, -1, -0.5], mean -0.92667
    loss, _ = _loss(eps_low=0.2, eps_high=0.28)
    assert loss.item() == pytest.approx((-2.78 / 3 + 2.3 / 2) / 2, abs=1e-9)  # 0.111667
    loss, _ = _loss(variant="dapo", eps_high=0.28)
    assert loss.item() == pytest.approx(-0.48 / 5, abs=1e-9)  # -0.096
    loss, stats = _loss(eps_high=0.6)  # 1.5 < 1.6: the positive side no longer binds
    assert stats["clip_frac"] == pytest.approx(1 / 5) and loss.item() == pytest.approx((-3.0 / 3 + 1.15) / 2)


def test_kl_term_is_k3_times_beta_and_reported_when_beta_is_zero():
    # ref - logp = d: seq0 tok0 d = ln2 -> k3 = 2 - ln2 - 1 = 0.306853; seq1 tok0 d = -ln2 -> 0.5 + ln2 - 1 = 0.193147
    logp = _logp()
    d = torch.tensor([[LN2, 0, 0], [-LN2, 0, 5.0]], dtype=torch.float64)  # the 5.0 sits on a masked token
    ref = logp.detach() + d
    loss, stats = grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, ref_logp=ref, beta=0.1, variant="grpo")
    # loss per token = -obj + 0.1 * kl: seq0 (-2.7 + 0.0306853) / 3 = -0.889772, seq1 (2.3 + 0.0193147) / 2 = 1.159657
    assert loss.item() == pytest.approx((-0.8897715727 + 1.1596573590) / 2, abs=1e-9)  # 0.134943
    assert stats["kl"] == pytest.approx(0.5 / 5)  # (0.306853 + 0.193147) / 5 = 0.1 exactly
    loss0, stats0 = grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, ref_logp=ref, beta=0.0, variant="grpo")
    assert loss0.item() == pytest.approx(0.125) and stats0["kl"] == pytest.approx(0.1)  # reported, not added
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, beta=0.1)


def test_gradients_reach_only_unclipped_unmasked_tokens():
    logp = _logp()
    loss, _ = grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, variant="grpo")
    loss.backward()
    # grpo: d loss / d logp = -A * ratio / (tokens in seq * N) on unclipped tokens, 0 on clipped and masked ones
    expected = [[0.0, -1.0 / 6, -0.5 / 6], [1.5 / 4, 0.0, 0.0]]
    assert torch.allclose(logp.grad, torch.tensor(expected, dtype=torch.float64), atol=1e-12)
    assert logp.grad[1, 2] == 0  # masked


def test_an_unknown_variant_is_refused_and_column_advantages_are_rows():
    with pytest.raises(ValueError, match="dapo.*drgrpo.*grpo"):
        _loss(variant="ppo")
    loss_col, _ = grpo_loss(_logp(), torch.zeros(2, 3, dtype=torch.float64), ADV.reshape(2, 1), MASK, variant="grpo")
    assert loss_col.item() == pytest.approx(0.125)  # (N, 1) advantages are read as (N,)


# ---------------------------------------------------------------------------- advantages

STD = dict(std_normalize=True, std_floor=0.0)  # the paper's GRPO: over the group's std, no floor


def test_group_advantages_are_z_scores_and_zero_for_an_equal_group():
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]])
    # row 0: mean 2.5, population std sqrt((2.25 + .25 + .25 + 2.25) / 4) = sqrt(1.25) = 1.118034
    a = group_advantages(r, **STD)
    assert a[0].tolist() == pytest.approx([-1.5 / 1.118134, -0.5 / 1.118134, 0.5 / 1.118134, 1.5 / 1.118134], abs=1e-5)
    assert a[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # no signal in an all-equal group
    assert group_advantages(r, **STD, eps=0.0)[0, 0].item() == pytest.approx(-1.5 / math.sqrt(1.25))
    assert group_advantages(r, std_normalize=False).tolist() == [[-1.5, -0.5, 0.5, 1.5], [0.0] * 4]
    assert group_advantages(torch.tensor([[0.0, 1.0]]), **STD, eps=0).tolist() == [[-1.0, 1.0]]  # population std 0.5


def test_std_floor_keeps_timing_noise_from_earning_a_wins_advantage():
    """Timing noise: [1.00, 1.05, 0.95, 1.00] has std sqrt((0 + .0025 + .0025 + 0) / 4) = 0.035355, so plain GRPO gives
    +-0.05 / (0.035355 + 1e-4) = +-1.41022, as large as a real win. A floor of 0.1 divides by 0.1 + 1e-4 instead:
    +-0.4995. A real 2x among 1x codes, [1, 1, 1, 2] (mean 1.25, std sqrt(.1875) = 0.433013), is above the floor."""
    noise, win = torch.tensor([[1.0, 1.05, 0.95, 1.0]]), torch.tensor([[1.0, 1.0, 1.0, 2.0]])
    assert group_advantages(noise, **STD)[0].tolist() == pytest.approx([0, 1.41022, -1.41022, 0], abs=1e-5)
    floored = group_advantages(noise, std_normalize=True, std_floor=0.1)
    assert floored[0].tolist() == pytest.approx([0, 0.4995, -0.4995, 0], abs=1e-5)
    assert group_advantages(win, std_normalize=True, std_floor=0.1).tolist() == group_advantages(win, **STD).tolist()
    assert group_advantages(win, **STD)[0, 3].item() == pytest.approx(0.75 / 0.433113, abs=1e-5)  # 1.731651
    assert group_advantages(noise, std_normalize=False, std_floor=0.1).tolist() == \
        group_advantages(noise, std_normalize=False, std_floor=0.0).tolist()  # no std, nothing to floor


# ---------------------------------------------------------------------------- rewards

def ok(s, **kw):
    return {"status": "ok", "correct": True, "speedup": s, "same_as_reference": False, **kw}


PAPER = dict(fail_reward=0.0, log_speedup=False, normalize=True, clip=1.5)  # the paper's reward shape
FAIL = {"status": "wrong_output", "correct": False, "speedup": None, "same_as_reference": False}


def test_normalised_rewards_are_clipped_at_k_stds():
    # raw [4, 1, 1, 1, 1]: mu 1.6, sigma sqrt((2.4^2 + 4 * 0.6^2) / 5) = sqrt(1.44) = 1.2 -> [2.0, -0.5 x4]
    r = compute_rewards([ok(4.0)] + [ok(1.0)] * 4, **PAPER)
    assert r.tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5, -0.5], abs=1e-6)
    assert compute_rewards([ok(4.0)] + [ok(1.0)] * 4, **dict(PAPER, clip=None))[0] == pytest.approx(2.0, abs=1e-6)
    assert compute_rewards([ok(4.0)] + [ok(1.0)] * 4, **dict(PAPER, clip=0))[0] == pytest.approx(2.0, abs=1e-6)


def test_failures_and_reference_copies_earn_the_failure_reward():
    # raw [2, 1, 0 (fail), 0 (same as reference: its 5x is not credited; a copy earns what a failure earns)]:
    # mu 0.75, sigma sqrt((1.5625 + .0625 + .5625 + .5625) / 4) = sqrt(.6875) = 0.829156
    # -> [1.25, .25, -.75, -.75] / sigma = [1.507557 (clipped to 1.5), 0.301511, -0.904534, -0.904534]
    results = [ok(2.0), ok(1.0), FAIL, ok(5.0, same_as_reference=True)]
    assert compute_rewards(results, **PAPER).tolist() == pytest.approx([1.5, 0.301511, -0.904534, -0.904534], abs=1e-6)
    raw = compute_rewards(results, normalize=False, clip=None, fail_reward=-1.0, log_speedup=False)
    assert raw.tolist() == [2.0, 1.0, -1.0, -1.0]
    # copy_reward 1.0 is the old rule (a copy as a 1x code): raw [2, 1, 0, 1], mu 1, sigma sqrt(.5)
    assert compute_rewards(results, copy_reward=1.0, **PAPER).tolist() == \
        pytest.approx([math.sqrt(2), 0, -math.sqrt(2), 0])
    assert compute_rewards(results, normalize=False, clip=None, log_speedup=True, fail_reward=-5.0,
                           copy_reward=-2.0).tolist() == pytest.approx([LN2, 0.0, -5.0, -2.0])  # as given, not log
    odd = [ok(3.0, status="rejected"), ok(3.0, correct=False), ok(None), ok(float("nan"))]
    assert compute_rewards(odd, **dict(PAPER, normalize=False, clip=None)).tolist() == [0.0, 0.0, 1.0, 0.0]


def test_rewards_read_result_objects_and_log_speedups():
    class R:
        def __init__(self, s):
            self.status, self.correct, self.speedup, self.same_as_reference = "ok", True, s, False

    assert compute_rewards([R(math.e), R(1.0), R(1 / math.e)], log_speedup=True, normalize=False).tolist() == \
        pytest.approx([1.0, 0.0, -1.0])
    r = compute_rewards([ok(1.03), ok(0.97), ok(1.2), ok(0.9)], log_speedup=False)
    assert r.tolist() == [1.03, 0.97, 1.2, 0.9]  # rounding near 1 is the measurement's (runs.rounded), not done here
    assert compute_rewards([ok(2.0)] * 3, **PAPER).tolist() == [0.0, 0.0, 0.0]  # all equal -> zeros
    assert compute_rewards([]).shape == (0,)


# ---------------------------------------------------------------------------- exemplar sampling

# scores [0.2, 0.4, 1.0, 1.1, 1.3, 2.6], width 0.5 -> buckets 0: {0.2, 0.4}, 2: {1.0, 1.1, 1.3}, 5: {2.6}
# bucket means 0.3, 1.13333, 2.6; global mean 6.6 / 6 = 1.1; logits (tau 1) -0.8, 0.033333, 1.5
# exp: 0.449329, 1.033895, 4.481689; sum 5.964913 -> p = 0.075329, 0.173329, 0.751342


SCORES = [0.2, 0.4, 1.0, 1.1, 1.3, 2.6]
P = {0: 0.0753287, 2: 0.1733295, 5: 0.7513419}


def _entries(scores=SCORES):
    return [Exemplar("t", f"code {i}", s) for i, s in enumerate(scores)]


def test_buckets_are_drawn_by_the_softmax_of_their_mean_scores():
    probs = bucket_probabilities(_entries(), bucket_width=0.5, tau=1.0)
    assert list(probs) == [0, 2, 5] and list(probs.values()) == pytest.approx(list(P.values()), abs=1e-6)
    flat = bucket_probabilities(_entries(), bucket_width=0.5, tau=1e6)  # large tau -> uniform over buckets
    assert list(flat.values()) == pytest.approx([1 / 3] * 3, abs=1e-5)
    assert list(bucket_probabilities(_entries(), bucket_width=10.0).values()) == [1.0]


def test_sampled_frequencies_match_the_softmax_and_are_uniform_in_a_bucket():
    rng, entries, draws = np.random.default_rng(0), _entries(), 20_000
    codes = Counter(sample_exemplars(entries, 1, rng=rng)[0].code for _ in range(draws))
    bucket_of = {f"code {i}": math.floor(s / 0.5) for i, s in enumerate(SCORES)}
    freq = Counter()
    for code, k in codes.items():
        freq[bucket_of[code]] += k / draws
    for b, p in P.items():
        assert abs(freq[b] - p) < 0.01, (b, freq[b], p)  # binomial std <= 0.0035 at 20k draws
    # uniform inside a bucket: 1.0, 1.1, 1.3 each get a third of bucket 2
    for code in ("code 2", "code 3", "code 4"):
        assert abs(codes[code] / draws - P[2] / 3) < 0.01


def test_two_exemplars_come_from_distinct_buckets_slower_first():
    rng, entries, draws = np.random.default_rng(1), _entries(), 5000
    with_top = 0
    for _ in range(draws):
        a, b = sample_exemplars(entries, 2, rng=rng)
        assert a.score <= b.score  # sorted ascending: slower first
        assert math.floor(a.score / 0.5) != math.floor(b.score / 0.5)
        with_top += b.score == 2.6
    # P(bucket 5 in the pair) = p5 + p0 * p5 / (1 - p0) + p2 * p5 / (1 - p2) = 0.970085
    assert abs(with_top / draws - 0.970085) < 0.01


def test_sampling_edge_cases_and_the_best_and_random_modes():
    rng = np.random.default_rng(2)
    one_bucket = _entries([1.0, 1.1, 1.2, 1.3])  # one bucket, n = 2: one from the bucket, one more uniformly
    for _ in range(50):
        got = sample_exemplars(one_bucket, 2, rng=rng)
        assert len({e.code for e in got}) == 2 and got[0].score <= got[1].score
    two = _entries([2.0, 0.5])  # fewer entries than n: all of them, sorted
    assert [e.score for e in sample_exemplars(two, 3, rng=rng)] == [0.5, 2.0]
    assert sample_exemplars([], 2, rng=rng) == []
    assert [e.score for e in sample_exemplars(_entries(), 2, mode="best", rng=rng)] == [1.3, 2.6]
    seen = Counter()
    for _ in range(3000):
        got = sample_exemplars(_entries(), 2, mode="random", rng=rng)
        assert got[0].code != got[1].code and got[0].score <= got[1].score
        seen.update(e.code for e in got)
    assert all(abs(k / 3000 - 2 / 6) < 0.03 for k in seen.values()) and len(seen) == 6  # uniform
    with pytest.raises(ValueError, match="best.*contrastive.*random"):
        sample_exemplars(_entries(), 2, mode="greedy", rng=rng)
    tiny_tau = sample_exemplars(_entries(), 2, tau=1e-9, rng=rng)  # no NaN when the softmax is one-hot
    assert tiny_tau[1].score == 2.6


# ---------------------------------------------------------------------------- exemplar database

def test_the_database_round_trips_dedups_and_seeds_references(tmp_path):
    path = tmp_path / "run" / "exemplars.jsonl"
    db = ExemplarDB(path)
    assert db.seed_reference("relu", "ref code\n") and not db.seed_reference("relu", "ref code\n")
    assert db.add("relu", "fast code\n", 1.8, step=3, meta={"cand_ms": 0.5})
    assert not db.add("relu", "fast code   \n\n", 2.5, step=4)  # same code up to trailing whitespace: measured again
    assert db.add("gelu", "fast code\n", 1.1)  # same code, other task
    assert len(db) == 3 and db.tasks() == ["relu", "gelu"]
    assert db.best("relu").score == pytest.approx((1.8 + 2.5) / 2)  # the median of its two measurements
    assert db.best("nope") is None and db.entries("nope") == []
    again = ExemplarDB(path)
    assert again.entries("relu") == db.entries("relu") and len(again) == 3
    assert again.entries("relu")[0] == Exemplar("relu", "ref code\n", 1.0, 0, {"reference": True}, [1.0])
    assert again.entries("relu")[1].meta == {"cand_ms": 0.5} and again.entries("relu")[1].step == 3
    assert not again.seed_reference("relu", "ref code\n") and len(path.read_text().splitlines()) == 4
    for bad in (float("nan"), float("inf"), -1.0, 0.0, None, "2.0", True):  # no speedup: refused, nothing stored
        assert not db.add("relu", "x", bad)
    assert not db.holds("relu", "x") and len(path.read_text().splitlines()) == 4
    with pytest.raises(TypeError):  # unserialisable meta: nothing stored, in memory or on disk
        db.add("relu", "y", 1.2, meta={"f": object()})
    assert len(db) == 3 and len(ExemplarDB(path)) == 3 and db.add("relu", "y", 1.2)
    assert ExemplarDB(None).add("t", "x", 1.0) and not list(tmp_path.glob("*.jsonl"))  # in-memory database


def test_a_code_measured_again_scores_the_median_of_its_measurements(tmp_path):
    """A code measured again is not dropped as a duplicate: its score is the median of its measured speedups, kept
    with their count across a reload (each measurement is one line). The reference stays at 1.0."""
    path = tmp_path / "exemplars.jsonl"
    db = ExemplarDB(path)
    db.seed_reference("t", "ref")
    assert db.add("t", "fast", 9.0, step=1)       # a lucky first measurement
    assert not db.add("t", "fast  \n", 2.0, step=2)  # the same code: median(9, 2) = 5.5
    assert db.entries("t")[1].score == 5.5
    assert not db.add("t", "fast", 2.4, step=3)   # median(9, 2, 2.4) = 2.4
    assert not db.add("t", "ref", 5.0, step=3)    # the reference's code measured: it is 1.0 by definition
    for d in (db, ExemplarDB(path)):
        ref, fast = d.entries("t")
        assert (ref.score, ref.measured) == (1.0, [1.0])
        assert (fast.score, fast.measured, fast.step) == (2.4, [9.0, 2.0, 2.4], 1)  # step: first measured
    assert len(path.read_text().splitlines()) == 4 and db.holds("t", "fast\n") and not db.holds("u", "fast")


def test_a_torn_last_line_of_the_database_is_dropped(tmp_path):
    path = tmp_path / "exemplars.jsonl"
    db = ExemplarDB(path)
    db.add("t", "a", 1.0)
    db.add("t", "b", 2.0)
    with open(path, "a") as f:
        f.write('{"task": "t", "code": "c", "sco')  # a crash mid-write
    with pytest.warns(UserWarning, match="torn"):
        db = ExemplarDB(path)
    assert [e.code for e in db.entries("t")] == ["a", "b"]
    assert db.add("t", "c", 3.0)  # the next append lands on a clean line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [e.code for e in ExemplarDB(path).entries("t")] == ["a", "b", "c"]
    lines = path.read_text().splitlines()
    lines.insert(1, "{broken")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=":2: corrupt"):  # damage in the middle is not a crash artefact
        ExemplarDB(path)


def test_db_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "exemplars.jsonl"
    path.write_text(json.dumps({"task": "t", "code": "a", "score": 1.5}))  # complete record, no newline
    db = ExemplarDB(path)
    db.add("t", "b", 2.0)
    assert [e.code for e in ExemplarDB(path).entries("t")] == ["a", "b"]


@pytest.mark.parametrize("args, says", [([], "usage: python cudal1.py RUN/exemplars.jsonl"),
                                        (["no/such/exemplars.jsonl"], "no/such/exemplars.jsonl: no such file"),
                                        (["corrupt.jsonl"], "corrupt.jsonl:2: corrupt line")],
                         ids=["no-argument", "missing-file", "corrupt-line"])
def test_cli_errors_are_one_line(tmp_path, args, says):
    """`python cudal1.py` without its argument, with a missing file or a corrupt one: one line on stderr, exit 1
    (not an IndexError, nor "0 exemplars" for a file that is not there); a good file prints its tasks."""
    import subprocess
    cli = [sys.executable, str(Path(__file__).resolve().parents[1] / "cudal1.py")]
    (tmp_path / "corrupt.jsonl").write_text('{"task": "t", "code": "a", "score": 1.5}\n{broken\n'
                                            '{"task": "t", "code": "b", "score": 2.5}\n')
    bad = subprocess.run(cli + args, cwd=tmp_path, capture_output=True, text=True)
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode == 1 and len(lines) == 1 and says in lines[0], bad.stderr
    (tmp_path / "good.jsonl").write_text('{"task": "t", "code": "a", "score": 1.5}\n')
    good = subprocess.run(cli + ["good.jsonl"], cwd=tmp_path, capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout.startswith("1 exemplars, 1 tasks"), good.stderr


def test_a_reloaded_database_draws_the_same_exemplars(tmp_path):
    path = tmp_path / "exemplars.jsonl"
    db = ExemplarDB(path)
    for i, s in enumerate([0.3, 0.9, 1.0, 1.2, 1.6, 2.2, 3.1, 0.7]):
        db.add("t", f"code {i}", s, step=i)
    rng = np.random.default_rng(7)
    first = [sample_exemplars(db.entries("t"), 2, rng=rng) for _ in range(20)]
    again, rng = ExemplarDB(path), np.random.default_rng(7)
    second = [sample_exemplars(again.entries("t"), 2, rng=rng) for _ in range(20)]
    assert first == second and len({tuple(e.code for e in pair) for pair in first}) > 1


def test_the_defaults_are_what_rl_py_runs():
    """A fork that calls these functions directly gets rl.py's maths: log-speedup rewards, no normalisation over the
    step, group advantages without the std, the token-mean loss (the paper's settings are keyword arguments)."""
    import rl
    cfg = rl.Config()

    def defaults(f):
        return {k: p.default for k, p in inspect.signature(f).parameters.items()}
    r, a, g = defaults(compute_rewards), defaults(group_advantages), defaults(grpo_loss)
    assert (r["fail_reward"], r["log_speedup"], r["normalize"], r["clip"], r["copy_reward"]) == \
        (cfg.fail_reward, cfg.log_speedup, cfg.reward_normalize, None, None)  # (None: as a failure, cfg's "fail")
    assert (a["std_normalize"], a["std_floor"]) == (cfg.std_normalize, cfg.adv_std_floor)
    assert (g["variant"], g["eps_low"], g["eps_high"], g["beta"]) == (cfg.loss_variant, cfg.eps_low, cfg.eps_high,
                                                                      cfg.beta)
    s = defaults(sample_exemplars)
    assert (s["n"], s["bucket_width"], s["tau"], s["mode"]) == (cfg.n_exemplars, cfg.bucket_width, cfg.tau,
                                                                cfg.exemplar_mode)
