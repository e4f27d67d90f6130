r"""GraphSAINT (random-walk sampler): the centralised subgraph-sampling baseline of the local-bias paper's Table 2.

Zeng, Zhou, Srivastava, Kannan and Prasanna, "GraphSAINT: Graph Sampling
Based Inductive Learning Method", ICLR 2020, Alg. 1 (training on sampled
subgraphs), Sec. 3.2 (aggregator normalisation :math:`\alpha_{u,v}` and loss
normalisation :math:`\lambda_v`), random-walk sampler (Sec. 3.3, Alg. 2);
row "GraphSAINT [31]" of Zhang et al., "Tackling the Local Bias in Federated
Graph Learning" (arXiv 2110.12906, Table 2). The local-bias paper gives no
setting; digest reading A21: random-walk sampler with a budget of about
:math:`s` (the local-bias paper's sample size, ``sample_ratio`` :math:`= s/N`,
PubMed's 5,000/19,717) and the library's other defaults (PyG's GraphSAINT
example: ``walk_length=2``, ``num_steps=5``, ``sample_coverage=100``).

One model on the *whole* graph (transductive, as the local-bias paper; the
same splits and per-client evaluation as ``central``). Before training,
the normalisation is estimated from pre-sampled subgraphs
(:meth:`~fglcore.algorithms.graph_sampling.RandomWalkSampler.normalisation`).
Each epoch draws ``num_steps`` subgraphs (``roots`` :math:`=
\mathrm{round}(s/(\texttt{walk\_length}+1))` walks, so at most about
:math:`s` nodes each) and takes one optimiser step on each, with

* the layers of ``config.model`` (``"gcn"``, the paper.yaml row, or
  ``"1gnn"``) in the block form of
  :class:`~fglcore.models.distributed_gnn.DistributedGNN` (the local-bias
  engine's layers): on the subgraph :math:`S`,
  :math:`Z = P_S\,H W + b` (1-GNN: :math:`+\,H W_1`) with
  :math:`P_S[v,u] = \hat L[v,u]\,\alpha_{u,v}` for the sampled edges
  :math:`u\to v` and the GCN self-loops :math:`\hat L[v,v]` (a self-loop is
  sampled whenever its node is, :math:`\alpha = 1`); :math:`\hat L` has the
  *whole* graph's degrees (the official code normalises by the training
  graph's degrees too; its layer concatenates self and neighbour terms,
  PyG's example sums them in ``GraphConv`` with :math:`1/\deg` weights --
  here the backbone the local-bias table names is kept);
* the loss :math:`\sum_{v \in S \cap \text{train}} \lambda_v\,
  \mathrm{CE}_v` (PyG's ``(loss * node_norm)[train_mask].sum()``).

Evaluation is full-batch on the whole graph (the plain model, :math:`\hat
L`), as GraphSAINT's. Options: ``sample_ratio``, ``walk_length``,
``num_steps``, ``sample_coverage``, ``edge_norm_node`` (``"target"``:
:math:`C_v/C_{u,v}` with :math:`v` the aggregating node, the paper and the
official code; ``"source"``: the count of ``edge_index[0]``, PyG; see
:mod:`~fglcore.algorithms.graph_sampling`). The sampler
is :mod:`fglcore.algorithms.graph_sampling`'s (PyG's needs ``torch-sparse``,
absent here), deterministic for a seed.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import degree

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.central import Central
from fglcore.algorithms.graph_sampling import EDGE_NORM_NODES, RandomWalkSampler, SaintSubgraph
from fglcore.algorithms.training import MiniBatchNodeTrainer, NodeTrainer, client_seed
from fglcore.checks import Bounds
from fglcore.config import ExperimentConfig
from fglcore.models.distributed_gnn import BACKBONES, DistributedGNN
from fglcore.models.operators import coo_product
from fglcore.runtime import set_seed


def propagation_weights(edge_index: Tensor, num_nodes: int, backbone: str) -> tuple[Tensor, Tensor | None]:
    """Per edge ``u -> v`` of ``edge_index`` its weight in the whole graph's operator, and the self-loop weights:
    GCN :math:`\\hat L[v,u] = (d_u+1)^{-1/2}(d_v+1)^{-1/2}`, :math:`\\hat L[v,v] = 1/(d_v+1)` (PyG ``gcn_norm``
    on a graph without self-loops); 1-GNN: 1, no self-loop."""
    if backbone == "1gnn":
        return torch.ones(edge_index.size(1)), None
    deg = degree(edge_index[1], num_nodes) + 1.0
    inv = deg.rsqrt()
    return inv[edge_index[0]] * inv[edge_index[1]], 1.0 / deg


def block_forward(model: DistributedGNN, x: Tensor, operator: Tensor, train: bool) -> Tensor:
    """``model``'s layers with the sparse ``operator`` (rows: targets) in place of the graph; dropout as
    :meth:`DistributedGNN.forward`."""
    h = x
    for layer in range(model.num_layers):
        if train and model.drops(layer):
            h = F.dropout(h, model.dropout, True)
        z = coo_product(operator, model.neighbour_input(layer, h))  # torch.sparse.mm's sums, as CSR products
        root = model.root_term(layer, h)
        if root is not None:
            z = z + root
        z = model.finish(layer, z)
        h = z.relu() if layer < model.num_layers - 1 else z
    return h


class SaintTrainer(MiniBatchNodeTrainer):
    """:class:`~fglcore.algorithms.training.MiniBatchNodeTrainer` whose epochs are ``num_steps`` GraphSAINT
    subgraphs."""

    def __init__(self, model: DistributedGNN, data: Data, config: ExperimentConfig, device: torch.device, *,
                 minority: Tensor, options: dict[str, Any]):
        super().__init__(model, data, config, device, minority=minority)
        n = int(data.num_nodes)
        self.num_nodes = n
        self.num_steps = options["num_steps"]
        roots = max(1, round(options["sample_ratio"] * n / (options["walk_length"] + 1)))
        generator = torch.Generator().manual_seed(client_seed(config.seed, 0))
        self.edge_index_cpu = data.edge_index.cpu()
        self.sampler = RandomWalkSampler(self.edge_index_cpu, n, roots, options["walk_length"], generator)
        self.node_norm, self.edge_norm = self.sampler.normalisation(options["num_steps"], options["sample_coverage"],
                                                                    options["edge_norm_node"])
        self.weights, self.loops = propagation_weights(self.edge_index_cpu, n, model.backbone)
        self.train_mask = data.train_mask.cpu().bool()

    def operator(self, node_idx: Tensor, edge_index: Tensor, edge_id: Tensor) -> Tensor:
        """:math:`P_S` (module docstring) on the subgraph, rows = targets, in positions of ``node_idx``."""
        m = int(node_idx.numel())
        rows, cols = edge_index[1], edge_index[0]
        values = self.weights[edge_id] * self.edge_norm[edge_id]
        if self.loops is not None:
            loop = torch.arange(m)
            rows, cols = torch.cat([rows, loop]), torch.cat([cols, loop])
            values = torch.cat([values, self.loops[node_idx]])
        return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (m, m),
                                       check_invariants=False).coalesce().to(self.device)

    def batches(self):
        """``num_steps`` random-walk subgraphs and their operators :math:`P_S`."""
        for _ in range(self.num_steps):
            sub = self.sampler.sample()
            yield sub, self.operator(sub.node_idx, sub.edge_index, sub.edge_id)

    def batch_loss(self, batch: tuple[SaintSubgraph, Tensor]) -> Tensor:
        """The node-normalised cross-entropy of the subgraph's training nodes (``node_norm``, Zeng et al. Eq. 4)."""
        sub, op = batch
        train = self.train_mask[sub.node_idx]
        out = block_forward(self.model, self.x[sub.node_idx.to(self.device)], op, train=True)
        ce = F.cross_entropy(out[train.to(self.device)], self.y[sub.node_idx[train].to(self.device)],
                             reduction="none")
        return (ce * self.node_norm[sub.node_idx[train]].to(self.device)).sum()


@register_algorithm
class GraphSAINT(Central):
    """GraphSAINT with the random-walk sampler (Zeng et al., ICLR 2020), centralised; see
    :mod:`fglcore.algorithms.graphsaint`."""

    name = "graphsaint"
    tasks = ("node",)
    models = BACKBONES
    default_options: dict[str, Any] = {"sample_ratio": 0.254, "walk_length": 2, "num_steps": 5,
                                       "sample_coverage": 100.0, "edge_norm_node": "target"}
    option_choices = {"edge_norm_node": EDGE_NORM_NODES}
    option_bounds = {"sample_ratio": Bounds(above=0, maximum=1), "walk_length": Bounds(minimum=1),
                     "num_steps": Bounds(minimum=1), "sample_coverage": Bounds(above=0)}
    citation = ("Zeng, Zhou, Srivastava, Kannan and Prasanna, GraphSAINT: Graph Sampling Based Inductive Learning "
                "Method, ICLR 2020")

    def central_trainer(self, data: Data, minority: Tensor) -> NodeTrainer:
        c = self.config
        set_seed(c.seed)
        model = DistributedGNN(c.model, int(self.federation.num_features), c.hidden, int(self.federation.num_classes),
                               c.num_layers, c.dropout)
        return SaintTrainer(model, data, c, self.device, minority=minority, options=self.options)
