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
# # FedStruct, the method step by step
#
# FedStruct (Aliakbari, Östman and Graell i Amat, ICLR 2025) lets clients
# whose subgraphs are linked by cross-client edges learn from the *structure*
# of the whole graph without ever sharing a node feature or a label. This
# notebook builds each piece by hand, checks it against `fglcore`, and ends
# with what crosses the network and why the federated training equals a
# centralised one:
#
# 1. the decoupled GCN as a graph filter (Sec. 5.2);
# 2. the multi-hop adjacency $\bar A = \hat A^{L_s}$ and its pruning (Sec. 5.3, Fig. 3);
# 3. the node structure features Deg, Fed⋆ and Hop2Vec (Sec. 5.1, 5.5);
# 4. what each client sends and receives, from the communication ledger (Alg. 1-3);
# 5. FedSGD equals centralised training on the block-diagonal graph (digest §2.8).

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/fedstruct
dataset = "Cora"  # graph of sections 2, 4 and 5 (Fig. 3 is Cora)
num_clients = 5  # clients of sections 4 and 5 (random partition)
structure_hops = 10  # L_s, the power of A-hat (Cora: 10, Table 5)
prune_p = 30  # p: values kept per node after each hop (paper: 30)
rounds = 5  # training rounds of the traced runs
seed = 0  # seed of the split, partition and initialisation

# %%
import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from IPython.display import display

from fglcore import paths, plotting, runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.data.datasets import load_node_data
from fglcore.data.federation import build_federation, interconnection_summary
from fglcore.data.multihop import multihop_adjacency, normalized_adjacency
from fglcore.data.node_structure import degree_features, fedstar_features, return_probabilities
from fglcore.fl.channel import Channel
from fglcore.papers.fedstruct import method as fm

configs = fm.plan(dataset, num_clients, structure_hops, prune_p, rounds, seed)  # every run below, validated first
out = paths.resolve_output_dir(output_dir, profile, "fedstruct")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 200)
print(f"profile {profile}: figures go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. The decoupled GCN is a polynomial filter
#
# A decoupled GCN applies an MLP node-wise and then propagates:
# $H = \bar A\, F_\theta(X)$ with $\bar A = \sum_l \beta_l \hat A^l$ (Eqs. 1-2),
# $\hat A = \tilde D^{-1}(A + I)$. $\hat A$ is similar to the symmetric
# $\tilde D^{-1/2}\tilde A\tilde D^{-1/2} = U\Lambda U^\top$, so
# $\bar A = \tilde D^{-1/2} U\, T(\Lambda)\, U^\top \tilde D^{1/2}$ with
# $T(\lambda) = \sum_l \beta_l \lambda^l$ (Eqs. 11-12): each graph frequency
# $\lambda \in (-1, 1]$ is scaled by $T(\lambda)$. The experiments use
# $\beta_{L_s} = 1$, so $T(\lambda) = \lambda^{L_s}$: the larger $L_s$, the more
# only the smoothest components ($\lambda$ near 1, community-level signals)
# survive — and, with an even $L_s$, the most oscillating ones ($\lambda$ near
# $-1$, bipartite-like signals) too. On a small stochastic block model we
# build $\bar A$ both ways and compare.

# %%
from torch_geometric.utils import stochastic_blockmodel_graph

torch.manual_seed(seed)
sbm = stochastic_blockmodel_graph([40, 40, 40], [[0.15, 0.01, 0.01], [0.01, 0.15, 0.01], [0.01, 0.01, 0.15]])
n_sbm = 120
a_tilde = sp.coo_matrix((np.ones(sbm.size(1)), sbm.numpy()), shape=(n_sbm, n_sbm)).tocsr() + sp.eye(n_sbm)
a_tilde.data[:] = 1.0
d = np.asarray(a_tilde.sum(axis=1)).ravel()
symmetric = np.diag(d ** -0.5) @ a_tilde.toarray() @ np.diag(d ** -0.5)
lam, U = np.linalg.eigh(symmetric)
L_demo = 4
abar_spectral = np.diag(d ** -0.5) @ U @ np.diag(lam ** L_demo) @ U.T @ np.diag(d ** 0.5)
abar_library = multihop_adjacency(sbm, n_sbm, L_demo, pruning="none").toarray()
assert np.allclose(abar_spectral, abar_library, atol=1e-10)
print(f"A-bar = A-hat^{L_demo} from the spectrum equals fglcore's (max |diff| "
      f"{np.abs(abar_spectral - abar_library).max():.1e}); eigenvalues in [{lam.min():.3f}, {lam.max():.3f}]")

# %%
from matplotlib.figure import Figure

fig = Figure(figsize=(5.2, 3.4))
ax = fig.subplots()
grid = np.linspace(-1, 1, 401)
for hops in (1, 2, 5, 10, 20):
    ax.plot(grid, grid ** hops, label=f"$L_s$ = {hops}")
ax.plot(lam, np.zeros_like(lam), "|", color="k", markersize=10, label="eigenvalues (SBM)")
ax.set_xlabel(r"graph frequency $\lambda$ of $\hat A$")
ax.set_ylabel(r"$T(\lambda) = \lambda^{L_s}$")
ax.set_title("the structure filter of FedStruct")
ax.legend(fontsize="small")
fig.tight_layout()
plotting.save_figure(fig, out / "2_filter.png")
display(fig)

# %% [markdown]
# ## 2. $\bar A$ and its pruning (Fig. 3)
#
# The exact $\hat A^{L_s}$ fills in quickly (dense storage is $O(n^2)$). Being a
# low-pass filter it is dominated by community blocks, so FedStruct keeps only
# the top $p \cdot n$ values after every multiplication and multiplies on with
# the pruned matrix (Sec. 5.3; no renormalisation). Written out, with scipy:

# %%
data = load_node_data(dataset)
n = int(data.num_nodes)
a_hat = normalized_adjacency(data.edge_index, n)  # D~^-1 (A + I), global degrees


def prune_top_values(matrix, keep):
    """Keep the entries at least as large as the keep-th largest value."""
    matrix = matrix.tocsr(copy=True)
    if matrix.nnz > keep:
        threshold = np.partition(matrix.data, matrix.nnz - keep)[matrix.nnz - keep]
        matrix.data[matrix.data < threshold] = 0.0
        matrix.eliminate_zeros()
    return matrix


power = prune_top_values(a_hat, prune_p * n)
for _ in range(structure_hops - 1):
    power = prune_top_values(a_hat @ power, prune_p * n)

library = multihop_adjacency(data.edge_index, n, structure_hops, pruning="global", p=prune_p)
assert abs(power - library).max() < 1e-12 and power.nnz == library.nnz
full = multihop_adjacency(data.edge_index, n, structure_hops, pruning="none")
y = data.y.numpy()

# %%
# NBVAL_CHECK_OUTPUT
summary = pd.DataFrame({
    "non-zeros": [full.nnz, library.nnz],
    "density (%)": [100 * full.nnz / n**2, 100 * library.nnz / n**2],
    "row sum (mean)": [float(full.sum(axis=1).mean()), float(library.sum(axis=1).mean())],
    "weight within a label (%)": [100 * fm.same_label_mass(full, y), 100 * fm.same_label_mass(library, y)],
}, index=[f"A-hat^{structure_hops} (full)", f"pruned, p = {prune_p}"])
print(summary.round(3).to_string())
print("the teaching loop equals fglcore.data.multihop.multihop_adjacency")

# %%
fig = fm.abar_figure(full, library, y, f"Fig. 3: {dataset}, $L_s$ = {structure_hops}, full vs pruned (p = {prune_p})")
plotting.save_figure(fig, out / "2_figure3.png")
display(fig)

# %% [markdown]
# Pruning drops the weak, long-range entries and keeps the blocks: the share
# of $\bar A$'s weight that links nodes of the same label goes *up*, which is
# why the paper finds pruning costs at most about a point (Table 7).
#
# ## 3. Node structure features
#
# $s_v$ feeds the structure branch $Z = \bar A\, g_{\theta_s}(S)$ (Eq. 8):
#
# * **Deg**: one-hot of the global degree (256 wide, clipped) — a client knows
#   the degrees of its own nodes, cross edges included;
# * **Fed⋆** (after FedStar): the return probabilities $(\hat A^k)_{vv}$,
#   $k = 1..50$, then a 206-wide one-hot degree;
# * **Hop2Vec (H2V)**: $s_v$ is a free parameter, $\mathcal N(0, 0.05^2)$,
#   trained with the model (Eq. 16) — task-dependent and needing no global graph.

# %%
degree = torch.bincount(data.edge_index[0], minlength=n)
deg = degree_features(degree, 256)
assert torch.equal(deg.argmax(1), degree.clamp(max=255)) and torch.all(deg.sum(1) == 1)
rw = return_probabilities(data.edge_index, n, 3)
walk = sp.identity(n, format="csr")
for k in range(3):  # (A-hat^k)_vv, k = 1, 2, 3, by sparse products
    walk = (a_hat @ walk).tocsr()
    assert np.allclose(walk.diagonal(), rw[:, k].numpy(), atol=1e-5)
fed_star = fedstar_features(data.edge_index, n, 256, 50)
print(f"Deg: {tuple(deg.shape)}, Fed*: {tuple(fed_star.shape)} (50 return probabilities + 206 one-hot degree);"
      " both checked against the definitions above")

# %% [markdown]
# ## 4. What crosses the network
#
# A run of FedStruct (H2V) with its clients simulated one by one, every message
# through the channel. Before training (round 0), Alg. 3: client $k$ sends
# client $i$ the blocks $B_{ik} = \tilde A^{[i]}_k [\hat A^{[k]}]^{\ell-1}$
# (rows of $i$'s own nodes), clients send the server their top values and get
# back the pruning threshold, and every client sends every other its rows of
# $S$. In each round: $\theta$ down, the gradient of $\theta$ and of $S$ up
# (Hop2Vec), the mean $S$-gradient down. Never a feature, a label or an
# adjacency row of another client.

# %%
config = configs["clients"]
federation = build_federation(config, keep_cross_edges=True)
print(interconnection_summary(federation.clients).to_string(index=False))
channel = Channel()
clients_run = ALGORITHMS.get("fedstruct")(config, federation, "cpu")
clients_result = clients_run.run(channel)
frame = clients_result.ledger.to_frame()

# %%
# NBVAL_CHECK_OUTPUT
traffic = fm.ledger_by_message(frame)
traffic["MiB"] = (traffic.pop("bytes") / 2**20).round(3)
print(traffic.to_string(index=False))
assert {"x", "y", "edge_index", "train_mask"}.isdisjoint(set(frame["name"]))
print("names never sent:", ", ".join(["x", "y", "edge_index", "train_mask"]))

# %% [markdown]
# One client's view: what client 0 received before training and in one round.

# %%
# NBVAL_CHECK_OUTPUT
theta = set(clients_run.server.parameters)
client0 = frame[(frame["receiver"] == "client0") & (frame["round"] <= 1)].assign(
    phase=lambda f: np.where(f["round"] == 0, "pre-training", "round 1"),
    what=lambda f: ["theta (model parameters)" if name in theta else name for name in f["name"]])
print(client0.groupby(["phase", "what"]).agg(senders=("sender", "nunique"), messages=("nbytes", "size"),
                                             bytes=("nbytes", "sum")).to_string())

# %% [markdown]
# ## 5. FedSGD is centralised training on the block-diagonal graph
#
# With full-batch FedSGD every client computes the gradient of its own loss
# at the same $\theta$; the server's weighted mean is the gradient of
# $\sum_i w_i \mathcal L_i$, a single loss over all clients' nodes, and every
# client then takes the same Adam step. So the federated run *is* one
# centralised run whose feature branch sees only intra-client edges (a
# block-diagonal adjacency) and whose structure branch sees the stacked rows
# $\bar A^{[i]}$. `fglcore` uses this for the tables (`simulation="fused"`,
# about $K$ times cheaper). Numerically, without dropout (whose masks the two
# draw differently):

# %%
fused_result = ALGORITHMS.get("fedstruct")(configs["fused"], federation, "cpu").run(Channel())
fedsgd_federation = build_federation(configs["fedsgd"])
fedsgd_result = ALGORITHMS.get("fedsgd")(configs["fedsgd"], fedsgd_federation, "cpu").run(Channel())
central_result = ALGORITHMS.get("central")(configs["central"], fedsgd_federation, "cpu").run(Channel())


def gaps(a, b):
    return max(abs(x[key] - y[key]) for x, y in zip(a.history, b.history) for key in ("test_accuracy", "test_loss")
               if key in x and key in y)


# %%
# NBVAL_CHECK_OUTPUT
checks = pd.DataFrame([
    {"pair": "FedStruct: clients one by one vs fused", "rounds": len(clients_result.history),
     "max |difference| of test accuracy and loss": gaps(clients_result, fused_result)},
    {"pair": "FedSGD GraphSAGE vs central on the union of subgraphs", "rounds": len(fedsgd_result.history),
     "max |difference| of test accuracy and loss": gaps(fedsgd_result, central_result)},
])
assert (checks["max |difference| of test accuracy and loss"] < 1e-4).all()
print(checks.to_string(index=False, float_format=lambda v: "< 1e-4" if v < 1e-4 else f"{v:.2e}"))
