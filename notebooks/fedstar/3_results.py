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
# # FedStar, results: Table 1 and Figure 3
#
# Tan et al., *Federated Learning on Non-IID Graphs via Structural Knowledge
# Sharing*, AAAI 2023. Every client owns **one whole TU dataset**: the
# clients' graphs differ in feature space (width and meaning), label space
# and domain. FedStar shares only a *structure encoder* that reads
# structure embeddings $s_v = [s_v^{DSE} \,\|\, s_v^{RWSE}]$ (Eqs. 5-7), and
# keeps the feature encoder and the classifier personal.
#
# This notebook re-runs the paper's main comparison:
#
# * **Table 1**: test accuracy after round 200 in four non-IID settings for
#   Local, FedAvg, FedProx, FedPer, FedSage, GCFL and FedStar (plus GCFL+,
#   which the paper does not run), with the gain over Local;
# * **Figure 3**: the test accuracy along the rounds (mean over clients, band
#   = std over seeds).
#
# | setting | clients (one TU dataset each) |
# |---|---|
# | CHEM | MUTAG, BZR, COX2, DHFR, PTC_MR, AIDS, NCI1 |
# | BIO-CHEM | CHEM + ENZYMES, DD, PROTEINS |
# | BIO-CHEM-SN | BIO-CHEM + COLLAB, IMDB-BINARY, IMDB-MULTI |
# | BIO-SN-CV | ENZYMES, DD, PROTEINS, COLLAB, IMDB-BINARY, IMDB-MULTI, Letter-low/high/med |
#
# **COLLAB is not available offline**, so BIO-CHEM-SN and BIO-SN-CV run with
# 12 and 8 clients: their averages have one term less than the paper's, and
# `params/fedstar/paper.yaml` declares them as stand-ins (column `data`). A
# setting run on fewer of its members (the smoke and quick profiles) is a
# `subset`: shown next to the paper, but neither matched nor judged.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/fedstar
settings = ["chem"]  # FedStar settings (dataset groups): chem, biochem, biochemsn, biosncv
members = ["MUTAG", "BZR", "COX2", "PTC_MR"]  # keep only these datasets of each setting (an empty list keeps all available)
methods = ["local", "fedavg", "fedprox", "fedper", "fedsage", "gcfl", "fedstar", "gcfl_plus"]  # Table 1 rows
seeds = [1, 2]  # run seeds (the paper: 1..5); the data split is fixed (seed 123)
rounds = 30  # communication rounds (the paper: 200; Local trains as many epochs)
progress = True  # show progress bars

# %%
import pandas as pd
from IPython.display import display

from fglcore import compare, experiment, paths, plotting, runtime
from fglcore.data.datasets import group_members
from fglcore.papers.fedstar import gaps as fedstar_gaps
from fglcore.papers.fedstar import tables as T
from fglcore.results import ResultStore

out = paths.resolve_output_dir(output_dir, profile, "fedstar")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.max_colwidth", None)  # claim verdicts in full
paper = compare.load_paper("fedstar")
chosen = members or None
plan = T.results_plan(settings, members, methods, seeds, rounds)  # every run below, validated before any runs
print(f"profile {profile}: results go to {paths.display_path(out)}")
for setting, used in plan["members"].items():
    left_out = [m for m in group_members(setting) if m not in used]
    print(f"{T.SETTING_LABELS[setting]}: {len(used)} clients ({', '.join(used)})"
          + (f"; left out: {', '.join(left_out)}" if left_out else ""))

# %% [markdown]
# ## 1. The protocol
#
# All runs share the paper's protocol (digest §4.5): 200 rounds of **one
# local epoch** over mini-batches of 128 graphs, Adam (lr $10^{-3}$, weight
# decay $5\cdot10^{-4}$, optimizer state kept across rounds), hidden width 64,
# 3 layers, dropout 0.5, sum readout. Each dataset is split 80/10/10 with
# stratification and the fixed seed 123, as the official code does; the run
# seed changes only the initialisation and the batch order. The reported
# number is each client's test accuracy **after the last round** (no model
# selection). `fedstar.tables.table1_config` builds every run; the
# baselines are set as the digest reads the paper:
#
# * **Local**: the plain GIN trained alone, 200 epochs;
# * **FedAvg**: the server averages every parameter whose shape agrees on all
#   clients, weighted by the clients' numbers of training graphs (the input
#   layer never can, the classifier only when all clients have as many
#   classes): $\bar w = \sum_m \frac{|\mathcal D_m|}{N} w_m$ (Eq. 4);
# * **FedProx**: FedAvg plus $\frac{\mu}{2}\lVert w - \bar w\rVert^2$, $\mu = 0.01$;
# * **FedPer**: only the GIN convolutions are averaged;
# * **FedSage**: FedAvg of a 3-layer GraphSAGE (mean aggregation), without
#   FedSage+'s neighbour generator;
# * **GCFL** / GCFL+: FedAvg inside clusters that split when the clients'
#   updates disagree, with GCFL's $(\varepsilon_1, \varepsilon_2)$ per setting;
# * **FedStar**: only the structure encoder (its input layer and 3 GCN
#   layers) is averaged, $\bar w_g = \sum_m \frac{|\mathcal D_m|}{N} w_{g,m}$ (Eq. 9).

# %%
# NBVAL_CHECK_OUTPUT
example = T.table1_config(settings[0], "fedstar", seeds[0], members=chosen, rounds=rounds)
print({k: example[k] for k in ("dataset", "num_clients", "partition", "split", "rounds", "local_epochs",
                               "batch_size", "lr", "weight_decay", "hidden", "num_layers", "selection",
                               "metric_aggregation", "algorithm_options")})

# %% [markdown]
# ## 2. Running Table 1
#
# Every (setting, method, seed) is one run; finished runs are stored in
# `results.csv` at once, so an interrupted sweep resumes. Besides the
# client-averaged accuracy, each run stores **every client's** accuracy
# (`accuracy[client=K]`) and the client-averaged accuracy **every 5 rounds**
# (`accuracy[round=R]`, for Figure 3).

# %%
results = experiment.sweep(plan["table1"], out / "results.csv", progress=progress, desc="Table 1",
                           per_client=True, curve=True)

# %% [markdown]
# ## 3. How the paper forms a cell
#
# The official `aggregateResults.py` first takes, for each client, the mean
# and the standard deviation of its accuracy over the seeds, then averages
# both over the clients:
#
# $$\text{avg.} = \frac1M\sum_{m=1}^M \overline{acc}_m, \qquad
# \pm = \frac1M\sum_{m=1}^M \operatorname{std}_{\text{seeds}}(acc_m) \quad (\text{ddof}=1).$$
#
# So "±" is the typical seed-to-seed wobble *of one client*, not the spread
# of the average (which is smaller: client errors partly cancel).
# `params/fedstar/paper.yaml` declares this rule (`aggregation: {std:
# over_clients, ddof: 1}`) and `fglcore.compare` applies it to every FedStar
# cell, here and in `comparison.csv`. Below, written out on our per-client
# rows, then checked against `compare.ours_cells`; its `std_of_mean` is the
# spread of the average over seeds (the seed noise of a cell's mean).

# %%
from fglcore.results import client_values

per_client = client_values(results)
one = per_client[(per_client.dataset == settings[0]) & (per_client.method == "fedstar")]
by_client = one.groupby("client")["value"].agg(["mean", lambda v: v.std(ddof=1) if len(v) > 1 else float("nan")])
by_client.columns = ["mean over seeds", "std over seeds"]
cells = compare.ours_cells(results, paper, metrics=["accuracy"])
cell = cells[(cells.dataset == settings[0]) & (cells.method == "fedstar")].iloc[0]
assert abs(by_client["mean over seeds"].mean() - cell["mean"]) < 1e-9
assert pd.isna(cell["std"]) or abs(by_client["std over seeds"].mean() - cell["std"]) < 1e-9
display(by_client.round(2))

# %% [markdown]
# ## 4. Table 1: ours
#
# Mean ± std formed as the paper does, and the gain over Local.

# %%
# NBVAL_CHECK_OUTPUT
table1 = cells[cells.table == "1"]
ours = T.ours_table(table1, gain_over="local" if "local" in methods else None, row_order=methods,
                    row_labels=T.METHOD_LABELS, column_labels=T.SETTING_LABELS)
print(ours.to_string())
ours.to_csv(out / "3_table1_ours.csv")

# %% [markdown]
# ## 5. Table 1: the paper next to ours
#
# `delta` = ours − paper; the status is `match` within
# $\max(1.5, 2\sqrt{\sigma_\text{paper}^2+\sigma_\text{ours}^2})$ points
# (`fglcore.compare`). Under the smoke and quick profiles the runs are far
# shorter and the settings smaller than the paper's: a setting on some of
# its members has status `subset`, and says nothing about the paper.

# %%
# NBVAL_CHECK_OUTPUT
comparison1 = compare.compare(results, paper, table="1")
comparison1 = comparison1[comparison1.dataset.isin(settings) & comparison1.method.isin(methods)]
side = compare.side_by_side(comparison1, rows="method", columns="dataset", row_labels=T.METHOD_LABELS,
                            column_labels=T.SETTING_LABELS)
print(side.to_string())

# %%
fig = plotting.comparison_bars(comparison1.assign(method=comparison1.method.map(T.METHOD_LABELS)),
                               title="Table 1: ours vs paper")
plotting.save_figure(fig, out / "3_table1.png")
display(fig)

# %% [markdown]
# Which FedAvg did the paper run? The text says clients send "all the
# learnable parameters"; the input layer can never be averaged (feature
# widths differ), the classifier only where the class counts agree, and the
# GCFL code the paper builds on averages only the GIN convolutions, which is
# what our FedPer does. Our FedAvg and FedPer next to the paper's FedAvg:

# %%
# NBVAL_CHECK_OUTPUT
readings = T.fedavg_readings(comparison1)
print(readings.to_string() if not readings.empty else "FedAvg or FedPer not run under this profile")

# %% [markdown]
# ## 6. Where we differ from the paper, and why
#
# A delta has three kinds of sources (`fglcore.papers.fedstar.gaps`):
#
# * **seed noise**: each cell averages a few seeds. `noise` is twice the
#   standard error of the difference of two cell means, assuming the
#   paper's seeds wobble as much as ours: a |Δ| above it is not chance alone;
# * **known differences** between the paper's runs and ours: data we do
#   not have (COLLAB), splits the official procedure does not reproduce
#   (A12), the baselines' code, which the official repository does not ship
#   (it has Local and FedStar only), and details the paper leaves open that
#   we read one way (the digest's readings: A2 FedAvg's shared layers, A4
#   GCFL's model selection, A5 its thresholds, A6 FedSage);
# * anything else (hardware, library versions, an unstated detail of the
#   official runs), which no table can name: a cell beyond noise with no
#   known difference points there.
#
# The per-method summary tells a systematic difference from chance: a
# method whose every cell sits on one side of the paper, most of them beyond
# noise, differs from the paper's run in something it does in every setting.
# With one seed (smoke) there is no noise estimate.

# %%
# NBVAL_CHECK_OUTPUT
print(fedstar_gaps.report(comparison1))

# %% [markdown]
# The same deltas drawn: a filled dot lies beyond the seed noise (its bar),
# a hollow one within it; the known differences are in brackets.

# %%
gaps1 = fedstar_gaps.gap_table(comparison1)
gaps1 = gaps1.assign(method=gaps1.method.map(T.METHOD_LABELS), dataset=gaps1.dataset.map(T.SETTING_LABELS))
fig = plotting.delta_dots(gaps1, rows="method", title="Table 1: ours − paper")
plotting.save_figure(fig, out / "3_table1_gaps.png")
display(fig)

# %% [markdown]
# ## 7. The paper's claims
#
# The claims of Table 1 as `params/fedstar/paper.yaml` states them (FedAvg
# and FedProx do not beat Local; FedStar beats every baseline, by a notable
# margin), checked per setting on the paper's data and its stand-ins, one
# line each. A claim "by a notable margin" holds only where the margin
# exceeds twice the standard error of the difference of the two cell means
# over seeds; "(within noise)" marks a verdict another draw of seeds could
# flip. Settings run on a subset of their members are not judged.

# %%
# NBVAL_CHECK_OUTPUT
claims1 = compare.check_claims(results, paper, tables=["1"])
display(compare.claims_table(claims1))

# %% [markdown]
# ## 8. Figure 3: convergence
#
# At every 5th round, the test accuracy averaged over the clients; the line
# is the mean over seeds and the band its std (reading A13). The paper:
# FedStar "dominates the other methods on the average test accuracy and
# achieves a faster convergence" in all four settings.

# %%
curve = T.curves(results, methods=[m for m in T.FIGURE3_METHODS if m in methods])
curve["method"] = curve["method"].map(T.METHOD_LABELS)
for setting in settings:
    fig = plotting.curves(curve[curve.dataset == setting], "round", ylabel="test accuracy (%)",
                          title=f"Figure 3: {T.SETTING_LABELS[setting]}")
    plotting.save_figure(fig, out / f"3_figure3_{setting}.png")
    display(fig)

# %%
# NBVAL_CHECK_OUTPUT
final = curve.groupby(["dataset", "method", "round"])["value"].mean().reset_index()
early = final[final["round"] == final["round"].min()].pivot(index="method", columns="dataset", values="value")
print(f"client-averaged test accuracy at round {final['round'].min()} (mean over seeds):")
print(early.round(2).to_string())

# %% [markdown]
# ## 9. Report
#
# `comparison.csv` and `claims.csv` of the whole paper, from every row in
# `results.csv` (all FedStar notebooks), with the cells formed as above.
# `fgl compare fedstar --profile <profile>` rewrites them from
# the stored runs alone.

# %%
all_rows = ResultStore(out / "results.csv").read()
comparison, claims = compare.write_report(out, all_rows, "fedstar")
display(compare.claims_table(claims))

# %% [markdown]
# What the runs in `results.csv` cost, from the run index beside it: runs
# computed and copied from another table, compute hours summed over runs
# (what an interrupted, resumed or parallel sweep cannot show on one clock),
# the wall hours during which at least one run was computing (parallel
# workers' runs count once, the idle time between sessions not at all), and
# when the first and last were stored.

# %%
print(ResultStore(out / "results.csv").cost().to_string())
