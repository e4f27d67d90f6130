"""Paper-specific code behind the notebooks: one sub-package per paper.

``fglcore.papers.fedspray`` and ``fglcore.papers.fedstar`` hold what only
that paper needs (experiment grids, table layouts, simulations); the
comparison with the paper's numbers and claims is :mod:`fglcore.compare`,
driven by ``params/<paper>/paper.yaml``, so a new paper adds data and a
grid, not comparison code.
"""
