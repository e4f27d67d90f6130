r"""Communication per client and epoch: counted from the messages sent, and from the paper's formulas.

Zhang et al., "Tackling the Local Bias in Federated Graph Learning" (arXiv
2110.12906), Sec. 3.1 and Appendix C; Table 1's cells were lost, the digest
(§2.6) rebuilds them: per iteration the forward pass moves
:math:`O(K s \sum_l d_l)` values, the backward pass
:math:`O(K s \sum_l d_l + K \sum_l d_{l-1} d_l)`.

:func:`analytic_bytes` evaluates the dense message schedule behind those
formulas for one client :math:`j` (digest §2.2's table): in every layer it
uploads a local term :math:`M_{kj}` of :math:`|S_k| \times d_l` for every
other client :math:`k`, in the backward pass of every layer but the first a
term :math:`U_{kj}` of :math:`|S_k| \times d_{l-1}`, and its weight
gradient (:math:`\sum_l (d_{l-1}+1) d_l` values, with the bias), and it
downloads the sums. :func:`measured_bytes` counts what the engine actually
sent (:mod:`fglcore.distributed.exchange`): local terms only for the rows
that touch the receiver (its boundary nodes), their gradients (width
:math:`d_l`) instead of :math:`U`, plus the sampled ids -- at most the dense
figure when boundaries are small, and the same order.
:func:`cagnet_1d_bytes` is CAGNET's 1-D broadcast schedule on the same
computation (``variant="ours-full"``, digest A9).
"""
from __future__ import annotations

from typing import Sequence

from fglcore.fl.channel import Ledger

FLOAT_BYTES = 4


def analytic_bytes(sample_sizes: Sequence[int], dims: Sequence[int], client: int,
                   bias: bool = True) -> dict[str, float]:
    """Dense schedule (Table 1, §2.6) for ``client`` per epoch: ``upload``, ``download`` and ``total`` bytes.

    ``sample_sizes[k]`` = :math:`|S_k|`, ``dims`` = :math:`(d_0, \\dots, d_L)`.
    """
    others = sum(s for k, s in enumerate(sample_sizes) if k != client)
    own = sample_sizes[client]
    layers = len(dims) - 1
    forward_up = sum(others * dims[l + 1] for l in range(layers))
    backward_up = sum(others * dims[l] for l in range(1, layers))
    weights = sum((dims[l] + (1 if bias else 0)) * dims[l + 1] for l in range(layers))
    forward_down = sum(own * dims[l + 1] for l in range(layers))
    backward_down = sum(own * dims[l] for l in range(1, layers))
    upload = FLOAT_BYTES * (forward_up + backward_up + weights)
    download = FLOAT_BYTES * (forward_down + backward_down + weights)
    return {"upload": float(upload), "download": float(download), "total": float(upload + download)}


def cagnet_1d_bytes(node_counts: Sequence[int], dims: Sequence[int], client: int,
                    bias: bool = True) -> dict[str, float]:
    """CAGNET's 1-D algorithm (Tripathy, Yelick and Buluç, "Reducing Communication in Graph Neural Network
    Training", SC 2020, Sec. 4 "1D"; the local-bias paper's CAGNET [23], digest A9) for ``client`` per epoch.

    Rows are partitioned by client (``node_counts[k]`` = :math:`n_k`); in every layer's forward pass each
    client broadcasts its whole block :math:`H_k^{(l-1)}` (:math:`n_k \times d_{l-1}`) to the other
    :math:`K-1` clients, in every layer's backward pass its gradient block :math:`G_k^{(l)}`
    (:math:`n_k \times d_l`: :math:`A^\top G` for the previous layer and for the weight gradient), and the
    weight gradients are summed (up and down, as :func:`analytic_bytes`). A broadcast is counted once per
    receiver (point to point). No sampling: this is the cost model of ``localbias`` ``variant="ours-full"``,
    whose computation is CAGNET's (the same full-batch GCN; the engine itself sends local terms).
    """
    k = len(node_counts)
    own = node_counts[client]
    others = sum(n for j, n in enumerate(node_counts) if j != client)
    layers = len(dims) - 1
    width = sum(dims[l] + dims[l + 1] for l in range(layers))  # forward H^(l-1), backward G^(l)
    weights = sum((dims[l] + (1 if bias else 0)) * dims[l + 1] for l in range(layers))
    upload = FLOAT_BYTES * ((k - 1) * own * width + weights)
    download = FLOAT_BYTES * (others * width + weights)
    return {"upload": float(upload), "download": float(download), "total": float(upload + download)}


def measured_bytes(ledger: Ledger, client: int, epochs: Sequence[int]) -> dict[str, float]:
    """Mean bytes per training epoch that ``client`` sent (``upload``: to the server and to other clients)
    and received from the server (``download``), from the ledger; evaluation messages (``*_eval``) and the
    one-off degree exchange are left out."""
    me = f"client{client}"
    epochs = set(epochs)
    up = down = 0
    for m in ledger.messages:
        if m.round not in epochs or m.name.endswith("_eval"):
            continue
        if m.sender == me:
            up += m.nbytes
        elif m.receiver == me:
            down += m.nbytes
    n = max(len(epochs), 1)
    return {"upload": up / n, "download": down / n, "total": (up + down) / n}
