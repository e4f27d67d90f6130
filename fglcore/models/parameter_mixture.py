"""APFL's mixture of a personal and a global model's parameters."""
from __future__ import annotations

from typing import Any

from torch import Tensor, nn
from torch.func import functional_call


class ParameterMixture(nn.Module):
    """APFL's personalised model (Deng et al., "Adaptive Personalized Federated Learning", 2020, Eq. 5):
    :math:`\\bar v = \\alpha v + (1-\\alpha) w`, ``local``'s architecture run with mixed parameters.

    ``local`` (:math:`v`) is the only submodule, so ``parameters()`` yields
    :math:`v` alone. :math:`w` is ``global_model``'s parameters, read at every
    call and detached; ``alpha`` is a 0-dim tensor held as a plain attribute
    (it needs ``requires_grad=True`` to be learned). Called like ``local``.

    Args:
        local (nn.Module): the personal model :math:`v`.
        global_model (nn.Module): the model :math:`w` (same parameter names and shapes).
        alpha (Tensor): the 0-dim mixing weight :math:`\\alpha`.

    Shapes:
        - **input** and **output:** those of ``local``.
    """

    def __init__(self, local: nn.Module, global_model: nn.Module, alpha: Tensor):
        super().__init__()
        local_names = [name for name, _ in local.named_parameters()]
        global_parameters = dict(global_model.named_parameters())
        if sorted(local_names) != sorted(global_parameters) or any(
            global_parameters[n].shape != p.shape for n, p in local.named_parameters()
        ):
            raise ValueError(
                "ParameterMixture needs a local and a global model with the same parameter names and shapes"
            )
        if alpha.dim() != 0:
            raise ValueError(f"alpha must be a 0-dim tensor, got shape {tuple(alpha.shape)}")
        self.local = local
        self.global_parameters = global_parameters
        self.alpha = alpha

    @property
    def accepts_graph_operators(self) -> bool:
        """Whether the wrapped model's forward takes sparse graph operators (it receives them unchanged)."""
        return getattr(self.local, "accepts_graph_operators", False)

    def reset_parameters(self) -> None:
        """Reset :math:`v` (``local``); :math:`w` and :math:`\\alpha` belong to the caller."""
        self.local.reset_parameters()

    def mixed_parameters(self) -> dict[str, Tensor]:
        a = self.alpha
        w = self.global_parameters
        return {name: a * v + (1 - a) * w[name].detach() for name, v in self.local.named_parameters()}

    def forward(self, *args: Any) -> Tensor:
        return functional_call(self.local, self.mixed_parameters(), args)
