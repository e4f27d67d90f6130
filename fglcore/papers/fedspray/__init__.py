"""FedSpray (Fu et al., KDD 2024): ``motivation`` (Table 1, Figure 2, Proposition 3.1) and ``tables`` (the grids
and layouts of Tables 2, 3, 5, Figs. 4 and 5, and O-pFGL's FedSpray rows)."""
