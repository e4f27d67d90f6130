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
# # FedSpray's ablations: structure proxies, λ1, proxy size and local epochs
#
# Four questions about FedSpray (Fu et al., KDD 2024), each answered by the
# paper with a table or a figure:
#
# 1. **Table 3** — do the structure proxies matter? Set $\mathbf S = \mathbf 0$
#    throughout training: the soft target becomes $p_i = \mathrm{softmax}(g_p(g_e(x_i)))$,
#    a function of the node's features only (a GLNN-like MLP teacher); or,
#    the other reading of the paper's words, only the class-wise
#    $\mathbf S$ is zero while labeled nodes' proxies are still trained.
# 2. **Fig. 4** — how strongly should the GNN follow the soft targets? The
#    weight $\lambda_1$ of Eq. 7, $\mathcal L_G = \mathcal L_{G\_CE} + \lambda_1\mathcal L_{G\_KD}$.
# 3. **Fig. 5** — how wide must the proxies (and the feature embedding) be?
#    $d_s \in \{16, 32, 64, 128\}$, the GNN's hidden width fixed at 64.
# 4. **Table 5** — does the number of local epochs $E$ change the picture?
#
# Protocol, datasets and the two readings of FedSpray (the paper's, `setting`
# "", and the official code's, `setting` "code") are those of `3_results`.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/fedspray
datasets = ["PubMed", "WikiCS", "Physics", "Flickr", "Cora", "CiteSeer", "Chameleon"]  # paper datasets, then stand-ins; missing ones are skipped
stand_in_clients = 7  # clients of a stand-in: its 7 largest Louvain communities
variants = ["", "code"]  # FedSpray readings: empty string for the paper Algorithm 1, code for the official code
rounds = 50  # communication rounds (paper: 300)
seeds = [0, 1]  # repetitions (paper: 5)
table3_datasets = ["PubMed", "Physics", "Cora", "CiteSeer"]  # Table 3's datasets (paper: PubMed, Physics)
lambda1_datasets = ["PubMed", "WikiCS", "Cora", "Chameleon"]  # Fig. 4's datasets (paper: PubMed, WikiCS)
lambda1_models = ["sage"]  # Fig. 4's backbones (paper: GraphSAGE)
lambda1_values = [0.1, 1.0, 5.0, 10.0, 20.0]  # Fig. 4's grid of lambda1
proxy_datasets = ["WikiCS", "Physics", "Cora", "Chameleon"]  # Fig. 5's datasets (paper: WikiCS, Physics)
proxy_dims = [16, 32, 64, 128]  # Fig. 5's grid of d_s
epochs_datasets = ["WikiCS", "Cora"]  # Table 5's datasets (paper: WikiCS)
local_epochs = [3, 5, 10]  # Table 5's local epochs E
progress = True  # show progress bars

# %%
import pandas as pd
from IPython.display import display

from fglcore import compare, experiment, paths, plotting, runtime
from fglcore.papers.fedspray import tables as ft
from fglcore.results import ResultStore

plan = ft.ablations_plan(datasets, stand_in_clients, variants, rounds, seeds, table3_datasets, lambda1_datasets,
                         lambda1_models, lambda1_values, proxy_datasets, proxy_dims, epochs_datasets,
                         local_epochs)  # every run below, validated before any runs
out = paths.resolve_output_dir(output_dir, profile, "fedspray")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 30)
pd.set_option("display.max_colwidth", None)  # claim verdicts in full
print(f"profile {profile}: results go to {paths.display_path(out)}")


def show_claims(results, table):
    """The paper's claims about ``table`` (from ``paper.yaml``), checked on ``results``, one line each."""
    display(compare.claims_table(compare.check_claims(results, "fedspray", tables=[table])))


def show_comparison(results, table, index=("dataset", "method")):
    """Paper vs ours where a paper dataset ran; otherwise say so."""
    comparison = compare.compare(results, "fedspray", table=table)
    ran = comparison[comparison["status"] != "missing"]
    if ran.empty:
        print(f"table {table}: no paper dataset ran here; the paper's numbers stand alone, ours are on stand-ins")
    else:
        display(compare.side_by_side(ft.labelled(ran), rows=index, columns="metric"))


# %% [markdown]
# ## Data
#
# As in `3_results`: the paper's datasets with their official partition
# files when present (PubMed and Physics are in the mirror; WikiCS and
# Flickr are not), and the stand-ins Cora, CiteSeer and Chameleon, each
# split into its `stand_in_clients` largest Louvain communities. Each
# ablation runs on the datasets of its `*_datasets` parameter. Table 3 runs
# on the paper's own PubMed and Physics, Fig. 4 on PubMed and Fig. 5 on
# Physics; where the paper's other dataset is WikiCS, the full profile adds
# a stand-in chosen by kind (Chameleon, Wikipedia pages), labelled so.

# %%
# NBVAL_CHECK_OUTPUT
availability = ft.dataset_availability(datasets, stand_in_clients)
print(availability.to_string(index=False))
ready = plan["ready"]
print("paper datasets missing:", ", ".join(d for d in ft.PAPER_DATASETS if d in datasets and d not in ready) or "none")


# %% [markdown]
# ## 1. Table 3: FedSpray without structure proxies ($\mathbf S = \mathbf 0$)
#
# With proxies, a labeled node's soft target is $g_p(e_i + \mathbf s_{y_i})$
# and an unlabeled node's $g_p(e_i + q_i^\top\mathbf S)$: the proxy adds the
# class's *global* neighbourhood information, aligned across clients by
# Eq. 15. With $\mathbf S = \mathbf 0$ (option `zero_proxies`) only the
# features remain. The paper finds this hurts, on PubMed even below Local
# training (77.11 vs 87.49 overall): unreliable soft targets misguide the
# GNN.
#
# The paper's words, "we set class-wise structure proxies $\mathbf S$ as
# $\mathbf 0$ consistently during training" (§5.3), admit a second reading,
# run as setting "S=0 class-wise" (option `zero_global_proxies`): only the
# class-wise $\mathbf S$ is zero, so unlabeled nodes' proxies
# $q_i^\top\mathbf S$ are zero and labeled nodes' restart from zero, but the
# labeled nodes' proxies are still trained with the encoder (Alg. 1 line
# 20). The encoder then learns with trained proxies and is asked for the
# unlabeled nodes' soft targets without them: a mismatch that could make
# those targets worse than a plain feature-only teacher's. Both readings are
# set against the paper's one S = 0 row. The official code (`main.py` at
# d3e591a) has no switch for this ablation, so its own code is not
# available to settle the reading.

# %%
t3 = plan["table3"]
t3_results = experiment.sweep(t3, out / "results.csv", progress=progress, desc="Table 3")

# %%
# NBVAL_CHECK_OUTPUT
print(ft.layout(t3_results, index=("dataset", "method"), columns=("metric",)).to_string())

# %%
display(ft.paper_table("fedspray", "3", columns=("metric",), settings=("", "S=0")))
show_comparison(t3_results, "3")
show_claims(t3_results, "3")

# %% [markdown]
# The same runs as changes: what removing the proxies does to each FedSpray
# reading, paired seed by seed (mean and population std of the per-seed
# differences, points), next to the change the paper reports.

# %%
# NBVAL_CHECK_OUTPUT
effect = ft.proxy_ablation_effect(t3_results, compare.paper_entries("fedspray", "3"))
print(effect.round(2).to_string(index=False))

# %% [markdown]
# **Where we do not match Table 3, and why we think so.** On Physics
# removing every proxy (`S=0`) lowers both metrics in both FedSpray
# readings, as the paper finds, but by less than the paper reports (the
# `change` column against `paper change`); the class-wise reading lowers
# them most in the paper's reading of FedSpray and not at all in the
# code's, whose labeled proxies persist across rounds. On PubMed no reading
# hurts minority nodes: FedSpray without proxies stays near FedSpray with
# them, far above the paper's 77.11 / 42.01. The evidence that the gap is not an implementation
# slip of the proxies: with proxies our PubMed and Physics cells are at or
# near the paper's (the first rows of the comparison above, and Table 2 in
# `3_results`); the official code, run on our 7-client Cora partition,
# splits and initial weights, selects the same round and gives the same
# test numbers as our code reading (`3_results` §2); and the reading in which the ablation could plausibly
# hurt -- an encoder trained with proxies, asked for targets without them --
# does not reproduce the drop either. A feature-only teacher cannot
# plausibly pull a GNN far below an MLP on the same features: the paper's
# own FedAvg-MLP reaches 82.35 on PubMed (Figure 2) and its Local GCN 87.49,
# against 77.11 for S = 0. So the paper's PubMed S = 0 row was most likely
# produced by a setting we cannot see (its ablation code is not released);
# the claim "proxies matter" holds here on Physics, weakly, and not on
# PubMed. The stand-ins (Cora, CiteSeer) show a small overall loss and no
# minority loss beyond the seed-to-seed noise.

# %% [markdown]
# ## 2. Fig. 4: sensitivity to $\lambda_1$
#
# $\lambda_1 = 0$ is Local training; as it grows the GNN follows the
# encoder's soft targets more closely. The paper (GraphSAGE, no numbers
# printed) finds overall accuracy stable for $\lambda_1 \le 5$, minority
# accuracy dropping when $\lambda_1$ is too small, and overall accuracy
# dropping when it is too large; it recommends 10 on PubMed and 5 on WikiCS.
#
# The paper prints no numbers. The authors' rebuttal figure (repository
# README, April 2024, not the paper) has GCN and SGC curves on PubMed, read
# by pixel analysis to about ±0.5 (digest §6.2); `paper.yaml` holds them as
# table `fig4`, so a run with `lambda1_models` including `gcn` or `sgc` (the
# full profile) is compared with them below. They coincide with Table 2 at
# $\lambda_1 = 1$, the official code's default. SGC on PubMed has not
# converged at 300 rounds (`3_results` §7: every run is read at its last
# round, and its cells move with the length of training), so its curve
# here carries the same under-training as its Table 2 cells.

# %%
l1 = plan["lambda1"]
l1_results = experiment.sweep(l1, out / "results.csv", progress=progress, desc="Fig. 4")

# %%
# NBVAL_CHECK_OUTPUT
print(ft.layout(l1_results, index=("dataset", "model", "setting"), columns=("metric",)).to_string())
show_comparison(l1_results, "fig4", index=("dataset", "model", "method"))
show_claims(l1_results, "fig4")

# %%
fig = ft.sensitivity_figure(l1_results, "lambda1", log_x=True, title="Fig. 4: FedSpray vs $\\lambda_1$")
plotting.save_figure(fig, out / "4_lambda1.png")
display(fig)

# %% [markdown]
# **Would another $\lambda_1$ change Table 2's verdict on minority nodes?**
# Table 2 runs the official code's $\lambda_1 = 1$; the paper recommends 10
# on PubMed. Below, FedSpray's minority accuracy at each $\lambda_1$ against
# the best other method of Table 2 on the same data and backbone (the runs
# of `3_results`, stored in the same `results.csv`). On PubMed with
# GraphSAGE, where "FedSpray best on minority nodes" fails in Table 2, a
# larger $\lambda_1$ raises FedSpray's minority accuracy in both readings,
# to a fraction of a point below the best rival at $\lambda_1 = 10$ in the
# paper's reading. That rival is FedLit, whose minority accuracy here is far
# above the paper's FedLit row (`3_results`' comparison): against the
# paper's own FedLit number FedSpray would lead. So the GraphSAGE failure on
# PubMed has two parts, the code's $\lambda_1$ and a stronger FedLit. On
# the stand-ins with GraphSAGE the soft targets hurt minority nodes instead:
# minority accuracy is highest at the smallest $\lambda_1$, on Cora no value
# reaches FedAvg, and on Chameleon only $\lambda_1 = 0.1$ in the paper's
# reading passes APFL. With GCN and SGC on the stand-ins (curves the paper
# does not draw): on Cora only SGC at $\lambda_1 = 5$ in the code's reading
# passes FedAvg on minority nodes; on Chameleon the paper's reading leads
# for $\lambda_1 \le 5$ (GCN) and $\le 1$ (SGC), the code's reading only
# ties or edges ahead at $\lambda_1 \le 1$. At $\lambda_1 = 10$ and 20
# FedSpray trails the best rival on minority nodes on every stand-in and
# backbone.

# %%
# NBVAL_CHECK_OUTPUT
stored = ResultStore(out / "results.csv").read()
rivals = ft.lambda1_against_rivals(l1_results, stored[stored["table"] == "2"])
print(rivals.round(2).to_string(index=False))

# %% [markdown]
# ## 3. Fig. 5: size of the proxies $d_s$
#
# $d_s$ is the width of the feature embedding $e_i$ and of every proxy, so
# the upload per round shrinks with it (the encoder's first layer is
# $d_x \times d_s$). The paper (GCN, no numbers printed): $d_s = 32$ is about
# as good as 64, and larger brings nothing.

# %%
ds = plan["proxy_dim"]
ds_results = experiment.sweep(ds, out / "results.csv", progress=progress, desc="Fig. 5")

# %%
# NBVAL_CHECK_OUTPUT
print(ft.layout(ds_results, index=("dataset", "setting"), columns=("metric",)).to_string())

# %%
fig = ft.sensitivity_figure(ds_results, "d_s", log_x=True, title="Fig. 5: FedSpray vs proxy size $d_s$")
plotting.save_figure(fig, out / "4_proxy_dim.png")
display(fig)

# %% [markdown]
# **Ours, on Physics (the paper's data and 12 clients; five seeds):** the
# paper's finding holds in both readings. $d_s = 32$ is within a few tenths
# of a point of 64 overall and on minority nodes, and 128 brings nothing
# (in the code's reading it costs about a point on minority nodes); only
# $d_s = 16$ loses a little, overall in the paper's reading. The stand-ins
# agree on Chameleon (flat within a seed's noise) and are noisy on CiteSeer,
# whose minority accuracy moves by several points between seeds at every
# $d_s$. So Physics could send proxies half as wide as the default 64 at no
# cost, halving the encoder's share of the upload.

# %% [markdown]
# ## 4. Table 5: local epochs
#
# FedAvg and FedSpray with $E \in \{3, 5, 10\}$ (WikiCS, GCN in the paper):
# FedSpray stays ahead on minority nodes by about 12 points at every $E$.

# %%
t5 = plan["table5"]
t5_results = experiment.sweep(t5, out / "results.csv", progress=progress, desc="Table 5")

# %%
# NBVAL_CHECK_OUTPUT
print(ft.layout(t5_results, index=("dataset", "setting", "metric"), columns=("method",)).to_string())

# %%
display(ft.paper_table("fedspray", "5", index=("dataset", "setting", "metric"), columns=("method",),
                       settings=[f"E={e}" for e in ft.LOCAL_EPOCHS]))
show_comparison(t5_results, "5", index=("dataset", "method", "setting"))
show_claims(t5_results, "5")

# %% [markdown]
# FedSpray's lead over FedAvg at each $E$ (points; the paper's, from the
# table above: about +1 overall and +12 on minority nodes at every $E$):

# %%
# NBVAL_CHECK_OUTPUT
leads = [ft.fedspray_margins(t5_results[t5_results["setting"].str.endswith(f"E={e}")]).assign(E=e)
         for e in ft.LOCAL_EPOCHS]
print(pd.concat(leads, ignore_index=True).round(2).to_string(index=False))

# %% [markdown]
# **Ours** (Chameleon standing in for WikiCS, which the mirror lacks; GCN,
# five seeds): in the paper's reading FedSpray leads FedAvg on minority nodes
# at every $E$, growing with $E$, by about half to three quarters of the
# paper's 12 points; in the official code's reading the lead is within a
# seed's noise at $E = 3$ and 5 (minority std 3-6 points over seeds) and
# about 3 points at $E = 10$. The overall lead is larger than the paper's
# single point, 7-10 points in the paper's reading and 2-4 in the code's: on
# heterophilous Chameleon FedAvg's GCN is weak, and the encoder's soft
# targets carry what the graph does not. The claim's direction holds here in
# the paper's reading; its size belongs to WikiCS.

# %% [markdown]
# ## Report
#
# `comparison.csv` and `claims.csv` from every row of this folder's
# `results.csv` (Table 2 and the O-pFGL rows come from `3_results`).

# %%
# NBVAL_CHECK_OUTPUT
all_rows = ResultStore(out / "results.csv").read()
report, report_claims = compare.write_report(out, all_rows, "fedspray")
print(report.groupby(["table", "status"]).size().unstack(fill_value=0).to_string())

# %% [markdown]
# What the runs in `results.csv` cost, from the run index beside it: runs
# computed and copied from another table, compute hours summed over runs
# (what an interrupted, resumed or parallel sweep cannot show on one clock),
# the wall hours during which at least one run was computing (parallel
# workers' runs count once, the idle time between sessions not at all), and
# when the first and last were stored.

# %%
print(ResultStore(out / "results.csv").cost().to_string())
