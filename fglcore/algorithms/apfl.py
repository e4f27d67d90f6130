"""APFL: adaptive personalized federated learning.

Deng, Kamani and Mahdavi, "Adaptive Personalized Federated Learning",
arXiv:2003.13461 (2020), Algorithm 1 ("Local Descent APFL"); a baseline of
FedSpray (Fu et al., KDD 2024, Table 2). Each client :math:`i` keeps its copy
:math:`w_i` of the global model, a local model :math:`v_i` and a mixing weight
:math:`\\alpha_i\\in[0,1]`; its personalized model, the one it deploys and is
evaluated with, is the *parameter* mixture

.. math:: \\bar v_i = \\alpha_i v_i + (1-\\alpha_i)\\, w_i .

Every local step, at the current point (Algorithm 1):

* :math:`w_i \\leftarrow w_i - \\eta\\,\\nabla f_i(w_i)` -- the global model on its own loss;
* :math:`v_i \\leftarrow v_i - \\eta\\,\\nabla_v f_i(\\bar v_i) = v_i - \\eta\\,\\alpha_i \\nabla f_i(\\bar v_i)`;
* :math:`\\alpha_i \\leftarrow \\Pi_{[0,1]}\\big(\\alpha_i - \\eta_\\alpha \\nabla_\\alpha f_i(\\bar v_i)\\big)`,
  :math:`\\nabla_\\alpha f_i(\\bar v_i) = \\langle v_i - w_i, \\nabla f_i(\\bar v_i)\\rangle` (Eq. 10).

After :math:`\\tau` = ``config.local_epochs`` steps the clients upload
:math:`w_i` and the server averages them with FedAvg weights (training
samples); the new :math:`w` is what every client continues from. Only
:math:`w` is communicated: :math:`v_i` and :math:`\\alpha_i` never leave the
client (the ledger holds the global model's parameter names only).

How it is computed:

* :math:`w_i` is trained by a plain :class:`~fglcore.algorithms.training.NodeTrainer`
  (or ``GraphTrainer``), exactly as in FedAvg (:class:`APFLClient` is a
  :class:`~fglcore.algorithms.fedavg.FedAvgClient`);
* :math:`\\bar v_i` is a :class:`~fglcore.models.parameter_mixture.ParameterMixture` -- :math:`v_i`'s architecture
  run with the mixed parameters, :math:`w_i` entering detached -- trained by a
  second trainer of the same kind, whose optimizer holds :math:`v_i` only;
  autograd then gives exactly :math:`\\alpha_i\\nabla f_i(\\bar v_i)` for
  :math:`v_i` and Eq. 10's gradient for :math:`\\alpha_i`;
* :math:`\\alpha_i` takes its projected gradient step (learning rate
  ``alpha_lr``) from a hook the moment its gradient is accumulated, i.e.
  once per step of the mixture's trainer;
* each local epoch is one step of :math:`\\bar v_i` (and :math:`\\alpha_i`) then one
  step of :math:`w_i`, both computed at the same (old) point as in
  Algorithm 1. Node classification is full batch, so a step is an epoch.
  For graph classification each is an epoch of mini-batches (both trainers
  shuffle in the same order), so :math:`w` and :math:`v` alternate by epochs,
  not by mini-batches as in the paper; :math:`\\alpha_i` still moves every
  mini-batch.

The paper uses SGD with one learning rate; here both models use the
config's optimizer and ``config.lr``. :math:`v_i` starts as a copy of the
initial global model (so :math:`\\bar v_i = w_i` before the first step).

Options, besides FedAvg's ``share`` and ``reset_optimizer``:

* ``alpha`` (0.5): the initial (or, with ``adaptive_alpha=False``, fixed)
  mixing weight; 0.5 is the default of FL-bench's APFL;
* ``adaptive_alpha`` (True): update :math:`\\alpha_i` by Eq. 10; ``False`` keeps
  it fixed (the paper also reports fixed :math:`\\alpha` runs). ``alpha=0``
  fixed deploys the global model (FedAvg), ``alpha=1`` fixed the purely
  local one (Local);
* ``alpha_lr`` (``None``): the step size of Eq. 10; ``None`` uses ``config.lr``
  (the paper uses the models' step size :math:`\\eta_t`).

Not modelled: the FedTorch code commonly used as APFL's reference mixes the
two models' *outputs* and updates :math:`\\alpha` once per round with an extra
:math:`0.02\\,\\alpha` term.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvg, FedAvgClient
from fglcore.config import ConfigError
from fglcore.fl.engine import Payload
from fglcore.metrics import Prediction
from fglcore.models.parameter_mixture import ParameterMixture


def make_adaptive(alpha: Tensor, lr: float) -> None:
    """Give ``alpha`` Eq. 10's projected gradient step, taken as soon as a backward pass accumulates its gradient."""

    def projected_step(a: Tensor) -> None:
        with torch.no_grad():
            a.sub_(lr * a.grad).clamp_(0.0, 1.0)
        a.grad = None

    alpha.requires_grad_(True)
    alpha.register_post_accumulate_grad_hook(projected_step)


class APFLClient(FedAvgClient):
    """A FedAvg client (``trainer`` holds :math:`w`) that also trains and deploys the mixture in ``personal``."""

    def __init__(
        self,
        cid: int,
        trainer: Trainer,
        personal: Trainer,
        epochs: int,
        shared: Sequence[str],
        reset_optimizer: bool = False,
        alpha_lr: float | None = None,
    ):
        """``alpha_lr`` makes :math:`\\alpha_i` adaptive (Eq. 10) with that step size; ``None`` keeps it fixed."""
        super().__init__(cid, trainer, epochs, shared, reset_optimizer)
        self.personal = personal
        self.alpha_lr = alpha_lr
        if alpha_lr is not None:
            make_adaptive(self.mixture.alpha, alpha_lr)

    def __setstate__(self, state: dict) -> None:
        # Tensor hooks are not pickled: a client loaded from a checkpoint gets its alpha step back.
        self.__dict__.update(state)
        if self.alpha_lr is not None:
            make_adaptive(self.mixture.alpha, self.alpha_lr)

    @property
    def mixture(self) -> ParameterMixture:
        return self.personal.model

    @property
    def alpha(self) -> float:
        """The client's current mixing weight :math:`\\alpha_i`."""
        return float(self.mixture.alpha.detach())

    def fit(self, round: int) -> Payload:
        if self.reset_optimizer:
            self.trainer.reset_optimizer()
            self.personal.reset_optimizer()
        for _ in range(self.epochs):
            self.personal.train_epochs(1)  # v and alpha, at the current (v, w)
            self.trainer.train_epochs(1)  # w, at the same w
        return self.upload()

    def evaluate(self) -> dict[str, Prediction]:
        return self.personal.predict()


@register_algorithm
class APFL(FedAvg):
    """APFL (Deng et al., 2020, Algorithm 1 and Eq. 10); options in :mod:`fglcore.algorithms.apfl`."""

    name = "apfl"
    tasks = ("node", "graph")
    default_options = {**FedAvg.default_options, "alpha": 0.5, "adaptive_alpha": True, "alpha_lr": None}
    citation = "Deng et al., Adaptive Personalized Federated Learning, arXiv:2003.13461, 2020"

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        if not 0.0 <= merged["alpha"] <= 1.0:
            raise ConfigError(f"algorithm_options.alpha: must be in [0, 1], got {merged['alpha']}")
        lr = merged["alpha_lr"]
        if lr is not None:
            if isinstance(lr, bool) or not isinstance(lr, (int, float)) or lr <= 0:
                raise ConfigError(f"algorithm_options.alpha_lr: expected a number > 0 or None, got {lr!r}")
            merged["alpha_lr"] = float(lr)
        return merged

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> APFLClient:
        alpha = torch.tensor(float(self.options["alpha"]), device=self.device)
        alpha_lr = None
        if self.options["adaptive_alpha"]:
            alpha_lr = self.options["alpha_lr"] if self.options["alpha_lr"] is not None else self.config.lr
        mixture = ParameterMixture(copy.deepcopy(trainer.model), trainer.model, alpha)
        personal = self.make_trainer(mixture, cid)
        return APFLClient(
            cid, trainer, personal, self.config.local_epochs, shared, self.options["reset_optimizer"], alpha_lr
        )
