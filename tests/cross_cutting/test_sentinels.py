"""No error, warning, log record or printed line quotes a data value or a data-dependent count.

Each case feeds invalid data holding sentinel values (``0.123456789``, ``987654321``,
``SENTINEL``) and a distinctive number of bad entries (``BAD = 13``), then searches everything
observable for them (harness: ``tests/cross_cutting/side_channels.py``). An error must say which
argument, which line and what is wrong in general terms.
"""

from __future__ import annotations

import numpy as np
import pytest
from side_channels import cli, observe

import dpuq
from dpuq import inference
from dpuq.training.temperature import private_temperature_scaling

SENTINELS = ("0.123456789", "0.12345", "987654321", "9.87654e+08", "SENTINEL", "sentinel")
BAD = 13  # the number of bad entries: must not appear either
N = 200


def _labels_with_sentinels(k: int = 3) -> np.ndarray:
    y = np.arange(N) % k
    y[:BAD] = 987654321
    return y


def _probs(k: int = 3) -> np.ndarray:
    p = np.full((N, k), 1.0 / k)
    p[0] = [0.123456789, 0.5, 1 - 0.623456789]
    return p


def _text(obs) -> str:
    parts = [obs.stdout, obs.stderr, repr(obs.exception)]
    parts += [m for _, m in obs.warnings] + [m for *_, m in obs.logs]
    return "\n".join(parts)


def _csv_with_a_sentinel_row(d):
    rows = ["0.5;0.25;0.25"] * 5 + ["0.123456789;SENTINEL;987654321"]
    (d / "p.csv").write_text("\n".join(rows) + "\n")
    return d / "p.csv"


def _cli_scores_out_of_range(d):
    s = np.full(N, 0.123456789)
    s[:BAD] = 987654321.0
    np.savetxt(d / "s.csv", s, fmt="%.9f")
    return cli(["calibrate", "--scores", d / "s.csv", "--alpha", 0.1, "--epsilon", 1,
                "-o", d / "c.json"])  # fmt: skip


def _cli_bad_labels(d, command="calibrate"):
    np.save(d / "p.npy", _probs())
    np.savetxt(d / "y.csv", _labels_with_sentinels(), fmt="%d")
    extra = ["--alpha", 0.1] if command == "calibrate" else []
    return cli([command, "--probs", d / "p.npy", "--labels", d / "y.csv", *extra, "--epsilon", 1,
                "-o", d / "c.json"])  # fmt: skip


def _cli_fractional_labels(d):
    np.save(d / "p.npy", _probs())
    y = (np.arange(N) % 3).astype(float)
    y[:BAD] = 0.123456789
    np.savetxt(d / "y.csv", y, fmt="%.9f")
    return cli(["calibrate", "--probs", d / "p.npy", "--labels", d / "y.csv", "--alpha", 0.1,
                "--epsilon", 1, "-o", d / "c.json"])  # fmt: skip


def _cli_semicolon_row(d):
    path = _csv_with_a_sentinel_row(d)
    np.savetxt(d / "y.csv", np.zeros(6), fmt="%d")
    return cli(["calibrate", "--probs", path, "--labels", d / "y.csv", "--alpha", 0.1,
                "--epsilon", 1, "-o", d / "c.json"])  # fmt: skip


def _parquet_missing(d):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    values = [0.123456789] * N
    for i in range(BAD):
        values[i] = None
    pq.write_table(pa.table({"score": values}), d / "s.parquet")  # a name is schema, not data
    return cli(["calibrate", "--scores", d / "s.parquet", "--alpha", 0.1, "--epsilon", 1,
                "-o", d / "c.json"])  # fmt: skip


def _identity(X):
    return X


def _ridge():
    from sklearn.linear_model import Ridge

    return Ridge().fit(np.eye(3), [0.0, 1.0, 2.0])


CASES = {
    "cli scores out of [0, 1]": _cli_scores_out_of_range,
    "cli labels outside the classes": _cli_bad_labels,
    "cli temperature labels outside the classes": lambda d: _cli_bad_labels(d, "temperature"),
    "cli fractional labels": _cli_fractional_labels,
    "cli ;-separated row that is not numbers": _cli_semicolon_row,
    "cli parquet with missing values": _parquet_missing,
    "calibrate scores out of [0, 1]": lambda d: dpuq.calibrate(
        np.r_[np.full(BAD, 987654321.0), np.full(N, 0.123456789)], alpha=0.1, epsilon=1.0
    ),
    "calibrate_by_class labels": lambda d: dpuq.calibrate_by_class(
        np.full(N, 0.123456789), _labels_with_sentinels(), 3, alpha=0.1, epsilon=1.0
    ),
    "conformalize 1-d features": lambda d: dpuq.PrivateConformalRegressor(
        _ridge(), epsilon=1.0, bound=1.0
    ).conformalize(np.full(3, 0.123456789), np.zeros(3)),
    "online update 1-d features": lambda d: dpuq.PrivateOnlineConformalRegressor(
        _ridge(), epsilon=1.0, bound=1.0
    ).update(np.full(3, 0.123456789), np.zeros(3)),
    "conformalize unknown labels": lambda d: dpuq.PrivateConformalClassifier(
        _identity, epsilon=1.0
    ).conformalize(_probs(), _labels_with_sentinels()),
    "PrivateERMClassifier.fit invalid labels": lambda d: dpuq.learning.PrivateERMClassifier(
        dpuq.Thresholds([0.5]), epsilon=1.0
    ).fit(np.full(N, 0.123456789), _labels_with_sentinels(2)),
    "DPClassifier.fit labels outside classes": lambda d: dpuq.DPClassifier(
        epsilon=1.0, delta=1e-5, classes=[0, 1, 2], accountant="gdp", epochs=1
    ).fit(_probs(), _labels_with_sentinels()),
    "DPRegressor.fit non-finite targets": lambda d: dpuq.DPRegressor(
        epsilon=1.0, delta=1e-5, accountant="gdp", epochs=1
    ).fit(_probs(), np.r_[np.full(BAD, np.nan), np.full(N - BAD, 0.123456789)]),
    "private_temperature_scaling labels": lambda d: private_temperature_scaling(
        np.log(_probs()), _labels_with_sentinels(), epsilon=1.0
    ),
    "private_mean out of bounds": lambda d: inference.private_mean(
        np.r_[np.full(BAD, 987654321.0), np.full(N, 0.123456789)], epsilon=1.0, bounds=(0, 1)
    ),
    "private_mean non-finite": lambda d: inference.private_mean(
        np.r_[np.full(BAD, np.nan), np.full(N, 0.123456789)], epsilon=1.0, bounds=(0, 1)
    ),
    "private_confidence_interval out of bounds": lambda d: dpuq.private_confidence_interval(
        np.r_[np.full(BAD, 987654321.0), np.full(N, 0.123456789)],
        alpha=0.1,
        epsilon=1.0,
        bounds=(0, 1),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_message_quotes_data(name, tmp_path):
    obs = observe(lambda: CASES[name](tmp_path), tmp_path)
    text = _text(obs)
    failed = obs.exception is not None or "error" in obs.stderr
    assert failed, f"{name}: invalid data must be refused"
    for s in SENTINELS:
        assert s not in text, f"{name}: a message quotes data ({s!r}):\n{text}"
    assert not any(tok == str(BAD) for tok in text.replace(",", " ").split()), (
        f"{name}: a message quotes the number of bad entries ({BAD}):\n{text}"
    )


def test_semicolon_files_with_decimal_commas_are_read(tmp_path):
    from dpuq.io import read_matrix, read_vector

    (tmp_path / "p.csv").write_text("p0;p1\n0,25;0,75\n1;0\n5,0e-1;5e-1\n")
    np.testing.assert_array_equal(
        read_matrix(tmp_path / "p.csv", "--probs"), [[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]]
    )
    (tmp_path / "s.csv").write_text("0,5\n0,25\n")  # no ';': a comma separates values
    with pytest.raises(ValueError, match="one column"):
        read_vector(tmp_path / "s.csv", "--scores")
    (tmp_path / "t.csv").write_text("0,5;0,5\n1,234,5;0\n")  # several commas: refused, not guessed
    with pytest.raises(ValueError, match="line 2, column 1: not a number"):
        read_matrix(tmp_path / "t.csv", "--probs")
