"""Calibration metrics (ECE, SCE, ACE), reliability curves and multi-class AUC."""

import numpy as np
import pytest

import dpuq
from dpuq.metrics import (
    adaptive_calibration_error,
    expected_calibration_error,
    multiclass_auc,
    reliability_curve,
    static_calibration_error,
)

P = np.array(
    [
        [0.70, 0.20, 0.10],  # conf .70 right
        [0.55, 0.45, 0.00],  # conf .55 wrong (label 1)
        [0.10, 0.85, 0.05],  # conf .85 right
        [0.30, 0.30, 0.40],  # conf .40 wrong (label 0)
        [0.05, 0.05, 0.90],  # conf .90 right
    ]
)
Y = np.array([0, 1, 1, 0, 2])


class TestHandComputed:
    def test_ece_two_bins(self):
        # bins (0, .5], (.5, 1]: first holds conf .40 (wrong) -> |0 - .40| * 1/5;
        # second holds .70 .55 .85 .90 with 3 right: |3 - 3.0| / 5 = 0.
        assert expected_calibration_error(P, Y, n_bins=2) == pytest.approx(0.40 / 5)

    def test_ece_one_bin_is_accuracy_gap(self):
        acc = np.mean(P.argmax(1) == Y)
        assert expected_calibration_error(P, Y, n_bins=1) == pytest.approx(
            abs(acc - P.max(1).mean())
        )

    def test_sce_one_bin(self):
        # one bin per class: |#label k - sum_i p_ik| / n, averaged over classes
        want = np.mean([abs(2 - 1.70), abs(2 - 1.85), abs(1 - 1.45)]) / 5
        assert static_calibration_error(P, Y, n_bins=1) == pytest.approx(want)

    def test_sce_two_bins_by_loops(self):
        n, k = P.shape
        total = 0.0
        for c in range(k):
            for lo, hi in ((0.0, 0.5), (0.5, 1.0)):
                inb = (P[:, c] > lo) & (P[:, c] <= hi) if lo > 0 else (P[:, c] <= hi)
                if inb.any():
                    total += inb.sum() / n * abs(np.mean(Y[inb] == c) - P[inb, c].mean())
        assert static_calibration_error(P, Y, n_bins=2) == pytest.approx(total / k)

    def test_ace_by_loops(self):
        k = P.shape[1]
        r = 2
        gaps = []
        for c in range(k):
            order = np.argsort(P[:, c], kind="stable")
            for chunk in np.array_split(order, r):  # sizes 3 and 2: floor(i r / n) gives 3, 2
                gaps.append(abs(np.mean(Y[chunk] == c) - P[chunk, c].mean()))
        assert adaptive_calibration_error(P, Y, n_bins=r) == pytest.approx(np.mean(gaps))

    def test_reliability_curve(self):
        curve = reliability_curve(P, Y, n_bins=2)
        assert curve.counts.tolist() == [1, 4]
        assert curve.accuracy[1] == pytest.approx(0.75)
        assert curve.confidence[0] == pytest.approx(0.40)
        assert curve.bin_edges.tolist() == [0.0, 0.5, 1.0]

    def test_bin_edges_are_right_closed(self):
        # confidence exactly 0.5 belongs to the first of two bins
        probs = np.array([[0.5, 0.5], [0.9, 0.1]])
        assert reliability_curve(probs, [0, 0], n_bins=2).counts.tolist() == [1, 1]

    def test_auc_by_pairs(self):
        aucs = []
        for c in range(3):
            pos, neg = P[Y == c, c], P[Y != c, c]
            pairs = [(a > b) + 0.5 * (a == b) for a in pos for b in neg]
            aucs.append(np.mean(pairs))
        assert multiclass_auc(P, Y) == pytest.approx(np.mean(aucs))


class TestProperties:
    def test_perfectly_calibrated_sample_has_small_errors(self, rng):
        n, k = 20000, 4
        logits = rng.normal(size=(n, k)) * 2
        probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        labels = (probs.cumsum(1) > rng.random((n, 1))).argmax(1)  # y ~ probs
        assert expected_calibration_error(probs, labels) < 0.02
        assert static_calibration_error(probs, labels) < 0.01
        assert adaptive_calibration_error(probs, labels) < 0.02

    def test_overconfidence_is_detected(self, rng):
        n = 5000
        labels = rng.integers(0, 2, n)
        right = rng.random(n) < 0.7  # 70% accurate, 99% confident
        pred = np.where(right, labels, 1 - labels)
        probs = np.full((n, 2), 0.01)
        probs[np.arange(n), pred] = 0.99
        assert expected_calibration_error(probs, labels) == pytest.approx(0.29, abs=0.03)

    def test_metrics_in_unit_interval(self, rng):
        probs = rng.dirichlet(np.ones(5), size=300)
        labels = rng.integers(0, 5, 300)
        for f in (
            expected_calibration_error,
            static_calibration_error,
            adaptive_calibration_error,
        ):
            assert 0.0 <= f(probs, labels) <= 1.0
        assert 0.0 <= multiclass_auc(probs, labels) <= 1.0

    def test_exported_from_dpuq(self):
        assert dpuq.expected_calibration_error is expected_calibration_error
        assert dpuq.multiclass_auc is multiclass_auc


class TestBadInput:
    def test_labels_out_of_range(self):
        with pytest.raises(ValueError, match="labels"):
            expected_calibration_error(P, [0, 1, 3, 0, 2])

    def test_rows_not_summing_to_one(self):
        with pytest.raises(ValueError, match="sum to 1"):
            static_calibration_error(P * 2, Y)

    def test_bad_bins(self):
        with pytest.raises(ValueError, match="n_bins"):
            expected_calibration_error(P, Y, n_bins=0)
        with pytest.raises(ValueError, match="n_bins"):
            adaptive_calibration_error(P, Y, n_bins=6)

    def test_auc_needs_every_class(self):
        with pytest.raises(ValueError, match="class"):
            multiclass_auc(P, [0, 0, 1, 1, 0])
