"""The local-bias engine on real Gloo processes: one ``torch.distributed`` process per client on 127.0.0.1.

Digest §6.5 item 1: the distributed full-graph forward and backward equal a
centralised GCN to about 1e-6; and the simulated engine gives the Gloo
numbers. Each test starts K processes (a few seconds each on an idle machine;
minutes on an overloaded one, where starting Python and torch dominates: the
generous timeouts only bound a hang).
"""
from __future__ import annotations

import pytest
import torch

from fglcore.distributed.launch import GlooError, run_gloo
from fglcore.distributed.run import gloo_full_graph_pass, merged_ledger, run_on_gloo, simulate
from localbias_graphs import central_pass, federated, small_graph, spec_for


@pytest.mark.parametrize("num_clients,backbone", [(2, "gcn"), (4, "gcn"), (4, "1gnn")])
def test_gloo_full_graph_pass_equals_central(num_clients, backbone):
    data = small_graph()
    clients = federated(data, num_clients)
    spec = spec_for(data, backbone=backbone, layers=3)
    results = run_gloo_checked(clients, spec)
    logits, grads = central_pass(data, spec)
    for client, result in zip(clients, results):
        (mine,) = result["logits"].values()
        assert torch.allclose(mine, logits[client.global_id], atol=1e-6, rtol=1e-5)
        for name, grad in grads.items():  # every rank holds the summed (global) gradient
            assert torch.allclose(result["grads"][name], grad, atol=1e-6, rtol=1e-5), name
    assert abs(sum(float(next(iter(r["loss"].values()))) for r in results)
               - torch.nn.functional.cross_entropy(logits[data.train_mask], data.y[data.train_mask]).item()) < 1e-5


def run_gloo_checked(clients, spec):
    return gloo_full_graph_pass(clients, spec, timeout=300)


@pytest.mark.parametrize("variant,sampling", [("ours", {"sample_ratio": 0.5}), ("bns", {"boundary_ratio": 0.5})])
def test_simulated_equals_gloo_with_sampling_and_dropout(variant, sampling):
    """``bns``: BNS-GCN's boundary sampling (algorithm ``bns_gcn``) on the same engine."""
    data = small_graph(n=80, edges=240)
    clients = federated(data, 2)
    spec = spec_for(data, variant=variant, dropout=0.2, rounds=3, **sampling)
    simulated = simulate(clients, spec)
    gloo = run_on_gloo(clients, spec, timeout=300)
    for a, b in zip(simulated, gloo):
        assert a.loss == pytest.approx(b.loss, abs=1e-6)
        for epoch in spec.evaluate:
            for split in ("val", "test"):
                assert torch.allclose(a.logits[epoch][split], b.logits[epoch][split], atol=1e-5)
        for name, value in a.final_state.items():
            assert torch.allclose(value, b.final_state[name], atol=1e-6), name
    # the same messages, byte for byte, counted from what was sent
    assert merged_ledger(simulated).summary().equals(merged_ledger(gloo).summary())
    # time inside the collectives: part of every Gloo epoch, none in one process
    for a, b in zip(simulated, gloo):
        assert a.exchange_seconds == [0.0] * spec.rounds and len(b.exchange_seconds) == spec.rounds
        assert all(0 < x <= t for x, t in zip(b.exchange_seconds, b.epoch_seconds))


def failing_client(rank, payload):
    if rank == 1:
        raise ValueError("client 1 broke")
    torch.distributed.barrier()  # rank 0 waits for the failed peer: the launcher must not hang
    return rank


def test_failed_process_raises_clearly():
    with pytest.raises(GlooError, match="client 1 broke"):
        run_gloo(failing_client, [None, None], timeout=120)


def test_a_client_without_cross_edges_joins_the_collectives():
    """Client 2's nodes form their own component: it sends and receives no local term, but the backward
    exchange is a collective every process must join (the anchor of ``exchange_messages``)."""
    from torch_geometric.data import Data

    from fglcore.data.federation import build_clients

    data = small_graph(n=60, edges=150)
    island = torch.arange(40, 60)
    keep = ~(torch.isin(data.edge_index[0], island) ^ torch.isin(data.edge_index[1], island))
    data = Data(**{**data.to_dict(), "edge_index": data.edge_index[:, keep]})
    assignment = torch.cat([torch.arange(40) % 2, torch.full((20,), 2)])
    clients = build_clients(data, assignment, keep_cross_edges=True)
    assert clients[2].cross_edge_index.numel() == 0
    spec = spec_for(data, layers=2)
    results = gloo_full_graph_pass(clients, spec, timeout=300)
    _, grads = central_pass(data, spec)
    for name, grad in grads.items():
        assert torch.allclose(results[2]["grads"][name], grad, atol=1e-6, rtol=1e-5), name
