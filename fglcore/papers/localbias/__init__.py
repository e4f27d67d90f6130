"""What is specific to "Tackling the Local Bias in Federated Graph Learning" (Zhang et al., arXiv 2110.12906).

``tables``: the protocol, the datasets and their roles (PubMed; Cora and
CiteSeer as extra real graphs; the CSBM substitutes ``Reddit-like`` and
``Products-like``), the rows of Tables 2, 3 and 5, the learning-rate search
and Table 3's cost measurements. ``motivation``: the cross-client edge share
and the local-bias runs of Sec. 4.2. ``method``: the two-client teaching
example, bytes per layer and Table 1's formulas. ``analysis``: Fig. 4's
step-length study and accuracy against time.
"""
