r"""What the clients of a distributed GNN send each other, over ``torch.distributed`` (Gloo) or in one process.

Zhang et al., "Tackling the Local Bias in Federated Graph Learning"
(arXiv 2110.12906), Eqs. 2 and 4, Appendix C: in every layer client
:math:`j` sends each client :math:`k` its *local term*
:math:`M_{kj} = \hat L_{kj}[S_k, S_j]\,\tilde H_j W` (forward) and, in the
backward pass, the gradient of what it received goes back the same way; the
weight gradients are summed over clients (the server's sum, broadcast back).

An :class:`Exchange` moves those messages for the clients it hosts:

* :class:`LocalExchange` hosts every client in one process (the simulation
  used by sweeps): a message is handed over as a copy;
* :class:`GlooExchange` hosts one client per process (rank = client id) and
  moves the messages with ``torch.distributed.all_to_all_single`` (variable
  row counts per pair) and sums weight gradients with ``all_reduce`` on the
  Gloo backend -- the server's sum of the paper realised as a collective.

:class:`GlooExchange` also adds up the wall seconds its process spends inside
the collectives (:attr:`Exchange.collective_seconds`: sending, receiving and
waiting for the slowest peer), so an epoch's time splits into exchange and
the rest; in one process nothing is exchanged and it stays 0.

Both record every message they carry in a :class:`~fglcore.fl.channel.Ledger`
(sender, receiver, epoch, name, shape, bytes of the tensor actually sent), so
communication per client and epoch is counted from what crosses the wire,
the same way in both. :func:`exchange_messages` is the differentiable form:
a :class:`torch.autograd.Function` whose backward sends each received
message's gradient back to its sender.

A message is a 2-D tensor of rows; one call of :meth:`Exchange.all_to_all`
carries messages of one width and dtype (one layer's local terms). Messages
are keyed ``(sender, receiver)``; a receiver says how many rows it expects
from each sender (it knows them from the sampled node ids, see
:mod:`fglcore.distributed.shard`).
"""
from __future__ import annotations

import time
from typing import Mapping, Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from fglcore.fl.channel import Ledger, Message, tensor_nbytes

SERVER = "server"
Pair = tuple[int, int]


def client_name(cid: int) -> str:
    return f"client{cid}"


class Exchange:
    """Carries messages between the clients it hosts (``local``) and all others; records them in ``ledger``."""

    def __init__(self, local: Sequence[int], num_clients: int):
        self.local = list(local)
        self.num_clients = num_clients
        self.ledger = Ledger()
        self.epoch = 0  # the ledger's "round"
        self.collective_seconds = 0.0
        """Wall seconds spent so far inside ``torch.distributed`` collectives (0 without a process group)."""

    def record(self, sender: str, receiver: str, name: str, tensor: Tensor) -> None:
        self.ledger.record(Message(self.epoch, sender, receiver, name, tuple(tensor.shape),
                                   str(tensor.dtype).removeprefix("torch."), tensor_nbytes(tensor)))

    def _record_sends(self, sends: Mapping[Pair, Tensor], name: str) -> None:
        for (src, dst), tensor in sends.items():
            if src != dst and tensor.numel():
                self.record(client_name(src), client_name(dst), name, tensor)

    def all_to_all(self, sends: Mapping[Pair, Tensor], recv_rows: Mapping[Pair, int], width: int,
                   dtype: torch.dtype, name: str) -> dict[Pair, Tensor]:
        """Deliver ``sends[(src, dst)]`` (``src`` hosted here) and return ``{(src, dst): rows}`` for every
        ``dst`` hosted here and every ``(src, dst)`` in ``recv_rows`` (its expected row count)."""
        raise NotImplementedError

    def sum_over_clients(self, tensors: Sequence[Tensor], name: str) -> Tensor:
        """The sum over *all* clients of one tensor per hosted client (the server's sum, sent back to each)."""
        raise NotImplementedError

    def sum_gradients(self, parameters: Sequence[Tensor], name: str = "weight_grad") -> None:
        """Replace each parameter's gradient by its sum over all clients (Eq. 4's :math:`\\partial L/\\partial W`).

        Every hosted client uploads its local gradient to the server and
        downloads the sum (recorded as such); see the subclasses for how the
        sum is formed.
        """
        raise NotImplementedError

    def record_gradient_sum(self, flat: Tensor, name: str) -> None:
        for cid in self.local:
            self.record(client_name(cid), SERVER, name, flat)
            self.record(SERVER, client_name(cid), name, flat)


class LocalExchange(Exchange):
    """Every client in this process: messages are handed over as copies; a gradient sum is a sum.

    The clients share one model (:mod:`fglcore.distributed.trainer`), so the
    gradients autograd accumulates are already the sum over clients:
    :meth:`sum_gradients` only records the uploads and downloads a real run sends.
    """

    def __init__(self, num_clients: int):
        super().__init__(range(num_clients), num_clients)

    def all_to_all(self, sends, recv_rows, width, dtype, name):
        self._record_sends(sends, name)
        out = {}
        for pair, rows in recv_rows.items():
            tensor = sends[pair]
            if tensor.shape != (rows, width):
                raise RuntimeError(f"{name}: message {pair} has shape {tuple(tensor.shape)}, "
                                   f"the receiver expects {(rows, width)}")
            out[pair] = tensor.clone()
        return out

    def sum_over_clients(self, tensors, name):
        for cid, tensor in zip(self.local, tensors):
            self.record(client_name(cid), SERVER, name, tensor)
        total = torch.stack(list(tensors)).sum(0)
        for cid in self.local:
            self.record(SERVER, client_name(cid), name, total)
        return total

    def sum_gradients(self, parameters, name="weight_grad"):
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        self.record_gradient_sum(torch.cat([g.reshape(-1) for g in grads]), name)


class GlooExchange(Exchange):
    """One client per process (``rank``), messages over an initialised ``torch.distributed`` process group."""

    def __init__(self, rank: int, num_clients: int):
        if not dist.is_initialized():
            raise RuntimeError("GlooExchange needs an initialised torch.distributed process group")
        if dist.get_world_size() != num_clients:
            raise RuntimeError(f"world size {dist.get_world_size()} != number of clients {num_clients}")
        super().__init__([rank], num_clients)
        self.rank = rank

    def _timed(self, collective, *args) -> None:
        start = time.perf_counter()
        collective(*args)
        self.collective_seconds += time.perf_counter() - start

    def all_to_all(self, sends, recv_rows, width, dtype, name):
        self._record_sends(sends, name)
        me, k = self.rank, self.num_clients
        parts, in_splits = [], []
        for dst in range(k):
            tensor = sends.get((me, dst))
            if tensor is None or dst == me:
                in_splits.append(0)
                continue
            parts.append(tensor.to(dtype).reshape(-1, width))
            in_splits.append(int(tensor.shape[0]))
        out_splits = [0 if src == me else int(recv_rows.get((src, me), 0)) for src in range(k)]
        send = torch.cat(parts).contiguous() if parts else torch.empty(0, width, dtype=dtype)
        recv = torch.empty(sum(out_splits), width, dtype=dtype)
        self._timed(dist.all_to_all_single, recv, send, out_splits, in_splits)
        pieces = torch.split(recv, out_splits)
        return {(src, me): pieces[src] for src in range(k) if (src, me) in recv_rows and src != me}

    def sum_over_clients(self, tensors, name):
        (tensor,) = tensors
        self.record(client_name(self.rank), SERVER, name, tensor)
        total = tensor.clone()
        self._timed(dist.all_reduce, total)
        self.record(SERVER, client_name(self.rank), name, total)
        return total

    def sum_gradients(self, parameters, name="weight_grad"):
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self.record_gradient_sum(flat, name)
        self._timed(dist.all_reduce, flat)
        offset = 0
        for p in parameters:
            n = p.numel()
            p.grad = flat[offset:offset + n].view_as(p).clone()
            offset += n


class _ExchangeFunction(torch.autograd.Function):
    """Forward: deliver the messages; backward: send each received message's gradient back to its sender."""

    @staticmethod
    def forward(ctx, exchange: Exchange, name: str, send_pairs: list, recv_rows: dict, width: int,
                anchor_input: Tensor, *tensors: Tensor):
        sends = dict(zip(send_pairs, tensors))
        received = exchange.all_to_all(sends, recv_rows, width, tensors[0].dtype if tensors else torch.float32, name)
        ctx.exchange, ctx.name, ctx.width = exchange, name, width
        ctx.send_pairs, ctx.recv_pairs = send_pairs, list(recv_rows)
        ctx.send_rows = {pair: int(t.shape[0]) for pair, t in sends.items()}
        ctx.recv_rows = dict(recv_rows)
        ctx.dtype = tensors[0].dtype if tensors else torch.float32
        anchor = torch.zeros((), dtype=ctx.dtype)
        return (anchor, *(received[pair] for pair in ctx.recv_pairs))

    @staticmethod
    def backward(ctx, anchor_grad: Tensor, *grads: Tensor):
        # the gradient of message (src, dst) travels dst -> src; zeros where autograd gave none
        sends = {}
        for (src, dst), grad in zip(ctx.recv_pairs, grads):
            if grad is None:
                grad = torch.zeros(ctx.recv_rows[(src, dst)], ctx.width, dtype=ctx.dtype)
            sends[(dst, src)] = grad.contiguous()
        expected = {(dst, src): rows for (src, dst), rows in ctx.send_rows.items()}
        got = ctx.exchange.all_to_all(sends, expected, ctx.width, ctx.dtype, f"{ctx.name}_grad")
        return (None, None, None, None, None, None, *(got[(dst, src)] for (src, dst) in ctx.send_pairs))


def exchange_messages(exchange: Exchange, name: str, sends: Mapping[Pair, Tensor], recv_rows: Mapping[Pair, int],
                      width: int, anchor_input: Tensor) -> tuple[dict[Pair, Tensor], Tensor]:
    """Differentiable :meth:`Exchange.all_to_all`: gradients of the received messages flow back to their senders.

    The backward pass is a collective that every process must join, also one whose client sends and receives
    nothing (no cross-client edge). ``anchor_input`` (any tensor that requires grad, e.g. the layer's
    :math:`HW`) puts the exchange in the client's autograd graph, and the returned zero ``anchor``, added to
    the client's loss, makes autograd run its backward.
    """
    pairs = list(sends)
    recv = dict(recv_rows)
    anchor, *out = _ExchangeFunction.apply(exchange, name, pairs, recv, width, anchor_input, *(sends[p] for p in pairs))
    return dict(zip(recv, out)), anchor
