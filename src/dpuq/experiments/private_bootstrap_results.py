"""The private-bootstrap study's settings, result rows, tables and figures.

:mod:`dpuq.experiments.private_bootstrap` runs the study and fills these rows; this module
says what they are and how they read (markdown tables, matplotlib figures).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpuq.reporting import markdown_table
from dpuq.reporting.figures import save_tight, subplots

__all__ = [
    "DIABETES_BOUNDS",
    "METHODS",
    "PEER_BOUNDS",
    "CdfErrorResult",
    "CoverageRow",
    "DiabetesRow",
    "format_cdf_error",
    "format_coverage",
    "format_diabetes",
    "plot_cdf_error",
    "plot_coverage",
    "plot_diabetes",
]

PEER_BOUNDS = (-3.0, 2.0)
PEER_NS = (300, 500, 1000, 1500, 2000)
PEER_EPSILONS = (1.0, 5.0, 10.0)
#: Public bounds for the diabetes variables (see the module docstring for why).
DIABETES_BOUNDS = {"bmi": (12.0, 60.0), "bp": (40.0, 160.0)}
DIABETES_LABELS = {"bmi": "body-mass index (kg/m²)", "bp": "mean arterial pressure (mmHg)"}

#: Methods of the coverage study and what their ε means.
METHODS = {
    "ensemble": "ours: ensemble, ε per part (2ε total)",
    "ensemble_total": "ours: ensemble, ε/2 per part (ε total)",
    "ensemble_cdf": "Chadha et al. 2024 literal: tree CDF + uniform slack (2ε)",
    "naive": "Algorithm 1 (nominal ε per part; real ε' reported)",
    "normal": "normal approximation, Laplace mean + variance (2ε)",
    "percentile": "percentile bootstrap, not private",
}


@dataclass(frozen=True)
class CoverageRow:
    """Coverage and width of one method at one ``(n, ε)``."""

    method: str
    n: int
    epsilon: float  # the ε argument (nan for the non-private baseline)
    epsilon_total: float  # the guarantee the privacy report states (nan: not private)
    delta: float
    trials: int
    coverage: float
    se: float
    mean_width: float
    informative: float  # fraction of non-trivial intervals
    seconds: float


@dataclass(frozen=True)
class CdfErrorResult:
    """Errors of the CDF estimates: ``errors[method]`` has shape ``(reps, len(ns))``."""

    ns: np.ndarray
    epsilon: float
    t: float
    errors: dict
    slopes: dict  # least-squares slope of log(RMSE) on log(n)


@dataclass(frozen=True)
class DiabetesRow:
    """Private intervals for one variable and statistic at one ε, over repeated releases."""

    variable: str
    statistic: str
    epsilon: float  # per part; the guarantee is 2ε
    n: int
    sample_value: float  # not private: the statistic of the data, for reference only
    reference: tuple  # the non-private percentile bootstrap interval
    example: tuple  # one release (seeded)
    mean_lower: float
    mean_upper: float
    mean_width: float
    width_ratio: float  # mean width / non-private width
    contains_sample_value: float  # fraction of releases containing the sample statistic


def format_coverage(rows: Sequence[CoverageRow], alpha: float = 0.05) -> str:
    """Markdown: one table per method block, coverage ± SE and mean width."""
    base = {r.n: r.mean_width for r in rows if r.method == "percentile"}
    header = ["method", "n", "ε", "guarantee", "coverage ± SE", "mean width", "width / percentile"]
    out = []
    order = {m: i for i, m in enumerate(METHODS)}
    for r in sorted(
        rows, key=lambda r: (order[r.method], r.epsilon if r.epsilon == r.epsilon else 0, r.n)
    ):
        if math.isnan(r.epsilon_total):
            guar = "not private"
        elif r.delta > 0:
            guar = f"({r.epsilon_total:.3g}, {r.delta:g})-DP"
        else:
            guar = f"{r.epsilon_total:g}-DP"
        eps = "–" if math.isnan(r.epsilon) else f"{r.epsilon:g}"
        ratio = r.mean_width / base[r.n] if r.n in base else math.nan
        cov = f"{r.coverage:.3f} ± {r.se:.3f}"
        out.append([r.method, str(r.n), eps, guar, cov, f"{r.mean_width:.4f}", f"{ratio:.2f}"])
    return markdown_table(header, out)


def format_cdf_error(res: CdfErrorResult) -> str:
    header = ["method", *(f"n={n}" for n in res.ns), "fitted slope"]
    rows = [
        [m, *(f"{v:.4f}" for v in np.sqrt(np.mean(e**2, axis=0))), f"{res.slopes[m]:.2f}"]
        for m, e in res.errors.items()
    ]
    return markdown_table(header, rows)


def format_diabetes(rows: Sequence[DiabetesRow]) -> str:
    header = ["variable", "statistic", "ε (2ε total)", "sample value", "non-private 95%"]
    header += ["one private release", "mean private interval", "width / non-private"]
    out = [
        [r.variable, r.statistic, f"{r.epsilon:g}", f"{r.sample_value:.2f}"]
        + [f"[{a:.2f}, {b:.2f}]" for a, b in (r.reference, r.example, (r.mean_lower, r.mean_upper))]
        + [f"{r.width_ratio:.2f}"]
        for r in rows
    ]
    return markdown_table(header, out)


def plot_coverage(rows: Sequence[CoverageRow], path: Path, alpha: float = 0.05) -> None:
    eps_values = sorted({r.epsilon for r in rows if not math.isnan(r.epsilon)})
    fig, axes = subplots(
        2, len(eps_values), figsize=(4.2 * len(eps_values), 7), sharex=True, squeeze=False
    )
    styles = {
        "ensemble": "o-",
        "ensemble_total": "s--",
        "ensemble_cdf": "x:",
        "naive": "^-.",
        "normal": "d-",
        "percentile": "k-",
    }
    for j, eps in enumerate(eps_values):
        for method, style in styles.items():
            sel = sorted(
                (
                    r
                    for r in rows
                    if r.method == method and (r.epsilon == eps or method == "percentile")
                ),
                key=lambda r: r.n,
            )
            if not sel:
                continue
            ns = [r.n for r in sel]
            axes[0, j].errorbar(
                ns,
                [r.coverage for r in sel],
                yerr=[2 * r.se for r in sel],
                fmt=style,
                label=method,
                capsize=2,
                ms=4,
            )
            axes[1, j].plot(ns, [r.mean_width for r in sel], style, label=method, ms=4)
        axes[0, j].axhline(1 - alpha, color="grey", lw=0.8)
        axes[0, j].set_title(f"ε = {eps:g}")
        axes[0, j].set_ylim(0.85, 1.005)
        axes[1, j].set_yscale("log")
        axes[1, j].set_xlabel("n")
    axes[0, 0].set_ylabel("coverage (± 2 SE)")
    axes[1, 0].set_ylabel("mean width (log scale)")
    axes[1, -1].legend(fontsize=7)
    fig.suptitle("Mean of N(0, 4) truncated to [-3, 2], α = 0.05")
    save_tight(fig, path, dpi=120)


def plot_cdf_error(res: CdfErrorResult, path: Path) -> None:
    fig, ax = subplots(figsize=(6.5, 4.5))
    ns = res.ns.astype(float)
    for (m, e), style in zip(res.errors.items(), ("o-", "s-", "^-", "k.--"), strict=True):
        rmse = np.sqrt(np.mean(e**2, axis=0))
        ax.loglog(ns, rmse, style, label=f"{m}: slope {res.slopes[m]:.2f}")
    ref = np.sqrt(np.mean(res.errors["ensemble (Alg. 2, one t)"][:, 0] ** 2))
    ax.loglog(ns, ref * (ns / ns[0]) ** -0.5, color="grey", lw=0.8, label="slope -1/2 (theory)")
    ref4 = np.sqrt(np.mean(res.errors["naive (Alg. 1)"][:, 0] ** 2))
    ax.loglog(
        ns,
        ref4 * (ns / ns[0]) ** -0.25,
        color="grey",
        lw=0.8,
        ls=":",
        label="slope -1/4 (Algorithm 1)",
    )
    ax.set_xlabel("n")
    ax.set_ylabel("RMSE of the CDF estimate")
    ax.set_title(f"Private bootstrap CDF of √n(θ - x̄), ε = {res.epsilon:g}, t = σ")
    ax.legend(fontsize=7)
    save_tight(fig, path, dpi=120)


def plot_diabetes(rows: Sequence[DiabetesRow], path: Path) -> None:
    keys = [(v, s) for v in DIABETES_BOUNDS for s in ("mean", "median")]
    fig, axes = subplots(1, len(keys), figsize=(4 * len(keys), 3.6))
    for ax, (var, stat) in zip(axes, keys, strict=True):
        sel = [r for r in rows if r.variable == var and r.statistic == stat]
        eps = [r.epsilon for r in sel]
        ax.fill_between(
            eps,
            [r.mean_lower for r in sel],
            [r.mean_upper for r in sel],
            alpha=0.3,
            label="private (mean end points)",
        )
        ax.plot(eps, [r.example[0] for r in sel], "C0.", ms=5, label="one release")
        ax.plot(eps, [r.example[1] for r in sel], "C0.", ms=5)
        ax.axhline(sel[0].reference[0], color="k", ls="--", lw=0.8, label="non-private")
        ax.axhline(sel[0].reference[1], color="k", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("ε per part (2ε total)")
        ax.set_title(f"{stat} {DIABETES_LABELS[var]}", fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle("95% intervals, sklearn diabetes study (n = 442)")
    save_tight(fig, path, dpi=120)
