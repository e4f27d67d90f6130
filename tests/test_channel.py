"""The channel's copies and the ledger's exact byte accounting."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from fglcore.fl.channel import Channel, Ledger, Message
from fglcore.fl.parameters import load_payload, module_payload, payload_nbytes, weighted_mean


@pytest.mark.parametrize(
    "dtype, element_size", [(torch.float32, 4), (torch.float64, 8), (torch.int64, 8), (torch.float16, 2)]
)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 3, 4), (0, 4)])
def test_message_bytes_are_exact(dtype, element_size, shape):
    channel = Channel()
    channel.send("client0", "server", {"t": torch.zeros(shape, dtype=dtype)}, round=1)
    (message,) = channel.ledger.messages
    numel = 1
    for s in shape:
        numel *= s
    assert message.nbytes == numel * element_size
    assert message.shape == shape
    assert message.dtype == str(dtype).removeprefix("torch.")
    assert channel.ledger.total_bytes() == numel * element_size


def test_noncontiguous_tensor_counts_its_elements_only():
    base = torch.zeros(10, 10)
    channel = Channel()
    channel.send("server", "client0", {"column": base[:, 0]}, round=1)
    assert channel.ledger.total_bytes() == 10 * 4


def _simulate(channel: Channel, num_clients: int = 3, rounds: int = 2) -> None:
    """Downloads of a 10x10 float32 weight; uploads of the weight and an int64 count."""
    for r in range(1, rounds + 1):
        for c in range(num_clients):
            channel.send("server", f"client{c}", {"w": torch.zeros(10, 10)}, r)
        for c in range(num_clients):
            channel.send(f"client{c}", "server", {"w": torch.zeros(10, 10), "n": torch.tensor(5)}, r)


def test_totals_by_direction_and_filters():
    channel = Channel()
    _simulate(channel)
    ledger = channel.ledger
    assert len(ledger) == 2 * 3 * (1 + 2)
    down, up = 2 * 3 * 400, 2 * 3 * (400 + 8)
    assert ledger.total_bytes(sender="server") == down
    assert ledger.total_bytes(receiver="clients") == down
    assert ledger.total_bytes(sender="clients", receiver="server") == up
    assert ledger.total_bytes() == up + down
    assert ledger.total_bytes(sender="client1") == up / 3
    assert ledger.total_bytes(receiver="client2", round=2) == 400
    assert ledger.total_bytes(name="n") == 2 * 3 * 8
    assert ledger.total_bytes(name="n", round=1, sender="client0") == 8
    assert ledger.total_bytes(sender="client9") == 0
    assert ledger.total_bytes(round=3) == 0


def test_names_show_what_was_sent():
    channel = Channel()
    _simulate(channel)
    channel.send("client0", "client1", {"generator": torch.zeros(2)}, 1)
    ledger = channel.ledger
    assert ledger.names(sender="clients") == {"w", "n", "generator"}
    assert ledger.names(sender="clients", receiver="server") == {"w", "n"}
    assert ledger.names(sender="server") == {"w"}
    assert ledger.names(receiver="client1") == {"w", "generator"}
    assert "x" not in ledger.names(sender="clients")


def test_frames():
    channel = Channel()
    _simulate(channel)
    ledger = channel.ledger
    frame = ledger.to_frame()
    assert list(frame.columns) == ["round", "sender", "receiver", "name", "shape", "dtype", "nbytes"]
    assert len(frame) == len(ledger)
    assert frame["nbytes"].sum() == ledger.total_bytes()

    summary = ledger.summary().set_index(["direction", "name"])
    assert summary.loc[("download", "w"), "bytes"] == 2 * 3 * 400
    assert summary.loc[("upload", "n"), "messages"] == 6
    assert summary.loc[("upload", "w"), "MiB"] == pytest.approx(2 * 3 * 400 / 2**20)

    per_round = ledger.per_round()
    assert list(per_round.columns) == ["round", "upload_bytes", "download_bytes", "total_bytes"]
    assert per_round["round"].tolist() == [1, 2]
    assert per_round["upload_bytes"].tolist() == [3 * 408, 3 * 408]
    assert per_round["download_bytes"].tolist() == [3 * 400, 3 * 400]
    assert (per_round["total_bytes"] == per_round["upload_bytes"] + per_round["download_bytes"]).all()

    channel.send("client0", "client1", {"g": torch.zeros(3)}, 2)
    assert ledger.per_round().set_index("round").loc[2, "peer_bytes"] == 12


def test_empty_ledger_frames():
    ledger = Ledger()
    assert ledger.to_frame().empty and "nbytes" in ledger.to_frame().columns
    assert ledger.summary().empty
    assert ledger.per_round().empty
    assert ledger.total_bytes() == 0 and ledger.names() == set()


def test_receiver_gets_a_copy():
    sender_tensor = torch.ones(4, requires_grad=True)
    received = Channel().send("server", "client0", {"w": sender_tensor}, 1)["w"]
    assert not received.requires_grad
    assert received.data_ptr() != sender_tensor.data_ptr()
    received.add_(5.0)
    assert torch.equal(sender_tensor.detach(), torch.ones(4))

    sender_view = torch.zeros(3)
    got = Channel().send("client0", "server", {"v": sender_view}, 1)["v"]
    sender_view.fill_(2.0)
    assert torch.equal(got, torch.zeros(3))


def test_send_without_copy_shares_the_tensor_and_records_the_same_messages():
    snapshot = torch.arange(6.0, requires_grad=True).reshape(2, 3)
    copied, shared = Channel(), Channel()
    got = shared.send("client0", "client1", {"w": snapshot}, 0, copy=False)["w"]
    copied.send("client0", "client1", {"w": snapshot}, 0)
    assert got.data_ptr() == snapshot.data_ptr() and not got.requires_grad
    assert shared.ledger.to_frame().equals(copied.ledger.to_frame())


def test_bad_payloads_raise_type_error():
    channel = Channel()
    with pytest.raises(TypeError, match="'lr'.*float"):
        channel.send("server", "client0", {"w": torch.zeros(2), "lr": 0.1}, 1)
    with pytest.raises(TypeError, match="mapping"):
        channel.send("server", "client0", [torch.zeros(2)], 1)
    with pytest.raises(TypeError, match="names must be str"):
        channel.send("server", "client0", {3: torch.zeros(2)}, 1)
    with pytest.raises(TypeError, match="dense"):
        channel.send("server", "client0", {"a": torch.eye(3).to_sparse()}, 1)
    assert len(channel.ledger) == 0  # nothing recorded for a rejected payload


def test_message_direction():
    assert Message(1, "server", "client0", "w", (2,), "float32", 8).direction == "download"
    assert Message(1, "client0", "server", "w", (2,), "float32", 8).direction == "upload"
    assert Message(1, "client0", "client1", "w", (2,), "float32", 8).direction == "peer"


def test_module_payload_roundtrip_keeps_parameters():
    torch.manual_seed(0)
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    weight_before = target.weight
    optimizer = torch.optim.SGD(target.parameters(), lr=0.1)
    payload = module_payload(source)
    assert set(payload) == {"weight", "bias"}
    assert not payload["weight"].requires_grad
    load_payload(target, Channel().send("server", "client0", payload, 1))
    assert target.weight is weight_before and optimizer.param_groups[0]["params"][0] is weight_before
    assert torch.equal(target.weight, source.weight) and torch.equal(target.bias, source.bias)
    assert set(module_payload(source, include=lambda name: name != "bias")) == {"weight"}
    assert payload_nbytes(payload) == (6 + 2) * 4


def test_load_payload_errors_leave_module_unchanged():
    module = nn.Linear(3, 2)
    before = module.weight.detach().clone()
    with pytest.raises(ValueError, match="'bogus'.*accepted"):
        load_payload(module, {"weight": torch.zeros(2, 3), "bogus": torch.zeros(1)})
    with pytest.raises(ValueError, match="shape mismatch.*'bias'"):
        load_payload(module, {"weight": torch.zeros(2, 3), "bias": torch.zeros(3)})
    assert torch.equal(module.weight.detach(), before)


def test_weighted_mean():
    a = {"w": torch.tensor([0.0, 2.0]), "n": torch.tensor([1, 3])}
    b = {"w": torch.tensor([4.0, 6.0]), "n": torch.tensor([5, 7])}
    mean = weighted_mean([a, b], [1, 3])
    assert torch.allclose(mean["w"], torch.tensor([3.0, 5.0]))
    assert mean["w"].dtype == torch.float32
    assert mean["n"].dtype == torch.float64 and torch.allclose(mean["n"], torch.tensor([4.0, 6.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="weights"):
        weighted_mean([a, b], [0, 0])
    with pytest.raises(ValueError, match="2 payloads but 1 weights"):
        weighted_mean([a, b], [1])
    with pytest.raises(ValueError, match="names"):
        weighted_mean([a, {"w": b["w"]}], [1, 1])
    with pytest.raises(ValueError, match="shape mismatch"):
        weighted_mean([a, {"w": torch.zeros(3), "n": b["n"]}], [1, 1])


def test_norm_parameter_names_select_torch_and_pyg_normalisation_layers():
    from torch_geometric.nn import BatchNorm, GraphNorm

    from fglcore.fl.parameters import norm_parameter_names

    model = torch.nn.Sequential(torch.nn.LayerNorm(4), torch.nn.Linear(4, 4), BatchNorm(4), GraphNorm(4),
                                torch.nn.Sequential(torch.nn.InstanceNorm1d(4, affine=True), torch.nn.Linear(4, 2)))
    assert norm_parameter_names(model) == {"0.weight", "0.bias", "2.module.weight", "2.module.bias", "3.weight",
                                           "3.bias", "3.mean_scale", "4.0.weight", "4.0.bias"}
    assert norm_parameter_names(torch.nn.Linear(3, 2)) == frozenset()
