"""Private conformal risk control: privacy by neighbour enumeration, the certificate exactly on
small urns (with a negative control), risk over random splits, helpers and the ledger."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import dpuq
from dpuq.conformal.risk_control import (
    conformal_risk_control,
    false_negative_losses,
    interval_losses,
    risk_control,
)
from dpuq.mechanisms.risk import (
    _log_weights,
    _risk_selection_rows,
    certified_risk_target,
    loss_sums,
    risk_certificate,
    risk_selection_log_distribution,
)

VALUES = (0.0, 0.5, 1.0)
M = 3
# every loss vector on the lattice VALUES, nonincreasing, 0 at the last grid value
VECTORS = [
    np.array([*v, 0.0])
    for v in itertools.product(VALUES, repeat=M - 1)
    if all(v[i] >= v[i + 1] for i in range(len(v) - 1))
]


def _law(cal: np.ndarray, tau: float, eps: float) -> np.ndarray:
    lw = _log_weights(cal.sum(axis=0), cal.shape[0], tau, eps)
    return np.exp(lw - logsumexp(lw))


def _worst_urn_risk(n: int, tau: float, eps: float) -> float:
    """Largest exact E[L_{n+1}(λ_J)] over urns of n + 1 lattice loss vectors (random order)."""
    worst = 0.0
    for urn in itertools.combinations_with_replacement(range(len(VECTORS)), n + 1):
        A = np.array([VECTORS[i] for i in urn])
        risk = sum(_law(np.delete(A, t, 0), tau, eps) @ A[t] for t in range(n + 1))
        worst = max(worst, risk / (n + 1))
    return worst


def _worst_log_ratio(n: int, eps_law: float) -> float:
    """Largest |log P(J=j|D) - log P(J=j|D')| over replace-one neighbours of lattice data."""
    worst = 0.0
    for data in itertools.combinations_with_replacement(range(len(VECTORS)), n):
        A = np.array([VECTORS[i] for i in data])
        for tau in (0.0, 0.7, n / 2, float(n)):
            lp = risk_selection_log_distribution(A, tau, eps_law)
            for i in range(n):  # replace person i by every other vector
                for v in VECTORS:
                    B = A.copy()
                    B[i] = v
                    lq = risk_selection_log_distribution(B, tau, eps_law)
                    worst = max(worst, float(np.abs(lp - lq).max()))
    return worst


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_privacy_by_neighbour_enumeration(n, eps):
    worst = _worst_log_ratio(n, eps)
    assert worst <= eps + 1e-9
    assert worst > 0.3 * eps  # the enumeration reaches informative neighbours


def test_privacy_enumeration_catches_a_doubled_epsilon():
    # a law using exp(ε u) (no factor 1/2) is caught exceeding ε
    assert _worst_log_ratio(3, 2.0 * 1.0) > 1.0 + 1e-6


@pytest.mark.parametrize("n", [2, 3, pytest.param(4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_certificate_holds_exactly_on_every_urn(n, eps):
    for tau in (0.0, 0.5, 1.0, n / 2, float(n)):
        assert _worst_urn_risk(n, tau, eps) <= risk_certificate(n, tau, eps, M) + 1e-12


def test_negative_control_uninflated_target_fails():
    n, alpha, eps = 4, 0.4, 0.5
    tau = alpha * (n + 1) - 1  # non-private CRC's target, no inflation for privacy
    assert _worst_urn_risk(n, tau, eps) > alpha + 0.05
    assert risk_certificate(n, tau, eps, M) > alpha  # the certificate refuses it


def test_certificate_limits_and_target():
    assert risk_certificate(1000, 99.0, 100.0, 100) == pytest.approx(100 / 1001, abs=1e-4)
    tau = certified_risk_target(1000, 0.1, 1.0, 100)
    assert (
        risk_certificate(1000, tau, 1.0, 100) <= 0.1 < risk_certificate(1000, tau + 1e-6, 1.0, 100)
    )
    assert 85 < tau < 99
    assert certified_risk_target(10, 0.05, 1.0, 100) is None


def test_sampler_matches_exact_law():
    rng = np.random.default_rng(0)
    losses = np.sort(rng.uniform(size=(30, 5)), axis=1)[:, ::-1].copy()
    losses[:, -1] = 0.0
    lp = risk_selection_log_distribution(losses, 4.0, 1.0)
    draws = _risk_selection_rows(np.tile(loss_sums(losses), (40000, 1)), 30, 4.0, 1.0, 1)
    freq = np.bincount(draws, minlength=5) / draws.size
    assert np.abs(freq - np.exp(lp)).max() < 0.01


def _fnr_data(seed=0):
    rng = np.random.default_rng(seed)
    N, K = 6000, 8
    y = rng.uniform(size=(N, K)) < 0.3
    probs = np.clip(0.5 * y + rng.uniform(0, 0.6, size=(N, K)), 0, 1)
    return y, probs


def test_risk_over_random_splits_within_three_se():
    y, probs = _fnr_data()
    lam = np.linspace(0, 1, 51)
    losses = false_negative_losses(y, probs, lam)
    n, alpha, eps, splits = 500, 0.1, 1.0, 200
    rng = np.random.default_rng(3)
    tau = certified_risk_target(n, alpha, eps, lam.size)
    perms = [rng.permutation(len(losses)) for _ in range(splits)]
    sums = np.array([loss_sums(losses[p[:n]]) for p in perms])
    idx = _risk_selection_rows(sums, n, tau, eps, random_state=4)
    risks = np.array([losses[p[n:], j].mean() for p, j in zip(perms, idx, strict=True)])
    se = risks.std(ddof=1) / np.sqrt(splits)
    assert risks.mean() <= alpha + 3 * se
    # and near the non-private λ̂ (within ×1.25)
    crc = np.array([lam[conformal_risk_control(losses[p[:n]], alpha)] for p in perms[:50]])
    assert np.median(lam[idx]) <= 1.25 * np.median(crc)


def test_risk_control_api_and_ledger(tmp_path):
    y, probs = _fnr_data(1)
    lam = np.linspace(0, 1, 51)
    losses = false_negative_losses(y[:1000], probs[:1000], lam)
    ledger = dpuq.Ledger(tmp_path / "l.sqlite")
    ledger.create_budget("d", 2.0)
    rc = dpuq.risk_control(
        losses, alpha=0.1, epsilon=1.0, lambdas=lam, random_state=0, ledger=ledger, dataset="d"
    )
    assert rc.lambda_ == lam[rc.index] and rc.informative and rc.certified_risk <= 0.1
    assert rc.privacy_report.epsilon == 1.0 and rc.privacy_report.seeded
    assert ledger.status("d").spent_epsilon == pytest.approx(1.0)
    assert rc.to_dict()["lambda"] == rc.lambda_


def test_uninformative_release_is_the_last_lambda():
    losses = np.tile([1.0, 0.0], (10, 1))
    rc = risk_control(losses, alpha=0.05, epsilon=1.0, lambdas=[0.0, 1.0], random_state=0)
    assert not rc.informative and rc.index == 1 and rc.certified_risk == 0.0
    assert rc.privacy_report.notes


@pytest.mark.parametrize(
    "losses, match",
    [
        (np.array([[0.5, 0.6, 0.0]]), "nonincreasing"),
        (np.array([[1.5, 0.0]]), r"\[0, 1\]"),
        (np.array([1.0, 0.0]), "shape"),
    ],
)
def test_bad_losses(losses, match):
    with pytest.raises(ValueError, match=match):
        risk_control(losses, alpha=0.1, epsilon=1.0)


def test_bad_settings():
    losses = np.tile([1.0, 0.0], (10, 1))
    with pytest.raises(ValueError, match="alpha"):
        risk_control(losses, alpha=1.5, epsilon=1.0)
    with pytest.raises(ValueError, match="lambdas"):
        risk_control(losses, alpha=0.1, epsilon=1.0, lambdas=[1.0, 0.0])


def test_loss_helpers():
    out = false_negative_losses(
        [[1, 1, 0], [0, 0, 0]], [[0.9, 0.3, 0.8], [0.1, 0.1, 0.1]], [0, 0.5, 1]
    )
    assert out.tolist() == [[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]]
    il = interval_losses([0.0, 2.0], [0.0, 0.0], [0.0, 1.0, np.inf], bound=2.0)
    assert il.tolist() == [[0.0, 0.0, 0.0], [1.0, 0.5, 0.0]]
    with pytest.raises(ValueError, match="end at 1"):
        false_negative_losses([[1]], [[0.5]], [0.0, 0.5])
    # a finite last lambda is a settings error whatever the residuals (never data-dependent)
    for y in ([0.0, 0.1], [0.0, 99.0]):
        with pytest.raises(ValueError, match="end with inf"):
            interval_losses(y, [0.0, 0.0], [0.0, 1.0, 5.0])
    with pytest.raises(ValueError, match="finite"):
        interval_losses([np.nan, 1.0], [0.0, 0.0], [0.0, np.inf])


def test_a_release_decided_by_public_quantities_charges_nothing(tmp_path):
    """Review 34 (issue 34, item 5): when no target is certified at (n, alpha, epsilon, m) the
    last lambda is released whatever the data; it charged epsilon before, now 0, as calibrate."""
    losses = np.zeros((20, 11))  # n = 20 at alpha = 0.05, epsilon = 0.5: nothing certified
    assert certified_risk_target(20, 0.05, 0.5, 11) is None
    ledger = dpuq.Ledger(tmp_path / "l.sqlite")
    ledger.create_budget("d", 1.0)
    rc = risk_control(losses, alpha=0.05, epsilon=0.5, ledger=ledger, dataset="d")
    assert not rc.informative and rc.index == 10
    assert rc.privacy_report.epsilon == 0.0
    assert any("public quantities" in note for note in rc.privacy_report.notes)
    assert [r.epsilon for r in ledger.releases("d")] == [0.0]
