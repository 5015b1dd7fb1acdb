"""Private temperature scaling: choose a softmax temperature by the exponential mechanism.

Temperature scaling (Guo et al. 2017) divides a classifier's logits by one number ``T > 0``
fitted on held-out people; it changes confidences, never the predicted class. Here ``T`` is
released with ε-differential privacy for those held-out people: the exponential mechanism
(:func:`dpuq.mechanisms.exponential_mechanism`, exact sampler; no noise is drawn here) over a
public grid of temperatures with a bounded utility.

Privacy
-------
Input: ``n`` held-out people, each a record (logit vector ``z_i``, label ``y_i``); the model
that produced the logits was trained on other people. Neighbouring relation: replace-one with
``n`` public (one person's record swapped for any other record). The utility of every
candidate ``T`` is a sum over people of a per-person term with a bounded range, so replacing
one person moves it by at most that range (the sensitivity ``Δu``):

- ``loss="gap"`` (default), the calibration gap
  ``u(T) = −|Σ_i conf_i(T) − Σ_i correct_i|`` with ``conf_i(T) = max_k softmax(z_i / T)_k``
  in ``[1/K, 1]`` and ``correct_i = 1{argmax_k z_ik = y_i}`` in ``{0, 1}``. The sum inside
  moves by the change of one term ``conf_i − correct_i`` in ``[1/K − 1, 1]``, at most
  ``2 − 1/K``; ``|·|`` is 1-Lipschitz. ``Δu = 2``.
- ``loss="brier"``: ``u(T) = −Σ_i Σ_k (p_ik(T) − 1{y_i = k})²``, one term in ``[0, 2]``:
  ``Δu = 2``.
- ``loss="nll"``: ``u(T) = −Σ_i min(−log p_{i,y_i}(T), c)``, one term in ``[0, c]``:
  ``Δu = c`` (``nll_clip``).

The exponential mechanism releases ``T_j`` with probability ``∝ exp(ε u(T_j) / (2 Δu))``:
ε-DP (δ = 0) under replace-one (McSherry and Talwar 2007). The grid must be public (fixed in
advance, not computed from these people). Accuracy: with probability at least ``1 − β`` the
released ``T`` has ``u(T) >= max_j u(T_j) − (2Δu/ε)(ln(1/π_min) + ln(1/β))`` (``π_min``
the smallest base-measure mass, ``1/R`` for ``R`` uniform candidates), plus the tolerance
below for the untolerant gap; ``details["utility gap bound (β = 0.05)"]`` gives that number,
in people.

Why the gap is the default: at a few thousand people and ε ≈ 0.5, Brier and clipped NLL are
nearly flat in ``T`` (a proper score changes little over a wide range of ``T``), so the
mechanism spreads its choice over that range, while the calibration gap has a sharp minimum
where the mean confidence equals the accuracy. Its ``Δu`` does not depend on ``n``.

Running time ``O(R n K)``, vectorised over people and classes; memory bounded by chunking the
grid. Numpy only (torch tensors are accepted and converted).
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import _as_float, check_epsilon
from dpuq.mechanisms.exponential import exponential_mechanism
from dpuq.mechanisms.randomness import RandomState
from dpuq.privacy.ledger import CALLER_CHARGED, charge
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.training.temperature_result import TemperatureScalingResult

__all__ = [
    "LOSSES",
    "TemperatureScalingResult",
    "default_temperature_grid",
    "private_temperature_scaling",
    "softmax_with_temperature",
    "temperature_release_log_probabilities",
    "temperature_utilities",
]

#: Utilities of :func:`private_temperature_scaling`.
LOSSES = ("gap", "brier", "nll")

#: Base-measure mass on T = 1 (do no harm; module docstring).
IDENTITY_WEIGHT = 0.9

#: Default clip of the per-person negative log-likelihood (probabilities below 1% count as 1%).
DEFAULT_NLL_CLIP = math.log(100.0)

_CHUNK = 1 << 22  # floats per block of (temperatures, people, classes)


def default_temperature_grid() -> np.ndarray:
    """201 log-spaced temperatures from 0.1 to 10 (public; 1 is on the grid).

    Examples
    --------
    >>> g = default_temperature_grid()
    >>> g.size, float(g[0]), float(g[100]), float(g[-1])
    (201, 0.1, 1.0, 10.0)
    """
    grid = np.geomspace(0.1, 10.0, 201)
    grid[100] = 1.0
    return grid


def _as_numpy(x, name: str) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be array-like: {exc}") from None


def _check_logits(logits) -> np.ndarray:
    z = _as_numpy(logits, "logits")
    if z.dtype.kind not in "fiu" or z.ndim != 2:
        raise ValueError(f"logits must be a numeric array of shape (n, K), got shape {z.shape}")
    if z.shape[0] < 1 or z.shape[1] < 2:
        raise ValueError(f"logits needs n >= 1 rows and K >= 2 classes, got shape {z.shape}")
    z = z.astype(float)
    if not np.isfinite(z).all():
        raise ValueError("logits has non-finite values (NaN or inf)")
    return z


def _check_labels(labels, n: int, k: int) -> np.ndarray:
    y = _as_numpy(labels, "labels")
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"labels must have shape ({n},) like the logits' rows, got {y.shape}")
    if y.dtype.kind == "f":
        if not np.isfinite(y).all() or not np.all(y == np.round(y)):
            raise ValueError("labels must be integer class indices")
    elif y.dtype.kind not in "iu":
        raise ValueError(f"labels must be integer class indices, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if bool(((y < 0) | (y >= k)).any()):  # no values in the message: they are not released
        raise ValueError(f"labels must be class indices in 0..{k - 1}")
    return y


def _check_grid(temperatures) -> np.ndarray:
    if temperatures is None:
        return default_temperature_grid()
    t = _as_numpy(temperatures, "temperatures")
    try:
        t = np.atleast_1d(t.astype(float))
    except (TypeError, ValueError):
        raise ValueError("temperatures must be numbers") from None
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"temperatures must be a non-empty 1-d grid, got shape {t.shape}")
    if not (np.isfinite(t).all() and (t > 0).all()):
        raise ValueError("temperatures must all be finite and > 0")
    return t


def _check_loss(loss: str, nll_clip) -> tuple[str, float]:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if loss == "nll":
        c = _as_float(nll_clip, "nll_clip")
        if not (math.isfinite(c) and c > 0):
            raise ValueError(f"nll_clip must be finite and > 0, got {nll_clip!r}")
        return loss, c
    return loss, 2.0


def softmax_with_temperature(logits, temperature: float) -> np.ndarray:
    """``softmax(logits / temperature)`` row by row, computed stably.

    Examples
    --------
    >>> softmax_with_temperature([[0.0, 2.0]], 2.0).round(4).tolist()
    [[0.2689, 0.7311]]
    """
    z = _check_logits(np.atleast_2d(_as_numpy(logits, "logits")))
    t = _as_float(temperature, "temperature")
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
    e = np.exp((z - z.max(axis=1, keepdims=True)) / t)
    return e / e.sum(axis=1, keepdims=True)


def temperature_utilities(
    logits, labels, temperatures=None, *, loss: str = "gap", nll_clip: float = DEFAULT_NLL_CLIP
) -> np.ndarray:
    """Utility ``u(T)`` of every temperature of the grid (module docstring); not private.

    This is the input of the exponential mechanism, exposed for tests and audits: it is a
    statistic of the held-out people and must not be published.

    Examples
    --------
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> temperature_utilities(z, [0, 0], [1.0, 100.0]).round(3).tolist()
    [-0.612, -0.007]
    """
    z = _check_logits(logits)
    n, k = z.shape
    y = _check_labels(labels, n, k)
    grid = _check_grid(temperatures)
    loss, clip = _check_loss(loss, nll_clip)
    return _utilities(z, y, grid, loss, clip)


def _utilities(z: np.ndarray, y: np.ndarray, grid: np.ndarray, loss: str, clip: float):
    n, k = z.shape
    d = z - z.max(axis=1, keepdims=True)  # <= 0, max 0 per row
    rows = np.arange(n)
    d_true = d[rows, y]
    n_correct = float(np.count_nonzero(z.argmax(axis=1) == y))
    out = np.empty(grid.size)
    step = max(1, _CHUNK // (n * k))
    for start in range(0, grid.size, step):
        t = grid[start : start + step, None, None]
        e = np.exp(d[None] / t)  # (c, n, K)
        s = e.sum(axis=2)  # (c, n), >= 1
        if loss == "gap":
            out[start : start + step] = -np.abs((1.0 / s).sum(axis=1) - n_correct)
        elif loss == "brier":
            p_sq = (e * e).sum(axis=2) / (s * s)
            p_true = np.exp(d_true[None] / t[:, :, 0]) / s
            out[start : start + step] = -(p_sq - 2.0 * p_true + 1.0).sum(axis=1)
        else:
            nll = np.log(s) - d_true[None] / t[:, :, 0]
            out[start : start + step] = -np.minimum(nll, clip).sum(axis=1)
    return out


def _check_identity_weight(w) -> float:
    v = _as_float(w, "identity_weight")
    if not (0.0 <= v < 1.0):
        raise ValueError(f"identity_weight must be in [0, 1), got {w!r}")
    return v


def _tolerance(tolerance, loss: str, n: int) -> float:
    if isinstance(tolerance, str):
        if tolerance != "auto":
            raise ValueError(f"tolerance must be 'auto' or a number >= 0, got {tolerance!r}")
        return 0.5 * math.sqrt(n) if loss == "gap" else 0.0
    m = _as_float(tolerance, "tolerance")
    if not (math.isfinite(m) and m >= 0):
        raise ValueError(f"tolerance must be 'auto' or a number >= 0, got {tolerance!r}")
    if m > 0 and loss != "gap":
        raise ValueError("tolerance applies to loss='gap' only")
    return m


def _release_utilities(z, y, grid, loss, sens, eps, weight, tol) -> np.ndarray:
    """Utilities of the mechanism: tolerance applied, base measure folded in (a shift by
    ``(2Δu/ε) ln π_j``, the same for every data set)."""
    u = _utilities(z, y, grid, loss, sens)
    if tol > 0:
        u = -np.maximum(-u - tol, 0.0)
    if weight > 0 and grid.size > 1:
        log_pi = np.full(grid.size, math.log((1.0 - weight) / (grid.size - 1)))
        log_pi[int(np.argmin(np.abs(np.log(grid))))] = math.log(weight)
        u = u + (2.0 * sens / eps) * log_pi
    return u


def temperature_release_log_probabilities(
    logits,
    labels,
    *,
    epsilon: float,
    temperatures=None,
    loss: str = "gap",
    nll_clip: float = DEFAULT_NLL_CLIP,
    identity_weight: float = IDENTITY_WEIGHT,
    tolerance: float | str = "auto",
) -> np.ndarray:
    """Exact log law of :func:`private_temperature_scaling`'s release over the grid (audits).

    Examples
    --------
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> lp = temperature_release_log_probabilities(z, [0, 1], epsilon=1.0, temperatures=[0.5, 1, 2])
    >>> bool(np.isclose(np.exp(lp).sum(), 1.0)), int(np.argmax(lp))
    (True, 1)
    """
    from dpuq.mechanisms.exponential import exponential_mechanism_log_probabilities

    eps = check_epsilon(epsilon)
    z = _check_logits(logits)
    n, k = z.shape
    y = _check_labels(labels, n, k)
    grid = _check_grid(temperatures)
    loss, sens = _check_loss(loss, nll_clip)
    weight = _check_identity_weight(identity_weight)
    tol = _tolerance(tolerance, loss, n)
    u = _release_utilities(z, y, grid, loss, sens, eps, weight, tol)
    return exponential_mechanism_log_probabilities(u, epsilon=eps, sensitivity=sens)


def private_temperature_scaling(
    logits,
    labels,
    *,
    epsilon: float,
    temperatures=None,
    loss: str = "gap",
    nll_clip: float = DEFAULT_NLL_CLIP,
    identity_weight: float = IDENTITY_WEIGHT,
    tolerance: float | str = "auto",
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> TemperatureScalingResult:
    """Release a softmax temperature, ε-DP for the held-out people whose logits are given.

    Parameters
    ----------
    logits : array-like of shape (n, K)
        The model's logits (or log-probabilities) on held-out people: neither the training
        people nor the conformal calibration people (or account for the overlap by
        sequential composition). numpy arrays or torch tensors.
    labels : array-like of shape (n,)
        Their true classes, integers in ``0..K-1``.
    epsilon : float
        Privacy of the release, > 0 (replace-one, ``n`` public).
    temperatures : array-like, optional
        The public grid of candidates (default :func:`default_temperature_grid`: 201
        log-spaced values from 0.1 to 10). Never derive it from these people.
    loss : {"gap", "brier", "nll"}, default "gap"
        The utility (module docstring): the calibration gap (default; sensitivity 2), the
        Brier score (sensitivity 2) or the NLL clipped at ``nll_clip`` (sensitivity
        ``nll_clip``).
    nll_clip : float, default ln(100)
        Clip of the per-person NLL for ``loss="nll"``.
    identity_weight : float in [0, 1), default 0.9
        Base-measure mass on ``T = 1`` (the grid point nearest 1): the release stays at 1
        unless the people show otherwise beyond the noise (module docstring, "Do no harm").
        0: the plain exponential mechanism over the grid.
    tolerance : "auto" or float >= 0, default "auto"
        For ``loss="gap"``: gaps within this many people count as 0 (``"auto"``:
        ``sqrt(n)/2``, the largest standard deviation of ``n`` people's number of correct
        predictions). 0 for the other losses.
    random_state : None, int or numpy.random.Generator
        None (default): OS entropy, for releases. A seed makes the release reproducible and
        is marked ``seeded`` in the report.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge ε to ``dataset``'s budget (the held-out people's) after every check and before
        any noise is drawn (:func:`dpuq.privacy.ledger.charge`), or refuse the release.

    Returns
    -------
    TemperatureScalingResult
        ``(temperature, privacy_report)``.

    Raises
    ------
    ValueError
        Bad shapes, non-finite logits, labels out of range, a bad grid, ε or loss (before any
        noise is drawn; messages carry no data values).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 500)
    >>> logits = 3.0 * np.eye(3)[y] + rng.normal(size=(500, 3)) * 2.0  # overconfident x 3
    >>> T, report = private_temperature_scaling(logits * 3, y, epsilon=1.0, random_state=0)
    >>> 1.5 < T < 6.0, report.relation.value, report.epsilon
    (True, 'replace-one', 1.0)
    """
    eps = check_epsilon(epsilon)
    z = _check_logits(logits)
    n, k = z.shape
    y = _check_labels(labels, n, k)
    grid = _check_grid(temperatures)
    loss, sens = _check_loss(loss, nll_clip)
    weight = _check_identity_weight(identity_weight)
    tol = _tolerance(tolerance, loss, n)
    utilities = _release_utilities(z, y, grid, loss, sens, eps, weight, tol)
    charge(
        ledger,
        dataset,
        eps,
        what="private_temperature_scaling",
        random_state=random_state,
        settings={
            "n": n,
            "classes": k,
            "loss": loss,
            "grid size": int(grid.size),
            "identity weight": weight,
            "tolerance": tol,
        },
    )
    index = exponential_mechanism(
        utilities, epsilon=eps, sensitivity=sens, random_state=random_state, ledger=CALLER_CHARGED
    )
    temperature = float(grid[index])
    # the smallest base-measure mass: any candidate within t of the best is missed w.p.
    # <= exp(−εt/(2Δu))/π_min (McSherry-Talwar); the tolerance adds its m people
    pi_min = (1.0 - weight) / (grid.size - 1) if weight > 0 and grid.size > 1 else 1 / grid.size
    gap_bound = tol + (2.0 * sens / eps) * (math.log(1.0 / pi_min) + math.log(20.0))
    utility_text = {
        "gap": "−|Σ conf_i(T) − Σ correct_i| (calibration gap, in people)",
        "brier": "−Σ Brier score_i(T)",
        "nll": f"−Σ min(NLL_i(T), {sens:g}) (clipped negative log-likelihood)",
    }[loss]
    report = PrivacyReport(
        mechanism="private temperature scaling: exponential mechanism over a public grid of "
        f"{grid.size} temperatures (exact sampler, dpuq.mechanisms)",
        epsilon=eps,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity=f"Δu = {sens:g}: the utility is a sum over people of a term with range "
        f"at most {sens:g}, so swapping one person's record moves it by at most {sens:g}",
        details={
            "n (public)": n,
            "classes": k,
            "utility": utility_text,
            "grid": f"{grid.size} temperatures from {grid.min():.4g} to {grid.max():.4g}",
            "temperature": temperature,
            "identity weight (base measure at T = 1)": weight,
            "tolerance (people)": tol,
            "utility gap bound (β = 0.05)": gap_bound,
        },
        notes=(
            "Uses held-out people: not the training set and not the conformal calibration "
            "set (or compose sequentially on the people they share).",
            "Scaling by T never changes the predicted class, only the confidences.",
        ),
        seeded=random_state is not None,
    )
    return TemperatureScalingResult(temperature, report)
