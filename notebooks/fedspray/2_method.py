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
# # FedSpray, part 2: the algorithm step by step
#
# Fu et al., *Federated Graph Learning with Structure Proxy Alignment*, KDD 2024, §4 and Algorithm 1.
#
# Notebook 1 showed that message passing pulls a client's minority nodes toward
# its majority class. FedSpray keeps a **personalized GNN** $f(\theta^{(k)})$ on
# every client, never shared, and trains together with all clients a small global
# **feature–structure encoder** $g(\omega)$ and global **structure proxies**
# $\mathbf S\in\mathbb R^{d_c\times d_s}$, one learned vector per class that
# stands in for "unbiased neighbourhood information of class $j$". The encoder
# turns a node's features plus its class proxy into a **soft target** that
# regularises the GNN.
#
# Below, each piece is written out by hand on a small federation and checked
# against `fglcore.algorithms.fedspray` on the same tensors:
#
# 1. class proxies and the encoder (Eqs. 8-10);
# 2. soft targets $p_i$ for labeled and unlabeled nodes;
# 3. the GNN's loss (Eq. 7) and the encoder's loss (Eq. 11);
# 4. the server: FedAvg of the encoder (Eq. 14) and proxy alignment with class-ratio weights (Eq. 15);
# 5. what crosses the network, read from the communication ledger.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/fedspray
dataset = "Cora"  # a small node-classification dataset
num_clients = 3  # clients: the largest Louvain communities (FedSpray's recipe)
model = "gcn"  # personalized GNN backbone
proxy_dim = 16  # d_s: width of the embedding and of each structure proxy (64 in the paper)
lambda1 = 1.0  # weight of the GNN's distillation term (Eq. 7)
lambda2 = 1.0  # weight of the encoder's distillation term (Eq. 11)
local_epochs = 2  # E: local epochs per phase
rounds = 5  # rounds of the run whose ledger is read
lr = 0.003  # learning rate (Adam) of the GNN and the encoder
seed = 0  # seed of the federation and the models

# %%
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display

from fglcore import experiment, paths, plotting, runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms import fedspray as fs
from fglcore.data.federation import build_federation
from fglcore.fl.channel import Channel
from fglcore.fl.parameters import module_payload, weighted_mean
from fglcore.papers.fedspray.tables import method_plan

out = paths.resolve_output_dir(output_dir, profile, "fedspray")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.precision", 4)
print(f"profile {profile}: outputs go to {paths.display_path(out)}")

# %% [markdown]
# ## 0. A small federation
#
# The `num_clients` largest Louvain communities of the graph, each client's nodes
# split 40/30/30 into train/validation/test. `build` creates the server and
# clients exactly as a run would, without training anything yet.

# %%
# the run traced below (fglcore.papers.fedspray.tables.method_plan, validated before the first cell ran)
config = method_plan(dataset, num_clients, model, proxy_dim, lambda1, lambda2, local_epochs, rounds, lr, seed)["config"]
runtime.set_seed(seed)
federation = build_federation(config)
algorithm = ALGORITHMS.get("fedspray")(config, federation, "cpu")
server, clients = algorithm.build(Channel())
C, d_s = federation.num_classes, proxy_dim
for client in clients:
    t = client.trainer
    print(f"{client.name}: {t.x.size(0)} nodes, {t.num_train_samples} labeled, "
          f"class ratios a = {client.class_ratios.numpy().round(2)}")

# %% [markdown]
# ## 1. Structure proxies and the feature–structure encoder
#
# The global proxies start (official code) at $\mathbf s_c = 0.01\,c\,\mathbf 1$.
# The encoder has three one-layer parts:
#
# * embedding $g_e$: $\mathbf e_i=\mathrm{ReLU}(W_e\mathbf x_i+b_e)$, width $d_s$;
# * classifier $g_p$: $\mathbf p_i=\mathrm{softmax}\big(W_p(\mathbf e_i+\mathbf s_i)+b_p\big)$ (Eq. 9, Combine = addition);
# * projector $g_q$: $\mathbf q_i=\mathrm{softmax}(W_q\mathbf e_i+b_q)$ (Eq. 10), features only.
#
# A labeled node of class $j$ uses $\mathbf s_i=\mathbf s_j$; an unlabeled node,
# whose class is unknown, uses the mix $\mathbf s_i=\mathbf q_i^\top\mathbf S$.

# %%
S_by_hand = 0.01 * torch.arange(C, dtype=torch.float32)[:, None] * torch.ones(C, d_s)
assert torch.equal(S_by_hand, server.proxies)

client = clients[0]
client.receive(server.payload_for(client, 1), 1)  # the encoder and S arrive
t, enc = client.trainer, client.encoder
labeled = torch.zeros(t.x.size(0), dtype=torch.bool)
labeled[t.train_idx] = True

e = torch.relu(t.x @ enc.embedding.weight.T + enc.embedding.bias)              # g_e
q = torch.softmax(e @ enc.projector.weight.T + enc.projector.bias, dim=-1)   # g_q (Eq. 10)
s = q @ S_by_hand                                                             # unlabeled: q_i^T S
s[labeled] = S_by_hand[t.y[labeled]]                                          # labeled: s_{y_i}
p_logits = (e + s) @ enc.classifier.weight.T + enc.classifier.bias            # g_p(e_i + s_i) (Eq. 9)

client.restart_labeled_proxies()          # Alg. 1 line 4
library_logits, kd_nodes = client.soft_targets()
assert kd_nodes is None                   # Eq. 6: distil on all nodes
assert torch.allclose(p_logits, library_logits, atol=1e-6)
print("soft targets p_i (first 3 nodes):\n", torch.softmax(p_logits[:3], -1).detach().numpy().round(3))

# %% [markdown]
# ## 2. Phase 1: the personalized GNN learns from the soft targets (Eq. 7)
#
# $$\mathcal L_G^{(k)}=\underbrace{\frac1{|\mathcal V_L|}\sum_{v_i\in\mathcal V_L}\mathrm{CE}(\mathbf y_i,\hat{\mathbf y}_i)}_{\text{Eq. 5}}
# +\lambda_1\underbrace{\frac1{|\mathcal V|}\sum_{v_i\in\mathcal V}\mathrm{KL}(\mathbf p_i\Vert\hat{\mathbf y}_i)}_{\text{Eq. 6}}$$
#
# The soft target of a minority node carries its class proxy, a global, unbiased
# hint of its class, and pulls the GNN's prediction away from the majority.

# %%
gnn_out = t.forward()
p = torch.softmax(p_logits, -1)
kl_p_yhat = (p * (torch.log(p) - torch.log_softmax(gnn_out, -1))).sum(-1).mean()
L_G_by_hand = F.cross_entropy(gnn_out[t.train_idx], t.y_train) + lambda1 * kl_p_yhat
L_G_library = F.cross_entropy(gnn_out[t.train_idx], t.y_train) + fs.gnn_distillation_term(library_logits, lambda1)(gnn_out)
assert torch.allclose(L_G_by_hand, L_G_library, atol=1e-5)
ce_G = F.cross_entropy(gnn_out[t.train_idx], t.y_train)
print(f"L_G = {L_G_by_hand.item():.4f} (cross-entropy {ce_G.item():.4f} + lambda1 x KL {kl_p_yhat.item():.4f})")

# %% [markdown]
# ## 3. Phase 2: the encoder and the proxies learn from the GNN (Eq. 11)
#
# $$\mathcal L_F^{(k)}=\underbrace{\frac1{|\mathcal V_L|}\sum_{v_i\in\mathcal V_L}\mathrm{CE}(\mathbf y_i,\mathbf q_i)}_{\text{Eq. 12}}
# +\lambda_2\underbrace{\frac1{|\mathcal V_L|}\sum_{v_i\in\mathcal V_L}\mathrm{KL}(\hat{\mathbf y}_i\Vert\mathbf p_i)}_{\text{Eq. 13}}$$
#
# The cross-entropy trains $g_e, g_q$; the reverse distillation trains $g_e, g_p$ and
# the labeled nodes' proxies $\mathbf s_i$, with the GNN's $\hat{\mathbf y}$ as a fixed teacher.

# %%
with torch.no_grad():
    y_hat_train = t.logits()[t.train_idx]
e_train = enc.embed(t.x[t.train_idx])
q_logits_train = enc.projector_logits(e_train)
p_logits_train = enc.soft_target_logits(e_train, client.labeled_proxies)
y_hat = torch.softmax(y_hat_train, -1)
kl_yhat_p = (y_hat * (torch.log(y_hat) - torch.log_softmax(p_logits_train, -1))).sum(-1).mean()
L_F_by_hand = F.cross_entropy(q_logits_train, t.y_train) + lambda2 * kl_yhat_p
L_F_library = fs.encoder_objective(p_logits_train, q_logits_train, t.y_train, y_hat_train, lambda2)
assert torch.allclose(L_F_by_hand, L_F_library, atol=1e-5)
print(f"L_F = {L_F_by_hand.item():.4f}")

# %% [markdown]
# ## 4. The server: FedAvg for the encoder, class-ratio alignment for the proxies
#
# Each client trains one round (Phase 1, then Phase 2) and uploads its encoder and
# its class proxies $\mathbf S^{(k)}$, row $j$ being the mean proxy of its labeled
# class-$j$ nodes (Alg. 1 line 23). The server averages the encoder with weights
# $N^{(k)}/N$ (Eq. 14) and aligns each class proxy with the clients' **within-client
# class ratios** $a^{(k)}_j$ (Eq. 15):
#
# $$\mathbf s_j\leftarrow\sum_k\frac{a^{(k)}_j}{\sum_{k'}a^{(k')}_j}\,\mathbf s^{(k)}_j .$$
#
# A client where class $j$ is the majority dominates $\mathbf s_j$, however small it is:
# its class-$j$ nodes have the least biased neighbourhoods. (A class that no client
# has among its labeled nodes has $a_j=0$ and keeps its previous proxy.)

# %%
uploads, weights = {}, {}
for c in clients:
    c.receive(server.payload_for(c, 1), 1)
    uploads[c.cid] = c.fit(1)
    weights[c.cid] = c.trainer.num_train_samples
    S_k_by_hand = torch.stack([c.labeled_proxies.detach()[c.trainer.y_train == j].mean(0)
                               if (c.trainer.y_train == j).any() else torch.zeros(d_s) for j in range(C)])
    assert torch.allclose(S_k_by_hand, uploads[c.cid]["proxies"], atol=1e-6)

ratios = torch.stack([c.class_ratios for c in clients])                      # a_j^(k), [K, C]
local_S = torch.stack([uploads[c.cid]["proxies"] for c in clients])          # S^(k), [K, C, d_s]
a_j = ratios.sum(0)                                                          # a_j = sum_k a_j^(k)
S_aligned_by_hand = (ratios[:, :, None] * local_S).sum(0) / a_j.clamp(min=1e-12)[:, None]
S_aligned_by_hand[a_j == 0] = server.proxies[a_j == 0]                      # a class no client has keeps its proxy
encoder_names = list(module_payload(clients[0].encoder))
encoder_by_hand = {n: sum(weights[k] * uploads[k][n] for k in uploads) / sum(weights.values()) for n in encoder_names}

server.aggregate(uploads, weights, 1)
assert torch.allclose(S_aligned_by_hand, server.proxies, atol=1e-6)
assert all(torch.allclose(encoder_by_hand[n], server.parameters[n], atol=1e-6) for n in encoder_names)
display(pd.DataFrame(ratios.numpy(), index=[c.name for c in clients],
                     columns=[f"a_{j}" for j in range(C)]).round(3))

# %% [markdown]
# Eq. 15 against a plain mean over clients: how far each aligned class proxy
# moved toward the clients where that class is frequent.

# %%
# NBVAL_CHECK_OUTPUT
plain_mean = local_S.mean(0)
shift = pd.DataFrame({"class": range(C),
                      "largest a_j^(k)": ratios.max(0).values.numpy().round(3),
                      "|s_j aligned - plain mean|": (server.proxies - plain_mean).norm(dim=1).numpy().round(4)})
print(shift.to_string(index=False))

# %% [markdown]
# ## 5. What crosses the network
#
# A full run of `rounds` rounds through the library, then its ledger. Each round
# the server sends the encoder and $\mathbf S$; each client sends back its encoder,
# its class proxies, its number of training nodes (the FedAvg weight of Eq. 14) and,
# once, its class ratios $a^{(k)}$ (Eq. 15 needs them).
# Node features, embeddings, per-node proxies and the personalized GNN never leave
# a client.

# %%
_, run = experiment.run_full(config)
ledger = run.ledger
display(ledger.summary())
sent_by_clients = ledger.names(sender="clients")
gnn_names = set(module_payload(clients[0].model))
assert sent_by_clients == set(encoder_names) | {"proxies", "class_ratios", "num_samples"}, sent_by_clients
assert not sent_by_clients & gnn_names
assert ledger.names(sender="server") == set(encoder_names) | {"proxies"}

# %%
# NBVAL_CHECK_OUTPUT
per_round = ledger.per_round()
encoder_floats = sum(p.numel() for p in clients[0].encoder.parameters())
gnn_floats = sum(p.numel() for p in clients[0].model.parameters())
print(f"per client and round: encoder {encoder_floats} floats + proxies {C * d_s} floats uploaded; "
      f"the personalized {model.upper()} ({gnn_floats} floats) stays home")
print(f"clients sent: {sorted(sent_by_clients)}")
print(per_round.head(3).to_string(index=False))
print(f"\nselected round {run.selected_round}: test accuracy {100 * run.metrics['test_accuracy']:.2f}%, "
      f"minority accuracy {100 * run.metrics['test_minority_accuracy']:.2f}%")
