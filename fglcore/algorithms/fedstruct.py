r"""FedStruct: decoupled subgraph FL that uses the interconnections for structure only.

Aliakbari, Östman and Graell i Amat, "Decoupled Subgraph Federated Learning",
ICLR 2025 (arXiv 2402.19163; official code ``JavadAliakbari/FedStruct``).
Each client predicts :math:`\hat y_v = \mathrm{softmax}(f_{\theta_f}(v) +
\sum_u \bar A_{vu} g_{\theta_s}(s_u))` (Eq. 10) with a decoupled GCN on its
own subgraph and a structure branch over the global multi-hop adjacency
:math:`\bar A = \hat A^{L_s}` (:class:`~fglcore.models.fedstruct.FedStructModel`).

**Before training (ledger round 0)**, through the channel:

1. every client obtains its rows :math:`\bar A^{[i]}`, for all its nodes
   :math:`\mathcal V_i` (Prop. 1 needs only the labelled ones; App. D and
   the official code give all, so val/test nodes can be predicted; digest
   item 8):

   * ``abar_protocol="clients"`` (default; Alg. 3, App. D): client
     :math:`i` starts from its rows :math:`\hat A^{[i]} = (\tilde
     D^{[i]})^{-1}\tilde A^{[i]}` (global degrees, which it knows); at hop
     :math:`\ell \ge 2` every client :math:`k` sends each client :math:`i`
     it is connected to the block :math:`B_{ik} = \tilde A^{[i]}_k
     [\hat A^{[k]}]^{\ell-1}` (``abar_block_rows/cols/values``: row and
     column global ids and values; rows are :math:`i`'s own nodes) and
     client :math:`i` forms :math:`[\hat A^{[i]}]^{\ell} = (\tilde
     D^{[i]})^{-1}\sum_k B_{ik}` (Eqs. 33-35). Pruning (option ``pruning``,
     :mod:`fglcore.data.multihop`): ``"block"`` prunes every :math:`B_{ik}`
     to :math:`\lceil p/K\rceil n_i` values before sending (Eq. 37; the
     client sizes :math:`n_i` are public); ``"global"`` (Sec. 5.3, the
     official code, digest item 7) keeps the :math:`p n` largest values of
     the whole :math:`\hat A^{\ell}` after every hop -- Alg. 3 does not say how
     clients agree on that cut, so here each client sends the server only
     its :math:`p n` largest *values* (``abar_top_values``, no positions),
     the server returns the :math:`p n`-th largest of them all
     (``abar_threshold``) and every client drops its entries below it,
     which gives exactly the central rule of
     :func:`~fglcore.data.multihop.multihop_adjacency`; ``"none"`` is the
     "-F" variant (the blocks then fill in: fine for Cora-sized graphs, too
     many messages for PubMed);
   * ``abar_protocol="server"`` (App. H: the server knows the global graph):
     the server computes :math:`\bar A` with the same rule and sends each
     client its rows (``abar_rows/cols/values``). Numerically identical; the
     official code simulates Alg. 3 this way.

2. node structure features :math:`S` (option ``nsf``): ``"deg"`` (one-hot
   global degree, computed by each client for its own nodes), ``"fedstar"``
   (Fed⋆; its random-walk part is computed by the simulation from the
   global graph, as in the official code, see
   :mod:`fglcore.data.node_structure`), ``"h2v"`` (Hop2Vec, Sec. 5.5:
   learnable, :math:`\mathcal N(0, 0.05^2)`, each client draws its own
   nodes' rows) or ``"n2v"`` (Node2Vec, Table 8 / App. H, where the server
   knows the global graph: trained on the global graph with the official
   settings and the run's seed, :func:`~fglcore.data.node_structure.node2vec_features`;
   App. H's server-side structure GNN is not modelled, so with
   ``pruning="none"`` and ``abar_protocol="server"`` this is the DGCN+N2V
   reading with FedStruct's own combination, the digest's §7.2 item 23)
   or ``"gdv"`` (GDV, Table 8 / App. H likewise: the graphlet degree vector,
   the 73 orbit counts of graphlets on 2-5 nodes, computed on the global graph
   and standardised per column as the official ``Graph.calc_GDV``,
   :func:`~fglcore.data.node_structure.gdv_features`; its width is the orbit
   count, so ``structure_dim`` must be 73 -- the official structure model
   takes its input width from the features -- and any other value is refused
   with an error naming 73, so that the configuration records the width the
   model has).
   Each client sends its rows ``nsf`` (with ``nsf_node_ids``)
   to every other client (Alg. 1 and 2: "share :math:`S_i` with all
   clients").

No client ever receives another client's node features, labels or
adjacency rows: only blocks of :math:`\hat A^{\ell}` restricted to its own
rows, structure features and model quantities (``tests/test_fedstruct.py``
checks the ledger).

**Training** (option ``training``):

* ``"fedsgd"`` (Eqs. 3-5, Alg. 1-2; official "GA"): every round each client
  computes one full-batch gradient of its mean training cross-entropy and
  uploads it (one tensor per parameter of :math:`\theta`, and for Hop2Vec
  ``grad_S``, :math:`n \times d_s`, Prop. 2); the server averages with
  weights :math:`n_i/n` (``weighting="nodes"``, official) or
  :math:`|\tilde{\mathcal V}_i|/|\tilde{\mathcal V}|` (``"labelled"``,
  Eq. 3), takes one Adam step on :math:`\theta` (lr and weight decay of the
  config; digest item 3) and sends :math:`\theta` and, for Hop2Vec, the
  averaged ``grad_S`` with which every client takes the same Adam step on
  :math:`S` (:math:`\lambda_s = \lambda`, Table 5). The server, the
  gradient upload and the weights are the FedSGD baseline's
  (:mod:`fglcore.algorithms.fedsgd`, algorithm ``fedsgd``): one FedSGD in
  the package;
* ``"fedavg"`` (official "WA"): ``config.local_epochs`` local Adam steps on
  :math:`\theta`, then the weighted mean of the weights. Hop2Vec's
  :math:`S` (option ``h2v_fedavg``): ``"weights"`` (default; FedAvg's rule
  applied to :math:`S` as to every other weight: local Adam steps, then the
  weighted mean of :math:`S`, McMahan et al.'s Alg. 1 -- the paper gives no
  FedAvg variant of Alg. 2) or ``"gradients"``, the official code's: its
  ``Server.joint_train_w`` (``JavadAliakbari/FedStruct``, ``src/server.py``)
  collects only the :math:`S` gradients (``get_grads(self.clients, True)``,
  ``just_SFV``: ``Classifier.get_model_grads`` of ``src/classifier.py``),
  sums them with ``coef`` :math:`n_i/n`, sets the sum on every client
  (``share_grads``) and lets each client's Adam step :math:`S` with it
  beside its local step on :math:`\theta`; :math:`S` is not in the averaged
  ``state_dict`` (commented out there). Here each client uploads its
  weights and ``grad_S`` (the gradient at the received :math:`\theta` and
  :math:`S`), the server returns the weighted means, and each client steps
  :math:`S` with the mean gradient on receipt, before it trains or is
  evaluated: the official trajectory. One local step per round
  (``local_epochs`` 1), as the official "WA";

**Normalisation layers** (option ``norm_layers``): both MLPs start with a
LayerNorm (``input_layer_norm``, official code, digest §4.5 and item 16).
The official FedAvg ("WA", ``Server.joint_train_w``) leaves them out of the
broadcast and of the weight averaging: its MLP/GNN ``state_dict`` skips every
``nn.LayerNorm``, ``nn.BatchNorm1d`` and ``nn.InstanceNorm1d``
(``src/models/GNN_models.py``), so each client keeps and trains its own --
``"local"`` (default, the digest's reading: the official code's LayerNorm
and its handling); ``"averaged"`` averages them as every other weight
(McMahan et al.'s Alg. 1; this module's behaviour before the option). It
applies to ``training="fedavg"``: FedSGD ("GA") averages the gradient of
*every* parameter, norm layers included (the official ``get_grads`` takes all
``parameters()``), so under ``training="fedsgd"`` the norm layers stay the
same on every client whatever ``norm_layers`` says. The parameters are those
:func:`~fglcore.fl.parameters.norm_parameter_names` selects (``feature.mlp.
input_norm.*``, ``structure_norm.*``), kept out through the payloads'
``include`` predicate as the generic ``fedavg`` does.

**Branches** (option ``branches``):

* ``"both"`` (default): Eq. 10, :math:`h_v + z_v`, trained and predicted;
* ``"structure"``: the structure branch alone, :math:`\hat y_v =
  \mathrm{softmax}(z_v)`, for training *and* prediction: the official
  code's ``data_type="structure"`` (``GNNClassifier.get_prediction
  (model_use="structure")`` in ``train_step`` and in the test), which its
  layers script (``src/simulations/layers_simulation.py``, 5 clients,
  K-means, 0-50 layers, 50 runs) runs beside ``"f+s"`` for every NSF:
  Fig. 4(b)'s "H2V s" with ``nsf="h2v"`` (digest §4.6). The feature branch
  is not built, so :math:`\theta_f` is neither trained nor sent and node
  features are never read;
* ``"structure_inference"``: trained as ``"both"``, predicting from
  :math:`z_v` alone: the paper's wording (Sec. 6.2, "only NSEs are used
  during inference") and an earlier official layers script, which logs the
  ``"f+s"`` model's structure-only test accuracy (``Test Acc S``).

**Structure GNN** (option ``sgnn``; App. H, Alg. 4, Table 8 and Fig. 6; digest §2.10 and §7.2 item 23):

* ``"decoupled_gcn"`` (default): Eq. 8, :math:`Z = \bar A\,G_{\theta_s}(S)`, as above;
* ``"sage"`` (GraphSAGE): the server, which knows the global graph (so ``abar_protocol`` must be ``"server"``),
  computes :math:`Z = \mathrm{sGNN}_{\theta_s}(S, \mathcal E)` with a GraphSAGE on the whole graph
  (:class:`~fglcore.models.structure_sage.StructureSAGE`: input BatchNorm, mean-aggregation ``SAGEConv``
  layers of widths ``sgnn_layers``, a linear head to the classes; the official ``set_GNN_SPM`` with
  ``GNN_structure_layers_sizes``: ``[128, 64, 32]`` for Cora, CiteSeer, PubMed and Photo, the default here,
  ``[256, 128]`` Chameleon, ``[128, 64]`` Amazon-ratings, set per dataset by the tables,
  :data:`fglcore.papers.fedstruct.tables.SGNN_LAYERS`). :math:`\bar A` is not used (``structure_hops``,
  ``pruning``, ``prune_p`` do not apply). The server computes :math:`S` itself from the global graph (Alg. 4:
  :math:`S \leftarrow Q_{\mathrm{NSF}}(\mathcal E)`; the rows :meth:`FedStruct.own_structure_features`
  gives, so every ``nsf`` works; no NSF is shared between clients) and, for Hop2Vec, keeps :math:`S` as a
  learnable parameter stepped by its own Adam together with :math:`\theta_s`, as the official code does
  (``GNNServer.initialize`` -> ``set_SFV``: ``SFV`` with ``requires_grad`` joins the server's Adam). Clients
  add :math:`z_v` to their feature logits, :math:`\hat y_v = \mathrm{softmax}(h_v + z_v)`: the official
  code's combination (``GNNClassifier.get_prediction``: ``o += s``) and the digest's recommended reading
  (option ``combiner="sum"``, default); ``combiner="linear"`` is the paper's Eq. 51,
  :math:`\hat y_v = \mathrm{softmax}(\Theta_c^\top (z_v \Vert h_v))`, :math:`\Theta_c` held by the
  clients and averaged as :math:`\theta_f` (it applies to ``sgnn="decoupled_gcn"`` too). FedSGD only
  (``training="fedsgd"``), ``branches="both"``.

  Per round (``simulation="clients"``): the server sends each client :math:`\theta_f` and
  ``z_train`` (:math:`z_v` for its labelled nodes, training mode: dropout) and ``z`` (:math:`z_v` for all its
  nodes, evaluation mode, for prediction); the client uploads :math:`\nabla_{\theta_f}\mathcal L_i` and
  ``grad_z``, :math:`\partial\mathcal L_i/\partial z_v` for its labelled nodes (:math:`|\tilde{\mathcal
  V}_i|\times c`); the server back-propagates :math:`\sum_i w_i\,\partial\mathcal L_i/\partial z` (the
  same weights :math:`w_i` as :math:`\theta_f`'s, option ``weighting``) through the sGNN: Prop. 4's chain
  rule, the gradient of :math:`\sum_i w_i\mathcal L_i` for :math:`\theta_s` (and :math:`S`), which
  ``tests/test_fedstruct.py`` checks against autograd on the whole model; one Adam step on
  :math:`\theta_f` (FedSGD) and one on :math:`(\theta_s, S)`. Before training each client tells the server
  its node ids and labelled node ids (``node_ids``, ``train_node_ids``: the server sends
  :math:`z_v` for :math:`v\in\tilde{\mathcal V}_i`, so Alg. 4 assumes it knows them). **What the ledger
  records** is what this simulation sends, not Alg. 4's messages: Alg. 4 sends
  :math:`\partial z_v/\partial\theta_s` for every labelled node (:math:`|\tilde{\mathcal V}_i|\,c\,
  |\theta_s|` values a round and client, Table 9's :math:`End|\theta|` term; on Cora, 271 labelled nodes (10 %) x 7
  classes x 87 k parameters of the [128, 64, 32] GraphSAGE = 165 M values a round over all clients) and
  receives :math:`\nabla_{\theta_s}\mathcal L_i` inside :math:`\nabla_\theta\mathcal L_i`; materialising
  that Jacobian is what the simulation avoids, and recording messages that were never formed would make the
  ledger disagree with the channel. The two give the same :math:`\theta_s` gradient but differ in what the
  server learns: ``grad_z`` is :math:`(\hat y_v - y_v)/|\tilde{\mathcal V}_i|` (Lemma 1), whose only
  negative entry is at the true class, so it reveals each labelled node's label to the server, which Alg.
  4's aggregated :math:`\nabla_{\theta_s}\mathcal L_i` does not. ``simulation="fused"`` computes the same
  trajectory in one pass (:class:`FusedLearner` with a :class:`~fglcore.models.structure_sage.ServerGraph`).

**Self-loops of the feature branch** (option ``feature_self_loops``): ``"all"`` (default) is Sec. 3's
:math:`\hat A_i = \tilde D_i^{-1}(A^{(i)} + I)`, a self-loop on every node, so a node with no intra-client edge
keeps :math:`h_v = \mathrm{MLP}_{\theta_f}(x_v)`. ``"official"`` is what the official code computes
(``obtain_a`` in ``src/utils/utils.py``, which ``GNNClassifier.set_DGCN_FPM`` uses): PyG's
``add_self_loops(edge_index)`` without ``num_nodes`` adds loops only up to the largest local index that ends an
intra-client edge, so every node after it (local order = ascending global id) has an empty row in
:math:`\hat A_i^{L}`, :math:`h_v = 0`, and is predicted by its structure branch alone
(:func:`official_feature_rows`; the model sets those rows of :math:`H_i` to 0, which is the same computation,
since those nodes have no intra-client edge). Under a random partition they are a share that grows with the number
of clients (CiteSeer: about 0.4 / 1.7 / 6.4 % at 5 / 10 / 20 clients). It reproduces the paper's FedStruct rows on
CiteSeer, which fall with the number of clients while its GraphSAGE rows, which keep the node's own features, do
not: ``notebooks/fedstruct/3_results``, the reading check ``2-self-loops`` (10 seeds: the mean distance of the 12
CiteSeer cells to the paper falls from 1.94 to 0.88 points). The official DGCN baselines of Table 6 share the
call; they are not emulated here.

Loss (option ``loss``): cross-entropy on the logits (``"logits"``, the
paper's Eq. 4) or on their softmax (``"double_softmax"``, the official
code's quirk, digest §4.5 and item 5).

**Simulation** (option ``simulation``): ``"clients"`` (default) runs every
client as above, each round's uploads and downloads through the channel.
``"fused"`` computes the same FedSGD trajectory in one process-wide pass per
round (digest §2.8): one model on the disjoint union of the client
subgraphs (so the feature branch still sees intra-client edges only), the
stacked rows :math:`\bar A^{[i]}`, one structure MLP evaluation for all
clients and the loss :math:`\sum_i w_i\,\mathrm{mean\,CE}_i`, one Adam step on
:math:`(\theta, S)`. It is the same computation up to dropout masks (shared
by the clients instead of drawn by each; ``tests/test_fedstruct.py`` checks
the two agree without dropout) and about :math:`K` times cheaper; the
structural sharing before training still goes through the channel, but the
rounds' gradients do not, so its ledger holds no per-round traffic (take
that from a ``"clients"`` run). FedSGD only. For the unpruned variant (``pruning="none"``) it computes
:math:`Z = \hat A^{L_s} G_{\theta_s}(S)` as :math:`L_s` sparse products with :math:`\hat A` (:class:`PowerRows`)
instead of one with the materialised, nearly dense :math:`\bar A` (Alg. 3 still runs through the channel, so
the ledger is the same): the same numbers up to float rounding, 75 times fewer operations on Photo.

Option ``structure_hidden`` gives :math:`\theta_s`'s hidden widths; the
feature branch uses ``config.hidden``, ``config.num_layers`` and
``config.dropout`` and ``feature_hops`` (:math:`L`); ``config.model`` must
be ``"decoupled_gcn"``. Table 5's settings and the reading of the paper's
score (last round, ``selection="last"``, client-size-weighted accuracy) are
set by the parameter files, not here.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import pickle
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data

from fglcore.algorithms.base import Algorithm, register_algorithm
from fglcore.algorithms.central import CentralView
from fglcore.algorithms.fedavg import FedAvgServer
from fglcore.algorithms.fedsgd import WEIGHTINGS, FedSGDServer, client_weight
from fglcore.algorithms.training import client_seed, make_optimizer, whole_graph_operators
from fglcore.checks import NON_NEGATIVE, POSITIVE, Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import cross_blocks
from fglcore.data.multihop import (PRUNING, multihop_adjacency, normalized_adjacency, prune_at, prune_top,
                                   to_torch_sparse, top_values_threshold)
from fglcore.data.graphlets import NUM_ORBITS
from fglcore.data.node_structure import degree_features, fedstar_features, gdv_features, node2vec_features
from fglcore.files import save_atomic
from fglcore.fl.channel import Channel, Message
from fglcore.fl.engine import SERVER, Client, Payload, Server
from fglcore.fl.parameters import gradient_payload, load_payload, module_payload, norm_parameter_names
from fglcore.metrics import Prediction, minority_mask
from fglcore.models.fedstruct import COMBINERS, FedStructModel
from fglcore.models.operators import GraphOperators, kinds_needed
from fglcore.models.structure_sage import ServerGraph
from fglcore.paths import cache_root
from fglcore.runtime import memory_bytes, set_seed

NSF = ("h2v", "deg", "fedstar", "n2v", "gdv")
BRANCHES = ("both", "structure", "structure_inference")
NORM_LAYERS = ("local", "averaged")
H2V_FEDAVG = ("weights", "gradients")
SGNN = ("decoupled_gcn", "sage")
FEATURE_SELF_LOOPS = ("all", "official")
Z_TRAIN, Z_ALL, GRAD_Z = "z_train", "z", "grad_z"  # App. H messages (option sgnn="sage")
PRE_TRAINING = 0  # ledger round of the structural sharing that precedes training
GRAD_S = "grad_S"
S_NAME = "S"


# --------------------------------------------------------------------------- Alg. 3 through the channel


def own_rows(client: Data, num_nodes: int) -> sp.csr_matrix:
    r""":math:`\tilde A^{[i]}`: the client's rows of :math:`A + I` over global columns (intra, cross, self-loops)."""
    gid = client.global_id.cpu().numpy()
    intra = client.edge_index.cpu().numpy()
    cross = client.cross_edge_index.cpu().numpy()
    rows = np.concatenate([intra[0], np.searchsorted(gid, cross[0]), np.arange(gid.size)])
    cols = np.concatenate([gid[intra[1]], cross[1], gid])
    adj = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(gid.size, num_nodes))
    adj.data[:] = 1.0
    return adj


DENSE_ROWS_FILL = 0.5
r"""Alg. 3 without pruning holds a client's rows of :math:`\bar A` as a dense float64 array once at least this
share of them is non-zero: 8 bytes a value where CSR takes 12 (float64 and int32 indices) and a sum of CSR blocks
allocates a new matrix for each block. The unpruned power only fills in (the self-loops of :math:`\tilde A` keep
every non-zero of one hop in the next), so rows stay dense once dense. The values are those of the CSR
computation bit for bit (every product and sum adds the same terms in the same order, and adding a zero is
exact), and so are the blocks sent: the same non-zero entries (``tests/test_fedstruct.py``)."""


def _entries(block: sp.spmatrix | np.ndarray, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, values)`` of the non-zero entries of a CSR or dense ``block`` whose rows are ``row_ids``
    (row-major for a dense block; without an index search where every entry is non-zero)."""
    if isinstance(block, np.ndarray):
        if np.count_nonzero(block) == block.size:
            return (np.broadcast_to(row_ids[:, None], block.shape).reshape(-1),
                    np.broadcast_to(np.arange(block.shape[1]), block.shape).reshape(-1), block.reshape(-1))
        rows, cols = np.nonzero(block)
        return row_ids[rows], cols, block[rows, cols]
    coo = block.tocoo()
    return row_ids[coo.row], coo.col, coo.data


def _block_message(rows: np.ndarray, block: sp.spmatrix | np.ndarray) -> Payload:
    r, c, values = _entries(block, rows)
    return {"abar_block_rows": torch.from_numpy(r.astype(np.int64, copy=False)),
            "abar_block_cols": torch.from_numpy(c.astype(np.int64, copy=False)),
            "abar_block_values": torch.from_numpy(values.astype(np.float64, copy=False))}


def _add_entries(total: sp.csr_matrix | np.ndarray, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
                 ) -> sp.csr_matrix | np.ndarray:
    """``total`` plus the block of entries ``(rows, cols, values)`` (no position twice): in place when dense."""
    if isinstance(total, np.ndarray):
        flat, cells = rows * total.shape[1] + cols, total.reshape(-1)
        np.put(cells, flat, np.take(cells, flat) + values)  # several times faster than ``cells[flat] += values``
        return total
    return total + sp.csr_matrix((values, (rows, cols)), shape=total.shape)


def _rows_held(rows: sp.spmatrix | np.ndarray, pruning: str) -> sp.csr_matrix | np.ndarray:
    """A client's rows as Alg. 3 holds them: dense once unpruned and at least :data:`DENSE_ROWS_FILL` full."""
    if isinstance(rows, np.ndarray):
        return rows
    rows = rows.tocsr()
    if pruning == "none" and rows.nnz >= DENSE_ROWS_FILL * rows.shape[0] * rows.shape[1]:
        return rows.toarray()
    return rows


def distributed_abar(clients: list[Data], num_nodes: int, hops: int, pruning: str, p: int,
                     channel: Channel, resume: tuple[int, list[sp.csr_matrix]] | None = None,
                     hop_ends: list[int] | None = None) -> list[sp.csr_matrix]:
    r"""Alg. 3 (App. D) run by the clients through ``channel``: each client's rows :math:`\bar A^{[i]}`.

    Every product is computed by the client the paper assigns it to, from
    what that client holds; every block crosses the channel as a message
    from client :math:`k` to client :math:`i` (see the module docstring).

    Hop :math:`\ell` reads only the rows after hop :math:`\ell - 1` (and the pruning rule), never ``hops``:
    ``resume=(depth, rows)`` continues from the rows this function returned for ``hops=depth`` (same clients,
    pruning and ``p``) with hops ``depth + 1 .. hops`` and their messages, the same rows bit for bit as from
    hop 1 (every value is a sum in the order of the fixed :math:`\tilde A` blocks' entries, pruning keeps
    values by threshold, so the order of a row's stored entries does not matter). ``hop_ends`` (a list) gets
    ``len(channel.ledger)`` after each hop computed. Unpruned rows that have filled in are held dense
    (:data:`DENSE_ROWS_FILL`; the same values and messages) and returned as CSR, like the others.
    """
    num_clients = len(clients)
    names = [f"client{k}" for k in range(num_clients)]
    sizes = [int(c.num_nodes) for c in clients]
    tilde = [own_rows(c, num_nodes) for c in clients]
    inverse_degree = [1.0 / np.asarray(t.sum(axis=1)).ravel() for t in tilde]
    gids = [c.global_id.cpu().numpy() for c in clients]
    # client k's incoming blocks: tilde A^[i]_k for each neighbour client i (rows: i's nodes, global ids)
    incoming = []
    for k, client in enumerate(clients):
        blocks = {}
        for i, edges in cross_blocks(client).items():
            far, rows = np.unique(edges[1].numpy(), return_inverse=True)
            blocks[i] = (far, sp.csr_matrix((np.ones(rows.size), (rows, edges[0].numpy())),
                                            shape=(far.size, sizes[k])))
        blocks[k] = (gids[k], tilde[k][:, gids[k]])  # intra edges and self-loops
        incoming.append(blocks)
    position = []  # client i's row of each of its nodes (global id -> local row)
    for i in range(num_clients):
        position.append(np.full(num_nodes, -1, dtype=np.int64))
        position[i][gids[i]] = np.arange(sizes[i])
    share = math.ceil(p / num_clients)
    if resume is None:
        first, power = 1, [sp.diags(inverse_degree[i]) @ tilde[i] for i in range(num_clients)]
    else:
        first, power = int(resume[0]) + 1, [m.tocsr(copy=True) for m in resume[1]]
        if not 1 <= first - 1 < hops or len(power) != num_clients:
            raise ValueError(f"resume: depth {first - 1} of {len(power)} clients' rows cannot continue to hops={hops} "
                             f"with {num_clients} clients")
    power = [_rows_held(m, pruning) for m in power]
    for hop in range(first, hops + 1):
        if hop > 1:
            totals = [np.zeros(power[i].shape) if isinstance(power[i], np.ndarray)
                      else sp.csr_matrix((sizes[i], num_nodes)) for i in range(num_clients)]
            for k in range(num_clients):
                for i, (rows, a_ik) in incoming[k].items():
                    block = a_ik @ power[k]  # B_ik at client k (dense when client k's rows are)
                    if pruning == "block":
                        block = prune_top(block, share * sizes[i])
                    if i == k:  # client k's own block: dense exactly when its rows, and so its total, are
                        totals[i] += block  # in place when dense; a new matrix when CSR (scipy has no in-place +)
                        continue
                    got = channel.send(names[k], names[i], _block_message(rows, block), PRE_TRAINING, copy=False)
                    del block
                    totals[i] = _add_entries(totals[i], position[i][got["abar_block_rows"].numpy()],
                                             got["abar_block_cols"].numpy(), got["abar_block_values"].numpy())
            del power
            power = []
            for i in range(num_clients):
                total, totals[i] = totals[i], None
                if isinstance(total, np.ndarray):
                    total *= inverse_degree[i][:, None]
                else:
                    total = sp.diags(inverse_degree[i]) @ total
                power.append(_rows_held(total, pruning))
        if pruning == "global":
            keep = p * num_nodes
            tops = []
            for i in range(num_clients):
                values = power[i].data
                top = values if values.size <= keep else np.partition(values, values.size - keep)[-keep:]
                tops.append(channel.send(names[i], SERVER, {"abar_top_values": torch.from_numpy(top.copy())},
                                         PRE_TRAINING)["abar_top_values"].numpy())
            threshold = torch.tensor(top_values_threshold(np.concatenate(tops), keep), dtype=torch.float64)
            for i in range(num_clients):
                tau = float(channel.send(SERVER, names[i], {"abar_threshold": threshold}, PRE_TRAINING)["abar_threshold"])
                power[i] = prune_at(power[i], tau)
        if hop_ends is not None:
            hop_ends.append(len(channel.ledger))
    for i in range(num_clients):  # one client at a time: a dense array is freed as its CSR is made
        power[i] = sp.csr_matrix(power[i]) if isinstance(power[i], np.ndarray) else power[i].tocsr()
        power[i].sort_indices()
    return power


def server_abar(data: Data, assignment: Tensor, clients: list[Data], hops: int, pruning: str, p: int,
                channel: Channel) -> list[sp.csr_matrix]:
    r"""App. H: the server, which knows the global graph, computes :math:`\bar A` and sends each client its rows."""
    abar = multihop_adjacency(data.edge_index, int(data.num_nodes), hops, pruning=pruning, p=p,
                              assignment=assignment)
    out = []
    for k, client in enumerate(clients):
        coo = abar[client.global_id.cpu().numpy()].tocoo()
        got = channel.send(SERVER, f"client{k}", {
            "abar_rows": torch.from_numpy(coo.row.astype(np.int64)),
            "abar_cols": torch.from_numpy(coo.col.astype(np.int64)),
            "abar_values": torch.from_numpy(coo.data.astype(np.float64))}, PRE_TRAINING)
        out.append(sp.csr_matrix((got["abar_values"].numpy(), (got["abar_rows"].numpy(), got["abar_cols"].numpy())),
                                 shape=(int(client.num_nodes), abar.shape[1])))
    return out


ABAR_CACHE_VERSION = 1
ABAR_CACHE_MAX_VALUES = 4_000_000
"""Alg. 3 results with more stored values than this (the unpruned "-F" powers of denser graphs) are not cached."""
ABAR_STATE_MAX_VALUES = 8_000_000
r"""Alg. 3 rows kept as the state a deeper ``hops`` continues from (:func:`cached_abar`) up to this many values
(Cora's unpruned :math:`\hat A^{L}`, 7.3 M values when dense, about 90 MB; one state per partition and setting)."""


def _graph_digest(data: Data, clients: list[Data], settings: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for tensor in (data.edge_index, *(t for c in clients for t in (c.global_id, c.edge_index, c.cross_edge_index))):
        digest.update(str((tuple(tensor.shape), str(tensor.dtype))).encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def abar_cache_path(data: Data, clients: list[Data], hops: int, pruning: str, p: int, protocol: str) -> Path:
    """``cache_root()/fedstruct_abar/<sha256>.pt``: the key covers everything :func:`distributed_abar` and
    :func:`server_abar` read -- the graph's edges and node count, each client's node ids, intra and cross
    edges in client order -- and ``hops``, ``pruning``, ``p`` and ``protocol``."""
    digest = _graph_digest(data, clients, {"version": ABAR_CACHE_VERSION, "hops": int(hops), "pruning": pruning,
                                           "p": int(p), "protocol": protocol, "num_nodes": int(data.num_nodes)})
    return cache_root() / "fedstruct_abar" / f"{digest}.pt"


def abar_state_path(data: Data, clients: list[Data], pruning: str, p: int) -> Path:
    """``cache_root()/fedstruct_abar_states/<sha256>.pt``: the deepest Alg. 3 (``protocol="clients"``) computed
    for a graph, partition, ``pruning`` and ``p`` (the key of :func:`abar_cache_path` without ``hops``)."""
    digest = _graph_digest(data, clients, {"version": ABAR_CACHE_VERSION, "what": "alg3 state", "pruning": pruning,
                                           "p": int(p), "num_nodes": int(data.num_nodes)})
    return cache_root() / "fedstruct_abar_states" / f"{digest}.pt"


def _csr_stored(rows: list[sp.csr_matrix]) -> list[tuple[Tensor, ...]]:
    return [(torch.from_numpy(r.data), torch.from_numpy(r.indices), torch.from_numpy(r.indptr), torch.tensor(r.shape))
            for r in rows]


def _csr_read(stored: list[tuple[Tensor, ...]]) -> list[sp.csr_matrix]:
    return [sp.csr_matrix((d.numpy(), i.numpy(), ptr.numpy()), shape=tuple(int(v) for v in shape))
            for d, i, ptr, shape in stored]


def _message_tuples(messages: list[Message]) -> list[tuple]:
    """The messages as stored: ``dataclasses.astuple``'s tuples (the fields in order; ``shape`` a tuple of ints),
    without its recursive deep copy (the fields are immutable)."""
    return [(m.round, m.sender, m.receiver, m.name, tuple(m.shape), m.dtype, m.nbytes) for m in messages]


_READ_ERRORS = (OSError, EOFError, RuntimeError, KeyError, TypeError, ValueError, IndexError, pickle.UnpicklingError)


def _read_state(path: Path) -> dict | None:
    """The stored Alg. 3 state (``hops``, ``hop_ends``, ``messages``, ``rows`` or ``None``), or ``None``."""
    if not path.is_file():
        return None
    try:
        stored = torch.load(path, weights_only=True)
        state = {"hops": int(stored["hops"]), "hop_ends": [int(e) for e in stored["hop_ends"]],
                 "messages": [Message(*m) for m in stored["messages"]],
                 "rows": None if stored["rows"] is None else _csr_read(stored["rows"])}
        if len(state["hop_ends"]) != state["hops"] or state["hop_ends"][-1] != len(state["messages"]):
            return None
        return state
    except _READ_ERRORS:
        return None  # unreadable or damaged: computed again and replaced


def cached_abar(data: Data, assignment: Tensor, clients: list[Data], hops: int, pruning: str, p: int,
                protocol: str, channel: Channel, cache: bool = True, rows: bool = True) -> list[sp.csr_matrix] | None:
    r"""Every client's rows :math:`\bar A^{[i]}` by ``protocol`` (:func:`distributed_abar` or
    :func:`server_abar`), computed once per graph, partition and setting and read back afterwards.

    Alg. 3 is deterministic, so a stored result is the computation's result: the rows (float64 CSR, bit for
    bit) and the messages it sent, which are written into ``channel``'s ledger again as if sent (the same
    ledger, so the same communication totals). A FedStruct table reuses one partition for several rows
    (Deg, Fed⋆, H2V, H2V s; Fig. 4(a)'s label fractions): they share one computation. Results larger than
    :data:`ABAR_CACHE_MAX_VALUES` values keep only their messages; ``rows=False`` (a caller that needs only the
    ledger, e.g. the fused "-F" simulation, :class:`PowerRows`) is then served from the cache too and gets
    ``None``; ``cache=False`` always computes.

    Alg. 3's hop :math:`\ell` does not depend on ``hops`` (:func:`distributed_abar`), so a depth sweep (Fig.
    4(b): ``hops`` 1..50 on one partition) keeps one state per partition and setting
    (:func:`abar_state_path`: the deepest rows, up to :data:`ABAR_STATE_MAX_VALUES` values, and the messages
    with the end of every hop's): a deeper ``hops`` replays the stored hops' messages and continues from their
    rows; a shallower one that needs only the ledger replays its hops' messages. The same rows and ledger as
    computing from hop 1.
    """
    path = abar_cache_path(data, clients, hops, pruning, p, protocol) if cache else None
    if path is not None and path.is_file():
        try:
            stored = torch.load(path, weights_only=True)
            found = None if stored["rows"] is None else _csr_read(stored["rows"])
            messages = [Message(*m) for m in stored["messages"]]
        except _READ_ERRORS:
            pass  # unreadable or damaged: computed again and replaced
        else:
            if found is not None or not rows:
                for message in messages:
                    channel.ledger.record(message)
                return found if rows else None
    state_path = abar_state_path(data, clients, pruning, p) if cache and protocol == "clients" else None
    state = _read_state(state_path) if state_path is not None else None
    stored_depth = 0 if state is None else state["hops"]
    if state is not None and state["hops"] >= hops and (not rows or state["hops"] > hops or state["rows"] is None):
        if not rows:  # the first ``hops`` hops' messages
            for message in state["messages"][:state["hop_ends"][hops - 1]]:
                channel.ledger.record(message)
            return None
        state = None  # rows of a shallower depth: computed from hop 1
    start = len(channel.ledger)
    hop_ends: list[int] = []
    if protocol == "clients":
        resume = None
        if state is not None and state["rows"] is not None and state["hops"] <= hops:
            for message in state["messages"]:
                channel.ledger.record(message)
            hop_ends = [start + e for e in state["hop_ends"]]
            if state["hops"] == hops:
                computed = state["rows"]
            else:
                resume = (state["hops"], state["rows"])
        if not hop_ends or resume is not None:
            computed = distributed_abar(clients, int(data.num_nodes), hops, pruning, p, channel, resume=resume,
                                        hop_ends=hop_ends)
    else:
        computed = server_abar(data, assignment, clients, hops, pruning, p, channel)
    if path is not None:
        small = sum(r.nnz for r in computed) <= ABAR_CACHE_MAX_VALUES
        save_atomic({"rows": _csr_stored(computed) if small else None,
                     "messages": _message_tuples(channel.ledger.messages[start:])}, path)
    if state_path is not None and stored_depth < hops:  # a deeper state is kept
        keep = sum(r.nnz for r in computed) <= ABAR_STATE_MAX_VALUES
        save_atomic({"hops": int(hops), "hop_ends": [e - start for e in hop_ends],
                     "messages": _message_tuples(channel.ledger.messages[start:]),
                     "rows": _csr_stored(computed) if keep else None}, state_path)
    return computed if rows else None


# --------------------------------------------------------------------------- participants


def official_feature_rows(client: Data) -> Tensor:
    """The nodes of ``client`` whose feature branch the official code keeps (option ``feature_self_loops=
    "official"``): those up to the largest global id that ends one of its intra-client edges; bool, one per node.

    The official ``obtain_a`` adds self-loops with ``add_self_loops(edge_index)``, which without ``num_nodes``
    stops at the largest index in ``edge_index``; its local indices follow the ascending global ids
    (``create_subgraps``: ``node_ids`` sorted), so the nodes after that index are those with a larger global id.
    A client with no intra-client edge keeps none."""
    gid = client.global_id
    if client.edge_index.numel() == 0:
        return torch.zeros(gid.numel(), dtype=torch.bool)
    return gid <= gid[client.edge_index.reshape(-1)].max()


class FedStructServer(FedSGDServer):
    """Holds :math:`\\theta`: the FedSGD server (:mod:`fglcore.algorithms.fedsgd`: the clients' mean gradient,
    one Adam step) or, with ``training="fedavg"``, FedAvg's (the mean weights); never sees data. It also
    relays the clients' mean ``grad_S`` (FedSGD) or ``S`` (FedAvg) of Hop2Vec to every client."""

    def __init__(self, model: FedStructModel, config: ExperimentConfig, training: str,
                 averaged: Callable[[str], bool] | None = None):
        self.training = training
        if training == "fedsgd":
            super().__init__(module_payload(model), config)
        else:  # FedAvg holds only the weights it averages (option norm_layers)
            FedAvgServer.__init__(self, module_payload(model, include=averaged))
        self.extra: dict[str, Tensor] = {}  # grad_S (FedSGD, Hop2Vec) or S (FedAvg, Hop2Vec)

    def payload_for(self, client: Client, round: int) -> Payload:
        return {**super().payload_for(client, round), **self.extra}

    def apply_mean(self, mean: Payload, round: int) -> None:
        extra = {k: mean.pop(k) for k in (GRAD_S, S_NAME) if k in mean}
        if self.training == "fedsgd":
            super().apply_mean(mean, round)
        else:
            FedAvgServer.apply_mean(self, mean, round)
        self.extra = extra


class FedStructClient(Client):
    """One client: its subgraph, its rows of :math:`\\bar A`, the structure features it received."""

    def __init__(self, cid: int, num_samples: int, model: FedStructModel, data: Data, abar: sp.csr_matrix,
                 s: Tensor, learnable_s: bool, config: ExperimentConfig, training: str, loss: str,
                 device: torch.device, averaged: Callable[[str], bool] | None = None,
                 structure_inference: bool = False, s_gradients: bool = False, feature_rows: Tensor | None = None):
        super().__init__(cid, num_samples)
        self.feature_rows = None if feature_rows is None else feature_rows.to(device)  # None: every node's
        self.s_gradients = s_gradients  # FedAvg: S stepped with the mean gradient (h2v_fedavg="gradients")
        self.model = model.to(device)
        self.training, self.loss_kind, self.epochs = training, loss, config.local_epochs
        self.averaged, self.structure_inference = averaged, structure_inference
        self.x, self.edge_index, self.y = data.x.to(device), data.edge_index.to(device), data.y.to(device)
        self.train_idx = data.train_mask.nonzero().view(-1).to(device)
        self.eval_idx = {s_: getattr(data, f"{s_}_mask").nonzero().view(-1).to(device) for s_ in ("val", "test")}
        self.minority = minority_mask(data.y, data.y[data.train_mask]).to(device)
        # Prop. 1: only the structure features of the columns of its rows of A-bar are needed
        columns = np.unique(abar.indices)
        self.columns = torch.from_numpy(columns.astype(np.int64)).to(device)
        compact = sp.csr_matrix((abar.data, np.searchsorted(columns, abar.indices), abar.indptr),
                                shape=(abar.shape[0], columns.size))
        self.abar = to_torch_sparse(compact).to(device)
        self.s = s.to(device).requires_grad_(learnable_s)
        self.learnable_s = learnable_s
        params = list(self.model.parameters()) if training == "fedavg" else []
        if learnable_s:
            params.append(self.s)
        self.optimizer = make_optimizer(params, config) if params else None

    def forward(self) -> Tensor:
        return self.model(self.x, self.edge_index, self.s.index_select(0, self.columns), self.abar,
                          self.feature_rows)

    def _loss(self, out: Tensor) -> Tensor:
        logits = out[self.train_idx]
        if self.loss_kind == "double_softmax":
            logits = logits.softmax(dim=-1)
        return F.cross_entropy(logits, self.y[self.train_idx])

    def _step(self) -> None:
        self.model.train()
        self.model.zero_grad(set_to_none=True)
        if self.s.grad is not None:
            self.s.grad = None
        if self.train_idx.numel():
            self._loss(self.forward()).backward()

    def receive(self, payload: Payload, round: int) -> None:
        grad_s = payload.pop(GRAD_S, None)
        s = payload.pop(S_NAME, None)
        load_payload(self.model, payload)
        if grad_s is not None:  # Alg. 2: S <- S - lambda_s grad_S L (here through Adam, as the server's theta)
            if self.training == "fedavg":  # the mean grad_S steps S alone (h2v_fedavg="gradients")
                self.model.zero_grad(set_to_none=True)
            self.s.grad = grad_s.to(self.s.device, self.s.dtype)
            self.optimizer.step()
            self.s.grad = None
        if s is not None:
            with torch.no_grad():
                self.s.copy_(s)

    def fit(self, round: int) -> Payload:
        if self.training == "fedsgd":
            self._step()
            update = gradient_payload(self.model)
            if self.learnable_s:
                update[GRAD_S] = (self.s.grad if self.s.grad is not None else torch.zeros_like(self.s)).detach()
            return update
        if self.s_gradients:  # official "WA" with Hop2Vec: a local step on theta, S's gradient to the server
            self._step()
            grad_s = self.s.grad if self.s.grad is not None else torch.zeros_like(self.s)
            self.s.grad = None
            self.optimizer.step()
            return {**module_payload(self.model, include=self.averaged), GRAD_S: grad_s.detach()}
        for _ in range(self.epochs):
            self._step()
            self.optimizer.step()
        update = module_payload(self.model, include=self.averaged)
        if self.learnable_s:
            update[S_NAME] = self.s.detach()
        return update

    @torch.no_grad()
    def evaluate(self) -> dict[str, Prediction]:
        self.model.eval()
        if self.structure_inference:  # branches="structure_inference": z_v alone
            out = self.model.structure_forward(self.s.index_select(0, self.columns), self.abar)
        else:
            out = self.forward()
        return {split: Prediction(out[idx], self.y[idx], self.minority[idx]) for split, idx in self.eval_idx.items()}


def cross_entropy_loss(logits: Tensor, y: Tensor, kind: str) -> Tensor:
    """Eq. 4's mean cross-entropy of ``logits`` (option ``loss``: ``"logits"``, or ``"double_softmax"``, the
    official code's cross-entropy of the softmax)."""
    return F.cross_entropy(logits.softmax(dim=-1) if kind == "double_softmax" else logits, y)


def client_side_parameter(name: str) -> bool:
    """App. H: the parameters the clients hold and FedSGD averages (:math:`\\theta_f`, Eq. 51's
    :math:`\\Theta_c`); :math:`\\theta_s` (``structure.*``) stays at the server."""
    return not name.startswith("structure.")


class StructureGNNServer(FedSGDServer):
    r"""App. H, Alg. 4: the server knows the global graph and runs the structure GNN (option ``sgnn="sage"``).

    :math:`\theta_f` is FedSGD's (:class:`~fglcore.algorithms.fedsgd.FedSGDServer`: the clients' weighted mean
    gradient, one Adam step). :math:`\theta_s` (the :class:`~fglcore.models.structure_sage.StructureSAGE`)
    and, for Hop2Vec, :math:`S` stay here, with their own Adam of the same settings (Adam is per parameter: one
    optimiser over all of :math:`\theta` and :math:`S` takes the same steps). Each round it computes
    :math:`Z = \mathrm{sGNN}_{\theta_s}(S, \mathcal E)` once in training mode (``z_train`` rows) and once in
    evaluation mode (``z`` rows), and on the clients' ``grad_z`` back-propagates
    :math:`\sum_i w_i \partial\mathcal L_i/\partial z` through a recomputation of the training-mode :math:`Z`
    under the random state it was drawn with (the same dropout masks; no autograd graph is held between
    rounds, so a checkpoint can be taken at any round's end).
    """

    def __init__(self, model: FedStructModel, s: Tensor, learnable_s: bool, edge_index: Tensor | GraphOperators,
                 config: ExperimentConfig, device: torch.device):
        super().__init__(module_payload(model, include=client_side_parameter), config)
        self.device = device
        self.sgnn = model.structure.to(device)
        self.s = s.to(device).requires_grad_(learnable_s)
        self.edge_index = edge_index  # the global graph, on the device
        self.structure_optimizer = make_optimizer([*self.sgnn.parameters(), *([self.s] if learnable_s else [])],
                                                  config)
        self.nodes: dict[int, Tensor] = {}
        self.train_nodes: dict[int, Tensor] = {}
        self._round: int | None = None
        self._rng: tuple[Tensor, Tensor | None] | None = None
        self._z_train: Tensor | None = None
        self._z_eval: Tensor | None = None

    def register(self, cid: int, node_ids: Tensor, train_node_ids: Tensor) -> None:
        """Client ``cid``'s global node ids and labelled node ids, as it sent them before training."""
        self.nodes[cid], self.train_nodes[cid] = node_ids.to(self.device), train_node_ids.to(self.device)

    def _embed(self, train: bool) -> Tensor:
        self.sgnn.train(train)
        with torch.set_grad_enabled(train):
            return self.sgnn(self.s, self.edge_index)

    def _prepare(self, round: int) -> None:
        if self._round == round:
            return
        cuda = self.device.type == "cuda"
        self._rng = (torch.get_rng_state(), torch.cuda.get_rng_state(self.device) if cuda else None)
        with torch.no_grad():
            self._z_train = self._embed(train=True)
        self._z_eval = self._embed(train=False).detach()
        self._round = round

    def payload_for(self, client: Client, round: int) -> Payload:
        self._prepare(round)
        return {**super().payload_for(client, round), Z_TRAIN: self._z_train[self.train_nodes[client.cid]],
                Z_ALL: self._z_eval[self.nodes[client.cid]]}

    def structure_backward(self, updates: Mapping[int, Payload], weights: Mapping[int, float]) -> None:
        r"""Take each update's ``grad_z`` out and set on :math:`\theta_s` (and :math:`S`) the gradient of
        :math:`\sum_i w_i \mathcal L_i` (weights normalised as the engine's weighted mean): Prop. 4's chain rule
        through the training-mode :math:`Z` of this round."""
        total = sum(float(weights[c]) for c in updates)
        grad = torch.zeros(self._z_train.shape, dtype=torch.float64, device=self.device)
        for cid, update in updates.items():
            grad.index_add_(0, self.train_nodes[cid],
                            update.pop(GRAD_Z).to(self.device, torch.float64) * (float(weights[cid]) / total))
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self._rng[0])
            if devices:
                torch.cuda.set_rng_state(self._rng[1], self.device)
            z = self._embed(train=True)
        self.structure_optimizer.zero_grad(set_to_none=True)
        z.backward(grad.to(z.dtype))

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        updates = {cid: dict(update) for cid, update in updates.items()}
        self.structure_backward(updates, weights)
        self.structure_optimizer.step()
        self.structure_optimizer.zero_grad(set_to_none=True)
        super().aggregate(updates, weights, round)  # theta_f: the weighted mean gradient, one Adam step


class StructureGNNClient(Client):
    """App. H's client: its feature branch :math:`f_{\\theta_f}` (and Eq. 51's :math:`\\Theta_c`), the
    :math:`z_v` the server sent; uploads
    :math:`\\nabla_{\\theta_f}\\mathcal L_i` and ``grad_z`` (option ``sgnn="sage"``)."""

    def __init__(self, cid: int, num_samples: float, model: torch.nn.Module, data: Data, loss: str,
                 device: torch.device, feature_rows: Tensor | None = None):
        super().__init__(cid, num_samples)
        self.model, self.loss_kind = model.to(device), loss
        self.feature_rows = None if feature_rows is None else feature_rows.to(device)
        self.x, self.edge_index, self.y = data.x.to(device), data.edge_index.to(device), data.y.to(device)
        self.train_idx = data.train_mask.nonzero().view(-1).to(device)
        self.eval_idx = {s_: getattr(data, f"{s_}_mask").nonzero().view(-1).to(device) for s_ in ("val", "test")}
        self.minority = minority_mask(data.y, data.y[data.train_mask]).to(device)
        self.z_train: Tensor | None = None
        self.z: Tensor | None = None

    def receive(self, payload: Payload, round: int) -> None:
        self.z_train, self.z = payload.pop(Z_TRAIN).to(self.x.device), payload.pop(Z_ALL).to(self.x.device)
        load_payload(self.model, payload)

    def fit(self, round: int) -> Payload:
        self.model.train()
        self.model.zero_grad(set_to_none=True)
        z = self.z_train.detach().clone().requires_grad_(True)
        if self.train_idx.numel():
            h = self.model.feature_forward(self.x, self.edge_index, self.feature_rows)
            logits = self.model.combine(h[self.train_idx], z)
            cross_entropy_loss(logits, self.y[self.train_idx], self.loss_kind).backward()
        update = gradient_payload(self.model)
        update[GRAD_Z] = (z.grad if z.grad is not None else torch.zeros_like(z)).detach()
        return update

    @torch.no_grad()
    def evaluate(self) -> dict[str, Prediction]:
        self.model.eval()
        out = self.model.combine(self.model.feature_forward(self.x, self.edge_index, self.feature_rows), self.z)
        return {split: Prediction(out[idx], self.y[idx], self.minority[idx]) for split, idx in self.eval_idx.items()}


class PowerRows:
    r"""Rows ``rows`` of :math:`\hat A^{L_s} G` without forming :math:`\hat A^{L_s}`: ``hops`` products with the
    sparse :math:`\hat A` (float64 CSR, as Alg. 3 computes), then the rows, cast back to ``G``'s dtype.

    The unpruned ("-F") :math:`\bar A = \hat A^{L_s}` fills in towards dense (Cora, :math:`L_s = 10`: 60 %;
    Photo, 3 hops: 32 %, 18.5 M values; PubMed, 20 hops: all 389 M), so one product with it costs its number
    of values times :math:`c`, where the :math:`L_s` products with :math:`\hat A` cost :math:`L_s\,
    \mathrm{nnz}(\hat A)\,c`. The same quantity (Eq. 8 with :math:`\bar A = \hat A^{L_s}`, digest §7.1), up to
    rounding: accumulated in float64 here, in float32 with the materialised float32 rows there. Used by the
    fused simulation of the unpruned variant; autograd differentiates through the products.
    """

    def __init__(self, a_hat: sp.csr_matrix, hops: int, rows: Tensor, device: torch.device):
        self.a_hat = to_torch_sparse(a_hat, torch.float64).to(device)
        self.hops, self.rows = int(hops), rows.to(device)

    def __call__(self, g: Tensor) -> Tensor:
        h = g.to(torch.float64)
        for _ in range(self.hops):
            h = torch.sparse.mm(self.a_hat, h)
        return h.index_select(0, self.rows).to(g.dtype)


class FusedLearner:
    """FedSGD of all clients in one autograd pass per round (option ``simulation="fused"``, digest §2.8)."""

    def __init__(self, model: FedStructModel, clients: list[Data], abar: list[sp.csr_matrix] | PowerRows | ServerGraph,
                 s: Tensor,
                 learnable_s: bool, weights: list[float], config: ExperimentConfig, loss: str, device: torch.device,
                 structure_inference: bool = False, feature_rows: list[Tensor] | None = None):
        self.model = model.to(device)
        self.feature_rows = None if feature_rows is None else torch.cat(feature_rows).to(device)
        self.loss_kind, self.structure_inference = loss, structure_inference
        sizes = [int(c.num_nodes) for c in clients]
        offsets = np.cumsum([0, *sizes])
        self.x = torch.cat([c.x for c in clients]).to(device)
        self.edge_index = torch.cat([c.edge_index + int(o) for c, o in zip(clients, offsets)], dim=1).to(device)
        self.y = torch.cat([c.y for c in clients]).to(device)
        self.abar = abar if isinstance(abar, (PowerRows, ServerGraph)) else \
            to_torch_sparse(sp.vstack(abar).tocsr()).to(device)
        self.s = s.to(device).requires_grad_(learnable_s)
        train = [c.train_mask.nonzero().view(-1) + int(o) for c, o in zip(clients, offsets)]
        total = sum(weights)
        self.train_idx = torch.cat(train).to(device)
        self.train_weight = torch.cat([torch.full((t.numel(),), w / total / max(t.numel(), 1)) for t, w in
                                       zip(train, weights)]).to(device)
        self.views = [{split: getattr(c, f"{split}_mask").nonzero().view(-1).to(device) + int(o)
                       for split in ("val", "test")} for c, o in zip(clients, offsets)]
        self.minority = torch.cat([minority_mask(c.y, c.y[c.train_mask]) for c in clients]).to(device)
        params = [*self.model.parameters(), *([self.s] if learnable_s else [])]
        self.optimizer = make_optimizer(params, config)
        self._trained_round, self._logits = 0, None

    def forward(self) -> Tensor:
        return self.model(self.x, self.edge_index, self.s, self.abar, self.feature_rows)

    def train_round(self, round: int) -> None:
        if round == self._trained_round:
            return
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.forward()[self.train_idx]
        if self.loss_kind == "double_softmax":
            logits = logits.softmax(dim=-1)
        loss = (F.cross_entropy(logits, self.y[self.train_idx], reduction="none") * self.train_weight).sum()
        loss.backward()
        self.optimizer.step()
        self._trained_round, self._logits = round, None

    @torch.no_grad()
    def predict(self, cid: int) -> dict[str, Prediction]:
        if self._logits is None:
            self.model.eval()
            self._logits = self.model.structure_forward(self.s, self.abar) if self.structure_inference \
                else self.forward()
        return {split: Prediction(self._logits[idx], self.y[idx], self.minority[idx])
                for split, idx in self.views[cid].items()}


# --------------------------------------------------------------------------- the algorithm


UNPRUNED_BYTES_PER_VALUE = 44
r"""Peak memory per value of an unpruned :math:`\bar A` formed as rows to train with or by the server
(``simulation="clients"``, or ``abar_protocol="server"``): float64 CSR with int32 indices, the products' operands
and results, the blocks through the channel. On Photo (3 hops, 18.5 M values) a run's peak resident size rose by
0.81 GB above the loaded data (2026-11-27, before Alg. 3 held dense rows dense)."""
LEDGER_ONLY_BYTES_PER_VALUE = 23
"""Peak memory per value of Alg. 3 run by the clients for the ledger only (the fused "-F" simulation,
:class:`PowerRows`), whose filled-in rows are held dense (:data:`DENSE_ROWS_FILL`): the rows before and after a
hop, 8 bytes each, and the largest block in flight. PubMed, :math:`L_s = 20` (all 388.8 M values), one thread,
2026-11-27: 5 clients 8.15 GiB above the loaded data (22.5 bytes a value; 487 s of CPU, 217 GiB of blocks in
the ledger), 10 clients 6.7 GiB (18.5 bytes; 312 GiB of blocks); fewer clients send larger blocks."""


def unpruned_abar_bytes(num_nodes: int, ledger_only: bool = False) -> int:
    r"""Memory an unpruned :math:`\bar A = \hat A^{L_s}` may need: all :math:`n^2` values (the power fills in
    towards dense; PubMed at :math:`L_s = 20` is dense) at :data:`LEDGER_ONLY_BYTES_PER_VALUE` when Alg. 3 runs
    for the ledger only, else :data:`UNPRUNED_BYTES_PER_VALUE`."""
    return int(num_nodes) ** 2 * (LEDGER_ONLY_BYTES_PER_VALUE if ledger_only else UNPRUNED_BYTES_PER_VALUE)


def abar_for_ledger_only(options: Mapping[str, Any]) -> bool:
    """Whether the fedstruct ``options`` (merged with the defaults) run Alg. 3 by the clients for the ledger only:
    the fused simulation, which trains with :class:`PowerRows`, and the clients' protocol, which holds filled-in
    rows dense; the rows are never formed as CSR to train with."""
    return options["simulation"] == "fused" and options["abar_protocol"] == "clients"


def forms_unpruned_abar(options: Mapping[str, Any]) -> bool:
    r"""Whether the fedstruct ``options`` (merged with the defaults) form the unpruned :math:`\bar A`
    (``pruning="none"``, the "-F" rows); the server's GraphSAGE (``sgnn="sage"``, App. H) forms no :math:`\bar A`."""
    return options["pruning"] == "none" and options["sgnn"] != "sage"


def unpruned_abar_refusal(dataset: str, options: Mapping[str, Any] | None = None) -> str | None:
    r"""Why the unpruned :math:`\bar A` of ``dataset`` is out of reach here under the fedstruct ``options``
    (defaults where not given), or ``None``: it is when the options form it (:func:`forms_unpruned_abar`) and
    :func:`unpruned_abar_bytes` exceeds half this machine's memory (the other half for a second worker and the
    rest of the run). The fused simulation with Alg. 3 run by the clients needs the rows for the ledger only; on a
    24 GB machine that fits PubMed, forming its rows does not."""
    from fglcore.data.datasets import num_nodes

    options = {**FedStruct.default_options, **(options or {})}
    if not forms_unpruned_abar(options):
        return None
    ledger_only = abar_for_ledger_only(options)
    n = num_nodes(dataset)
    need, memory = unpruned_abar_bytes(n, ledger_only), memory_bytes()
    if not memory or need <= memory // 2:
        return None
    how = "as Alg. 3 forms it for the ledger" if ledger_only else "to form its rows"
    return (f"forms the unpruned A-bar of {dataset} ({n:,} nodes: up to {n * n / 1e6:,.0f} M values, about "
            f"{need / 1e9:.1f} GB {how}), more than half of this machine's {memory / 2**30:.1f} GiB")


@register_algorithm
class FedStruct(Algorithm):
    """FedStruct (Aliakbari et al., ICLR 2025); options in :mod:`fglcore.algorithms.fedstruct`."""

    name = "fedstruct"
    tasks = ("node",)
    needs_cross_edges = True
    default_options: dict[str, Any] = {
        "nsf": "h2v", "structure_hops": 10, "feature_hops": 2, "pruning": "global", "prune_p": 30,
        "abar_protocol": "clients", "structure_dim": 256, "structure_hidden": [256], "rw_steps": 50,
        "h2v_init_std": 0.05, "training": "fedsgd", "weighting": "nodes", "loss": "logits",
        "input_layer_norm": True, "norm_layers": "local", "branches": "both", "simulation": "clients",
        "h2v_fedavg": "weights", "sgnn": "decoupled_gcn", "sgnn_layers": [128, 64, 32],
        "combiner": "sum", "feature_self_loops": "all",
    }
    option_choices = {"nsf": NSF, "pruning": PRUNING, "abar_protocol": ("clients", "server"),
                      "training": ("fedsgd", "fedavg"), "weighting": WEIGHTINGS,
                      "loss": ("logits", "double_softmax"), "norm_layers": NORM_LAYERS, "branches": BRANCHES,
                      "simulation": ("clients", "fused"), "h2v_fedavg": H2V_FEDAVG, "sgnn": SGNN,
                      "combiner": COMBINERS, "feature_self_loops": FEATURE_SELF_LOOPS}
    option_bounds = {"structure_hops": POSITIVE, "feature_hops": NON_NEGATIVE, "prune_p": POSITIVE,
                     "structure_dim": POSITIVE, "h2v_init_std": Bounds(above=0)}
    citation = "Aliakbari, Östman and Graell i Amat, Decoupled Subgraph Federated Learning, ICLR 2025"
    late_options = ("sgnn", "sgnn_layers", "combiner", "feature_self_loops")

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        o = cls.check_options(config.algorithm_options)
        if config.model != "decoupled_gcn":
            raise ConfigError(f"model: fedstruct's feature branch is a decoupled GCN, so model must be "
                              f"'decoupled_gcn', got {config.model!r}")
        hidden = o["structure_hidden"]
        if not all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in hidden):
            raise ConfigError(f"algorithm_options.structure_hidden: must be a list of integers >= 1 (the hidden "
                              f"widths of theta_s, e.g. [256]), got {hidden!r}")
        layers = o["sgnn_layers"]
        if not layers or not all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in layers):
            raise ConfigError(f"algorithm_options.sgnn_layers: must be a non-empty list of integers >= 1 (the "
                              f"SAGEConv widths of the server's GraphSAGE, e.g. [128, 64, 32]), got {layers!r}")
        if o["combiner"] == "linear" and o["branches"] != "both":
            raise ConfigError(f"algorithm_options.combiner: 'linear' (Eq. 51) combines the two branches, so it needs "
                              f"branches='both', got {o['branches']!r}")
        if o["sgnn"] == "sage":
            for key, accepted in (("abar_protocol", "server"), ("training", "fedsgd"), ("branches", "both")):
                if o[key] != accepted:
                    raise ConfigError(f"algorithm_options.{key}: sgnn='sage' (App. H, Alg. 4: the server knows "
                                      f"the global graph and runs the structure GNN, trained by FedSGD, added to the "
                                      f"feature branch) needs {key}={accepted!r}, got {o[key]!r}; or use "
                                      f"sgnn='decoupled_gcn'")
            if config.secure_aggregation and o["simulation"] == "clients":
                raise ConfigError("secure_aggregation: sgnn='sage' uploads per-node gradients grad_z that the "
                                  "server back-propagates, which pairwise masking cannot sum; accepted: false")
        if o["simulation"] == "fused" and o["training"] != "fedsgd":
            raise ConfigError("algorithm_options.simulation: 'fused' simulates FedSGD only; use simulation='clients' "
                              f"with training={o['training']!r}")
        if o["h2v_fedavg"] == "gradients" and o["training"] == "fedavg" and config.local_epochs != 1:
            raise ConfigError(f"local_epochs: h2v_fedavg='gradients' (the official FedAvg of Hop2Vec's S) takes one "
                              f"local step per round, as the official code; accepted: 1, got {config.local_epochs}")
        if o["nsf"] == "gdv" and o["structure_dim"] != NUM_ORBITS:
            raise ConfigError(f"algorithm_options.structure_dim: nsf='gdv' gives {NUM_ORBITS} orbit counts per node, "
                              f"so structure_dim must be {NUM_ORBITS}; got {o['structure_dim']}")
        if refusal := unpruned_abar_refusal(config.dataset, o):
            raise ConfigError(f"algorithm_options.pruning: 'none' {refusal}; accepted here: 'global' or 'block' "
                              "(pruned to the top p*n values, the paper's default), or run it on a machine with "
                              "more memory")
        if o["nsf"] == "fedstar" and not 1 <= o["rw_steps"] < o["structure_dim"]:
            raise ConfigError(f"algorithm_options.rw_steps: Fed* needs 1 <= rw_steps < structure_dim "
                              f"({o['structure_dim']}), got {o['rw_steps']}")

    @property
    def num_nodes(self) -> int:
        return int(self.federation.data.num_nodes)

    def memory_estimate(self) -> int | None:
        r"""The unpruned :math:`\bar A`'s bytes (:func:`unpruned_abar_bytes`) when the options form it
        (:func:`forms_unpruned_abar`); ``None`` otherwise (pruned, it holds about ``prune_p`` values a node)."""
        o = self.options
        if not forms_unpruned_abar(o):
            return None
        return unpruned_abar_bytes(self.num_nodes, abar_for_ledger_only(o))

    def build(self, channel: Channel) -> tuple[Server | None, list[Client]]:
        o, c = self.options, self.config
        clients = self.clients_data
        if (self.federation.assignment < 0).any():
            raise ConfigError(f"partition: fedstruct needs every node in a client (Sec. 4: the V_i partition V); "
                              f"{c.partition!r} drops nodes")
        if o["sgnn"] == "sage":
            return self.build_server_sgnn(channel)
        propagated = o["simulation"] == "fused" and o["pruning"] == "none"  # PowerRows: Alg. 3 for the ledger only
        abar = cached_abar(self.federation.data, self.federation.assignment, clients, o["structure_hops"],
                           o["pruning"], o["prune_p"], o["abar_protocol"], channel, rows=not propagated)
        structure = self.share_structure_features(channel)
        set_seed(c.seed)
        model = FedStructModel(int(self.federation.num_features), c.hidden, int(self.federation.num_classes),
                               o["structure_dim"], o["structure_hidden"], c.num_layers, o["feature_hops"],
                               c.dropout, o["input_layer_norm"], feature_branch=o["branches"] != "structure",
                               combiner=o["combiner"])
        weights = [client_weight(d, o["weighting"]) for d in clients]
        structure_inference = o["branches"] == "structure_inference"
        rows = self.feature_rows()
        if o["simulation"] == "fused":
            if propagated:  # Eq. 8 as L_s products with A-hat: the same numbers, far fewer operations (PowerRows)
                abar = PowerRows(normalized_adjacency(self.federation.data.edge_index, self.num_nodes),
                                 o["structure_hops"], torch.cat([d.global_id for d in clients]), self.device)
            learner = FusedLearner(model, clients, abar, structure[0], o["nsf"] == "h2v", weights, c, o["loss"],
                                   self.device, structure_inference, rows)
            return None, [CentralView(k, w, learner) for k, w in enumerate(weights)]
        averaged = self.averaged_parameter_predicate(model)
        s_gradients = o["training"] == "fedavg" and o["nsf"] == "h2v" and o["h2v_fedavg"] == "gradients"
        server = FedStructServer(copy.deepcopy(model), c, o["training"], averaged)
        participants = []
        for k, data in enumerate(clients):
            weight = weights[k]
            participants.append(FedStructClient(k, weight, copy.deepcopy(model), data, abar[k], structure[k],
                                                o["nsf"] == "h2v", c, o["training"], o["loss"], self.device,
                                                averaged, structure_inference, s_gradients,
                                                None if rows is None else rows[k]))
        return server, participants

    def build_server_sgnn(self, channel: Channel) -> tuple[Server | None, list[Client]]:
        """App. H, Alg. 4 (option ``sgnn="sage"``): the server's GraphSAGE over :math:`S` and the global
        graph, the clients' feature branches; see the module docstring."""
        o, c = self.options, self.config
        clients = self.clients_data
        s = self.server_structure_features()
        set_seed(c.seed)
        model = FedStructModel(int(self.federation.num_features), c.hidden, int(self.federation.num_classes),
                               o["structure_dim"], o["structure_hidden"], c.num_layers, o["feature_hops"],
                               c.dropout, o["input_layer_norm"], sgnn_layers=o["sgnn_layers"],
                               combiner=o["combiner"])
        weights = [client_weight(d, o["weighting"]) for d in clients]
        # the global graph as sparse operators: the same SAGE layers as sparse products, ~7x faster on Photo
        edge_index = whole_graph_operators(self.federation.data.edge_index.to(self.device), self.num_nodes,
                                           kinds_needed([model.structure]), torch.float32)
        learnable = o["nsf"] == "h2v"
        # every client tells the server which global nodes it holds (all, and the labelled ones), in both simulations
        received = [channel.send(f"client{k}", SERVER,
                                 {"node_ids": data.global_id, "train_node_ids": data.global_id[data.train_mask]},
                                 PRE_TRAINING) for k, data in enumerate(clients)]
        if o["simulation"] == "fused":
            graph = ServerGraph(edge_index, torch.cat([got["node_ids"] for got in received]).to(self.device))
            learner = FusedLearner(model, clients, graph, s, learnable, weights, c, o["loss"], self.device,
                                   feature_rows=self.feature_rows())
            return None, [CentralView(k, w, learner) for k, w in enumerate(weights)]
        server = StructureGNNServer(copy.deepcopy(model), s, learnable, edge_index, c, self.device)
        rows = self.feature_rows()
        client_side = copy.deepcopy(model)
        client_side.structure = None  # theta_s stays at the server; the client holds theta_f (and Theta_c)
        participants = []
        for k, (data, got) in enumerate(zip(clients, received)):
            server.register(k, got["node_ids"], got["train_node_ids"])
            participants.append(StructureGNNClient(k, weights[k], copy.deepcopy(client_side), data, o["loss"],
                                                   self.device, None if rows is None else rows[k]))
        return server, participants

    def feature_rows(self) -> list[Tensor] | None:
        """Per client, the nodes whose feature branch is kept: ``None`` (every node's) with
        ``feature_self_loops="all"``, :func:`official_feature_rows` with ``"official"``."""
        if self.options["feature_self_loops"] == "all":
            return None
        return [official_feature_rows(data) for data in self.clients_data]

    def server_structure_features(self) -> Tensor:
        """App. H: :math:`S` (:math:`n \\times d_s`) computed by the server, which knows the global graph: every
        client's rows as :meth:`own_structure_features` gives them, at their global ids (Hop2Vec: the same
        initial rows as the clients would draw)."""
        s = torch.zeros(self.num_nodes, self.options["structure_dim"])
        for k, data in enumerate(self.clients_data):
            s[data.global_id] = self.own_structure_features(k).to(s.dtype)
        return s

    def averaged_parameter_predicate(self, model: FedStructModel) -> Callable[[str], bool] | None:
        """FedAvg's ``include`` predicate of the weights it sends and averages: all (``None``), or all but the
        normalisation layers' (option ``norm_layers="local"``, see the module docstring)."""
        if self.options["norm_layers"] == "averaged":
            return None
        norms = norm_parameter_names(model)
        return lambda name: name not in norms

    def own_structure_features(self, k: int) -> Tensor:
        """Client ``k``'s rows of :math:`S`, as it computes (Deg, Hop2Vec) or is given them (Fed⋆, Node2Vec, GDV:
        see the module docstring)."""
        o, data = self.options, self.clients_data[k]
        if o["nsf"] == "deg":
            return degree_features(data.global_degree, o["structure_dim"])
        if o["nsf"] == "fedstar":
            if not hasattr(self, "_fedstar"):
                full = self.federation.data
                self._fedstar = fedstar_features(full.edge_index, self.num_nodes, o["structure_dim"], o["rw_steps"])
            return self._fedstar[data.global_id]
        if o["nsf"] == "n2v":
            if not hasattr(self, "_node2vec"):
                full = self.federation.data
                self._node2vec = node2vec_features(full.edge_index, self.num_nodes, o["structure_dim"],
                                                   seed=self.config.seed)
            return self._node2vec[data.global_id]
        if o["nsf"] == "gdv":
            if not hasattr(self, "_gdv"):
                self._gdv = gdv_features(self.federation.data.edge_index, self.num_nodes)
            return self._gdv[data.global_id]
        generator = torch.Generator().manual_seed(client_seed(self.config.seed, k))
        return torch.randn(int(data.num_nodes), o["structure_dim"], generator=generator) * o["h2v_init_std"]

    def share_structure_features(self, channel: Channel) -> list[Tensor]:
        """Alg. 1-2: every client sends its rows of :math:`S` to every other client; each assembles :math:`S`."""
        clients = self.clients_data
        own = [self.own_structure_features(k) for k in range(len(clients))]
        assembled = []
        for i, data in enumerate(clients):
            s = torch.zeros(self.num_nodes, self.options["structure_dim"])
            s[data.global_id] = own[i]
            for k, other in enumerate(clients):
                if k != i:
                    got = channel.send(f"client{k}", f"client{i}", {"nsf": own[k], "nsf_node_ids": other.global_id},
                                       PRE_TRAINING)
                    s[got["nsf_node_ids"]] = got["nsf"]
            assembled.append(s)
        return assembled
