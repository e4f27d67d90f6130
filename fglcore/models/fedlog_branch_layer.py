"""One layer of FedLoG's branch classifier (the code's ``clsf_module``).

Kim et al., "Subgraph Federated Learning for Local Generalization" (FedLoG),
ICLR 2025, Sec. 4; official code ``embedder/classifier.py``.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

AGGREGATIONS = ("code", "query")


class BranchLayer(nn.Module):
    r"""One EGNN-style layer of the task graph between the synthetic nodes :math:`s_j` and a query :math:`q`.

    For every edge :math:`(s_j, q)` (every query is joined to every synthetic
    node): :math:`d=\Vert s_j-q\Vert^2`, :math:`m=\phi_m([n_q \Vert d])`
    (:math:`n_q` the mean embedding of the query's graph neighbours) and the
    shift :math:`(s_j-q)\,\phi_t(m)`. The shifts are averaged per node of
    ``aggregate``: ``"code"`` averages them onto the *synthetic* node of each
    edge (the code's ``diff_mean(trans, row)`` with ``row`` the synthetic side),
    so the queries, which the layer then updates, receive nothing and pass
    through unchanged; ``"query"`` averages them onto the query,
    :math:`q\leftarrow q+\frac1{|S|}\sum_j (s_j-q)\,\phi_t(m_j)`, the update
    the paper describes. :math:`\phi_m`: Linear(D+1, D), SiLU, Linear(D, D), SiLU;
    :math:`\phi_t`: Linear(D, D), SiLU, Linear(D, D), SiLU, Linear(D, 1, no bias,
    Xavier gain 0.001), as the code. (The code's unused ``posi_mlp`` is left out.)

    Args:
        channels (int): embedding width :math:`D`.
        aggregate (str): ``"code"`` or ``"query"``.

    Shapes:
        - **input:** queries :math:`(Q, D)`, their neighbour means :math:`(Q, D)`, synthetic nodes :math:`(S, D)`
        - **output:** queries :math:`(Q, D)`
    """

    def __init__(self, channels: int, aggregate: str = "code"):
        super().__init__()
        if aggregate not in AGGREGATIONS:
            raise ValueError(f"unknown aggregate {aggregate!r}; accepted: {', '.join(AGGREGATIONS)}")
        self.aggregate = aggregate
        self.msg_mlp = nn.Sequential(nn.Linear(channels + 1, channels), nn.SiLU(), nn.Linear(channels, channels),
                                     nn.SiLU())
        self.trans_mlp = nn.Sequential(nn.Linear(channels, channels), nn.SiLU(), nn.Linear(channels, channels),
                                       nn.SiLU(), nn.Linear(channels, 1, bias=False))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in (*self.msg_mlp, *self.trans_mlp):
            if isinstance(module, nn.Linear):
                module.reset_parameters()
        nn.init.xavier_uniform_(self.trans_mlp[-1].weight, gain=0.001)

    def forward(self, query: Tensor, neighbor: Tensor, synthetic: Tensor) -> Tensor:
        if self.aggregate == "code":
            return query  # the code's shifts land on the synthetic nodes, which the layer does not return
        q, s = query.size(0), synthetic.size(0)
        diff = synthetic.unsqueeze(0) - query.unsqueeze(1)  # (Q, S, D): s_j - q
        sqr = diff.pow(2).sum(-1, keepdim=True)  # (Q, S, 1)
        msg = self.msg_mlp(torch.cat([neighbor.unsqueeze(1).expand(q, s, -1), sqr], -1))
        shift = diff * self.trans_mlp(msg)  # (Q, S, D)
        return query + shift.mean(1)
