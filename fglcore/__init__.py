"""fglcore: the computing core of the FGL reproducibility companion.

Data, partitions, models, the federated engine with its communication ledger,
the algorithms, metrics and the comparison of results with the papers.
"""

__version__ = "0.1.0"
