"""Class-conditional planning at a tiny ε: bounded work whatever ε.

The padding P grows like 1/ε (about 4 log(m/α)/ε: 1.8·10^10 at ε = 1e-9). The rank schedule
summed the certificate's terms from t = -(n+1) up to n + P, and the sparse knots built a grid
of about 3360/ε integers, so ``calibrate_by_class`` at ε <= 1e-9 ran for hours (and ran out of
memory from ε = 1e-6) before the charge. The tiny-ε calls run in a subprocess with a timeout,
so that a regression fails instead of hanging the suite.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpuq
import dpuq.conformal._class_bins as class_bins
import dpuq.conformal.class_levels as class_levels
from dpuq.conformal._class_sums import g, g_sum_lower_bound
from dpuq.mechanisms.class_thresholds import check_rank_schedule

_SCRIPT = """
import json, sys, warnings
import numpy as np
import dpuq
from dpuq.conformal.class_levels import (
    class_padding, class_rank_knots, class_rank_schedule, padded_coverage_certificate)
from dpuq.mechanisms.class_thresholds import check_rank_schedule, rank_at

warnings.simplefilter("ignore")  # the uninformative-release warning: expected here
ledger = dpuq.Ledger(sys.argv[1])
ledger.create_budget("d", epsilon=1.0)
out = {"releases": []}
scores, labels = [0.1] * 6 + [0.5] * 4, [0, 0, 0, 1, 1, 0, 1, 0, 1, 1]
for eps in (1e-9, 1e-12):
    cal = dpuq.calibrate_by_class(scores, labels, 2, alpha=0.1, epsilon=eps, n_bins=10,
                                  random_state=0, ledger=ledger, dataset="d")
    out["releases"].append([list(cal.thresholds), cal.pad, class_padding(0.1, eps, 10)])
    auto = dpuq.calibrate_by_class(scores, labels, 2, alpha=0.1, epsilon=eps, random_state=1)
    out["releases"].append([list(auto.thresholds), auto.pad, class_padding(0.1, eps, auto.n_bins)])
out["charged"] = [r.epsilon for r in ledger.releases("d")]
rho, pad = class_rank_schedule(40, alpha=0.1, epsilon=1e-9, n_bins=10)
check_rank_schedule(rho, pad)
out["certificates"] = [padded_coverage_certificate(n, int(rho[n]), epsilon=1e-9, n_bins=10)
                       for n in range(41)]
knots, pad = class_rank_knots(10**7, alpha=0.1, epsilon=1e-9, n_bins=1000)
check_rank_schedule(knots, pad)
size = 70_001  # between knots, in the sparse part
rank = int(rank_at(knots, [size])[0])
out["sparse"] = [int(knots.sizes.size),
                 padded_coverage_certificate(size, rank, epsilon=1e-9, n_bins=1000)]
print(json.dumps(out))
"""


def test_tiny_epsilon_plans_in_bounded_work_and_releases(tmp_path):
    """ε = 1e-9 and 1e-12: the release returns (it hung before the charge), charges its ε,
    and the schedule keeps its certificate; 10^7 points plan too (sparse knots)."""
    src = str(Path(dpuq.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "ledger.sqlite")],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    edges = {(j + 1) / m for m in range(2, 100) for j in range(m)}
    for thresholds, pad, expected_pad in out["releases"]:
        assert pad == expected_pad > 10**10
        assert all(any(math.isclose(t, e) for e in edges) for t in thresholds)
    assert out["charged"] == [1e-9, 1e-12]  # the releases are real: charged, after planning
    assert min(out["certificates"]) >= 0.9
    n_knots, certificate = out["sparse"]
    assert n_knots < 10**6 and certificate >= 0.9


@pytest.mark.parametrize("eps_c", [1e-9, 1e-6, 1e-3, 0.05, 1.0])
@pytest.mark.parametrize("m", [2, 10, 1000])
def test_closed_form_sum_is_a_close_lower_bound(eps_c, m):
    """``g_sum_lower_bound`` <= the sum (float sum of every term), within ``3ε_c/32`` + rounding,
    on runs of 1 to 10^5 terms around and far from g's rise."""
    rng = np.random.default_rng(11)
    centre = 2.0 / eps_c * math.log(m - 1)  # g = 1/2 here
    width = 2.0 / eps_c
    for _ in range(40):
        first = int(centre + width * rng.uniform(-30.0, 30.0))
        last = first + int(rng.integers(0, 100_000))
        exact = math.fsum(g(np.arange(first, last + 1), eps_c, m).tolist())
        lower = float(g_sum_lower_bound(np.array([first]), np.array([last]), eps_c, m)[0])
        assert lower <= exact + 1e-12 * (last - first + 1)
        assert exact - lower <= 3 * eps_c / 32 + 1e-12 * (last - first + 1)
    assert g_sum_lower_bound(np.array([5]), np.array([4]), eps_c, m).tolist() == [0.0]


def test_closed_form_knots_stay_within_one_rank_above_the_exact_ones(monkeypatch):
    """Forced (a grid cap of 1), the closed-form knots are a valid schedule, at or one above
    the exact sums' knots (a lower bound on each sum can only raise ρ*)."""
    for n, eps, m in [(300_000, 1e-3, 100), (200_000, 0.03, 10)]:
        exact, pad = class_levels.class_rank_knots(n, alpha=0.1, epsilon=eps, n_bins=m)
        with monkeypatch.context() as patch:
            patch.setattr(class_levels, "_MAX_GRID", 1)
            closed, pad_closed = class_levels.class_rank_knots(n, alpha=0.1, epsilon=eps, n_bins=m)
        check_rank_schedule(closed, pad_closed)
        assert pad_closed == pad and np.array_equal(closed.sizes, exact.sizes)
        step = closed.ranks - exact.ranks
        assert step.min() >= 0 and step.max() <= 1


def test_an_alpha_within_the_certificates_slack_is_refused_before_the_charge(tmp_path):
    """At alpha <= 1e-9 (the certificates' float slack) the padding's target was 1 or more: the
    old code looped forever below 1e-9 and, at 1e-9, met it by rounding only; the closed form
    divided by zero. Refused by name now, before anything is charged."""
    import dpuq
    from dpuq.conformal.class_levels import MIN_CLASS_ALPHA, class_padding

    led = dpuq.Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=1.0)
    for a in (1e-9, 1e-10, 1e-12):
        with pytest.raises(ValueError, match="alpha must be at least 1e-08"):
            dpuq.calibrate_by_class([0.1] * 6 + [0.5] * 4, [0, 0, 0, 1, 1, 0, 1, 0, 1, 1], 2,
                                    alpha=a, epsilon=1.0, n_bins=10, ledger=led,
                                    dataset="d")  # fmt: skip
    assert led.status("d").spent_epsilon == 0.0
    assert class_padding(MIN_CLASS_ALPHA, 1.0, 10) > 0


@pytest.mark.parametrize(("alpha", "epsilon"), [(2e-8, 1e-12), (1e-6, 1e-12), (0.1, 1e-12),
                                                (1e-3, 1e-6)])  # fmt: skip
def test_the_padding_is_the_smallest_p_whose_g_reaches_the_target(alpha, epsilon):
    """A walk of one p at a time took 440,090 steps (1 s, 40 s through auto bins) at alpha =
    2e-9, epsilon = 1e-12; a gallop and a bisection find the same smallest p."""
    from dpuq.conformal.class_levels import _SLACK, _g, class_padding

    p = class_padding(alpha, epsilon, 10)
    target = 1.0 - alpha + _SLACK
    assert _g(p, epsilon / 2, 10) >= target and (p == 0 or _g(p - 1, epsilon / 2, 10) < target)


def test_bin_search_sums_in_closed_form_when_the_run_is_long(monkeypatch):
    """``auto_class_bins`` at n = 10^6, ε = 1e-12 summed ~5·10^5 terms per bisection step
    (1800 steps: 12 s; 73 s at n = 10^7); where the run is long it now uses the knots' closed
    form, O(1) a step, and picks the same bins."""
    import dpuq.planning.levels as levels

    exact_cert = levels._cert

    def short_only(n, rho, epsilon, m):
        assert min(n, 2 * levels._CUT / (0.5 * epsilon)) <= class_bins._BIN_SEARCH_TERMS
        return exact_cert(n, rho, epsilon, m)

    monkeypatch.setattr(levels, "_cert", short_only)
    assert class_levels.auto_class_bins(10**6, 2, 0.1, 1e-12) == 4  # uninformative: fewest
    assert class_levels.auto_class_bins(10**6, 10, 0.1, 1e-3) == 27  # as the exact sums
    assert class_levels.auto_class_bins(10**4, 10, 0.1, 1.0) == 81  # short runs: exact sums
    monkeypatch.setattr(levels, "_cert", exact_cert)
    for n, eps, m in [(70_000, 1e-3, 27), (100_000, 1e-5, 300), (300_000, 1e-12, 5000)]:
        pad = class_levels.class_padding(0.1, eps, m)
        closed = class_bins._rank_star(n, 0.1, eps / 2, m, pad, class_levels._SLACK)
        with monkeypatch.context() as patch:
            patch.setattr(class_bins, "_BIN_SEARCH_TERMS", 10**12)  # the exact sums
            exact = class_bins._rank_star(n, 0.1, eps / 2, m, pad, class_levels._SLACK)
        assert exact <= closed <= exact + 1  # a lower bound on the sums: never a lower rank
