r"""The local-bias paper's method: distributed full-graph GNN training with label-guided sampling.

Zhang, Luo, Feng, Liu, Zhou and Zheng, "Tackling the Local Bias in Federated
Graph Learning" (arXiv 2110.12906, v3). The paper's formulas were lost in the
text; this follows the digest's readings (``localbias.digest.md`` §2, §6.4
A1-A23). No official code is public.

Every client keeps its cross-client edges (Eq. 1; the federation's
``keep_cross_edges``, shared with FedStruct). Training runs the
distributed GNN of :mod:`fglcore.distributed`: in every layer each client
sends each neighbouring client the local term :math:`\hat L_{kj}\tilde H_j
W` of Eq. 2, gradients flow back the same way (Eq. 4), weight gradients are
summed over clients and every client takes the same Adam step. Without
sampling the model *is* the centralised GCN on the whole graph (forward and
gradients equal to about 1e-6, ``tests/test_localbias.py``).

Options:

* ``variant``: ``"ours"`` (label-guided sampling and Eq. 5's :math:`1/p`
  normalisation), ``"ours*"`` (sampling, no normalisation; A5: the global
  :math:`\hat L[S,S]` weights kept), ``"ours-full"`` (no sampling; = CAGNET's
  computation, A9: Table 2's CAGNET row is this variant, its communication
  CAGNET's 1-D broadcast model, the extras' ``cagnet_1d_*`` bytes) -- Table
  5's rows;
* ``backbone``: ``"gcn"`` or ``"1gnn"`` (Morris et al., sum aggregation, A18)
  -- Table 2's "Ours+GCN" and "Ours+1-GNN"; ``config.model`` is not used;
* ``sample_ratio``: :math:`s/N` (PubMed's 5,000/19,717 = 0.254 in the
  paper); ``sampling``: ``"draws"`` (with replacement, A1) or ``"poisson"``;
  ``label_source``: ``"train"`` (A2, default) or ``"all"`` (reads every
  label, leaks val/test labels into the sampling probabilities);
  ``normalise_self``: whether the self term gets the :math:`1/p` too (A3,
  paper-faithful default ``True``);
* ``input_dropout``: dropout (``config.dropout``) also on the input
  features (A16: "on the input of every layer");
* ``engine``: ``"simulated"`` (all clients in this process, the sweeps) or
  ``"gloo"`` (one ``torch.distributed`` Gloo process per client on
  127.0.0.1, as the paper; same numbers, ``tests/test_localbias_gloo.py``),
  ``gloo_timeout`` bounds its waits (seconds);
* ``local_bias_reference``: also train the centralised model (same
  backbone, hyperparameters and seed: this engine with one client holding
  the whole graph) and report ``test_local_bias`` (mean Euclidean distance
  of test logits, Sec. 4.2, A11) and ``test_local_bias_probabilities``
  (softmax outputs) at the selected round, each model at its own selected
  (best-validation) epoch.

One epoch = one sampled subgraph and one optimiser step (A7); each round of
the engine is one epoch (``config.rounds``); ``config.local_epochs`` is not
used. Evaluation is full distributed inference (A8). The run's extras
(``RunResult.extras["localbias"]``) hold each client's median seconds per
epoch (``epoch_seconds``) and, of those, inside collectives
(``exchange_seconds``, on ``engine="gloo"``; 0 in one process), the bytes each
client sent per epoch (counted from the messages) next to the dense formula
of Table 1 (:mod:`fglcore.distributed.cost`), and the test logits by global
node id.
"""
from __future__ import annotations

import statistics
from typing import Any

import torch
from torch import Tensor

from fglcore.algorithms.base import Algorithm, register_algorithm
from fglcore.algorithms.central import CentralView
from fglcore.checks import Bounds
from fglcore.config import ConfigError
from fglcore.data.federation import build_clients
from fglcore.distributed.cost import analytic_bytes, cagnet_1d_bytes, measured_bytes
from fglcore.distributed.run import ClientRecord, RunSpec, merged_ledger, run_on_gloo, simulate
from fglcore.distributed.sampling import LABEL_SOURCES, SCHEMES, budget
from fglcore.distributed.trainer import VARIANTS, SamplingOptions
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, RunResult, Server
from fglcore.metrics import Prediction, local_bias, minority_mask
from fglcore.models.distributed_gnn import BACKBONES, DistributedGNN
from fglcore.runtime import set_seed

ENGINES = ("simulated", "gloo")


class DistributedLearner:
    """Runs the whole distributed training once (simulated or on Gloo), then replays it round by round."""

    def __init__(self, algorithm: "LocalBias"):
        self.algorithm = algorithm
        self.records: list[ClientRecord] | None = None
        self.round = 0
        clients = algorithm.clients_data
        self.y = [{s: c.y[getattr(c, f"{s}_mask")] for s in ("val", "test")} for c in clients]
        self.minority = [{s: minority_mask(c.y, c.y[c.train_mask])[getattr(c, f"{s}_mask")] for s in ("val", "test")}
                         for c in clients]

    def train_round(self, round: int) -> None:
        if self.records is None:
            self.records = self.algorithm.train()
        self.round = round

    def predict(self, cid: int) -> dict[str, Prediction]:
        logits = self.records[cid].logits[self.round]
        return {s: Prediction(logits[s], self.y[cid][s], self.minority[cid][s]) for s in ("val", "test")}


@register_algorithm
class LocalBias(Algorithm):
    """Zhang et al., Tackling the Local Bias in FGL (arXiv 2110.12906); options in :mod:`fglcore.algorithms.localbias`."""

    name = "localbias"
    tasks = ("node",)
    needs_cross_edges = True
    default_options: dict[str, Any] = {
        "variant": "ours", "backbone": "gcn", "sample_ratio": 0.25, "sampling": "draws", "label_source": "train",
        "normalise_self": True, "input_dropout": True, "engine": "simulated", "gloo_timeout": 300.0,
        "local_bias_reference": False,
    }
    option_choices = {"variant": VARIANTS, "backbone": BACKBONES, "sampling": SCHEMES,
                      "label_source": LABEL_SOURCES, "engine": ENGINES}
    option_bounds = {"sample_ratio": Bounds(above=0, maximum=1), "gloo_timeout": Bounds(above=0)}
    citation = ("Zhang, Luo, Feng, Liu, Zhou and Zheng, Tackling the Local Bias in Federated Graph Learning, "
                "arXiv 2110.12906")
    secure_aggregation_unsupported = "the clients exchange local terms of hidden states, not model updates"

    def build(self, channel: Channel) -> tuple[Server | None, list[Client]]:
        if (self.federation.assignment < 0).any():
            raise ConfigError(f"partition: localbias needs every node in a client (Sec. 2: the V_k partition V); "
                              f"{self.config.partition!r} drops nodes")
        self.learner = DistributedLearner(self)
        sizes = [int(c.train_mask.sum()) for c in self.clients_data]
        return None, [CentralView(k, n, self.learner) for k, n in enumerate(sizes)]

    # -- the run --------------------------------------------------------------------------------------

    def spec(self) -> RunSpec:
        c, o = self.config, self.options
        dims = (int(self.federation.num_features), c.hidden, int(self.federation.num_classes), c.num_layers)
        set_seed(c.seed)
        model = DistributedGNN(o["backbone"], *dims, c.dropout, o["input_dropout"])
        every = c.evaluate_every
        evaluate = tuple(r for r in range(1, c.rounds + 1) if r % every == 0 or r == c.rounds)
        return RunSpec(c, self.sampling_options(), o["backbone"], dims, o["input_dropout"], model.state_dict(),
                       c.rounds, evaluate)

    def sampling_options(self) -> SamplingOptions:
        """What the engine samples each epoch (:class:`~fglcore.distributed.trainer.SamplingOptions`)."""
        o = self.options
        return SamplingOptions(o["variant"], o["sample_ratio"], o["sampling"], o["label_source"], o["normalise_self"])

    def analytic_communication(self, spec: RunSpec, dims: list[int], client: int) -> dict[str, float]:
        """``analytic_*``: the dense schedule of Table 1 (:func:`~fglcore.distributed.cost.analytic_bytes`);
        with ``variant="ours-full"`` also ``cagnet_1d_*``, CAGNET's 1-D broadcast schedule of the same
        computation (:func:`~fglcore.distributed.cost.cagnet_1d_bytes`, digest A9)."""
        nodes = [int(c.num_nodes) for c in self.clients_data]
        full = spec.options.variant == "ours-full"
        sizes = nodes if full else [budget(n, spec.options.sample_ratio) for n in nodes]
        out = {f"analytic_{key}": v for key, v in analytic_bytes(sizes, dims, client).items()}
        if full:
            out.update({f"cagnet_1d_{key}": v for key, v in cagnet_1d_bytes(nodes, dims, client).items()})
        return out

    def train(self) -> list[ClientRecord]:
        spec = self.spec()
        if self.options["engine"] == "gloo":
            return run_on_gloo(self.clients_data, spec, timeout=self.options["gloo_timeout"])
        return simulate(self.clients_data, spec)

    def run(self, channel: Channel | None = None, **kwargs: Any) -> RunResult:
        result = super().run(channel, **kwargs)
        records = self.learner.records
        ledger = merged_ledger(records)
        result.ledger.messages.extend(ledger.messages)
        spec = self.spec()
        epochs = list(range(1, spec.rounds + 1))
        dims = [spec.dims[0]] + [spec.dims[1]] * (spec.dims[3] - 1) + [spec.dims[2]]
        comm = [{"client": k, **{f"measured_{key}": v for key, v in measured_bytes(ledger, k, epochs).items()},
                 **self.analytic_communication(spec, dims, k)}
                for k in range(len(records))]
        seconds = [statistics.median(r.epoch_seconds) for r in records]
        exchange = [statistics.median(r.exchange_seconds) for r in records]
        test = self.test_logits(result.selected_round)
        extras = {"epoch_seconds": seconds, "exchange_seconds": exchange, "communication": comm,
                  "test_logits": test,
                  "selected_round": result.selected_round}
        if self.options["local_bias_reference"]:
            reference = self.central_test_logits()
            ids = test["global_id"]
            for space in ("logits", "probabilities"):
                key = "test_local_bias" if space == "logits" else "test_local_bias_probabilities"
                result.metrics[key] = local_bias(test["logits"], reference[ids], space)
        result.extras["localbias"] = extras
        return result

    def test_logits(self, round: int) -> dict[str, Tensor]:
        """The FGL model's test logits at ``round`` and their nodes' global ids (ascending)."""
        records = self.learner.records
        ids = torch.cat([c.global_id[c.test_mask] for c in self.clients_data])
        logits = torch.cat([r.logits[round]["test"] for r in records])
        order = torch.argsort(ids)
        return {"global_id": ids[order], "logits": logits[order]}

    def central_test_logits(self) -> Tensor:
        """Logits of the centralised model (one client holding the whole graph, ``ours-full``, same seed and
        hyperparameters) at its best-validation epoch, for every node (zeros off the evaluated epochs)."""
        data = self.federation.data
        whole = build_clients(data, torch.zeros(int(data.num_nodes), dtype=torch.long), keep_cross_edges=True)
        spec = self.spec()
        spec.options = SamplingOptions("ours-full")
        (record,) = simulate(whole, spec)
        y_val = whole[0].y[whole[0].val_mask]
        best = max(record.logits, key=lambda e: ((record.logits[e]["val"].argmax(-1) == y_val).float().mean().item(),
                                                 -e))
        out = torch.zeros(int(data.num_nodes), record.logits[best]["test"].shape[1])
        out[whole[0].global_id[whole[0].test_mask]] = record.logits[best]["test"]
        return out
