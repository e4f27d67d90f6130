"""FedStruct (Aliakbari, Östman and Graell i Amat, ICLR 2025): ``tables`` (the protocol, Table 5's settings, the
rows and grids of Table 2 and the appendix tables, their layouts) and ``method`` (the decoupled filter, Ā and its
pruning, what crosses the channel, the FedSGD ↔ central equivalence)."""
