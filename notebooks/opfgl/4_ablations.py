# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # O-pFGL, ablations and sensitivity
#
# What each part of O-pFGL (Yan et al., arXiv 2411.11304) contributes, as the
# paper tests it:
#
# * **Figures 3/4** (Louvain+ / Metis+): the full method against fine-tuning
#   $M_G$ without distillation (`stage2=ft`), with the focal loss of Lin et al.
#   instead of cross-entropy (`stage2=ft_focal`; focal $\gamma=2$, no class
#   weights: neither the paper nor the authors' code gives a setting), with one
#   fixed $\gamma=\beta$ (`stage2=fixed`) and node-adaptive distillation without
#   HRE (`hre=off`); claims O1-O4: the full method beats every variant;
# * **Table 19**: 1, 2 or 3 pseudo-nodes per class (claim: one is best on
#   small graphs);
# * **Table 22**: HRE without its degree criterion $d_{th}$, then also without
#   $f_{th}$, then also without top-K (claim: all three help);
# * **Table 23**: alternatives to the link predictor $g_\theta$: $A'$ as a free
#   matrix (`pge=direct`) or the cosine similarity of the pseudo-features
#   (`pge=inner_product`); neither is in the authors' code, the choices are in
#   `fglcore/models/pge_direct.py` and `pge_inner.py`;
# * **Table 7**: ReNode, a class-imbalance method (runs once registered);
# * the sensitivity to $\beta$, $K$, $f_{th}$ and $d_{th}$ (Figs. 8/9, Table 21's
#   grid) on Cora and CiteSeer, and the number of clients (5, 10, 20, 50);
# * not in the paper: O-pFGL, FedTAD and Standalone on other draws of Table 1's
#   Louvain+ partition (§5), to see how much of our gap to Table 1 one draw can
#   explain (the authors' draw cannot be reproduced: their code never reads its
#   seed, see `fglcore.algorithms.opfgl.PROTOCOL`).

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/opfgl
tables = ["fig3", "fig4", "19", "22", "23", "7", "sensitivity", "clients", "partitions"]  # what to run (paper tables, sensitivity, clients, partition draws)
datasets = ["Cora"]  # datasets of the ablations (paper: Cora, CiteSeer, PubMed, ogbn-arxiv)
seeds = [0, 1, 2]  # repetitions (paper: 0, 1, 2)
condense_iterations = 1000  # O-pFGL's condensation iterations; 0 keeps each command's own (3000)
max_epochs = 1000  # cap of O-pFGL's Stages 1-2 and every fine-tuning (paper: 3000)
sensitivity = {"beta": [0.1, 0.2, 0.5, 1.0], "K": [1, 2, 3], "f_th": [0.95, 1.0], "d_th": [0, 3, 10, 20]}  # values swept, one parameter at a time
sensitivity_datasets = ["Cora"]  # datasets of the sensitivity sweep (paper: Cora, CiteSeer)
client_counts = [5, 10, 20, 50]  # numbers of clients of the scalability sweep (Louvain+)
scale_methods = ["local", "fedavg_ft", "opfgl"]  # methods of the scalability sweep
partition_seeds = [42, 0, 1, 2, 3]  # Louvain+ draws of the partition check (Table 1's protocol: 42)
partition_methods = ["local", "fedtad", "opfgl"]  # methods of the partition check
epochs_grid = [5, 50]  # local epochs tried by the one-round baselines of the client and partition sweeps
local_rounds = 100  # Standalone's epochs (best on validation)
progress = True  # show progress bars

# %%
import pandas as pd
from IPython.display import display

from fglcore import compare, experiment, paths, plotting, runtime
from fglcore.papers.opfgl import tables as ot
from fglcore.results import ResultStore

plan = ot.ablations_plan(tables, datasets, seeds, condense_iterations, max_epochs, sensitivity, sensitivity_datasets,
                         client_counts, scale_methods, epochs_grid, local_rounds, partition_seeds, partition_methods)
out = paths.resolve_output_dir(output_dir, profile, "opfgl")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 220)
pd.set_option("display.max_columns", 30)
pd.set_option("display.max_colwidth", None)

# %% [markdown]
# ## 1. What runs

# %%
# NBVAL_CHECK_OUTPUT
print(plan["status"].to_string(index=False))
print({table: len(configs) for table, configs in plan["configs"].items()})

# %% [markdown]
# ### What the `full` profile costs
#
# **Projection, measured on 2026-11-26: CPU time on this 2-core machine, one thread** (`FGL_THREADS=1`). One representative run per group (seed 0, the first run the notebooks plan for the group) was timed with `time.process_time()` by `benchmarks/full_projection.py`, and the seconds are kept in `benchmarks/projection_opfgl.csv`. Other sessions kept the machine heavily loaded (load 10-24), so the wall clock ran 4-15x the CPU time and wall seconds were not used. A run that another notebook of the paper already stored is copied, so it counts once. The `priced` column says how each group's seconds per run were obtained:
#
# * `measured`: the group's own run. O-pFGL's condensation was timed at 300 of its 3000 iterations and scaled linearly; its Stages 1-2 ran in full, with their early stopping. The 100-round baselines were timed at 5 rounds and scaled linearly.
# * `scaled` or `as gcn`: the same method on the same data, timed at other rounds or with the GCN backbone.
# * `modelled`: dataset size x method cost, fitted on the measured groups (`fglcore.runlog.expected_seconds`). `method not measured` means a mean cost stands in for the method, so treat that number as a rough guess.
#
# `python benchmarks/full_projection.py opfgl project` prints every group. **The whole paper** (four notebooks): 1366 runs, 98.5 CPU hours (one thread), 49.3 h on 2 workers at best; 56 % of the hours priced from measured groups (`3_results` holds 93.6 of them, nearly all DENSE and Co-Boost with the heterogeneous model list: see its projection).
#
#
# **4_ablations**: 270 runs, 4.7 CPU h, 2.3 h on 2 workers at best
#
# | method | runs | CPU h | of which measured groups |
# |---|---:|---:|---:|
# | opfgl | 198 | 3.41 | 3.41 |
# | renode | 18 | 0.66 | 0.00 |
# | fedavg_ft | 18 | 0.44 | 0.36 |
# | fedspray | 18 | 0.12 | 0.02 |
# | local | 18 | 0.04 | 0.01 |
#
# | biggest groups (dataset, method, model, rounds) | runs | CPU s/run | CPU h | priced |
# |---|---:|---:|---:|---|
# | CiteSeer, opfgl, gcn, 1 | 75 | 63 | 1.31 | measured |
# | Cora, opfgl, gcn, 1 | 75 | 58 | 1.21 | measured |
# | PubMed, opfgl, gcn, 1 | 48 | 67 | 0.89 | measured |
# | PubMed, fedavg_ft, gcn, 1 | 6 | 205 | 0.34 | measured |
# | PubMed, renode, gcn, 1 | 6 | 189 | 0.32 | modelled, method not measured |
# | CiteSeer, renode, gcn, 1 | 6 | 130 | 0.22 | modelled, method not measured |
# | Cora, renode, gcn, 1 | 6 | 70 | 0.12 | modelled, method not measured |
# | CiteSeer, fedavg_ft, gcn, 1 | 6 | 51 | 0.08 | modelled |
#
# The ablations are nearly all O-pFGL runs (198 of 270). At 58-67 s of CPU each on Cora, CiteSeer and PubMed (measured; condensation scaled from 300 iterations), they make a predictable 3.4 of its 4.7 CPU h.
#
# **The partition check (§5, added 2026-11-27, not in the table above)**: 135 runs, of which the 27 on Table 1's draw are `3_results`' runs, copied. On Cora, with three runs sharing the two cores, a draw and seed took about 180 s of wall (FedTAD about 110 s, O-pFGL about 70 s, Standalone 4 s): roughly 120 s of CPU, so about 0.5 CPU h for Cora's 15 draws and seeds; CiteSeer and PubMed, not measured, perhaps twice that each, about 2 CPU h in all.
#

# %%
results = {}
for table, configs in plan["configs"].items():
    if configs:
        results[table] = experiment.sweep(configs, out / "results.csv", progress=progress, desc=f"ablation {table}")

# %% [markdown]
# ## 2. Figures 3/4, Tables 19, 22, 23, 7: ours, and the paper's numbers where it prints them
#
# Mean ± population std over seeds. Figures 3/4 have no printed numbers, only
# their claims; Tables 19, 22 and 23 are set beside the paper's cells.

# %%
# NBVAL_CHECK_OUTPUT
paper_tables = [t for t in ("fig3", "fig4", "19", "22", "23", "7") if t in results]
for table in paper_tables:
    for metric in ("accuracy", "macro_f1"):
        print(f"\n{table}: {metric}")
        print(ot.ablation_layout(results[table], metric).to_string())
for table in [t for t in ("19", "22", "23", "7") if t in results]:
    frame = compare.compare(results[table], "opfgl", table=table)
    ran = frame[frame["status"] != "missing"]
    if not ran.empty:
        print(f"\nTable {table}, paper vs ours:")
        print(compare.side_by_side(ran, rows=("setting", "metric"), columns="dataset").to_string())

# %% [markdown]
# ## 3. The paper's claims (O1-O4, Tables 19, 22, 7)

# %%
# NBVAL_CHECK_OUTPUT
all_results = pd.concat(list(results.values()), ignore_index=True) if results else pd.DataFrame()
if not all_results.empty:
    display(compare.claims_table(compare.check_claims(all_results, "opfgl", tables=paper_tables)))

# %% [markdown]
# ## 4. Sensitivity (β, K, $f_{th}$, $d_{th}$) and the number of clients

# %%
# NBVAL_CHECK_OUTPUT
if "sensitivity" in results:
    print(ot.ablation_layout(results["sensitivity"], "accuracy").to_string())
    print(ot.ablation_layout(results["sensitivity"], "macro_f1").to_string())
if "clients" in results:
    for metric in ("accuracy", "macro_f1"):
        frame = results["clients"][results["clients"]["metric"] == metric]
        cells = frame.groupby(["method", "num_clients"], sort=False)["value"].agg(
            lambda v: f"{v.mean():.2f} ± {v.std(ddof=0):.2f}").unstack()
        print(f"\nclients sweep, {metric}:\n{cells.to_string()}")

# %%
if "clients" in results:
    import seaborn as sns
    from matplotlib.figure import Figure

    frame = results["clients"][results["clients"]["metric"].isin(["accuracy", "macro_f1"])]
    fig = Figure(figsize=(9, 3.4))
    axes = fig.subplots(1, 2)
    for ax, metric in zip(axes, ("accuracy", "macro_f1")):
        sns.lineplot(data=frame[frame["metric"] == metric], x="num_clients", y="value", hue="method", marker="o",
                     errorbar="sd", ax=ax)
        ax.set_xscale("log")
        ax.set_xticks(client_counts)
        ax.set_xticklabels([str(k) for k in client_counts])
        ax.set_title(f"{metric} vs clients (Louvain+)")
    fig.tight_layout()
    plotting.save_figure(fig, out / "4_clients.png")
    display(fig)

# %% [markdown]
# ## 5. One partition draw, or the method? O-pFGL's margin across Louvain+ draws
#
# Our Table 1 runs on Cora put O-pFGL about 4 points of accuracy below the paper
# while the baselines land within about a point of theirs, so our O-pFGL leads
# FedTAD by less than the paper's. Louvain+ groups Louvain communities into
# clients with a KMeans on their label histograms: another draw gives clients
# other label skews, and O-pFGL's personalisation is what label skew rewards.
# Below, the same runs on other draws (`partition_seed`; the split seed stays
# 42). If the paper's margin lies within the range over draws, one draw can
# explain our gap; if it lies above every draw, the draw cannot.
#
# **What the full runs show on Cora** (seeds 0 and 1 of five draws so far):
# the draw moves O-pFGL's margin over FedTAD by under two points of accuracy
# and about three of macro-F1, and the paper's margin (+6.3 / +16.0) lies
# above every draw's; Table 1's draw (seed 42) is the least favourable to
# O-pFGL in accuracy. On every draw O-pFGL stays below the paper's 76.43,
# while FedTAD and Standalone move with the draw around their Table 1 rows
# (within about three points). So the draw explains a point or two of our
# gap at most; the rest is in O-pFGL's own runs, which follow the authors'
# code (`fglcore.algorithms.opfgl`), the draw being the one part of their
# setup that cannot be reproduced.

# %%
# NBVAL_CHECK_OUTPUT
if "partitions" in results:
    for metric in ("accuracy", "macro_f1"):
        print(f"{metric} per draw:")
        print(ot.ablation_layout(results["partitions"], metric, by=("dataset", "method")).to_string())
    margins = ot.partition_margins(results["partitions"])
    print("O-pFGL minus each method, points (mean of the per-seed differences per draw):")
    print(margins.to_string(index=False))

# %%
if "partitions" in results:
    import seaborn as sns
    from matplotlib.figure import Figure

    frame = results["partitions"][results["partitions"]["metric"].isin(["accuracy", "macro_f1"])]
    frame = frame.assign(draw=frame["setting"].str.replace("partition_seed=", "", regex=False))
    drawn = list(dict.fromkeys(frame["dataset"]))
    fig = Figure(figsize=(9, 3.2 * len(drawn)))
    axes = fig.subplots(len(drawn), 2, squeeze=False)
    for row, dataset in zip(axes, drawn):
        for ax, metric in zip(row, ("accuracy", "macro_f1")):
            sns.pointplot(data=frame[(frame["dataset"] == dataset) & (frame["metric"] == metric)], x="draw",
                          y="value", hue="method", errorbar="sd", dodge=0.3, linestyle="none", ax=ax)
            ax.set_xlabel("Louvain+ partition seed (Table 1: 42)")
            ax.set_title(f"{dataset}, {metric} (10 clients)")
    fig.tight_layout()
    plotting.save_figure(fig, out / "4_partition_draws.png")
    display(fig)

# %% [markdown]
# ## 6. Report

# %%
# NBVAL_CHECK_OUTPUT
all_rows = ResultStore(out / "results.csv").read()
report, report_claims = compare.write_report(out, all_rows, "opfgl")
print(report.groupby(["table", "status"]).size().unstack(fill_value=0).to_string())
