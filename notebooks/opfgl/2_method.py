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
# # O-pFGL, step by step
#
# O-pFGL (Yan et al., arXiv 2411.11304) reaches a personalised model on every
# client with **one upload and one download**:
#
# 1. each client propagates its features, computes class homophily, expands
#    its labelled set with reliable nodes (HRE) and takes class statistics;
# 2. the statistics go up once, masked by secure aggregation: the server sees
#    only their sum;
# 3. the server condenses the sum into a pseudo-graph (one node per class here);
# 4. the pseudo-graph comes down once;
# 5. each client trains a generalised model on it (Stage 1) and fine-tunes it
#    on its own graph with node-adaptive distillation (Stage 2).
#
# Each step is written out in a few lines and checked against
# `fglcore.algorithms.opfgl`, then the library runs the whole method, and the
# communication ledger is set against the paper's Table 25 (Figure 6).

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/opfgl
dataset = "Cora"  # graph (paper: Cora, CiteSeer, PubMed, ...)
partition = "louvain_plus"  # louvain_plus | metis_plus (O-pFGL's label-skewed partitions)
num_clients = 10  # clients (paper: 10)
condense_iterations = 3000  # server condensation iterations (paper: 3000)
max_epochs = 1000  # cap of Stages 1 and 2 (paper: 3000, early stopping)
multi_rounds = 10  # rounds of the multi-round FedAvg set beside O-pFGL's communication (paper: 100)
seed = 0  # seed of the run

# %%
import math

import matplotlib.pyplot as plt
import networkx as nx
import pandas as pd
import torch
from IPython.display import display

from fglcore import experiment, paths, plotting, runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms import opfgl as op
from fglcore.data.federation import build_federation
from fglcore.fl.channel import Channel
from fglcore.fl.secure import SecureAggregator
from fglcore.papers.opfgl.method import analytic_bytes, method_plan

plan = method_plan(dataset, partition, num_clients, condense_iterations, max_epochs, multi_rounds, seed)
config = plan["config"]
out = paths.resolve_output_dir(output_dir, profile, "opfgl")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 200)
runtime.set_seed(seed)
federation = build_federation(config)
algorithm = ALGORITHMS.get("opfgl")(config, federation, "cpu")
server, clients = algorithm.build(Channel())
C, F_dim, h = federation.num_classes, int(federation.num_features), algorithm.options["hops"]
print(f"{dataset}, {partition}, {num_clients} clients; C = {C} classes, F = {F_dim} features, h = {h}")
graphs = federation.clients  # each client's subgraph (PyG Data with its split masks)
print(pd.DataFrame([{"client": k, "nodes": g.num_nodes, "train": int(g.train_mask.sum()),
                     "labels (train)": torch.bincount(g.y[g.train_mask], minlength=C).tolist()}
                    for k, g in enumerate(graphs)]).to_string(index=False))

# %% [markdown]
# ## 1. Propagated features (Eq. 5)
#
# $X^{prop}=[X\Vert\hat AX\Vert\dots\Vert\hat A^hX]$ with
# $\hat A=\tilde D^{-1/2}(A+I)\tilde D^{-1/2}$, on one client, by hand with a
# dense matrix:

# %%
client = clients[0]
data = graphs[0]
n = data.num_nodes
A = torch.zeros(n, n)
A[data.edge_index[0], data.edge_index[1]] = 1.0
A_tilde = A + torch.eye(n)
d_inv_sqrt = A_tilde.sum(1).pow(-0.5)
A_hat = d_inv_sqrt[:, None] * A_tilde * d_inv_sqrt[None, :]
X = data.x.float()
X_prop = torch.cat([X] + [torch.linalg.matrix_power(A_hat, k) @ X for k in range(1, h + 1)], dim=1)
assert torch.allclose(X_prop, op.propagated_features(X, data.edge_index, h), atol=1e-5)
print(f"client 0: X_prop is {tuple(X_prop.shape)}")

# %% [markdown]
# ## 2. Homophily and the distillation factors (Eqs. 1-3)
#
# $h(v)$: the share of a training node's training neighbours with its label;
# $H(c)=\sum_{v\in\mathcal V_L,y_v=c}h(v)$; $w(c)=1/(1+\ln(H(c)+1))$. A class
# the client knows well (large $H$) gets a small $w$: its nodes need less of
# the global model's knowledge.

# %%
train, y = data.train_mask, data.y
h_node = torch.zeros(n, dtype=torch.float64)
for v in torch.nonzero(train).view(-1).tolist():
    nbrs = data.edge_index[1][data.edge_index[0] == v]
    nbrs = nbrs[train[nbrs]]
    h_node[v] = (y[nbrs] == y[v]).double().mean() if len(nbrs) else 0.0
H = torch.zeros(C, dtype=torch.float64).index_add(0, y[train], h_node[train])
w = 1 / (1 + torch.log(H + 1))
assert torch.allclose(h_node, client.homophily) and torch.allclose(H, client.H) and torch.allclose(w, client.factors)
print(pd.DataFrame({"train nodes": torch.bincount(y[train], minlength=C).numpy(), "H(c)": H.numpy().round(2),
                    "w(c)": w.numpy().round(3)}).T.to_string())

# %% [markdown]
# ## 3. Label propagation and HRE (Eqs. 7-8)
#
# Label propagation spreads the training labels; an unlabelled node joins the
# statistics under its LP label when its LP confidence reaches $f_{th}$, its
# degree reaches $d_{th}$ and its class is among the top-K of largest $H$.

# %%
o = algorithm.options
print({k: o[k] for k in ("lp_iterations", "lp_alpha", "hre_confidence", "hre_min_degree", "hre_top_k")})
soft = op.label_propagation(y, data.edge_index, train, C, o["lp_iterations"], o["lp_alpha"])
conf, lp_label = (soft / (soft.sum(1, keepdim=True) + 1e-9)).max(1)
degree = torch.bincount(data.edge_index[0], minlength=n)
top = torch.topk(client.factors.float(), k=min(o["hre_top_k"], C), largest=False).indices if o["hre_top_k"] else []
reliable = ~train & (conf >= o["hre_confidence"]) & torch.isin(lp_label, torch.as_tensor(top, dtype=torch.long))
if o["hre_min_degree"] > 0:
    reliable &= degree >= o["hre_min_degree"]
assert torch.equal(reliable, client.reliable)
extra = reliable.sum().item()
print(f"client 0: {int(train.sum())} training nodes, HRE adds {extra}; "
      f"their LP labels are right for {int((lp_label[reliable] == y[reliable]).sum())} of {extra}")
print("HRE nodes per client:", [int(c.reliable.sum()) for c in clients])

# %% [markdown]
# ## 4. The masked upload and what the server learns (Sec. 3.5, Eq. 9)
#
# Each client uploads, per class, the sums Eq. 9 needs: $N_k^c$,
# $N_k^c\mu_k^c$, $(N_k^c-1)s_k^{2,c}+N_k^c(\mu_k^c)^2$, a reporting flag and
# its training count. Pairwise masks (`fglcore.fl.secure`) make each vector
# look random; they cancel in the sum, which is all the server can read.

# %%
secure = SecureAggregator([c.cid for c in clients], seed=seed)
vectors = [c.statistics() for c in clients]
masked = [secure.mask(c.cid, v, round=1) for c, v in zip(clients, vectors)]
print(f"one upload per client: {tuple(masked[0].shape)} {masked[0].dtype}, {masked[0].numel() * 8:,} bytes")
print("client 0's first class row, clear:", vectors[0][0, :4].numpy().round(3), "masked:",
      masked[0].reshape(-1)[:4].tolist())
total = secure.unmask_sum(masked, 1, [c.cid for c in clients]).view(vectors[0].shape)
assert torch.allclose(total, sum(vectors), atol=1e-4)
pooled = op.pooled_statistics(total, "exact")
# The union of the clients' nodes (training + HRE), taken at once: the same means and variances.
feats, labels = [], []
for c, g in zip(clients, graphs):
    chosen = g.train_mask | c.reliable
    f = op.propagated_features(g.x.float(), g.edge_index, h)[chosen]
    lab = torch.where(g.train_mask, g.y, c.soft_labels.argmax(1))[chosen]
    counts = torch.bincount(lab, minlength=C)
    keep = counts[lab] >= o["min_class_count"]  # a client's class with one node is left out of its statistics
    feats.append(f[keep])
    labels.append(lab[keep])
feats, labels = torch.cat(feats), torch.cat(labels)
union = op.class_statistics(feats, labels, C)
kept = pooled.count > 0
assert torch.equal(pooled.count, union.count)
assert torch.allclose(pooled.mean[kept], union.mean[kept], atol=1e-5)
assert torch.allclose(pooled.var[kept], union.var[kept], atol=1e-4)
print("server's means and variances = the union's: max |Δmean|", float((pooled.mean[kept] - union.mean[kept]).abs().max()),
      " max |Δvar|", float((pooled.var[kept] - union.var[kept]).abs().max()))
print("per-class node counts the server learns:", pooled.count.int().tolist())

# %% [markdown]
# The server learns the class counts and the class means and variances of the
# propagated features over all clients together; nothing per client (a class
# with a single node on a client is left out of that client's statistics,
# `min_class_count` = 2, and so out of the union above). The paper's Eq. 9 divides the pooled variance by $N^c-m_c$
# (`pooled_variance="paper"`, the default); `"exact"` above divides by
# $N^c-1$, the union's variance.

# %% [markdown]
# ## 5. The pseudo-graph (Sec. 4.3)
#
# $X'\sim N(0,1)$, one node per class; the link predictor $g_\theta$ draws
# weighted edges; $10\,L_{align}+0.1\,L_{smt}$ is minimised so the propagated
# pseudo-features match the class means and dispersions.

# %%
server.target = op.pooled_statistics(total, o["pooled_variance"])
graph = server.condense()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.plot(server.loss_history)
ax1.set_yscale("log")
ax1.set_xlabel("iteration")
ax1.set_title("condensation loss")
G = nx.Graph()
G.add_nodes_from(range(graph.x.size(0)))
for i, j in graph.edge_index.t().tolist():
    if i < j:
        G.add_edge(i, j, weight=float(graph.adj[i, j]))
pos = nx.circular_layout(G)
nx.draw_networkx(G, pos, ax=ax2, node_color=graph.y.tolist(), cmap="tab10",
                 width=[3 * G[u][v]["weight"] for u, v in G.edges], labels={i: f"c{int(graph.y[i])}" for i in G})
ax2.set_title(f"pseudo-graph: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges")
ax2.axis("off")
fig.tight_layout()
plotting.save_figure(fig, out / "2_pseudo_graph.png")
display(fig)
plt.close(fig)
prop = op.propagated_features(graph.x, graph.edge_index, h, graph.edge_weight)
gap = (prop - server.target.mean[graph.y].float()).pow(2).mean(1)
print("per pseudo-node MSE to its class mean:", gap.detach().numpy().round(4))

# %% [markdown]
# ## 6. Stages 1 and 2 (Eqs. 14-17)
#
# Stage 1 trains the shared initial GCN on the pseudo-graph with
# cross-entropy; Stage 2 fine-tunes it on the client's graph with
# $L_{ce}+\frac1N\sum_i\gamma_i\mathrm{KL}(p_{M_G}(i)\Vert p_{M_k}(i))$, where
# $\gamma_i=\beta\,\tilde y_i\cdot w$ (clamped): a node whose LP label points
# at a class the client knows poorly leans more on the global model.

# %%
gamma = (o["beta"] * (client.soft_labels.double() @ client.factors))
if o["gamma_min"] is not None or o["gamma_max"] is not None:
    gamma = gamma.clamp(min=o["gamma_min"], max=o["gamma_max"])
assert torch.allclose(gamma.float(), client.gamma)
print(f"client 0: gamma in [{float(gamma.min()):.3f}, {float(gamma.max()):.3f}], mean {float(gamma.mean()):.3f}")

rows, run = experiment.run_full(config)
metrics = {r["metric"]: r["value"] for r in rows}
print(f"O-pFGL, whole method through the library: accuracy {metrics['accuracy']:.2f}, macro-F1 {metrics['macro_f1']:.2f}")
print(pd.Series(run.extras["seconds"]).round(2).to_string())
per_client = pd.DataFrame(run.per_client)[["client", "num_samples", "hre_nodes", "stage1_epochs", "stage2_epochs",
                                           "test_accuracy"]]
print(per_client.round(2).to_string(index=False))

# %% [markdown]
# ## 7. What crosses the network (Figure 6, Table 25)
#
# O-pFGL's ledger holds one upload and one download per client, nothing else.
# Beside it, the ledgers of one-round FedAvg + fine-tuning, one-round FedSpray
# and FedAvg for `multi_rounds` rounds, and Table 25's formulas counted for
# this graph (GCN 2 × 64; float32 parameters; O-pFGL's statistics as masked
# `int64` fixed point), which must equal the ledgers byte for byte. FedSpray's
# one round sends its encoder and proxies down twice (before and after the
# round) and has no closed formula here. O-pFGL's upload grows with the
# feature width (here $C(2(h+1)F+3)$ words), not with the model; on Cora's
# 1433 features it is close to one GCN's parameters, so one-shot O-pFGL costs
# about half of one FedAvg round and a small fraction of many rounds.

# %%
ledger = run.ledger
display(ledger.summary())
assert len(ledger.select(sender="clients")) == num_clients and len(ledger.select(receiver="clients")) == num_clients
comm = [{"method": "opfgl", "upload": ledger.total_bytes(sender="clients"),
         "download": ledger.total_bytes(receiver="clients"),
         **{f"analytic {k}": v * num_clients for k, v in analytic_bytes(
             "opfgl", num_features=F_dim, num_classes=C, hidden=config.hidden, hops=h,
             pseudo_nodes=graph.x.size(0)).items()}}]
for name, base in plan["baselines"].items():
    _, result = experiment.run_full(base)
    row = {"method": name, "upload": result.ledger.total_bytes(sender="clients"),
           "download": result.ledger.total_bytes(receiver="clients")}
    if base.algorithm in ("fedavg", "fedavg_ft"):
        row.update({f"analytic {k}": v * num_clients for k, v in analytic_bytes(
            "fedavg", num_features=F_dim, num_classes=C, hidden=config.hidden, hops=h, pseudo_nodes=0,
            rounds=base.rounds, one_shot=base.algorithm == "fedavg_ft").items()})
    comm.append(row)
comm = pd.DataFrame(comm).set_index("method")
comm["total MiB"] = (comm["upload"] + comm["download"]) / 2**20
print(comm.round(3).to_string())
counted = comm.dropna(subset=["analytic upload"])
assert (counted["upload"] == counted["analytic upload"]).all(), "ledger and Table 25 disagree on uploads"
assert (counted["download"] == counted["analytic download"]).all(), "ledger and Table 25 disagree on downloads"

# %%
fig, ax = plt.subplots(figsize=(6, 3.4))
comm["total MiB"].plot.bar(ax=ax, logy=True)
ax.set_ylabel("MiB, all clients (log)")
ax.set_title(f"Communication on {dataset} ({partition}, {num_clients} clients)")
fig.tight_layout()
plotting.save_figure(fig, out / "2_communication.png")
display(fig)
plt.close(fig)
