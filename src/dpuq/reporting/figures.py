"""Figures of the demo and the reproductions (matplotlib, no pyplot state, PNG files).

Only :class:`matplotlib.figure.Figure` objects are used, so nothing here touches a display or
the global pyplot state; every function returns the figure and :func:`save` writes it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

__all__ = [
    "coverage_size_histograms",
    "grid_histograms",
    "new_figure",
    "reliability_panel",
    "save",
    "save_tight",
    "series_colours",
    "set_size_bars",
    "subplots",
]

#: Colours for up to 8 overlaid methods (colour-blind safe, Okabe-Ito).
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000"]
#: Hatches that tell series apart beyond the 20 colours of ``series_colours``.
HATCHES = ["", "//", "..", "xx", "\\\\"]


def series_colours(n: int) -> list[str]:
    """``n`` pairwise distinct colours: Okabe-Ito for up to 8 series, matplotlib's qualitative
    tab10 for 9 or 10 (both: no two closer than 67 in 0-255 RGB), tab20 up to 20, cycling
    beyond (then :data:`HATCHES` tell them apart).

    Examples
    --------
    >>> len(set(series_colours(10))) == 10 and len(set(series_colours(20))) == 20
    True
    """
    if n <= len(COLOURS):
        return COLOURS[:n]
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    palette = [to_hex(c) for c in colormaps["tab10" if n <= 10 else "tab20"].colors]
    return [palette[i % len(palette)] for i in range(n)]


def new_figure(width: float, height: float):
    """A figure that is not attached to pyplot (safe in threads, tests and servers)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save(fig, path: str | os.PathLike, dpi: int = 110) -> None:
    """Write ``fig`` as PNG."""
    fig.savefig(path, dpi=dpi, format="png")


def subplots(*args, figsize: tuple[float, float], **kwargs):
    """``(figure, axes)`` as ``matplotlib.pyplot.subplots`` gives them, without pyplot: no
    global state and no display; lay out and write with :func:`save_tight`."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*args, **kwargs)


def save_tight(fig, path: str | os.PathLike, dpi: int) -> None:
    """Lay ``fig`` out tightly and write it (format from the file name)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)


def _bins(values: Sequence[np.ndarray], n_bins: int = 30) -> np.ndarray:
    """Common edges for overlaid histograms: the full range of all values, unless a few
    extreme splits would squeeze the rest (range over 3 times the 0.5-99.5 % range): then the
    0.5-99.5 % range, and :func:`_outliers` says what is beyond it."""
    flat = np.concatenate([np.ravel(v) for v in values])
    lo, hi = float(flat.min()), float(flat.max())
    p_lo, p_hi = np.percentile(flat, [0.5, 99.5])
    if hi - lo > 3 * (p_hi - p_lo) + 1e-12:
        lo, hi = float(p_lo), float(p_hi)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.005, hi + 0.005
    pad = 1e-9 * max(1.0, abs(hi))  # keep the extremes inside the first and last bins
    return np.linspace(lo - pad, hi + pad, n_bins + 1)


def _outliers(ax, values: Sequence[np.ndarray], edges: np.ndarray) -> None:
    """Say how many values fall outside the axis, and how far."""
    flat = np.concatenate([np.ravel(v) for v in values])
    outside = (flat < edges[0]) | (flat > edges[-1])
    if outside.any():
        ax.text(
            0.99,
            0.98,
            f"{int(outside.sum())} beyond the axis (range {flat.min():.3g}–{flat.max():.3g})",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=7,
            color="#555",
        )


def _hist(ax, values, edges, i: int, label: str) -> None:
    """A light filled histogram with a solid outline, so that overlaid ones stay readable."""
    colour = COLOURS[i % len(COLOURS)]
    ax.hist(values, bins=edges, histtype="stepfilled", alpha=0.18, color=colour)
    ax.hist(values, bins=edges, histtype="step", linewidth=1.6, color=colour, label=label)


def _hist_panel(ax, series, xlabel: str, target: float | None = None) -> None:
    values = [v for _, v in series]
    edges = _bins(values)
    for i, (label, v) in enumerate(series):
        _hist(ax, v, edges, i, label)
    _outliers(ax, values, edges)
    if target is not None:
        ax.axvline(target, color="black", linestyle="--", linewidth=1.0, label=f"target {target:g}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("number of splits")
    ax.spines[["top", "right"]].set_visible(False)


def coverage_size_histograms(
    series: Sequence[tuple[str, np.ndarray, np.ndarray]], alpha: float, title: str
):
    """Two panels: histograms over splits of coverage and of mean set size, methods overlaid.

    Parameters
    ----------
    series : sequence of (label, coverage per split, mean size per split)
    alpha : float
        The target coverage ``1 - alpha`` is drawn as a dashed line.
    title : str
    """
    fig = new_figure(11, 4)
    ax_cov, ax_size = fig.subplots(1, 2)
    _hist_panel(ax_cov, [(s[0], s[1]) for s in series], "coverage", 1 - alpha)
    _hist_panel(ax_size, [(s[0], s[2]) for s in series], "mean set size")
    ax_cov.legend(fontsize=8, frameon=False)
    fig.suptitle(title)
    return fig


def grid_histograms(
    rows: Sequence[tuple[str, Sequence[tuple[str, np.ndarray, np.ndarray]]]],
    alpha: float,
    title: str,
):
    """One row of (coverage, size) histogram panels per model, calibrations overlaid.

    ``rows`` is a sequence of (model label, series) with series as in
    :func:`coverage_size_histograms`. Axes are shared down each column so rows compare.
    """
    fig = new_figure(11, 2.8 * len(rows) + 0.6)
    axes = fig.subplots(len(rows), 2, squeeze=False)
    all_cov = [s[1] for _, series in rows for s in series]
    all_size = [s[2] for _, series in rows for s in series]
    cov_edges, size_edges = _bins(all_cov), _bins(all_size)
    for r, (model, series) in enumerate(rows):
        for col, (edges, which, xlabel) in enumerate(
            ((cov_edges, 1, "coverage"), (size_edges, 2, "mean set size"))
        ):
            ax = axes[r, col]
            for i, s in enumerate(series):
                _hist(ax, s[which], edges, i, s[0])
            _outliers(ax, [s[which] for s in series], edges)
            if which == 1:
                ax.axvline(1 - alpha, color="black", linestyle="--", linewidth=1.0)
                ax.set_ylabel(f"{model}\nnumber of splits")
            ax.set_xlabel(xlabel)
            ax.spines[["top", "right"]].set_visible(False)
        axes[r, 0].legend(fontsize=8, frameon=False)
    fig.suptitle(title)
    return fig


def set_size_bars(series: Sequence[tuple[str, np.ndarray]], n_classes: int, title: str):
    """Bar chart: the share of sets with 0, 1, 2, ... labels, one bar per series.

    ``series`` is a sequence of (label, counts of sets by size); sizes up to the largest seen
    (at least 3, at most ``n_classes``) are shown.
    """
    fig = new_figure(11, 3.6)
    ax = fig.subplots()
    top = 1
    for _, counts in series:
        nz = np.flatnonzero(counts)
        top = max(top, int(nz.max()) if nz.size else 1)
    top = min(n_classes, max(top, 3))
    width = 0.8 / len(series)
    x = np.arange(top + 1)
    colours = series_colours(len(series))
    for i, (label, counts) in enumerate(series):
        share = counts[: top + 1] / max(1, counts.sum())
        offset = (i - (len(series) - 1) / 2) * width
        hatch = HATCHES[(i // 20) % len(HATCHES)] or None
        ax.bar(x + offset, share, width, color=colours[i], hatch=hatch, label=label,
               edgecolor="white" if hatch else None, linewidth=0.3)  # fmt: skip
    ax.set_xticks(x)
    ax.set_xlabel("number of labels in the prediction set")
    ax.set_ylabel("share of test people")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=7, frameon=False, ncols=2)
    fig.suptitle(title)
    return fig


def reliability_panel(series: Sequence[tuple[str, np.ndarray]], labels: np.ndarray, title: str):
    """Reliability diagrams (:mod:`dpuq.reporting.reliability`) of (name, probabilities) on one
    panel, each labelled with its ECE; None when scikit-learn's extras are missing."""
    try:
        from dpuq.metrics.calibration import expected_calibration_error
        from dpuq.reporting.reliability import reliability_diagram
    except ImportError:
        return None
    fig = new_figure(5.6, 5.0)
    ax = fig.subplots()
    for name, probs in series:
        ece = expected_calibration_error(probs, labels)
        reliability_diagram(probs, labels, label=f"{name} (ECE {ece:.3f})", ax=ax)
    ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle(title)
    return fig
