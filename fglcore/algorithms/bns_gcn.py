r"""BNS-GCN: distributed full-graph GCN training with random boundary-node sampling (a Table 2 baseline).

Wan, Li, Kim, Lin, "BNS-GCN: Efficient Full-Graph Training of Graph
Convolutional Networks with Partition-Parallelism and Random Boundary Node
Sampling", MLSys 2022 (official code ``GATECH-EIC/BNS-GCN``); row "BNS-GCN [24]"
of Zhang et al., "Tackling the Local Bias in Federated Graph Learning"
(arXiv 2110.12906, Table 2, K = 8). The local-bias paper: "BNS-GCN can be
seen as a specific case of ours where :math:`p_i = p` when :math:`i` is a
boundary node and :math:`p_i = 1` otherwise"; digest reading A21: ``p = 0.1``.

It runs on the local-bias method's distributed engine
(:mod:`fglcore.distributed`, the same shards, exchange, loss, summed weight
gradients and optimiser step as ``localbias``; ``variant="bns"`` of the
trainer). Each epoch, every client :math:`k`

* computes *all* its own nodes (the self term with the global :math:`\hat
  L`, never scaled: inner nodes are always kept);
* toward every neighbouring client :math:`j`, picks ``int(p * |B_kj|)`` of
  its boundary nodes :math:`B_kj` (its nodes with an edge to :math:`j`)
  uniformly without replacement, as the official ``select_node`` /
  ``get_send_size``, and sends :math:`j` their ids (``sampled_ids``, the
  official ``one_hops`` transfer);
* sends :math:`j` the local term of the picked nodes only, divided by the
  realised share :math:`s/|B_kj|` (the official buffer divides the sent
  features by ``ratio`` and the returned gradients the same way), with the
  *whole* graph's degrees (the official code keeps the full graph's
  ``in_degree``).

The official code exchanges the picked boundary nodes' hidden states and
lets the receiver aggregate; this engine lets the sender aggregate (local
terms, :mod:`fglcore.distributed.exchange`): the same sums, other message
shapes. ``RunResult.extras["localbias"]["communication"]`` holds the bytes
counted from the messages (``measured_*``) and no analytic formula.
Evaluation is full distributed inference (every node, every edge), as
``localbias``. Options: ``boundary_ratio`` (:math:`p`), ``backbone``,
``input_dropout``, ``engine``, ``gloo_timeout``, ``local_bias_reference``
(see :mod:`fglcore.algorithms.localbias`).
"""
from __future__ import annotations

from typing import Any

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.localbias import ENGINES, LocalBias
from fglcore.checks import Bounds
from fglcore.distributed.run import RunSpec
from fglcore.distributed.trainer import BNS, SamplingOptions
from fglcore.models.distributed_gnn import BACKBONES


@register_algorithm
class BNSGCN(LocalBias):
    """BNS-GCN (Wan et al., MLSys 2022) on the distributed engine; see :mod:`fglcore.algorithms.bns_gcn`."""

    name = "bns_gcn"
    default_options: dict[str, Any] = {
        "boundary_ratio": 0.1, "backbone": "gcn", "input_dropout": True, "engine": "simulated",
        "gloo_timeout": 300.0, "local_bias_reference": False,
    }
    option_choices = {"backbone": BACKBONES, "engine": ENGINES}
    option_bounds = {"boundary_ratio": Bounds(minimum=0, maximum=1), "gloo_timeout": Bounds(above=0)}
    citation = ("Wan, Li, Kim and Lin, BNS-GCN: Efficient Full-Graph Training of Graph Convolutional Networks with "
                "Partition-Parallelism and Random Boundary Node Sampling, MLSys 2022")
    secure_aggregation_unsupported = "the clients exchange terms of hidden states, not model updates"

    def sampling_options(self) -> SamplingOptions:
        return SamplingOptions(BNS, boundary_ratio=self.options["boundary_ratio"])

    def analytic_communication(self, spec: RunSpec, dims: list[int], client: int) -> dict[str, float]:
        return {}
