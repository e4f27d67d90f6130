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
# # A tour of federated graph learning with `fglcore`
#
# In **federated graph learning** (FGL) a graph is split among clients that
# will not pool their data: each client holds a subgraph (its nodes, their
# features, labels and the edges among them) and the clients train one model
# together by exchanging *parameters* with a server, never data.
#
# This notebook walks through the pieces every paper in this companion
# stands on:
#
# 1. load a graph (Cora) with PyTorch Geometric;
# 2. split it among clients with two partitioners, **Louvain** (communities)
#    and **random**, and look at what each client ends up with;
# 3. write FedAvg's aggregation step by hand and check it against the library;
# 4. train **Local**, **FedAvg**, **FedProx** and **Central** models;
# 5. read the **communication ledger**: every tensor that crossed the network.
#
# Every number below is computed by `fglcore`; the cells only orchestrate.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/tour
dataset = "Cora"  # node-classification dataset
partitions = ["louvain", "random"]  # partitioners to compare
num_clients = 10  # number of clients
methods = ["local", "fedavg", "fedprox", "central"]  # algorithms to train
model = "gcn"  # GNN backbone
rounds = 50  # communication rounds
local_epochs = 3  # local epochs per round
lr = 0.01  # learning rate (Adam)
fedprox_mu = 0.01  # FedProx proximal weight mu
seeds = [0, 1, 2]  # seeds; tables show mean ± std over them
progress = True  # show progress bars
interactive = False  # show the ipywidgets partition explorer

# %%
import pandas as pd
import torch
from IPython.display import display

from fglcore import experiment, paths, plotting, runtime
from fglcore.papers import tour
from fglcore.data.datasets import load_node_data
from fglcore.data.federation import build_clients
from fglcore.data.partition import cached_partition
from fglcore.data.statistics import client_statistics
from fglcore.fl.parameters import module_payload, weighted_mean
from fglcore.metrics import node_homophily
from fglcore.models import build_model

plan = tour.plan(dataset, partitions, num_clients, methods, model, rounds, local_epochs, lr, fedprox_mu, seeds)
out = paths.resolve_output_dir(output_dir, profile, "tour")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.precision", 3)
print(f"profile {profile}: results go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. The graph
#
# Cora is a citation network: 2,708 papers (nodes) with bag-of-words features,
# 5,278 citations (undirected edges) and 7 topics (labels). It is
# **homophilous**: most citations join papers of the same topic, which is why
# message passing (GCN) helps.

# %%
data = load_node_data(dataset)  # PyG prints "Processing..." the first time it builds the dataset

# %%
# NBVAL_CHECK_OUTPUT
print(f"{dataset}: {data.num_nodes} nodes, {data.num_edges // 2} undirected edges, "
      f"{data.num_features} features, {data.num_classes} classes")
print(f"node homophily of the whole graph: {node_homophily(data.edge_index, data.y):.3f}")

# %% [markdown]
# ## 2. Splitting the graph among clients
#
# A partitioner assigns each node to one client; a client keeps the edges
# among its own nodes, and the edges between clients are lost.
#
# * **Louvain** finds communities and packs them into `num_clients` groups of
#   similar size (the FedSage recipe, size cap `n/K − 20`). Communities are
#   dense, so few edges are lost, and each client sees a *biased* slice of the
#   label space.
# * **Random** assigns nodes uniformly: every client looks like the whole
#   graph in labels, but most edges are cut.

# %%
assignments = {p: cached_partition(data, p, num_clients, seed=0) for p in partitions}
client_sets = {p: build_clients(data, a) for p, a in assignments.items()}
stats = {p: client_statistics(cs, data.num_classes) for p, cs in client_sets.items()}
for p, table in stats.items():
    print(f"--- {p}")
    display(table)

# %%
# NBVAL_CHECK_OUTPUT
for p, clients in client_sets.items():
    kept_nodes = sum(c.num_nodes for c in clients)
    kept_edges = sum(c.num_edges for c in clients) // 2
    assert kept_nodes == int((assignments[p] >= 0).sum())  # no node duplicated
    print(f"{p:>8}: {kept_nodes} nodes kept, {kept_edges} of {data.num_edges // 2} edges kept "
          f"({100 * kept_edges / (data.num_edges // 2):.1f}%), "
          f"mean client homophily {stats[p]['homophily'].mean():.3f}")

# %% [markdown]
# The label mix of each client shows the difference at a glance: Louvain
# clients are dominated by one or two topics, random clients all look alike.

# %%
for p in partitions:
    label_cols = [c for c in stats[p].columns if str(c).startswith("class_")]
    fig = plotting.client_label_mix(stats[p].set_index("client")[label_cols])
    fig.suptitle(f"{dataset}, {p} partition: labels per client")
    plotting.save_figure(fig, out / f"label_mix_{p}.png")
    display(fig)

# %%
if interactive:
    from fglcore.widgets import partition_explorer

    display(partition_explorer([dataset], partitions, max_clients=20))

# %% [markdown]
# ## 3. FedAvg's aggregation, by hand
#
# In each round of FedAvg (McMahan et al., 2017) every client starts from the
# global parameters $w$, trains locally for a few epochs, and sends back $w_k$.
# The server replaces $w$ by the average weighted by the clients' training
# set sizes $n_k$:
#
# $$ w \leftarrow \sum_k \frac{n_k}{\sum_j n_j}\, w_k . $$
#
# Here it is written out on three freshly initialised GCNs, and checked against
# the library's `weighted_mean`, which the server uses.

# %%
models, sizes = [], [120, 80, 40]
for k in range(3):
    torch.manual_seed(k)
    models.append(build_model(model, data.num_features, 16, data.num_classes))
payloads = [module_payload(m) for m in models]
by_hand = {
    name: sum(n * p[name] for n, p in zip(sizes, payloads)) / sum(sizes)
    for name in payloads[0]
}
library = weighted_mean(payloads, sizes)
assert all(torch.allclose(by_hand[name], library[name]) for name in by_hand)
print({name: tuple(t.shape) for name, t in by_hand.items()})

# %% [markdown]
# ## 4. Training: Local, FedAvg, FedProx and Central
#
# * **Local**: each client trains alone on its own subgraph.
# * **FedAvg**: the clients train one shared model, averaging parameters every round.
# * **FedProx** (Li et al., 2020): FedAvg plus a proximal term
#   $\frac{\mu}{2}\lVert w - w_{\text{global}}\rVert^2$ that keeps local models close to the global one.
# * **Central**: one model on the whole graph, cross-client edges included: the
#   upper reference that federation tries to approach.
#
# Each client splits its nodes 40/30/30 into train/validation/test; we report
# the test accuracy (pooled over all clients' test nodes) at the round with the
# best validation accuracy. Results are written to `results.csv` as each run
# finishes, so an interrupted run resumes where it stopped.

# %%
# every run of this section, built (and validated, before the first cell ran) by fglcore.papers.tour.plan
results = experiment.sweep(plan["training"], out / "results.csv", progress=progress, desc="tour runs")

# %%
# NBVAL_CHECK_OUTPUT
table = experiment.summarize(results[results.metric.isin(["accuracy", "minority_accuracy"])],
                             by=["partition", "method", "metric"])
table["mean ± std"] = table["mean"].map("{:.2f}".format) + " ± " + table["std"].map("{:.2f}".format)
print(table.pivot(index=["partition", "method"], columns="metric", values="mean ± std").to_string())

# %%
fig = plotting.method_bars(results[results.metric == "accuracy"], x="method", hue="partition",
                           ylabel="test accuracy (%)")
plotting.save_figure(fig, out / "accuracy.png")
display(fig)

# %% [markdown]
# How far is each method from **Central**, and does federating beat training
# alone? The gaps below are computed from the table above (points of test
# accuracy, mean over seeds). Look at how they change between the two
# partitions: Louvain clients keep most edges but each sees a skewed slice of
# the labels; random clients see every label but lose most edges.

# %%
# NBVAL_CHECK_OUTPUT
accuracy = experiment.summarize(results[results.metric == "accuracy"], by=["partition", "method"])
accuracy = accuracy.pivot(index="partition", columns="method", values="mean")
gaps = pd.DataFrame(index=accuracy.index)
for method in accuracy.columns.drop("central", errors="ignore"):
    if "central" in accuracy.columns:
        gaps[f"{method} - central"] = accuracy[method] - accuracy["central"]
if {"fedavg", "local"} <= set(accuracy.columns):
    gaps["fedavg - local"] = accuracy["fedavg"] - accuracy["local"]
print(gaps.round(2).to_string())

# %% [markdown]
# ## 5. What crossed the network: the communication ledger
#
# Every message between server and clients goes through a `Channel` that
# records its round, sender, receiver, name, shape, dtype and bytes. For FedAvg
# each round costs one download and one upload of the model per client, and
# nothing else: no features, no labels, no edges.

# %%
config = plan["ledger"]  # FedAvg on the first partition and seed
_, run = experiment.run_full(config)
ledger = run.ledger
display(ledger.summary())
model_bytes = sum(p.numel() * p.element_size()
                  for p in build_model(model, data.num_features, config.hidden, data.num_classes).parameters())
per_round = ledger.per_round()
round_bytes = per_round.loc[per_round["round"] <= rounds, "total_bytes"].mean()
print(f"model size {model_bytes / 1024:.1f} KiB; one round moves {round_bytes / 1024:.1f} KiB "
      f"= {round_bytes / model_bytes:.2f} models for {num_clients} clients")
assert ledger.names(sender="clients") <= set(module_payload(build_model(model, data.num_features, config.hidden,
                                                                         data.num_classes))) | {"num_samples"}

# %%
history = pd.DataFrame(run.history)
curves = history.melt(id_vars="round", value_vars=["val_accuracy", "test_accuracy"], var_name="split")
curves["value"] *= 100
fig = plotting.curves(curves, "round", hue="split", ylabel="accuracy (%)")
fig.suptitle(f"FedAvg on {dataset}, {partitions[0]} clients")
plotting.save_figure(fig, out / "fedavg_curve.png")
display(fig)

# %% [markdown]
# ## Where to go next
#
# Each paper folder under `notebooks/` follows the same pattern: a
# *motivation* notebook that shows the problem on data, a *method* notebook
# that builds the algorithm step by step, and *results* notebooks that
# regenerate the paper's tables next to the paper's numbers.
