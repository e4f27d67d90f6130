"""O-pFGL's results tables: the grids of Tables 1, 3, 5, 6, 8, 9, 10, 11, 15, 16, 17 and 18, and their display.

Yan, Li, Xie, Zhang, Shen, Fang and Wu, "Towards Federated Graph Learning in
One-shot Communication" (arXiv 2411.11304; code ``Youth-49/O-pFGL`` at
b44e24d). ``notebooks/opfgl/3_results`` calls :func:`results_plan`; every
configuration it returns is a validated :class:`~fglcore.config.ExperimentConfig`
tagged ``paper="opfgl"`` and with the paper's table number, so
:mod:`fglcore.compare` sets it next to ``params/opfgl/paper.yaml``.

**Protocol** (:data:`PROTOCOL`, :data:`fglcore.algorithms.opfgl.PROTOCOL`;
digest §5.2-5.7): Louvain+ or Metis+ (100 groups, KMeans on their label
histograms; ours drawn at seed 42, the official code's once under its
first run's seed, see :data:`fglcore.algorithms.opfgl.PROTOCOL`) into 10 or
20 clients, a per-client stratified 20/40/40 split fixed for all runs, a 2-layer GCN with 64 hidden units without
dropout or weight decay, accuracy and macro-F1 over all classes per client
averaged with weights = local node counts, mean ± population std over seeds
0, 1, 2.

**Methods** (:data:`METHODS`, the rows of Table 1 in the paper's order).
A method runs when it is registered in :data:`fglcore.algorithms.ALGORITHMS`
(:func:`method_status`); the others show as "not implemented" rows, so the
tables fill in as baselines are added. How each runs in the one-round tables
(:func:`baseline_fields`; the paper: "we limit the upload-download
communication round to one round ... local epochs tuned from 1 to 100",
§5.1, App. A.2):

* ``opfgl``: the authors' command for the dataset and partition
  (``settings.per_dataset`` of ``paper.yaml``, from ``run_main.sh``); the
  20-client tables reuse the 10-client command, and datasets without a
  published command (Amazon, Coauthor) run the code defaults
  (:attr:`~fglcore.algorithms.opfgl.Opfgl.default_options`), as
  ``paper.yaml``'s ``not_given`` says;
* ``local`` (Standalone): 1 local epoch per round for up to ``local_rounds``
  rounds with the round of best validation accuracy reported, i.e. the
  number of epochs chosen on validation (Standalone sends nothing, so
  "rounds" only space the evaluations);
* ``fedavg_ft``: one FedAvg round for each ``E`` of the epochs grid, local
  fine-tuning with O-pFGL's early stopping, ``E`` chosen on validation
  (:mod:`fglcore.algorithms.fedavg_ft`);
* ``fedspray``: the same one-round protocol (``algorithm_options.one_shot``)
  on FedSpray's own optimiser settings (lr 0.003, λ1 = 1, the paper's
  reading of Algorithm 1);
* ``dense``, ``coboost``: the same one-round protocol (epochs grid, the
  fine-tuning cap ``max_epochs``) around their server distillation, with
  ``E`` chosen on the validation accuracy of the clients' local models (the
  teachers) before one distillation (``epochs_selection="teachers"``,
  :mod:`fglcore.algorithms.ensemble_distillation`): a distillation of the
  official 200 rounds over a growing pool costs minutes per architecture on
  Cora, and choosing on the final models would run one per grid value (7 per
  run; 63 per heterogeneous run with its nine architectures);
* ``fedtad``: the same, with fine-tuning switched on
  (:data:`fglcore.algorithms.fedtad.OPFGL_ONE_SHOT`: App. A.7 fine-tunes
  FedAvg, FedTAD, DENSE and Co-Boost);
* ``fedgta``, ``fedpub``: one round with the local epochs chosen on
  validation from the epochs grid (App. A.2 tunes every one-round
  baseline's local epochs from 1 to 100) and no fine-tuning
  (:data:`fglcore.algorithms.fedgta.OPFGL_ONE_SHOT`; App. A.7 names no
  fine-tuning for them);
* ``fedlog``: one round with its own protocol (:mod:`fglcore.algorithms.fedlog`), the local epochs chosen on
  validation from the epochs grid;
* any other registered baseline: one round with its own defaults.

Tables 3 and 11 (heterogeneous models, App. A.3.7) give each of the 10
clients its own architecture (``model="hetero"``,
:mod:`fglcore.models.model_lists`, in the authors' client order). Their rows
are Standalone, FedTAD, FedSpray, DENSE, Co-Boost and O-pFGL (the others
aggregate parameters); a method runs when it accepts a model list
(:meth:`~fglcore.algorithms.base.Algorithm.accepts_model_lists`): ``local``,
``fedspray``, whose GNN is never sent, ``opfgl``, and ``fedtad``, ``dense``
and ``coboost``, whose servers distil one student per client architecture
that only the clients of that architecture download and fine-tune (a
reading: the paper does not say how it ran them with ten architectures; see
:mod:`fglcore.algorithms.ensemble_distillation` and
:mod:`fglcore.algorithms.fedtad`). A method that accepts none shows
``heterogeneous models not supported``.
O-pFGL runs the dataset's and partition's command as in Table 1/6
(``run_main.sh`` publishes no ``--method hete`` command; reading: the
same command with the model list), the baselines their one-round protocol.

Tables 9 and 10 give the multi-round baselines ``multi_rounds`` rounds (100
in the paper; setting ``"rounds=100"``) of E = 5 local epochs with the round
of best validation accuracy reported; O-pFGL stays one-shot.

Datasets: the paper's ogbn-arxiv and ogbn-products are not registered here
(no offline copy); their paper columns stay in the tables, marked "data not
available" (:func:`fglcore.data.datasets.availability`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from fglcore.compare import compare, format_mean_std, load_paper, paper_entries
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import availability

PAPER = "opfgl"

SEEDS = [0, 1, 2]
"""The paper's three runs (digest §5.7): the seed draws the initialisations, not the partition or split."""

METHODS = ["local", "fedavg_ft", "fedpub", "fedgta", "fedtad", "fedspray", "fedlog", "dense", "coboost", "opfgl"]
"""Rows of Tables 1, 5, 6, 8, 15, 16 in the paper's order (``fedavg_ft`` is the paper's one-shot "FedAvg")."""
MULTI_ROUND_METHODS = ["fedavg", "fedpub", "fedgta", "fedtad", "fedspray", "fedlog"]
ONE_SHOT_ONLY = {"fedlog"}
"""Registered baselines with no multi-round setting here (FedLoG: its 100-round reading of Tables 9/10 is not
implemented); their Tables 9/10 rows read ``one-shot only here``."""
"""Rows of Tables 9 and 10 run for 100 rounds (O-pFGL stays one-shot)."""
METHOD_NAMES = {"local": "Standalone", "fedavg_ft": "FedAvg (1 round + ft)", "fedavg": "FedAvg", "fedpub": "FedPUB",
                "fedgta": "FedGTA", "fedtad": "FedTAD", "fedspray": "FedSpray", "fedlog": "FedLoG", "dense": "DENSE",
                "coboost": "Co-Boost", "opfgl": "O-pFGL", "renode": "ReNode"}

PLANETOID = ["Cora", "CiteSeer", "PubMed"]
OGB = ["ogbn-arxiv", "ogbn-products"]
MORE = ["Computers", "Photo", "CS", "Physics"]
BACKBONES = ["sage", "gat", "sgc"]
"""Tables 17/18's backbones (GraphSAGE, GAT, SGC; 2 layers of 64 where the model has layers)."""
HETERO_METHODS = ["local", "fedtad", "fedspray", "dense", "coboost", "opfgl"]
"""Rows of Tables 3 and 11 (heterogeneous models): the methods that average no parameters across architectures."""

TABLES: dict[str, dict[str, Any]] = {
    "1": {"partition": "louvain_plus", "num_clients": 10, "datasets": PLANETOID + OGB, "methods": METHODS},
    "6": {"partition": "metis_plus", "num_clients": 10, "datasets": PLANETOID + OGB, "methods": METHODS},
    "5": {"partition": "louvain_plus", "num_clients": 20, "datasets": PLANETOID + OGB, "methods": METHODS},
    "8": {"partition": "metis_plus", "num_clients": 20, "datasets": PLANETOID + OGB, "methods": METHODS},
    "15": {"partition": "louvain_plus", "num_clients": 10, "datasets": MORE, "methods": METHODS},
    "16": {"partition": "metis_plus", "num_clients": 10, "datasets": MORE, "methods": METHODS},
    "17": {"partition": "louvain_plus", "num_clients": 10, "datasets": ["Cora", "CiteSeer", "ogbn-arxiv"],
           "methods": METHODS, "models": BACKBONES},
    "18": {"partition": "metis_plus", "num_clients": 10, "datasets": ["Cora", "CiteSeer", "ogbn-arxiv"],
           "methods": METHODS, "models": BACKBONES},
    "3": {"partition": "louvain_plus", "num_clients": 10, "datasets": ["Cora", "CiteSeer", "ogbn-arxiv"],
          "methods": HETERO_METHODS, "models": ["hetero"]},
    "11": {"partition": "metis_plus", "num_clients": 10, "datasets": ["Cora", "CiteSeer", "ogbn-arxiv"],
           "methods": HETERO_METHODS, "models": ["hetero"]},
    "9": {"partition": "louvain_plus", "num_clients": 10, "datasets": PLANETOID + OGB,
          "methods": MULTI_ROUND_METHODS + ["opfgl"], "multi_round": True},
    "10": {"partition": "metis_plus", "num_clients": 10, "datasets": PLANETOID + OGB,
           "methods": MULTI_ROUND_METHODS + ["opfgl"], "multi_round": True},
}
"""Each table's partition, clients, datasets, rows and backbones (``models``, default GCN; ``"hetero"``: one
architecture per client; paper Tables 1, 3, 5, 6, 8, 9, 10, 11, 15, 16, 17, 18)."""

BASELINE_LR = 0.01
"""Learning rate of Standalone and FedAvg (OpenFGL's default; the paper tunes it and does not say the value)."""
FEDSPRAY_LR = 0.003
"""FedSpray's own learning rate (its official code)."""
MULTI_ROUND_EPOCHS = 5
"""Local epochs per round of the 100-round baselines (Tables 9/10; the paper tunes them and does not say)."""


def _settings() -> Mapping[str, Any]:
    return load_paper(PAPER).get("settings", {})


def paper_protocol() -> dict[str, Any]:
    """:data:`fglcore.algorithms.opfgl.PROTOCOL` tagged with the paper id."""
    from fglcore.algorithms.opfgl import PROTOCOL

    return {**PROTOCOL, "paper": PAPER}


def opfgl_options(dataset: str, partition: str) -> tuple[dict[str, Any], str]:
    """The authors' O-pFGL command for ``dataset`` and ``partition`` and where it comes from.

    From ``settings.per_dataset`` of ``paper.yaml`` (``run_main.sh``); a dataset without a published command
    gets the code defaults (``{}``).
    """
    found = _settings().get("per_dataset", {}).get(f"{dataset}/{partition}")
    if found is None:
        return {}, "code defaults (no published command)"
    return {k: v for k, v in found.items() if k != "note"}, "authors' command (run_main.sh)"


def method_status(method: str) -> str:
    """``"registered"`` when ``method`` is in :data:`fglcore.algorithms.ALGORITHMS`, else ``"not implemented"``."""
    from fglcore.algorithms import ALGORITHMS

    return "registered" if method in ALGORITHMS else "not implemented"


def backbone_supported(method: str, model: str) -> bool:
    """Whether the registered ``method`` trains the backbone ``model`` (its ``models``; ``None``: any), or, for a
    per-client model list such as ``"hetero"``, accepts one (:meth:`~fglcore.algorithms.base.Algorithm.accepts_model_lists`)."""
    from fglcore.algorithms import ALGORITHMS
    from fglcore.models import MODELS

    algorithm = ALGORITHMS.get(method)
    if MODELS.get(model).is_list:
        return algorithm.accepts_model_lists()
    return algorithm.models is None or model in algorithm.models


def unsupported_backbone(method: str, models: Sequence[str]) -> str | None:
    """Why the registered ``method`` runs none of a table's ``models`` (``None`` when it runs one)."""
    from fglcore.models import MODELS

    if any(backbone_supported(method, m) for m in models):
        return None
    if all(MODELS.get(m).is_list for m in models):
        return "heterogeneous models not supported"
    return "backbone not supported"


def baseline_fields(method: str, *, epochs_grid: Sequence[int], max_epochs: int, local_rounds: int,
                    multi_rounds: int | None = None, distill_epochs: int | None = None) -> dict[str, Any]:
    """Config fields of a baseline under O-pFGL's protocol: one round (``multi_rounds`` None) or ``multi_rounds``.

    ``distill_epochs`` (None: the methods' own 200) shortens DENSE's and Co-Boost's server distillation for the
    smoke and quick profiles. See the module docstring for each method's reading.
    """
    ft = {"local_epochs_grid": list(epochs_grid), "max_epochs": max_epochs}
    if multi_rounds is not None:
        fields = {"rounds": multi_rounds, "local_epochs": MULTI_ROUND_EPOCHS, "selection": "best_val",
                  "selection_metric": "val_accuracy", "lr": BASELINE_LR, "setting": f"rounds={multi_rounds}"}
        if method == "fedspray":
            fields["lr"] = FEDSPRAY_LR
        return fields
    if method == "local":
        return {"rounds": local_rounds, "local_epochs": 1, "selection": "best_val",
                "selection_metric": "val_accuracy", "lr": BASELINE_LR}
    if method in ("fedavg_ft", "renode"):  # ReNode: its re-weighted loss inside the one-shot FedAvg + fine-tuning
        return {"rounds": 1, "lr": BASELINE_LR, "algorithm_options": ft}
    if method == "fedspray":
        return {"rounds": 1, "lr": FEDSPRAY_LR, "algorithm_options": {"one_shot": ft}}
    if method in ("dense", "coboost"):
        distill = {} if distill_epochs is None else {"epochs": distill_epochs}
        return {"rounds": 1, "lr": BASELINE_LR, "algorithm_options": {**ft, "epochs_selection": "teachers", **distill}}
    if method == "fedtad":
        from fglcore.algorithms.fedtad import OPFGL_ONE_SHOT

        return {"rounds": 1, "lr": BASELINE_LR, "algorithm_options": {**OPFGL_ONE_SHOT, **ft}}
    if method == "fedgta":
        from fglcore.algorithms.fedgta import OPFGL_ONE_SHOT

        return {"rounds": 1, "lr": BASELINE_LR,
                "algorithm_options": {**OPFGL_ONE_SHOT, "local_epochs_grid": list(epochs_grid)}}
    if method in ("fedpub", "fedlog"):
        return {"rounds": 1, "lr": BASELINE_LR, "algorithm_options": {"local_epochs_grid": list(epochs_grid)}}
    return {"rounds": 1, "lr": BASELINE_LR}


def table_configs(table: str, datasets: Iterable[str], methods: Iterable[str], seeds: Iterable[int], *,
                  condense_iterations: int | None = None, max_epochs: int = 3000,
                  epochs_grid: Sequence[int] = (1, 2, 5, 10, 20, 50, 100), local_rounds: int = 100,
                  multi_rounds: int = 100, distill_epochs: int | None = None) -> list[ExperimentConfig]:
    """The runs of ``table`` on ``datasets`` that can run here: registered methods among the table's rows,
    available datasets among its columns.

    ``condense_iterations`` (None: the command's), ``max_epochs`` (O-pFGL's stages, every fine-tuning) and
    ``distill_epochs`` (None: DENSE's and Co-Boost's own) shorten a run for the smoke and quick profiles.
    """
    if table not in TABLES:
        raise ConfigError(f"tables: {table!r} is not accepted; accepted: {', '.join(TABLES)}")
    spec = TABLES[table]
    configs = []
    for dataset in datasets:
        if dataset not in spec["datasets"] or availability(dataset) != "available":
            continue
        for method in methods:
            if method not in spec["methods"] or method_status(method) != "registered":
                continue
            if spec.get("multi_round") and method in ONE_SHOT_ONLY:
                continue
            base = {**paper_protocol(), "table": table, "dataset": dataset, "partition": spec["partition"],
                    "num_clients": spec["num_clients"], "algorithm": method}
            if method == "opfgl":
                options, _ = opfgl_options(dataset, spec["partition"])
                options = {**options, "max_epochs": max_epochs}
                if condense_iterations is not None:
                    options["condense_iterations"] = condense_iterations
                fields = {**base, "algorithm_options": options}
            else:
                rounds = multi_rounds if spec.get("multi_round") else None
                fields = {**base, **baseline_fields(method, epochs_grid=epochs_grid, max_epochs=max_epochs,
                                                    local_rounds=local_rounds, multi_rounds=rounds,
                                                    distill_epochs=distill_epochs)}
            for model in spec.get("models", ["gcn"]):
                if not backbone_supported(method, model):
                    continue
                for seed in seeds:
                    configs.append(ExperimentConfig.from_dict({**fields, "model": model, "seed": seed}))
    return configs


def results_plan(tables: Sequence[str], datasets: Sequence[str], methods: Sequence[str], seeds: Sequence[int],
                 condense_iterations: int, max_epochs: int, epochs_grid: Sequence[int], local_rounds: int,
                 multi_rounds: int, distill_epochs: int = 0) -> dict[str, Any]:
    """What ``notebooks/opfgl/3_results`` runs: ``{"configs": {table: [configs]}, "status": frame}``.

    ``condense_iterations`` 0 keeps each command's own count, ``distill_epochs`` 0 DENSE's and Co-Boost's own
    200 distillation rounds. ``status`` lists every (table, dataset, method)
    of the paper's tables among ``tables`` and why it does or does not run here. The notebook calls it, and
    ``fgl run`` before the kernel starts.
    """
    from fglcore import experiment
    from fglcore.checks import NON_NEGATIVE, POSITIVE

    experiment.check_lists(tables=tables, datasets=datasets, methods=methods, seeds=seeds, epochs_grid=epochs_grid)
    for name in ("tables",):
        for t in tables:
            if str(t) not in TABLES:
                raise ConfigError(f"parameter {name!r}: table {t!r} is not accepted; accepted: {', '.join(TABLES)}")
    known = list(dict.fromkeys(METHODS + MULTI_ROUND_METHODS))
    for m in methods:
        if m not in known:
            raise ConfigError(f"parameter 'methods': {m!r} is not a method of O-pFGL's tables; accepted: "
                              f"{', '.join(known)}")
    from fglcore.data.datasets import DATASETS

    experiment.check_datasets("datasets", [d for d in datasets if d in DATASETS], "node")
    paper_datasets = list(dict.fromkeys(d for spec in TABLES.values() for d in spec["datasets"]))
    for d in datasets:
        if d not in DATASETS and d not in paper_datasets:
            raise ConfigError(f"parameter 'datasets': {d!r} is neither registered nor a dataset of O-pFGL's tables; "
                              f"accepted: {', '.join(paper_datasets)}")
    NON_NEGATIVE.check("parameter 'condense_iterations'", condense_iterations)
    NON_NEGATIVE.check("parameter 'distill_epochs'", distill_epochs)
    for name, value in (("max_epochs", max_epochs), ("local_rounds", local_rounds), ("multi_rounds", multi_rounds)):
        POSITIVE.check(f"parameter {name!r}", value)
    configs = {}
    with experiment.parameters_named({"seed": "seeds", "algorithm_options.local_epochs_grid": "epochs_grid",
                                      "algorithm_options.one_shot": "epochs_grid",
                                      "algorithm_options.one_shot.local_epochs_grid": "epochs_grid",
                                      "algorithm_options.one_shot.max_epochs": "max_epochs",
                                      "algorithm_options.max_epochs": "max_epochs",
                                      "algorithm_options.condense_iterations": "condense_iterations",
                                      "algorithm_options.epochs": "distill_epochs",
                                      "rounds": "local_rounds"}):
        for table in tables:
            configs[str(table)] = table_configs(str(table), datasets, methods, seeds,
                                                condense_iterations=condense_iterations or None,
                                                max_epochs=max_epochs, epochs_grid=epochs_grid,
                                                local_rounds=local_rounds, multi_rounds=multi_rounds,
                                                distill_epochs=distill_epochs or None)
    return {"configs": configs, "status": coverage([str(t) for t in tables], datasets, methods, multi_rounds)}


def coverage(tables: Sequence[str], datasets: Sequence[str], methods: Sequence[str],
             multi_rounds: int = 100) -> pd.DataFrame:
    """Per table, dataset and method of the paper's tables: runs here, or why not.

    ``why``: ``runs``, ``not implemented`` (no registered algorithm), ``heterogeneous models not supported``
    (Tables 3/11: the method cannot give each client its own architecture, see the module docstring) or
    ``backbone not supported`` (none of the table's ``models``), ``data not available`` (dataset not
    registered or its files absent), ``not in this profile`` (left out by the ``datasets`` / ``methods``
    parameters) or ``ran <n> rounds, paper 100`` (a multi-round baseline of Tables 9/10 run with fewer
    rounds: its setting label differs from the paper's, so it is shown but not compared).
    """
    rows = []
    for table in tables:
        spec = TABLES[table]
        for dataset in spec["datasets"]:
            data = availability(dataset)
            for method in spec["methods"]:
                if method_status(method) != "registered":
                    why = "not implemented"
                elif unsupported_backbone(method, spec.get("models", ["gcn"])):
                    why = unsupported_backbone(method, spec.get("models", ["gcn"]))
                elif spec.get("multi_round") and method in ONE_SHOT_ONLY:
                    why = "one-shot only here"
                elif data != "available":
                    why = f"data not available ({data})"
                elif dataset not in datasets or method not in methods:
                    why = "not in this profile"
                elif spec.get("multi_round") and method != "opfgl" and multi_rounds != 100:
                    why = f"ran {multi_rounds} rounds, paper 100"
                else:
                    why = "runs"
                rows.append({"table": table, "dataset": dataset, "method": method, "why": why})
    return pd.DataFrame(rows, columns=["table", "dataset", "method", "why"])


# ----------------------------------------------------------------------------- display


def comparison(results: pd.DataFrame, table: str, status: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`fglcore.compare.compare` of ``table`` with a ``why`` column for the paper's cells we lack."""
    frame = compare(results, PAPER, table=table)
    if status is not None and not frame.empty:
        why = {(r.table, r.dataset, r.method): r.why for r in status.itertuples()}
        frame["why"] = [("" if s != "missing" else why.get((t, d, m), "not run"))
                        for t, d, m, s in zip(frame["table"], frame["dataset"], frame["method"], frame["status"])]
    return frame


def paper_vs_ours(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One metric of a :func:`comparison`: rows = methods (paper order, display names), columns = dataset ×
    (paper, ours, Δ, status); a cell we lack reads its ``why`` (``not implemented``, ``data not available``)."""
    from fglcore.compare import format_delta

    part = frame[frame["metric"] == metric]
    order = {m: i for i, m in enumerate(METHODS + MULTI_ROUND_METHODS)}
    out: dict[str, dict] = {}
    datasets = list(dict.fromkeys(part["dataset"]))
    for r in sorted(part.itertuples(), key=lambda r: (str(r.model), order.get(r.method, 99))):
        label = METHOD_NAMES.get(r.method, r.method) + (f" [{r.setting}]" if r.setting else "")
        if isinstance(r.model, str) and r.model not in ("gcn", ""):
            label = f"{r.model}: {label}"
        cell = out.setdefault(label, {})
        cell[(r.dataset, "paper")] = format_mean_std(r.paper_mean, r.paper_std)
        if r.status == "missing":
            cell[(r.dataset, "ours")] = getattr(r, "why", "") or "—"
            cell[(r.dataset, "Δ")], cell[(r.dataset, "status")] = "", "missing"
        else:
            cell[(r.dataset, "ours")] = format_mean_std(r.ours_mean, r.ours_std)
            cell[(r.dataset, "Δ")] = format_delta(r.delta)
            cell[(r.dataset, "status")] = r.status
    table = pd.DataFrame.from_dict(out, orient="index")
    if table.empty:
        return table
    table = table.loc[list(out)]
    columns = [(d, k) for d in datasets for k in ("paper", "ours", "Δ", "status") if (d, k) in table.columns]
    table = table[columns]
    table.columns = pd.MultiIndex.from_tuples(columns)
    return table.fillna("")


def count_runs(configs: Mapping[str, Sequence[ExperimentConfig]]) -> pd.DataFrame:
    """Runs per table and method: what a grid costs before it runs."""
    frame = pd.DataFrame([{"table": t, "method": c.algorithm, "dataset": c.dataset} for t, cs in configs.items()
                          for c in cs], columns=["table", "method", "dataset"])
    if frame.empty:
        return frame
    return frame.groupby(["table", "method"], sort=False).agg(runs=("dataset", "size"),
                                                              datasets=("dataset", "nunique")).reset_index()


# ----------------------------------------------------------------------------- ablations (4_ablations)

ABLATION_SETTINGS: dict[str, dict[str, dict[str, Any] | None]] = {
    "fig3": {"": {}, "stage2=ft": {"stage2": "ft"}, "stage2=ft_focal": {"stage2": "ft_focal"},
             "stage2=fixed": {"stage2": "fixed"}, "hre=off": {"hre_top_k": 0}},
    "fig4": {"": {}, "stage2=ft": {"stage2": "ft"}, "stage2=ft_focal": {"stage2": "ft_focal"},
             "stage2=fixed": {"stage2": "fixed"}, "hre=off": {"hre_top_k": 0}},
    "19": {"": {}, "nodes_per_class=2": {"nodes_per_class": 2}, "nodes_per_class=3": {"nodes_per_class": 3}},
    "22": {"": {}, "hre=no_dth": {"hre_min_degree": 0},
           "hre=no_dth_fth": {"hre_min_degree": 0, "hre_confidence": 0.0},
           "hre=no_dth_fth_topk": {"hre_min_degree": 0, "hre_confidence": 0.0, "hre_top_k": 1000}},
    "23": {"": {}, "pge=direct": {"pge": "direct"}, "pge=inner_product": {"pge": "inner_product"}},
}
"""O-pFGL option changes of each ablation setting (the ``setting`` labels of ``paper.yaml``); ``None`` would
mark a variant not implemented (none now). Figures 3/4 (ablation, Louvain+/Metis+; ``ft(focal)`` is
``stage2="ft_focal"`` with the option defaults, focal γ = 2 and no class weights), Table 19 (pseudo-nodes per
class), Table 22 (HRE without its criteria: C1 degree, then C2 confidence, then C3 top-K; "without" sets the
criterion to let every node through), Table 23 (how A' is built: ``pge``, a free matrix or the features'
cosine similarity in place of the MLP link predictor)."""
ABLATION_PARTITIONS = {"fig3": "louvain_plus", "fig4": "metis_plus", "19": "louvain_plus", "22": "louvain_plus",
                       "23": "louvain_plus"}
SENSITIVITY: dict[str, str] = {"beta": "beta", "K": "hre_top_k", "f_th": "hre_confidence", "d_th": "hre_min_degree"}
"""Sensitivity parameters (Sec. 5.5, Figs. 8/9 and Table 21's grid) and the O-pFGL option each sets."""


PARTITION_METHODS = ["local", "fedtad", "opfgl"]
"""Methods of the partition-draw check (``"partitions"``): O-pFGL, Table 1's strongest one-round baseline on Cora
(FedTAD) and Standalone, which needs no federation."""


def partition_margins(results: pd.DataFrame, metrics: Sequence[str] = ("accuracy", "macro_f1")) -> pd.DataFrame:
    """O-pFGL's margin over each other method, per dataset and partition draw (``setting``): the mean over
    seeds of the per-seed differences (seeds where both ran) of the ``"partitions"`` runs; then, per dataset and
    method, the mean and the range over draws and the paper's Table 1 margin (``params/opfgl/paper.yaml``;
    Louvain+, 10 clients, GCN).

    Columns ``dataset``, ``rival``, ``draw``, then ``<metric>`` per metric (points; positive: O-pFGL ahead).
    """
    rows = results[results["metric"].isin(metrics)]
    if rows.empty or "opfgl" not in set(rows["method"]):
        return pd.DataFrame()
    wide = rows.pivot_table(index=["dataset", "setting", "seed"], columns=["method", "metric"], values="value",
                            aggfunc="mean", sort=False)
    paper = paper_entries(PAPER, table="1")
    paper = paper[(paper["partition"] == "louvain_plus") & (paper["num_clients"] == 10)
                  & (paper["model"] == "gcn")].set_index(["dataset", "method", "metric"])["mean"]
    out = []
    for rival in [m for m in wide.columns.unique("method") if m != "opfgl"]:
        lead = pd.DataFrame({m: wide[("opfgl", m)] - wide[(rival, m)] for m in metrics})
        per_draw = lead.groupby(level=["dataset", "setting"], sort=False).mean()
        for dataset, draws in per_draw.groupby(level="dataset", sort=False):
            summary = {"dataset": dataset, "rival": rival}
            out += [{**summary, "draw": setting, **row} for (_, setting), row in draws.iterrows()]
            out.append({**summary, "draw": "mean over draws", **draws.mean().to_dict()})
            out.append({**summary, "draw": "lowest .. highest",
                        **{m: f"{draws[m].min():+.2f} .. {draws[m].max():+.2f}" for m in metrics}})
            reported = {m: paper.get((dataset, "opfgl", m), math.nan) - paper.get((dataset, rival, m), math.nan)
                        for m in metrics}
            out.append({**summary, "draw": "paper (Table 1)", **reported})
    frame = pd.DataFrame(out, columns=["dataset", "rival", "draw", *metrics])
    for m in metrics:
        frame[m] = [v if isinstance(v, str) else "n/a" if pd.isna(v) else f"{v:+.2f}" for v in frame[m]]
    return frame


def _opfgl_config(table: str, dataset: str, partition: str, num_clients: int, seed: int, setting: str,
                  changes: Mapping[str, Any], condense_iterations: int | None, max_epochs: int) -> ExperimentConfig:
    options, _ = opfgl_options(dataset, partition)
    options = {**options, "max_epochs": max_epochs, **changes}
    if condense_iterations is not None:
        options["condense_iterations"] = condense_iterations
    return ExperimentConfig.from_dict({**paper_protocol(), "table": table, "dataset": dataset, "partition": partition,
                                       "num_clients": num_clients, "algorithm": "opfgl", "setting": setting,
                                       "algorithm_options": options, "seed": seed})


def _method_config(table: str, method: str, dataset: str, partition: str, num_clients: int, seed: int, *,
                   iterations: int | None, max_epochs: int, epochs_grid: Sequence[int], local_rounds: int,
                   **fields: Any) -> ExperimentConfig:
    """One run of an ablation table beside the paper's: O-pFGL with the command for ``dataset`` and
    ``partition``, any other method under the one-round protocol (:func:`baseline_fields`); ``fields`` (e.g.
    ``setting``, ``partition_seed``) apply to either."""
    if method == "opfgl":
        config = _opfgl_config(table, dataset, partition, num_clients, seed, fields.pop("setting", ""), {},
                               iterations, max_epochs)
        return config.replace(**fields) if fields else config
    return ExperimentConfig.from_dict({
        **paper_protocol(), "table": table, "dataset": dataset, "partition": partition, "num_clients": num_clients,
        "algorithm": method, "seed": seed, **fields,
        **baseline_fields(method, epochs_grid=epochs_grid, max_epochs=max_epochs, local_rounds=local_rounds)})


def ablations_plan(tables: Sequence[str], datasets: Sequence[str], seeds: Sequence[int], condense_iterations: int,
                   max_epochs: int, sensitivity: Mapping[str, Sequence[float]], sensitivity_datasets: Sequence[str],
                   client_counts: Sequence[int], scale_methods: Sequence[str], epochs_grid: Sequence[int],
                   local_rounds: int, partition_seeds: Sequence[int] | None = None,
                   partition_methods: Sequence[str] = PARTITION_METHODS) -> dict[str, Any]:
    """What ``notebooks/opfgl/4_ablations`` runs: ``{"configs": {table: configs}, "status": frame}``.

    ``tables`` among :data:`ABLATION_SETTINGS` (the paper's) and ``"7"`` (ReNode vs O-pFGL, via the
    registry), ``"sensitivity"`` (each parameter of ``sensitivity`` swept alone on ``sensitivity_datasets``,
    Louvain+; setting ``"<name>=<value>"``), ``"clients"`` (``scale_methods`` on Louvain+ with each of
    ``client_counts`` clients) and ``"partitions"`` (``partition_methods`` on Table 1's Louvain+ with 10
    clients drawn at each of ``partition_seeds``, None: the protocol's 42 alone; setting
    ``"partition_seed=<seed>"``: how much of a gap to Table 1 one partition draw can explain,
    :func:`partition_margins`). ``status`` names the variants that cannot run here.
    """
    from fglcore import experiment
    from fglcore.checks import NON_NEGATIVE, POSITIVE

    accepted = [*ABLATION_SETTINGS, "7", "sensitivity", "clients", "partitions"]
    if partition_seeds is None:
        partition_seeds = [paper_protocol()["partition_seed"]]
    experiment.check_lists(tables=tables, datasets=datasets, seeds=seeds, partition_seeds=partition_seeds)
    for t in tables:
        if t not in accepted:
            raise ConfigError(f"parameter 'tables': {t!r} is not accepted; accepted: {', '.join(accepted)}")
    experiment.check_datasets("datasets", list(datasets), "node")
    experiment.check_datasets("sensitivity_datasets", list(sensitivity_datasets), "node")
    if not isinstance(sensitivity, Mapping):
        raise ConfigError(f"parameter 'sensitivity': expected a mapping of parameter names to lists of values, "
                          f"got {sensitivity!r}; accepted names: {', '.join(SENSITIVITY)}")
    for name, values in sensitivity.items():
        if name not in SENSITIVITY:
            raise ConfigError(f"parameter 'sensitivity': {name!r} is not accepted; accepted: {', '.join(SENSITIVITY)}")
        integer = SENSITIVITY[name] in ("hre_top_k", "hre_min_degree")
        if (not isinstance(values, (list, tuple)) or not values
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)
                or (integer and any(float(v) != int(v) for v in values))):
            kind = "integers" if integer else "numbers"
            raise ConfigError(f"parameter 'sensitivity': {name}: {values!r} is not accepted; accepted: a non-empty "
                              f"list of {kind}")
    NON_NEGATIVE.check("parameter 'condense_iterations'", condense_iterations)
    POSITIVE.check("parameter 'max_epochs'", max_epochs)
    POSITIVE.check("parameter 'client_counts'", list(client_counts))
    for name, methods in (("scale_methods", scale_methods), ("partition_methods", partition_methods)):
        for m in methods:
            if m not in METHODS:
                raise ConfigError(f"parameter {name!r}: {m!r} is not accepted; accepted: {', '.join(METHODS)}")
    iterations = condense_iterations or None
    run_args = {"iterations": iterations, "max_epochs": max_epochs, "epochs_grid": epochs_grid,
                "local_rounds": local_rounds}
    configs: dict[str, list[ExperimentConfig]] = {}
    status = []
    names = {"seed": "seeds", "algorithm_options.condense_iterations": "condense_iterations",
             "algorithm_options.local_epochs_grid": "epochs_grid", "rounds": "local_rounds",
             "algorithm_options.max_epochs": "max_epochs", "num_clients": "client_counts",
             "algorithm_options.beta": "sensitivity", "algorithm_options.hre_top_k": "sensitivity",
             "algorithm_options.hre_confidence": "sensitivity", "algorithm_options.hre_min_degree": "sensitivity",
             "partition_seed": "partition_seeds"}
    with experiment.parameters_named(names):
        for table in tables:
            found = []
            if table in ABLATION_SETTINGS:
                part = ABLATION_PARTITIONS[table]
                for setting, changes in ABLATION_SETTINGS[table].items():
                    status.append({"table": table, "setting": setting or "(full method)",
                                   "why": "runs" if changes is not None else "not implemented"})
                    if changes is None:
                        continue
                    found += [_opfgl_config(table, d, part, 10, s, setting, changes, iterations, max_epochs)
                              for d in datasets for s in seeds]
            elif table == "7":
                for method in ("opfgl", "renode"):
                    ok = method_status(method) == "registered"
                    status.append({"table": "7", "setting": method, "why": "runs" if ok else "not implemented"})
                    if ok:
                        found += [_method_config("7", method, d, part, 10, s, **run_args)
                                  for part in PARTITIONS_OF_7 for d in datasets for s in seeds]
            elif table == "sensitivity":
                for name, values in sensitivity.items():
                    for v in values:
                        option = SENSITIVITY[name]
                        value = int(v) if option in ("hre_top_k", "hre_min_degree") else float(v)
                        changes = {option: value}
                        if name in ("f_th", "d_th"):
                            changes.setdefault("hre_top_k", 1)
                        found += [_opfgl_config("sensitivity", d, "louvain_plus", 10, s, f"{name}={v:g}", changes,
                                                iterations, max_epochs)
                                  for d in sensitivity_datasets for s in seeds]
            elif table == "clients":
                found += [_method_config("clients", method, d, "louvain_plus", k, s, **run_args)
                          for k in client_counts for method in scale_methods if method_status(method) == "registered"
                          for d in datasets for s in seeds]
            else:  # partitions
                found += [_method_config("partitions", method, d, "louvain_plus", 10, s, **run_args,
                                         setting=f"partition_seed={p}", partition_seed=p)
                          for p in partition_seeds for method in partition_methods
                          if method_status(method) == "registered" for d in datasets for s in seeds]
            configs[table] = found
    return {"configs": configs, "status": pd.DataFrame(status, columns=["table", "setting", "why"])}


PARTITIONS_OF_7 = ["louvain_plus", "metis_plus"]
"""Table 7 compares O-pFGL with ReNode under both partitions, 10 clients."""


def ablation_layout(results: pd.DataFrame, metric: str, by: Sequence[str] = ("dataset",)) -> pd.DataFrame:
    """Mean ± std over seeds of ``metric`` per table and setting (rows) and ``by`` (columns), population std
    as the paper (``paper.yaml``'s aggregation)."""
    rows = results[results["metric"] == metric].copy()
    if rows.empty:
        return pd.DataFrame()
    # Rows in the order of ABLATION_SETTINGS (then first appearance), whatever order the store holds them in.
    planned = {(table, setting): i for table, settings in ABLATION_SETTINGS.items()
               for i, setting in enumerate(settings)}
    rows = rows.assign(_order=[planned.get((str(t), s), len(planned)) for t, s in zip(rows["table"], rows["setting"])])
    rows = rows.sort_values("_order", kind="stable")
    rows["setting"] = rows["setting"].replace("", "(full method)")
    grouped = rows.groupby(["table", "setting", *by], sort=False)["value"]
    cells = grouped.agg(lambda v: format_mean_std(v.mean(), v.std(ddof=0))).rename("cell").reset_index()
    return cells.pivot_table(index=["table", "setting"], columns=list(by), values="cell", aggfunc="first",
                             sort=False)
