"""The local-bias paper's distributed GNN training (Zhang et al., arXiv 2110.12906), one job per module.

==============  =====================================================================================
module          holds
==============  =====================================================================================
``exchange``    what crosses the wire: :class:`~fglcore.distributed.exchange.LocalExchange` (all clients
                in one process) and :class:`~fglcore.distributed.exchange.GlooExchange`
                (``torch.distributed`` on Gloo: ``all_to_all_single``, ``all_reduce``), the ledger of
                sent messages, and the autograd function that sends gradients back (Eqs. 2, 4)
``shard``       one client's adjacency blocks with global degrees, its boundary toward each client, and
                one epoch's sampled operators with Eq. 5's 1/p
``sampling``    label-guided draw distribution and inclusion probabilities (Eq. 5, readings A1-A2)
``trainer``     the epoch: sample, forward, loss, backward, summed weight gradients, one step
``run``         one run simulated or on Gloo processes, the same loop; full-graph equivalence pass
``launch``      one spawned Gloo process per client on 127.0.0.1, bounded waits, clear errors
``cost``        bytes per client and epoch: measured from the ledger and the paper's dense formula
==============  =====================================================================================

The algorithm is ``localbias`` (:mod:`fglcore.algorithms.localbias`), its layers
:class:`~fglcore.models.distributed_gnn.DistributedGNN`.
"""
