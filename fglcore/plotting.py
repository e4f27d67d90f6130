"""Figures with one fixed look, so every notebook's plots match.

Each figure function returns a :class:`matplotlib.figure.Figure` that pyplot
has already closed: nothing is shown twice in notebooks, nothing stays open in
batch runs, and ``plt.show()`` is never called. A notebook cell that ends with
the figure displays it (``display(fig)`` elsewhere); :func:`save_figure`
writes it.

Style: seaborn ``whitegrid`` theme, ``notebook`` context, ``colorblind``
palette, panels of :data:`FIGSIZE` inches.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from cycler import cycler
from matplotlib.figure import Figure

FIGSIZE = (6.4, 4.0)
DPI = 120
STYLE = "whitegrid"
CONTEXT = "notebook"
PALETTE = "colorblind"
MAX_PANEL_COLUMNS = 3


def set_style() -> None:
    """Apply the fixed style globally (for plots drawn outside this module)."""
    sns.set_theme(style=STYLE, context=CONTEXT, palette=PALETTE, rc={"figure.figsize": FIGSIZE, "savefig.dpi": DPI})


@contextmanager
def styled() -> Iterator[None]:
    """The package's plot style for the figures drawn inside the block (no global change)."""
    rc = {
        **sns.axes_style(STYLE),
        **sns.plotting_context(CONTEXT),
        "figure.figsize": FIGSIZE,
        "axes.prop_cycle": cycler(color=sns.color_palette(PALETTE)),
    }
    with matplotlib.rc_context(rc):
        yield


def colors(n: int) -> list:
    """``n`` distinct colours of the package's palette."""
    return sns.color_palette(PALETTE if n <= 10 else "husl", n)


def new_figure(ncols: int = 1, nrows: int = 1, sharey: bool = False) -> tuple[Figure, np.ndarray]:
    """A figure of ``nrows`` x ``ncols`` panels and its flat array of axes, for papers' own plots."""
    # Made through pyplot so notebooks get their display hook, then closed at once:
    # the figure is shown only when returned, and batch runs keep no figure open.
    fig = plt.figure(figsize=(FIGSIZE[0] * ncols, FIGSIZE[1] * nrows), layout="constrained")
    plt.close(fig)
    axes = fig.subplots(nrows, ncols, sharey=sharey, squeeze=False)
    return fig, axes.ravel()


def _require_columns(frame: pd.DataFrame, required: Sequence[str], what: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what}: missing column(s) {', '.join(missing)}; expected {', '.join(required)}, "
            f"got {', '.join(map(str, frame.columns))}"
        )


def _label_count_table(label_counts) -> pd.DataFrame:
    if isinstance(label_counts, pd.DataFrame):
        from fglcore.data.statistics import CLASS_PREFIX, class_columns

        columns = class_columns(label_counts)
        if not columns:
            return label_counts
        if "client" in label_counts.columns:  # a client_statistics table
            label_counts = label_counts.set_index("client")
        return label_counts[columns].rename(columns=lambda c: c.removeprefix(CLASS_PREFIX))
    values = np.asarray(label_counts.detach().cpu() if hasattr(label_counts, "detach") else label_counts)
    if values.ndim != 2:
        raise ValueError(f"label_counts: expected a [clients x classes] table, got shape {values.shape}")
    return pd.DataFrame(values, columns=[str(c) for c in range(values.shape[1])])


def client_label_mix(label_counts, normalize: bool = True, title: str = "Label mix per client") -> Figure:
    """Stacked bars of each client's label distribution.

    Args:
        label_counts: ``[clients x classes]`` counts as a DataFrame (index =
            clients, columns = classes), a tensor or array, or a
            :func:`~fglcore.data.statistics.client_statistics` table (its
            ``class_*`` columns are used).
        normalize: plot shares of each client's nodes rather than counts.
    """
    table = _label_count_table(label_counts).astype(float)
    if normalize:
        totals = table.sum(axis=1).replace(0, np.nan)
        table = table.div(totals, axis=0).fillna(0.0)
    with styled():
        fig, (ax,) = new_figure()
        positions = np.arange(len(table))
        bottom = np.zeros(len(table))
        for color, column in zip(colors(table.shape[1]), table.columns):
            ax.bar(positions, table[column].to_numpy(), bottom=bottom, color=color, label=str(column), width=0.8)
            bottom += table[column].to_numpy()
        ax.set_xticks(positions, [str(i) for i in table.index])
        ax.set_xlabel("client")
        ax.set_ylabel("share of nodes" if normalize else "nodes")
        ax.set_title(title)
        ax.legend(title="class", bbox_to_anchor=(1.01, 1), loc="upper left", fontsize="small")
    return fig


def client_homophily(
    values,
    reference: float | None = None,
    title: str = "Node homophily per client",
    ylabel: str = "node homophily",
) -> Figure:
    """One bar per client; ``reference`` (e.g. the whole graph's value) is drawn as a dashed line.

    ``values`` is a sequence, tensor, Series or ``{client: value}`` mapping.
    """
    if isinstance(values, Mapping):
        series = pd.Series(values, dtype=float)
    elif isinstance(values, pd.Series):
        series = values.astype(float)
    else:
        array = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values, dtype=float).ravel()
        series = pd.Series(array)
    with styled():
        fig, (ax,) = new_figure()
        positions = np.arange(len(series))
        ax.bar(positions, series.to_numpy(), color=colors(1)[0], width=0.8)
        if reference is not None:
            ax.axhline(reference, color="0.3", linestyle="--", label=f"whole graph ({reference:.2f})")
            ax.legend(loc="lower right", fontsize="small")
        ax.set_xticks(positions, [str(i) for i in series.index])
        ax.set_ylim(0, 1)
        ax.set_xlabel("client")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
    return fig


def curves(
    data: pd.DataFrame,
    x: str,
    y: str = "value",
    hue: str = "method",
    *,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    errorbar: str | None = "sd",
    references: Mapping[str, float] | None = None,
    points: pd.DataFrame | None = None,
    points_label: str = "paper",
    log_x: int | None = None,
    ax: plt.Axes | None = None,
) -> Figure:
    """One line per ``hue`` value: the mean of ``y`` over the rows at each ``x`` (seeds), ± ``errorbar``.

    The papers' curves over rounds, clients, labelled fractions or layers
    all take this form. ``references`` maps a label to a horizontal dashed
    line (a paper's single number, e.g. its central model), ``points`` are
    the paper's own values at some ``x`` (columns ``x`` and ``y``, black
    stars), ``log_x`` a base for a logarithmic x axis, ``errorbar`` a
    seaborn error bar (``None``: the mean alone). Markers are drawn when there
    are at most 20 distinct ``x``. Without rows (a preview of a sweep with no
    finished cell yet) the axes say so. With ``ax`` the curves go into that
    panel of a larger figure, which is returned.
    """
    _require_columns(data, [x, y, hue], "curves")
    with styled():
        if ax is None:
            fig, (ax,) = new_figure()
        else:
            fig = ax.get_figure()
        if data.empty:
            ax.text(0.5, 0.5, "no runs to show yet", ha="center", va="center", transform=ax.transAxes, color="0.4")
        else:
            sns.lineplot(data=data, x=x, y=y, hue=hue, estimator="mean", errorbar=errorbar,
                         marker="o" if data[x].nunique() <= 20 else None,
                         palette=colors(data[hue].nunique()), ax=ax)
        for i, (label, value) in enumerate((references or {}).items()):
            ax.axhline(value, color="k", linestyle=("--", ":", "-.")[i % 3], linewidth=1, label=label)
        if points is not None and not points.empty:
            _require_columns(points, [x, y], "curves(points=...)")
            ax.scatter(points[x], points[y], marker="*", s=120, color="k", zorder=3, label=points_label)
        if log_x:
            ax.set_xscale("log", base=log_x)
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(ylabel or y)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
        if title:
            ax.set_title(title)
    return fig


def method_bars(
    results: pd.DataFrame,
    x: str = "method",
    hue: str | None = None,
    y: str = "value",
    ylabel: str | None = None,
    title: str | None = None,
) -> Figure:
    """Mean ± standard deviation over seeds of tidy result rows, one bar per ``x`` (and ``hue``) value.

    ``results`` has one row per seed and cell (the :mod:`fglcore.results`
    schema), e.g. ``x="method", hue="partition"`` with ``y="value"``; filter
    it to one metric first.
    """
    _require_columns(results, [x, y] + ([hue] if hue else []), "method_bars")
    with styled():
        fig, (ax,) = new_figure()
        sns.barplot(
            data=results,
            x=x,
            y=y,
            hue=hue,
            estimator="mean",
            errorbar="sd",
            capsize=0.1,
            palette=colors(results[hue].nunique()) if hue else None,
            color=None if hue else colors(1)[0],
            ax=ax,
        )
        ax.set_ylabel(ylabel or y)
        ax.tick_params(axis="x", labelrotation=30)
        if hue:
            ax.legend(title=hue, bbox_to_anchor=(1.01, 1), loc="upper left", fontsize="small")
        if title:
            ax.set_title(title)
    return fig


def comparison_bars(comparison: pd.DataFrame, ylabel: str = "accuracy (%)", title: str | None = None) -> Figure:
    """Our mean ± std next to the paper's number, one panel per dataset.

    ``comparison`` has columns ``method``, ``dataset``, ``ours_mean``,
    ``ours_std``, ``paper_mean`` (and optionally ``paper_std``); a missing
    paper number (NaN) leaves its bar out.
    """
    _require_columns(comparison, ["method", "dataset", "ours_mean", "ours_std", "paper_mean"], "comparison_bars")
    datasets = list(dict.fromkeys(comparison["dataset"]))
    ncols = min(len(datasets), MAX_PANEL_COLUMNS)
    nrows = -(-len(datasets) // ncols)
    ours_color, paper_color = colors(2)
    width = 0.38
    with styled():
        fig, axes = new_figure(ncols, nrows, sharey=True)
        for ax, dataset in zip(axes, datasets):
            rows = comparison[comparison["dataset"] == dataset]
            positions = np.arange(len(rows))
            paper_std = rows["paper_std"].to_numpy() if "paper_std" in rows else None
            ours_std = rows["ours_std"]
            ax.bar(positions - width / 2, rows["ours_mean"], width, yerr=ours_std, capsize=3, color=ours_color, label="ours")
            ax.bar(positions + width / 2, rows["paper_mean"], width, yerr=paper_std, capsize=3, color=paper_color,
                   label="paper")
            ax.set_xticks(positions, rows["method"].astype(str), rotation=30, ha="right")
            ax.set_title(str(dataset))
        for ax in axes[len(datasets):]:
            ax.set_visible(False)
        axes[0].set_ylabel(ylabel)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize="small")
        if title:
            fig.suptitle(title)
    return fig


def delta_dots(gaps: pd.DataFrame, rows: str | Sequence[str] = "method", title: str | None = None) -> Figure:
    """Ours minus the paper per cell, with the seed-noise bar, one panel per dataset.

    ``gaps`` has columns ``dataset``, ``delta``, ``noise`` and
    ``beyond_noise`` (:func:`fglcore.papers.fedstar.gaps.gap_table`) and the
    ``rows`` columns, whose values label each cell (joined by spaces), with
    the ``known`` differences in brackets where there is a ``known`` column.
    A filled dot lies beyond the noise, a hollow one within it (or has no
    noise estimate); the grey line is the paper.
    """
    rows = [rows] if isinstance(rows, str) else list(rows)
    _require_columns(gaps, ["dataset", "delta", "noise", "beyond_noise", *rows], "delta_dots")
    if gaps.empty:
        raise ValueError("delta_dots: no cell to draw (the comparison has no cell of ours with a paper number)")
    datasets = list(dict.fromkeys(gaps["dataset"]))
    color = colors(1)[0]
    with styled():
        fig, axes = new_figure(1, len(datasets), sharey=False)  # one column: the labels are long
        fig.set_figwidth(1.6 * FIGSIZE[0])
        fig.set_figheight(sum(max(1.6, 0.3 * n) for n in gaps["dataset"].value_counts()) + 1.2)  # a line a cell
        for ax, dataset in zip(axes, datasets):
            cells = gaps[gaps["dataset"] == dataset].iloc[::-1]  # the first row on top
            labels = [" ".join(str(v) for v in values if str(v)) for values in cells[rows].itertuples(index=False)]
            if "known" in cells:
                labels = [f"{label} [{known}]" if known != "—" else label
                          for label, known in zip(labels, cells["known"])]
            positions = np.arange(len(cells))
            ax.axvline(0.0, color="0.5", linewidth=1)
            ax.errorbar(cells["delta"], positions, xerr=cells["noise"].fillna(0.0), fmt="none", ecolor=color,
                        capsize=3, alpha=0.6)
            beyond = cells["beyond_noise"].eq(True).to_numpy()
            ax.scatter(cells["delta"][beyond], positions[beyond], color=color, zorder=3, label="beyond seed noise")
            ax.scatter(cells["delta"][~beyond], positions[~beyond], facecolors="white", edgecolors=color, zorder=3,
                       label="within seed noise")
            ax.set_yticks(positions, labels, fontsize="small")
            ax.set_ylim(-0.5, len(cells) - 0.5)
            ax.set_xlabel("ours − paper (points)")
            ax.set_title(str(dataset))
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="small")
        if title:
            fig.suptitle(title)
    return fig


def communication_bars(summary: pd.DataFrame, title: str = "Communication") -> Figure:
    """MiB sent, by direction, from a :meth:`~fglcore.fl.channel.Ledger.summary` table.

    Sizes come from the ``bytes`` column, or ``MiB`` where there is none.

    With a ``method`` column (summaries of several runs concatenated), one
    group of bars per method; otherwise one group per tensor ``name``. Bars
    within a group are the directions (``upload``, ``download``, ``peer``).
    """
    if "bytes" in summary.columns:  # exact; "MiB" may be missing in some concatenated rows
        summary = summary.assign(MiB=summary["bytes"] / 2**20)
    _require_columns(summary, ["direction", "MiB"], "communication_bars")
    group = "method" if "method" in summary.columns else "name"
    _require_columns(summary, [group], "communication_bars")
    totals = summary.groupby([group, "direction"], sort=False)["MiB"].sum().unstack("direction", fill_value=0.0)
    directions = list(totals.columns)
    width = 0.8 / len(directions)
    with styled():
        fig, (ax,) = new_figure()
        positions = np.arange(len(totals))
        for i, (direction, color) in enumerate(zip(directions, colors(len(directions)))):
            offset = (i - (len(directions) - 1) / 2) * width
            ax.bar(positions + offset, totals[direction].to_numpy(), width, color=color, label=direction)
        ax.set_xticks(positions, [str(i) for i in totals.index], rotation=30, ha="right")
        ax.set_xlabel(group)
        ax.set_ylabel("MiB")
        ax.set_title(title)
        ax.legend(title="direction", fontsize="small")
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as PNG (dpi 120, tight bounding box), creating parent folders; returns the path."""
    path = Path(path)
    if path.suffix == "":
        path = path.with_suffix(".png")
    elif path.suffix.lower() != ".png":
        raise ValueError(f"save_figure writes PNG files; got {path.name!r}, use a .png name")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI, bbox_inches="tight")
    return path
