"""O-pFGL (Yan et al., arXiv 2411.11304): ``tables`` (the grids and layouts of its results tables), ``method``
(the pipeline traced step by step for ``notebooks/opfgl/2_method``)."""
