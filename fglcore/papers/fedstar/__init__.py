"""FedStar (Tan et al., AAAI 2023): ``motivation`` (Figure 1, Tables 5-8), ``method`` (the structure channel step
by step), ``tables`` (the grids and layouts of Tables 1-4, 10, Figures 3 and 4) and ``gaps`` (why a cell of
ours differs from the paper's)."""
