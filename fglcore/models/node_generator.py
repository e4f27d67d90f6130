"""The node-feature generator of the one-shot ensemble-distillation baselines (DENSE, Co-Boost) on graphs.

Yan et al., "Towards Federated Graph Learning in One-shot Communication"
(arXiv 2411.11304), App. A.7: for DENSE and Co-Boost on graphs "the generator
produces node features and the topology is a kNN graph following FedTAD".
The generator is FedTAD's conditional generator (Zhu et al., "FedTAD:
Topology-aware Data-free Knowledge Distillation for Subgraph Federated
Learning", IJCAI 2024, Sec. 4.3), the class ``FedTAD_ConGenerator`` that the
O-pFGL authors' ``model.py`` (``Youth-49/O-pFGL``) ships and OpenFGL's
``fedtad/generator.py`` defines identically.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn


class NodeFeatureGenerator(nn.Module):
    r"""Conditional generator of node features: :math:`\hat x = G(z, c)` (FedTAD, Sec. 4.3).

    The class :math:`c` is embedded (``Embedding(C, C)``), concatenated with
    the noise :math:`z\in\mathbb{R}^{d_z}` and mapped by
    ``Linear -> Tanh -> Dropout`` blocks of widths 64, 128, 256 and a final
    ``Linear(256, F)`` with no activation (raw features, as ``nodes_layer``).

    DENSE (Zhang et al., NeurIPS 2022, Sec. 3.2) and Co-Boost (Dai et al.,
    ICLR 2024, Sec. 3.2) re-initialise their generator before every synthesis
    round with DCGAN's initialisation (``reset_model`` in both official
    repositories: linear weights :math:`\mathcal N(0, 0.02^2)`, zero biases):
    :meth:`reset_parameters` with ``std=0.02`` does that (the embedding, which
    their image generators lack, is re-drawn from its default
    :math:`\mathcal N(0, 1)`); ``std=None`` is PyTorch's default initialisation.

    Args:
        noise_dim (int): :math:`d_z` (FedTAD's ``noise_dim`` = 32).
        num_classes (int): :math:`C`.
        out_channels (int): feature width :math:`F`.
        hidden (sequence of int): hidden widths (default ``(64, 128, 256)``).
        dropout (float): dropout after each hidden activation (FedTAD's ``gen_dropout`` = 0).

    Shapes:
        - **input:** noise :math:`(n, d_z)`, classes :math:`(n,)` (long)
        - **output:** node features :math:`(n, F)`
    """

    def __init__(self, noise_dim: int, num_classes: int, out_channels: int,
                 hidden: Sequence[int] = (64, 128, 256), dropout: float = 0.0):
        super().__init__()
        self.noise_dim = int(noise_dim)
        self.num_classes = int(num_classes)
        self.embedding = nn.Embedding(num_classes, num_classes)
        widths = [noise_dim + num_classes, *hidden]
        blocks: list[nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:]):
            blocks += [nn.Linear(a, b), nn.Tanh(), nn.Dropout(dropout)]
        self.hidden = nn.Sequential(*blocks)
        self.out = nn.Linear(widths[-1], out_channels)
        self.reset_parameters()

    def reset_parameters(self, std: float | None = None) -> None:
        """PyTorch's default initialisation (``std=None``), or DENSE/Co-Boost's ``reset_model`` (``std=0.02``)."""
        self.embedding.reset_parameters()
        for module in self.modules():
            if isinstance(module, nn.Linear):
                if std is None:
                    module.reset_parameters()
                else:
                    nn.init.normal_(module.weight, 0.0, std)
                    nn.init.zeros_(module.bias)

    def forward(self, z: Tensor, c: Tensor) -> Tensor:
        if z.dim() != 2 or z.size(1) != self.noise_dim or c.shape != z.shape[:1]:
            raise ValueError(f"NodeFeatureGenerator expects z of shape (n, {self.noise_dim}) and c of shape (n,), "
                             f"got {tuple(z.shape)} and {tuple(c.shape)}")
        return self.out(self.hidden(torch.cat([self.embedding(c), z], dim=-1)))
