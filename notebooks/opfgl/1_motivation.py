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
# # O-pFGL, motivation: label-skewed clients and what a global model misses
#
# O-pFGL (Yan et al., arXiv 2411.11304) studies clients whose graphs come
# from a label-imbalanced split (Louvain+ / Metis+: 100 communities grouped by
# KMeans on their label histograms) and argues (Sec. 1, Figure 1(b),
# Table 24, Figure 5) that
#
# * a global model, even a good one, serves a client's *minority* classes and
#   its majority classes unevenly, and
# * local fine-tuning alone forgets the global knowledge on the classes the
#   client knows poorly; distillation weighted per node by how well the
#   client knows the node's class ($H(c)$, $w(c)$) keeps it.
#
# This notebook draws the partitions' label histograms against the paper's
# description, then zooms in on one CiteSeer client of about 339 nodes (the
# paper's) and scores Standalone, the generalised model $M_G$ and O-pFGL per class.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/opfgl
datasets = ["Cora", "CiteSeer"]  # graphs whose partitions are drawn (paper: Cora, CiteSeer, PubMed, ...)
num_clients = 10  # clients (paper: 10)
client_dataset = "CiteSeer"  # graph of the per-class study (paper: CiteSeer, Louvain+)
client_nodes = 339  # the paper's client size; the closest client is studied
condense_iterations = 3000  # O-pFGL's condensation iterations (paper: 3000)
max_epochs = 1000  # cap of O-pFGL's Stages 1-2 (paper: 3000)
local_rounds = 100  # Standalone's epochs
seed = 0  # seed of the runs

# %%
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import display

from fglcore import paths, plotting, runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.data.federation import build_federation
from fglcore.papers.opfgl import motivation as om

plan = om.plan(datasets, num_clients, client_dataset, client_nodes, condense_iterations, max_epochs, local_rounds,
               seed)
out = paths.resolve_output_dir(output_dir, profile, "opfgl")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 200)

# %% [markdown]
# ## 1. Louvain+ and Metis+: per-client label histograms
#
# The paper (Sec. 5.1, App. A.1) calls both splits label-imbalanced with
# clients of unequal size. The authors' code draws them once, cached on
# disk, under its first run's seed (`seed_everything(0)`; its `--seed 42`
# is parsed but never read), with python-louvain and an unseeded KMeans; ours
# are drawn at seed 42 with networkx's Louvain, so the clients differ from
# theirs (digest §5.2: a simulation found Cora clients of 28-532 nodes
# under Louvain+, one with 237 of its 280 nodes in one class). Each row is a
# client, each column a class, shaded by the share of the client's nodes.

# %%
# NBVAL_CHECK_OUTPUT
federations = {key: build_federation(config) for key, config in plan["partitions"].items()}
summary = pd.DataFrame({f"{d} {p}": om.skew_summary(om.label_histograms(f)) for (d, p), f in federations.items()}).T
print(summary.round(2).to_string())

# %% [markdown]
# The partition does not depend on the profile (our seed 42). On Cora, our
# Louvain+ gives clients of 168-409 nodes whose largest class holds 44% of
# their nodes on average; Metis+ is more skewed (81-568 nodes, 69%). Both are
# label-skewed as the paper says; Louvain+'s sizes are less spread than the
# digest's simulation (28-532 nodes), which used networkx's Louvain and
# scipy's kmeans2 rather than the authors' python-louvain and sklearn KMeans.
# CiteSeer's Louvain+ has a 345-node client, close to the paper's 339.

# %%
fig, axes = plt.subplots(len(datasets), 2, figsize=(11, 3.2 * len(datasets)), squeeze=False)
for ax, ((d, p), f) in zip(axes.flat, federations.items()):
    h = om.label_histograms(f)
    share = h.drop(columns="nodes").div(h["nodes"], axis=0)
    share.index = [f"{k} ({n})" for k, n in zip(h.index, h["nodes"])]
    sns.heatmap(share, ax=ax, cmap="Blues", vmin=0, vmax=1, cbar=False, annot=h.drop(columns="nodes").values,
                fmt="d", annot_kws={"size": 7})
    ax.set_title(f"{d}, {p}: label counts per client (nodes)")
    ax.set_xlabel("class")
fig.tight_layout()
plotting.save_figure(fig, out / "1_label_histograms.png")
display(fig)
plt.close(fig)

# %% [markdown]
# ## 2. One client, per class (Figure 1(b), Table 24, Figure 5)
#
# The client of `client_dataset` (Louvain+) closest to `client_nodes` nodes:
# its training labels, class homophily $H(c)$ and distillation factors
# $w(c)=1/(1+\ln(H(c)+1))$, then the test precision, recall and F1 of each
# class under Standalone, the generalised model $M_G$ (Stage 1 only) and
# O-pFGL (Stages 1 and 2).

# %%
runs = plan["runs"]
trained = {}
for name, config in runs.items():
    algorithm = ALGORITHMS.get(config.algorithm)(config, build_federation(config), "cpu")
    result = algorithm.run()
    trained[name] = (algorithm, result)
federation = trained["opfgl"][0].federation
k = om.closest_client(federation, client_nodes)
C = int(federation.num_classes)
client = trained["opfgl"][0].clients[k]
g = federation.clients[k]
print(f"{client_dataset}, louvain_plus: client {k} has {g.num_nodes} nodes (paper: {client_nodes})")
profile_table = pd.DataFrame({"train": g.y[g.train_mask].bincount(minlength=C)[:C].numpy(),
                              "test": g.y[g.test_mask].bincount(minlength=C)[:C].numpy(),
                              "H(c)": client.H.numpy().round(2), "w(c)": client.factors.numpy().round(3)}).T
print(profile_table.to_string())

# %%
reports = {}
for name, (algorithm, result) in trained.items():
    prediction = algorithm.clients[k].evaluate()["test"]
    reports[name] = om.per_class_report(prediction.logits, prediction.y, C)
per_class = pd.concat(reports, axis=1).round(1)
print(per_class.to_string())
print("macro-F1 over all classes:", {name: round(float(r["f1"].mean()), 2) for name, r in reports.items()})

# %% [markdown]
# Figure 5's reading: the change of O-pFGL's F1 against the generalised
# model's, per class, beside $H(c)$. The paper's point is that classes with
# small $H(c)$ (the client sees few, poorly connected examples) are where
# plain fine-tuning loses the global model's knowledge, and where the
# node-adaptive distillation ($\gamma_i$ grows with $w(c)$) holds it.

# %%
delta = (reports["opfgl"]["f1"] - reports["global"]["f1"]).rename("Δ F1 (O-pFGL − M_G)")
frame = pd.concat([delta, pd.Series(client.H.numpy(), name="H(c)"), pd.Series(client.factors.numpy(), name="w(c)")],
                  axis=1)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
frame["Δ F1 (O-pFGL − M_G)"].plot.bar(ax=a1, color=["tab:green" if v >= 0 else "tab:red" for v in delta])
a1.axhline(0, color="black", lw=0.8)
a1.set_title(f"client {k}: per-class F1 change vs M_G")
frame["H(c)"].plot.bar(ax=a2, color="tab:blue")
a2.set_title("class homophily H(c)")
fig.tight_layout()
plotting.save_figure(fig, out / "1_per_class_delta.png")
display(fig)
plt.close(fig)
print(frame.round(3).to_string())
