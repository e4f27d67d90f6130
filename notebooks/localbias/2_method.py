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
# # Tackling the local bias, the method step by step
#
# Zhang et al. ("Tackling the Local Bias in Federated Graph Learning", arXiv
# 2110.12906) train one GCN over clients that each hold a block of the
# global graph **and its cross-client edges**. The layer of a centralised GCN,
# $H^{(l)} = \sigma(\hat L H^{(l-1)} W^{(l)})$ with
# $\hat L = \hat D^{-1/2}(A+I)\hat D^{-1/2}$ and the *global* degrees $\hat D$,
# splits exactly by client blocks (Eq. 2):
#
# $$H_k^{(l)} = \sigma\Big(\sum_j \underbrace{\hat L_{kj} H_j^{(l-1)} W^{(l)}}_{M_{kj}:\ \text{computed by client } j}\Big).$$
#
# Client $j$ computes the *local term* $M_{kj}$ for each neighbouring client
# $k$, the server sums what arrives for $k$ and sends it back; the backward
# pass has the same shape (Eq. 4). Without sampling this **is** the centralised
# GCN. Label-guided sampling (Eq. 5) then trains on a sampled global subgraph
# with each sampled row divided by its inclusion probability $p_i$.
#
# This notebook writes each piece out in a few lines and checks it against
# `fglcore`:
#
# 1. the two-client forward pass against the library and a centralised PyG GCN;
# 2. the backward pass (local terms of the gradient, summed weight gradients);
# 3. the label-guided sampling distribution, the inclusion probabilities and
#    the unbiasedness of Eq. 5;
# 4. what crosses the wire per layer and epoch, counted and by Table 1's dense formula.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/localbias
dataset = "Cora"  # graph of every section (a dataset of fglcore.papers.localbias.tables.DATASETS)
num_clients = 4  # clients of sections 3 and 4 (random equal-size partition)
rounds = 3  # epochs of the traced run of section 4
seed = 0  # seed of the partition, the initialisation and the samples

# %%
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display

from fglcore import experiment, paths, plotting, runtime
from fglcore.data.datasets import load_node_data
from fglcore.data.federation import build_clients
from fglcore.data.partition import partition_nodes
from fglcore.distributed.cost import analytic_bytes
from fglcore.distributed.run import RunSpec, simulate_full_graph_pass
from fglcore.distributed.sampling import budget, draw_distribution, sample_nodes
from fglcore.distributed.trainer import SamplingOptions
from fglcore.models.distributed_gnn import DistributedGNN
from fglcore.papers.localbias import method as lm
from fglcore.papers.localbias.tables import dataset_role

configs = lm.plan(dataset, num_clients, rounds, seed)  # every run below, validated first
out = paths.resolve_output_dir(output_dir, profile, "localbias")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 200)
print(f"profile {profile}: figures go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. Two clients, the forward pass by hand
#
# The whole graph with PyG's `split="full"` masks, cut into two random halves.
# $\hat L$ is built once with the global degrees (each client learns the
# degrees of its cross-client neighbours in a one-off exchange); its blocks
# $\hat L_{kj}$ are rows of client $k$ and columns of client $j$, so client
# $j$ can form $M_{kj} = \hat L_{kj} H_j W$ from its own $H_j$ and the edges it
# shares with $k$ — it never sees $H_k$.

# %%
data = load_node_data(dataset, planetoid_split="full") if dataset_role(dataset).split == "planetoid_full" \
    else load_node_data(dataset)
n, d, c = int(data.num_nodes), int(data.num_features), int(data.y.max()) + 1
x = data.x.to_dense() if data.x.is_sparse else data.x
A = torch.zeros(n, n)
A[data.edge_index[0], data.edge_index[1]] = 1.0
A_hat = A + torch.eye(n)
d_inv_sqrt = A_hat.sum(1).rsqrt()
L_hat = d_inv_sqrt[:, None] * A_hat * d_inv_sqrt[None, :]  # global degrees (Sec. 2.1)

two = partition_nodes(data, "random", 2, seed, equal_size=True)
V = [torch.nonzero(two == k).view(-1) for k in range(2)]  # each client's global node ids
torch.manual_seed(seed)
model = DistributedGNN("gcn", d, 16, c, num_layers=2, dropout=0.0)  # PyG GCNConv layers; weights shared
W = [conv.lin.weight.detach().T for conv in model.convs]
b = [conv.bias.detach() for conv in model.convs]


def block(k, j):
    """L-hat_kj: the rows of client k and the columns of client j."""
    return L_hat[V[k]][:, V[j]]


H = [x[V[0]], x[V[1]]]  # H^(0): each client's own features
for layer in range(2):
    terms = {(k, j): block(k, j) @ H[j] @ W[layer] for k in range(2) for j in range(2)}  # M_kj, made by client j
    Z = [terms[(k, k)] + sum(terms[(k, j)] for j in range(2) if j != k) + b[layer] for k in range(2)]
    H = [z.relu() for z in Z] if layer == 0 else Z  # logits after the last layer

by_hand = torch.zeros(n, c)
for k in range(2):
    by_hand[V[k]] = H[k]
model.eval()
central = model(x, data.edge_index).detach()  # PyG's GCN on the whole graph
assert torch.allclose(by_hand, central, atol=1e-5)
print(f"two clients, Eq. 2 by hand = the centralised PyG GCN (max |diff| {(by_hand - central).abs().max():.1e})")

# %% [markdown]
# The library does the same through its exchange (`fglcore.distributed`): one
# full-graph pass of the engine with the same weights.

# %%
clients2 = build_clients(data, two, keep_cross_edges=True)
no_dropout = experiment.as_config({**configs["full"].to_dict(), "dropout": 0.0})  # the hand-written pass has none
spec = RunSpec(no_dropout, SamplingOptions("ours-full"), "gcn", (d, 16, c, 2), True, model.state_dict(), 1, (1,))
library = simulate_full_graph_pass(clients2, spec)
for k in range(2):
    assert torch.allclose(library["logits"][k], by_hand[clients2[k].global_id], atol=1e-5)
print("fglcore.distributed's full-graph pass gives the same logits on both clients")

# %% [markdown]
# ## 2. The backward pass (Eq. 4)
#
# The loss is the mean cross-entropy over the training nodes of both clients.
# Client $k$ knows $G_k^{(2)} = \partial\mathcal L/\partial Z_k^{(2)}$ locally.
# The gradient of a hidden state needs the other client:
# $\partial\mathcal L/\partial H_j^{(1)} = \sum_k \hat L_{kj}^\top G_k^{(2)} W^{(2)\top}$
# — client $k$ computes the term $\hat L_{kj}^\top G_k W^\top$ and sends it
# (through the server) to $j$: the forward pattern reversed. Each client's
# weight gradient $(\sum_j \hat L_{kj} H_j)^\top G_k$ is local; the server
# sums them and every client takes the same step.

# %%
H1 = [(sum(block(k, j) @ x[V[j]] for j in range(2)) @ W[0] + b[0]) for k in range(2)]  # Z^(1)
A1 = [z.relu() for z in H1]
Z2 = [sum(block(k, j) @ A1[j] for j in range(2)) @ W[1] + b[1] for k in range(2)]
train = [data.train_mask[V[k]] for k in range(2)]
n_train = int(data.train_mask.sum())
G2 = []
for k in range(2):  # dL/dZ2 of the mean CE: (softmax - one-hot) / n_train on training rows
    g = Z2[k].softmax(-1) - F.one_hot(data.y[V[k]], c).float()
    G2.append(torch.where(train[k][:, None], g, torch.zeros_like(g)) / n_train)
agg1 = [sum(block(k, j) @ A1[j] for j in range(2)) for k in range(2)]  # saved in the forward pass
grad_W2 = sum(agg1[k].T @ G2[k] for k in range(2))  # server: sum of the local weight gradients
dA1 = [sum(block(k, j).T @ G2[k] @ W[1].T for k in range(2)) for j in range(2)]  # terms sent back to j
G1 = [dA1[j] * (H1[j] > 0) for j in range(2)]
agg0 = [sum(block(k, j) @ x[V[j]] for j in range(2)) for k in range(2)]
grad_W1 = sum(agg0[k].T @ G1[k] for k in range(2))

model.zero_grad()
F.cross_entropy(model(x, data.edge_index)[data.train_mask], data.y[data.train_mask]).backward()
auto = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
assert torch.allclose(grad_W1, auto["convs.0.lin.weight"].T, atol=1e-6)
assert torch.allclose(grad_W2, auto["convs.1.lin.weight"].T, atol=1e-6)
for name, g in library["grads"].items():
    assert torch.allclose(g, auto[name], atol=1e-6), name
print("Eq. 4 by hand = autograd of the centralised GCN = fglcore's distributed backward (both weight matrices, "
      f"max |diff| {(grad_W1 - auto['convs.0.lin.weight'].T).abs().max():.1e})")

# %% [markdown]
# ## 3. Label-guided sampling and Eq. 5
#
# Each client samples $s_k = s\,n_k/N$ nodes (rounded): a client's larger
# share of the graph gets a larger sample. Draws follow the label-guided
# distribution (A1-A2): the training nodes' share split **equally over the
# classes** (uniform inside a class), the unlabelled nodes one stratum drawn
# uniformly. So every client's sample has about the same, balanced label mix
# — the non-i.i.d. half of local bias. With $s_k$ draws with replacement a node
# is in the sample with probability $p_i = 1-(1-P_k(i))^{s_k}$, and Eq. 5
# divides its row by $p_i$ (Horvitz-Thompson), so that
# $E[\hat L_{:,S}\,\mathrm{diag}(1/p_S)\, H_S] = \hat L H$.

# %%
clients = build_clients(data, partition_nodes(data, "random", num_clients, seed, equal_size=True),
                        keep_cross_edges=True)
client = clients[0]
P = draw_distribution(client.y, client.train_mask)  # the library's P_k
y_k, train_k = client.y, client.train_mask
classes = torch.unique(y_k[train_k])
by_hand_P = torch.zeros(client.num_nodes, dtype=torch.float64)
share_train = float(train_k.float().mean())
for cls in classes:
    members = train_k & (y_k == cls)
    by_hand_P[members] = share_train / len(classes) / int(members.sum())
by_hand_P[~train_k] = (1 - share_train) / int((~train_k).sum()) if (~train_k).any() else 0.0
assert torch.allclose(by_hand_P, P.double(), atol=1e-9)
s_k = budget(int(client.num_nodes), dataset_role(dataset).sample_ratio)

# %%
# NBVAL_CHECK_OUTPUT
mix = pd.DataFrame({"class": classes.tolist(),
                    "training nodes": [int((train_k & (y_k == cl)).sum()) for cl in classes],
                    "draw probability mass": [round(float(P[train_k & (y_k == cl)].sum()), 4) for cl in classes]})
print(f"client 0: {client.num_nodes} nodes, s_k = {s_k} draws; P_k by hand = fglcore's draw_distribution")
print(mix.to_string(index=False))

# %% [markdown]
# Unbiasedness, by simulation: the average of the sampled and rescaled
# aggregation $\hat L_{00}[:,S]\,\mathrm{diag}(1/p_S)\,X_S$ over many samples
# approaches $\hat L_{00} X$; without the $1/p$ (variant `ours*`) it
# approaches $\hat L_{00}\,\mathrm{diag}(p)\,X$, a shrunk and label-skewed
# version.

# %%
g = torch.Generator().manual_seed(seed)
L00 = L_hat[client.global_id][:, client.global_id]
x0 = x[client.global_id]
target = L00 @ x0
sums = {"ours (1/p)": torch.zeros_like(target), "ours* (no 1/p)": torch.zeros_like(target)}
errors = []
for draw in range(1, 201):
    nodes, p_i = sample_nodes(P, s_k, "draws", g)
    sums["ours (1/p)"] += L00[:, nodes] @ (x0[nodes] / p_i.float()[:, None])
    sums["ours* (no 1/p)"] += L00[:, nodes] @ x0[nodes]
    if draw in (10, 50, 200):
        errors.append({"samples": draw, **{k: float((v / draw - target).norm() / target.norm())
                                           for k, v in sums.items()}})
error_frame = pd.DataFrame(errors)
assert error_frame["ours (1/p)"].iloc[-1] < error_frame["ours (1/p)"].iloc[0]
assert error_frame["ours (1/p)"].iloc[-1] < error_frame["ours* (no 1/p)"].iloc[-1]

# %%
# NBVAL_CHECK_OUTPUT
print("relative error of the mean sampled aggregation against L-hat X (client 0's own block):")
print(error_frame.round(3).to_string(index=False))

# %% [markdown]
# ## 4. What crosses the wire
#
# A few epochs of Ours+GCN and of ours-full on `num_clients` clients, every
# message through the ledger (simulated engine; the Gloo engine sends the same
# messages, `tests/test_localbias_gloo.py`). Per epoch: the sampled ids (a
# neighbour must know which of its boundary rows are in the sample), one
# local term per layer and neighbour, its gradient on the way back, and the
# weight gradients to the server and back. The engine sends only the rows a
# neighbour needs (its boundary nodes), so the count sits below the dense
# schedule behind Table 1 (every $|S_k| \times d_l$ block to everyone).

# %%
traced = {name: experiment.run_full(config)[1] for name, config in configs.items()}

# %%
# NBVAL_CHECK_OUTPUT
for name, result in traced.items():
    print(f"{name}: bytes per epoch, all clients, by message")
    print(lm.layer_traffic(result.ledger.to_frame(), configs[name].rounds).to_string(index=False))
comm = pd.concat([lm.communication_frame(r).assign(variant=name) for name, r in traced.items()])
print(comm[["variant", "client", "measured_total", "analytic_total"]].to_string(index=False))
assert (comm["measured_total"] <= comm["analytic_total"] * 1.05).all()

# %%
from matplotlib.figure import Figure

fig = Figure(figsize=(6, 3.2))
ax = fig.subplots()
width = 0.38
for i, (name, part) in enumerate(comm.groupby("variant", sort=False)):
    ax.bar(part["client"] + (i - 0.5) * width, part["measured_total"] / 2**20, width, label=f"{name}: sent+received")
    ax.scatter(part["client"] + (i - 0.5) * width, part["analytic_total"] / 2**20, marker="_", s=300, color="k")
ax.set_xlabel("client")
ax.set_ylabel("MiB per epoch")
ax.set_title(f"{dataset}, K = {num_clients}: counted (bars) vs dense formula (ticks)")
ax.legend(fontsize="small")
fig.tight_layout()
plotting.save_figure(fig, out / "2_bytes_per_client.png")
display(fig)
