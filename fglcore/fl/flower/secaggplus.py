"""Secure aggregation on Flower with Flower's own SecAgg+ (``SecAggPlusWorkflow`` and ``secaggplus_mod``).

Where an algorithm uses fglcore's secure aggregation (``config.secure_aggregation``: the round loop calls
:meth:`Client.masked_update <fglcore.fl.engine.Client.masked_update>` and the server only ever gets the
weighted mean through :meth:`Server.apply_mean <fglcore.fl.engine.Server.apply_mean>`), the Flower adapter runs
Flower's SecAgg+ protocol (Bell et al., "Secure Single-Server Aggregation with (Poly)Logarithmic Overhead", CCS
2020; Flower's implementation) for that step instead of fglcore's simulated pairwise masking
(:mod:`fglcore.fl.secure`): real key agreement (ECDH), Shamir shares of each client's mask seed and key,
dropout recovery up to the reconstruction threshold.

**How our messages ride on it.** In flwr 1.42 SecAgg+ exists only in the legacy layer: the ServerApp side is
``flwr.server.workflow.SecAggPlusWorkflow``, which needs a ``LegacyContext`` holding a legacy ``Strategy``
(``configure_fit`` chooses the clients, ``aggregate_fit`` receives the unmasked average) and sends four rounds
of ``train`` messages (setup, share keys, collect masked vectors, unmask); the client side is
``flwr.client.mod.secaggplus_mod``, which wraps a ``train`` handler whose reply is a legacy ``FitRes``
record (``fitres.parameters``, ``fitres.num_examples``). Nothing in 1.42 carries SecAgg+ for a Message-API
strategy. So, per round:

1. each client trains on its own ``train`` message, in the loop's order and with the global random state, as
   without secure aggregation, keeps its update in its state file and replies only its parameters' names,
   dtypes and shapes (:func:`fglcore.fl.flower.apps.train`);
2. the ServerApp runs ``SecAggPlusWorkflow`` itself (:class:`SecAggPlus`), with a ``Strategy``
   (:class:`_LoopStrategy`) whose ``configure_fit`` names the clients that trained and whose ``aggregate_fit``
   keeps the average, through a grid (:class:`_LinkGrid`) that sends through the run's
   :class:`~fglcore.fl.flower.apps.FlowerLink` (its 0.1 s polling, timeouts and byte accounting);
3. on each SuperNode the ``train`` handler hands the SecAgg+ messages to ``secaggplus_mod``, whose inner
   handler returns the kept update as a ``FitRes`` (:func:`client_step`): the client quantises, masks and
   uploads it; the ServerApp only sees the masked ``int64`` vectors and the unmasked weighted mean, which
   :meth:`SecAggPlus.unmask_sum` hands to the round loop in place of fglcore's ``unmask_sum``.

Each client's masked vector (``[q_k, masked parameters...]``, ``int64``, one entry per parameter plus its
weight) is what the ledger records as its ``masked_update``: as many bytes as fglcore's masked upload.

**What SecAgg+ computes, and how close it is to ours.** Client ``k`` with ``n_k`` samples sends its update
``x_k`` scaled by ``d_k = q_k / Q`` with ``q_k = round(n_k / W * Q)`` (``W``: ``max_weight``, here the largest
``n_k`` of the round), clipped to ``[-c, c]`` and stochastically rounded to the grid of step ``2c / Q``
(``c``: ``clipping_range``, ``Q``: ``quantization_range``); the server obtains ``sum_k d_k x_k`` (to the
rounding) and divides by ``sum_k d_k``. So SecAgg+ returns the same quantity as fglcore, the ``n_k``-weighted
mean of the updates, up to

    |mean_SecAgg+ - mean| <= (K * 2c / Q + K / (2Q) * max_k |x_k - mean|) / sum_k d_k

per entry (:func:`error_bound`), ``K`` clients: the first term is the stochastic rounding (less than one step
per client), the second the rounding of the weights to ``q_k``. fglcore's fixed point (``2**-24``) is far
finer; both are then cast to the parameters' dtype. With Flower's defaults (``c = 8``, ``Q = 2**22``) and two
clients of similar size that is about ``4e-6`` per entry (3.8e-6 for the two Cora clients of
``tests/test_flower.py``, whose measured gap was 3.6e-6): a run with SecAgg+ is not bit for bit the run
without, and its metrics can move in the last digits; ``secure_aggregation = "fglcore"`` (run config) keeps
fglcore's masking on the SuperNodes, which gives the in-process numbers bit for bit. A client whose scaled
update leaves ``[-c, c]`` refuses to quantise (clipping would change the mean beyond the bound), naming the
entry and ``c``. Stochastic rounding draws from NumPy's global generator: the client seeds it from its own seed
and the round (and restores it after), so a run is deterministic for a seed; the workflow's shuffle of the
clients draws from Python's on the ServerApp, whose state is restored too, so the loop's random stream is the
one without SecAgg+.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from fglcore.fl.flower.apps import FlowerLink, RemoteClient

MODE = "secaggplus"
DEFAULTS = {"clipping_range": 8.0, "quantization_range": 2**22, "modulus_range": 2**32, "num_shares": 1.0,
            "reconstruction_threshold": 0.5}


def error_bound(num_samples: Sequence[float], updates_spread: float, *, clipping_range: float = 8.0,
                quantization_range: int = 2**22, max_weight: float | None = None) -> float:
    """The largest gap per entry between SecAgg+'s weighted mean and the exact ``num_samples``-weighted mean
    (module docstring): ``(K * 2c/Q + K/(2Q) * updates_spread) / sum_k d_k``, ``updates_spread`` bounding
    ``max_k |x_k - mean|`` and ``max_weight`` defaulting to the largest of ``num_samples``."""
    weight = max(num_samples) if max_weight is None else max_weight
    q = quantization_range
    d = [round(n / weight * q) / q for n in num_samples]
    k = len(num_samples)
    return (k * 2 * clipping_range / q + k / (2 * q) * updates_spread) / sum(d)


# -- the ServerApp's side --------------------------------------------------------------------------------


class _LinkGrid:
    """What ``SecAggPlusWorkflow`` uses of a ``Grid`` (``send_and_receive``), through the run's FlowerLink."""

    def __init__(self, link: "FlowerLink", round: int):
        self.link = link
        self.round = round
        self.masked: dict[int, list[np.ndarray]] = {}  # node id -> its masked vector (stage 2 replies)
        self.silent: set[int] = set()  # node ids that sent no reply to some stage

    def send_and_receive(self, messages: Any, *, timeout: float | None = None) -> list:
        from flwr.common import bytes_to_ndarray
        from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key

        messages = list(messages)
        stage = str(messages[0].content.config_records[RECORD_KEY_CONFIGS][Key.STAGE]) if messages else ""
        replies = self.link.exchange_logged(messages, f"secaggplus.{stage}", self.round)
        answered = {reply.metadata.src_node_id for reply in replies}
        self.silent |= {m.metadata.dst_node_id for m in messages} - answered
        for reply in replies:
            if not reply.has_error() and Key.MASKED_PARAMETERS in reply.content.config_records[RECORD_KEY_CONFIGS]:
                self.masked[reply.metadata.src_node_id] = [
                    bytes_to_ndarray(b) for b in reply.content.config_records[RECORD_KEY_CONFIGS][Key.MASKED_PARAMETERS]]
        return replies


def _strategy(clients: Sequence["RemoteClient"], round: int, grid: Any):
    """A legacy ``Strategy`` for one SecAgg+ round: ``configure_fit`` names ``clients`` (an empty ``FitIns``:
    each already holds its update), ``aggregate_fit`` keeps the unmasked weighted average."""
    from flwr.common import FitIns, Parameters
    from flwr.server.compat.grid_client_proxy import GridClientProxy
    from flwr.server.strategy import Strategy

    class _LoopStrategy(Strategy):
        aggregate: list[np.ndarray] | None = None

        def initialize_parameters(self, client_manager):
            return None

        def configure_fit(self, server_round, parameters, client_manager):
            empty = FitIns(Parameters(tensors=[], tensor_type=""), {"round": round})
            return [(GridClientProxy(c.node_id, grid, 0), empty) for c in clients]

        def aggregate_fit(self, server_round, results, failures):
            if failures or not results:
                return None, {}
            from flwr.common import parameters_to_ndarrays
            self.aggregate = parameters_to_ndarrays(results[0][1].parameters)  # every result holds the average
            return results[0][1].parameters, {}

        def configure_evaluate(self, server_round, parameters, client_manager):
            return []

        def aggregate_evaluate(self, server_round, results, failures):
            return None, {}

        def evaluate(self, server_round, parameters):
            return None

    return _LoopStrategy()


class SecAggPlus:
    """Stands in for :class:`~fglcore.fl.secure.SecureAggregator` in :func:`~fglcore.fl.engine.run_rounds` on
    the ServerApp: the first client's :meth:`RemoteClient.masked_update` of a round runs Flower's SecAgg+ over
    every client that trained (:meth:`run_round`); :meth:`unmask_sum` returns the weighted mean it produced."""

    def __init__(self, link: "FlowerLink", options: Mapping[str, Any] | None = None):
        self.link = link
        self.options = {**DEFAULTS, **(options or {})}
        self.rounds: dict[int, dict[str, Any]] = {}  # round -> masked vectors by client id, the mean
        self.means: list[dict[str, Any]] = []  # what the server learned, per round (result extras)

    def run_round(self, round: int) -> dict[str, Any]:
        from flwr.app import ConfigRecord, Context, RecordDict
        from flwr.server.compat.legacy_context import LegacyContext
        from flwr.server.workflow import SecAggPlusWorkflow
        from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD, Key
        from flwr.app import ArrayRecord

        from fglcore.fl.flower.apps import ClientFailed, ClientLost

        if round in self.rounds:
            return self.rounds[round]
        clients = [c for c in self.link.proxies if c.secagg_round == round]
        if len(clients) < 2:
            raise ClientFailed(f"SecAgg+ needs at least 2 clients with an update in round {round}, got "
                               f"{[c.name for c in clients]}")
        o = self.options
        grid = _LinkGrid(self.link, round)
        strategy = _strategy(clients, round, grid)
        state = RecordDict({MAIN_CONFIGS_RECORD: ConfigRecord({Key.CURRENT_ROUND: round}),
                            MAIN_PARAMS_RECORD: ArrayRecord()})
        context = LegacyContext(Context(run_id=0, node_id=0, node_config={}, state=state, run_config={}),
                                strategy=strategy)
        workflow = SecAggPlusWorkflow(o["num_shares"], o["reconstruction_threshold"],
                                      max_weight=float(max(c.num_samples for c in clients)),
                                      clipping_range=float(o["clipping_range"]),
                                      quantization_range=int(o["quantization_range"]),
                                      modulus_range=int(o["modulus_range"]), timeout=self.link.message_timeout)
        python_state = random.getstate()  # the workflow shuffles the clients with Python's generator
        try:
            workflow(grid, context)
        finally:
            random.setstate(python_state)
        by_node = {c.node_id: c for c in clients}
        if strategy.aggregate is None:
            lost = [by_node[n].name for n in by_node if n in grid.silent]
            errors = "; ".join(self.link.errors.pop(round, []))
            raise (ClientLost if lost and not errors else ClientFailed)(
                f"SecAgg+ round {round} did not complete"
                + (f": no reply from {', '.join(lost)} within {self.link.message_timeout:g} s; the client was "
                   "lost and the run is incomplete" if lost else "")
                + (f"; client errors: {errors}" if errors else ""))
        masked = {by_node[n].cid: torch.from_numpy(np.concatenate([np.asarray(a, dtype=np.int64).reshape(-1)
                                                                   for a in vec]))
                  for n, vec in grid.masked.items()}
        mean = torch.from_numpy(np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1)
                                                for a in strategy.aggregate]))
        self.rounds = {round: {"masked": masked, "mean": mean}}
        self.means.append({"round": round, "clients": [c.cid for c in clients], "mean": mean.clone()})
        return self.rounds[round]

    def masked_vector(self, client: "RemoteClient", round: int) -> Tensor:
        return self.run_round(round)["masked"][client.cid]

    def unmask_sum(self, masked: Sequence[Tensor], round: int, client_ids: Sequence[int] | None = None) -> Tensor:
        """``[mean..., 1]``: the round loop divides the first entries by the last (module docstring)."""
        mean = self.run_round(round)["mean"]
        return torch.cat([mean, torch.ones(1, dtype=torch.float64)])


# -- the ClientApp's side ----------------------------------------------------------------------------------


def is_secaggplus(message: Any) -> bool:
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS
    return RECORD_KEY_CONFIGS in message.content.config_records


def client_step(message: Any, context: Any, update: Mapping[str, Tensor] | None, num_samples: int,
                seed: int) -> tuple[Any, bool]:
    """Run ``secaggplus_mod`` on one SecAgg+ message; its inner ``train`` handler answers with ``update`` (the
    update kept from this round's ``train`` message) as a legacy ``FitRes``. Returns the reply and whether the
    update was used (stage "collect masked vectors")."""
    from flwr.app import Message
    from flwr.client.mod import secaggplus_mod
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_STATE
    from flwr.compat.common import recorddict_compat as compat

    used = []

    def fit(msg: Any, ctxt: Any) -> Any:
        if update is None:
            raise ValueError("SecAgg+ asks for this client's masked update, but it kept none from this round's "
                             "train message")
        state = ctxt.state.config_records[RECORD_KEY_STATE]
        c, q, w = float(state["clipping_range"]), int(state["target_range"]), float(state["max_weight"])
        scale = round(num_samples / w * q) / q
        arrays = [v.detach().double().cpu().numpy() for v in update.values()]
        largest = max((float(np.abs(a).max()) if a.size else 0.0) for a in arrays)
        if largest * scale > c:
            raise OverflowError(f"SecAgg+: an entry of magnitude {largest:.6g} (times the weight {scale:.6g}) "
                                f"exceeds the clipping range {c:g}; clipping would change the mean. Raise "
                                "secaggplus-clipping-range in the run config")
        used.append(True)
        fitres = FitRes(Status(Code.OK, ""), ndarrays_to_parameters(arrays), int(num_samples), {})
        return Message(compat.fitres_to_recorddict(fitres, keep_input=True), reply_to=msg)

    before = np.random.get_state()
    round_ = int(message.metadata.group_id or 0)
    np.random.seed(np.random.SeedSequence([seed, round_]).generate_state(1)[0])  # stochastic rounding
    try:
        reply = secaggplus_mod(message, context, fit)
    finally:
        np.random.set_state(before)
    return reply, bool(used)

