"""Named per-client model lists: each client of a federation trains its own architecture.

A model list is registered in :data:`fglcore.models.MODELS` like a model
(``ExperimentConfig.model = "hetero"``) and resolves, client by client, to
one :class:`ClientModel` each (:func:`fglcore.models.build_client_model`).
The list fixes the number of clients, and each entry its own width, depth
and options (``config.hidden``, ``config.num_layers`` and
``config.model_options`` are not used; ``config.dropout`` is passed to the
entries whose model has dropout). Only algorithms that never combine
parameters across architectures accept a list
(:attr:`fglcore.algorithms.base.Algorithm.heterogeneous_models`): those that
exchange none of the client model's parameters (Standalone, FedSpray,
O-pFGL) and the data-free distillations FedTAD, DENSE and Co-Boost, whose
servers distil one student per architecture
(:meth:`fglcore.algorithms.base.Algorithm.architecture_groups`).

O-pFGL's heterogeneous-model setting (Yan et al., arXiv 2411.11304,
App. A.3.7, Tables 3 and 11; digest §3.10): ten clients, "coupled GNNs:
2-layer GCN with hidden 64, 128, 256 and 512; 3-layer GCN with hidden 64
and 512; decoupled GNNs: APPNP, SSGC, SGC(K=2), SGC(K=4)". The authors'
``main.py`` (``Youth-49/O-pFGL``, ``--method hete``) names them, in client
order, ``SSGC_2_2_64, GCN_2_64, GCN_2_128, GCN_2_256, GCN_2_512, SGC_2,
GCN_3_64, GCN_3_512, APPNP_2_2_64, SGC_4`` and builds each by testing
substrings in the order ``"GCN"``, ``"SGC"``, ``"SSGC"``, ``"APPNP"``:
``"SSGC_2_2_64"`` contains ``"SGC"``, so client 0 gets
``SGConv(K=2)`` -- an SGC, like client 5 -- and the ``SSGC`` class is never
built (as written it would fail: see :class:`~fglcore.models.ssgc.SSGC`).
Two lists, then:

* ``hetero`` (:data:`HETERO`, the default, as the code ran it and as the
  paper's numbers were produced): client 0 is SGC with K = 2;
* ``hetero_paper`` (:data:`HETERO_PAPER`, the paper's list and the code's
  intent): client 0 is SSGC (K = 2, 2 linear layers, hidden 64).

The other entries agree: PyG's ``GCN`` (ReLU, no normalisation; dropout 0
in O-pFGL's protocol), ``SGConv`` (K steps, one linear layer) and
``MyAPPNP`` (APPNP K = 2, :math:`\\alpha` = 0.1, on the features, then
Linear -> BatchNorm -> Linear without nonlinearity). This file holds no model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class ClientModel:
    """One client's architecture: a registered model name, its width, depth and options."""

    model: str
    hidden: int = 64
    num_layers: int = 2
    options: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """A short label, e.g. ``gcn 2x64`` or ``sgc K=2``."""
        options = ", ".join(f"{k}={v}" for k, v in self.options.items())
        if self.model == "sgc":
            return f"sgc {options}"
        size = f"{self.num_layers}x{self.hidden}"
        return f"{self.model} {size}" + (f" ({options})" if options else "")


def _gcn(layers: int, hidden: int) -> ClientModel:
    return ClientModel("gcn", hidden, layers)


_SHARED = (
    _gcn(2, 64), _gcn(2, 128), _gcn(2, 256), _gcn(2, 512),
    ClientModel("sgc", options={"K": 2}),
    _gcn(3, 64), _gcn(3, 512),
    ClientModel("appnp_mlp", 64, 2, {"K": 2, "alpha": 0.1}),
    ClientModel("sgc", options={"K": 4}),
)

HETERO: tuple[ClientModel, ...] = (ClientModel("sgc", options={"K": 2}), *_SHARED)
"""O-pFGL's ten client models as the authors' code builds them (client 0 ``SSGC_2_2_64`` dispatched to SGC K=2)."""

HETERO_PAPER: tuple[ClientModel, ...] = (ClientModel("ssgc", 64, 2, {"K": 2}), *_SHARED)
"""O-pFGL's ten client models as the paper lists them (client 0 SSGC, K=2, 2 linear layers, hidden 64)."""

MODEL_LISTS: dict[str, tuple[tuple[ClientModel, ...], str]] = {
    "hetero": (HETERO, "Yan et al., arXiv 2411.11304, Tables 3/11, as the authors' main.py builds the list"),
    "hetero_paper": (HETERO_PAPER, "Yan et al., arXiv 2411.11304, App. A.3.7 (client 0 SSGC)"),
}
"""Name -> (client models, reference); registered in :data:`fglcore.models.MODELS`."""
