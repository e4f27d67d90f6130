"""FedStruct's prediction model: a local feature branch plus a structure branch over the global graph."""
from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor, nn
from torch_geometric.nn import MLP as PygMLP

from fglcore.models.decoupled_gcn import DecoupledGCN
from fglcore.models.structure_sage import ServerGraph, StructureSAGE

COMBINERS = ("sum", "linear")


def feature_branch_options(feature_hops: int = 2, input_layer_norm: bool = True) -> dict:
    r"""The :class:`~fglcore.models.decoupled_gcn.DecoupledGCN` options of FedStruct's feature branch
    :math:`\hat A_i^{L}\,\mathrm{MLP}_{\theta_f}(X_i)`: ``K`` :math:`= L` steps of the row-normalised
    :math:`\hat A = \tilde D^{-1}\tilde A` (Sec. 3), LayerNorm on the MLP input (official code, digest §4.5).

    The paper's DGCN baselines (Table 6: Central/Local/FedSGD/FedAvg DGCN, "FedStruct with an underlying
    decoupled GCN") are this branch alone: ``build_model("decoupled_gcn", ..., **feature_branch_options(L))``
    (``config.model_options``) builds the same module as :attr:`FedStructModel.feature`.
    """
    return {"K": feature_hops, "normalization": "rw", "input_layer_norm": input_layer_norm}


class FedStructModel(nn.Module):
    r"""FedStruct (Aliakbari et al., "Decoupled Subgraph Federated Learning", ICLR 2025, Eqs. 6-10):

    .. math::
        q_v = f_{\theta_f}(v) + \sum_{u} \bar A_{vu}\, g_{\theta_s}(s_u), \qquad \hat y_v = \mathrm{softmax}(q_v)

    * **node feature embedding** (Eq. 7): a decoupled GCN on the client's
      own subgraph, :math:`H_i = \hat A_i^{L}\,\mathrm{MLP}_{\theta_f}(X_i)`
      with :math:`\hat A_i = \tilde D_i^{-1}(A^{(i)} + I)` on intra-client
      edges and local degrees (digest §2.2, §7.2 items 2 and 9);
    * **node structure embedding** (Eqs. 8-9):
      :math:`Z = \bar A\, G_{\theta_s}(S)` with :math:`G_{\theta_s}` an MLP
      applied to each node structure feature :math:`s_u`; a client holds
      only its rows :math:`\bar A^{[i]}` (Prop. 1), passed as a sparse
      matrix over the nodes whose features it has.

    Both branches output class logits and are added, with no combination
    layer (Eq. 10; ``combiner="linear"``: App. H's Eq. 51). ``feature_branch=False`` builds the structure branch
    alone, :math:`q_v = z_v` (Fig. 4(b)'s "H2V s": the official code's
    ``data_type="structure"`` model, which has no :math:`\theta_f`);
    :meth:`structure_forward` gives :math:`z_v` of either model. Both MLPs are LayerNorm on the input, then Linear ->
    ReLU -> Dropout -> ... -> Linear, as in the official code (digest §2.2,
    §4.5; ``input_layer_norm=False`` drops the LayerNorm). ``structure_hidden``
    lists the hidden widths of :math:`\theta_s` (Table 5: ``[256]`` for
    Cora, ``[128, 64]`` for CiteSeer); the feature MLP has ``num_layers``
    layers of width ``hidden_channels`` (Table 5's :math:`\theta_f` rows all
    have one hidden layer).

    ``sgnn_layers`` (App. H, the server knows the global graph): the structure branch is instead the
    server-side GraphSAGE :class:`~fglcore.models.structure_sage.StructureSAGE` on the global graph,
    :math:`Z = \mathrm{sGNN}_{\theta_s}(S, \mathcal E)` with ``sgnn_layers`` as its ``SAGEConv`` widths and a
    linear head (Alg. 4); the ``abar`` argument is then a
    :class:`~fglcore.models.structure_sage.ServerGraph` (global edges and the rows wanted) and
    ``structure_hidden`` and ``input_layer_norm`` do not apply to it (it has its own input BatchNorm).

    Args:
        in_channels (int): node feature width :math:`d`.
        hidden_channels (int): hidden width of :math:`\theta_f`.
        out_channels (int): number of classes :math:`c`.
        structure_channels (int): NSF width :math:`d_s` (256 in the paper).
        structure_hidden (list[int]): hidden widths of :math:`\theta_s`.
        num_layers (int): layers of :math:`\theta_f` (default 2).
        feature_hops (int): :math:`L`, propagation steps of the feature branch.
        dropout (float): dropout after every hidden ReLU of both MLPs.
        input_layer_norm (bool): LayerNorm on each MLP's input.
        cached (bool): cache the feature branch's normalised local graph.
        feature_branch (bool): build the feature branch (default); ``False``: the structure branch alone.
        sgnn_layers (list[int] | None): App. H's server-side GraphSAGE sGNN with these widths (``None``: Eq. 8).
        combiner (str): ``"sum"`` (Eq. 10, the official code) or ``"linear"``: App. H's Eq. 51,
            :math:`\hat y_v = \mathrm{softmax}(\Theta_c^\top (z_v \Vert h_v))`, :math:`\Theta_c \in
            \mathbb R^{2c \times c}` learnt with :math:`\theta` (PyTorch's default ``Linear`` initialisation:
            the paper gives none).

    Shapes:
        - **input:** node features :math:`(n_i, d)`, local edge indices :math:`(2, |\mathcal{E}_i|)`,
          structure features :math:`(m, d_s)`, sparse :math:`\bar A^{[i]}` :math:`(n_i, m)`, optionally
          ``feature_rows`` :math:`(n_i,)` bool
        - **output:** logits :math:`(n_i, c)`
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        structure_channels: int = 256,
        structure_hidden: Sequence[int] = (256,),
        num_layers: int = 2,
        feature_hops: int = 2,
        dropout: float = 0.5,
        input_layer_norm: bool = True,
        cached: bool = True,
        feature_branch: bool = True,
        sgnn_layers: Sequence[int] | None = None,
        combiner: str = "sum",
    ):
        super().__init__()
        if combiner not in COMBINERS or (combiner == "linear" and not feature_branch):
            raise ValueError(f"combiner: one of {COMBINERS} (linear: with the feature branch), got {combiner!r}")
        self.feature = DecoupledGCN(in_channels, hidden_channels, out_channels, num_layers, dropout, cached=cached,
                                    **feature_branch_options(feature_hops, input_layer_norm)) if feature_branch else None
        if sgnn_layers is not None:  # App. H: GraphSAGE on the global graph, run by the server
            self.structure_norm = None
            self.structure = StructureSAGE(structure_channels, sgnn_layers, out_channels, dropout)
        else:
            self.structure_norm = nn.LayerNorm(structure_channels) if input_layer_norm else None
            self.structure = PygMLP([structure_channels, *structure_hidden, out_channels], dropout=dropout,
                                    norm=None, plain_last=True)
        # Eq. 51's Theta_c over (z || h), drawn last: the default ("sum") model draws what it drew without it
        self.combiner = nn.Linear(2 * out_channels, out_channels, bias=False) if combiner == "linear" else None

    def reset_parameters(self) -> None:
        if self.feature is not None:
            self.feature.reset_parameters()
        if self.structure_norm is not None:
            self.structure_norm.reset_parameters()
        if self.structure is not None:
            self.structure.reset_parameters()
        if self.combiner is not None:
            self.combiner.reset_parameters()

    def combine(self, h: Tensor, z: Tensor) -> Tensor:
        r"""The logits :math:`q_v` of the two embeddings: :math:`h_v + z_v` (Eq. 10) or, with
        ``combiner="linear"``, :math:`\Theta_c^\top (z_v \Vert h_v)` (App. H, Eq. 51)."""
        return h + z if self.combiner is None else self.combiner(torch.cat([z, h], dim=-1))

    def structure_embedding(self, s: Tensor) -> Tensor:
        r""":math:`G_{\theta_s}(S)`: the structure MLP on each row of ``s``."""
        if self.structure_norm is not None:
            s = self.structure_norm(s)
        return self.structure(s)

    def structure_forward(self, s: Tensor, abar: Tensor | Callable[[Tensor], Tensor] | ServerGraph) -> Tensor:
        r""":math:`Z^{[i]} = \bar A^{[i]} G_{\theta_s}(S)` (Eqs. 8-9): the node structure embeddings, class logits.
        ``abar`` is the sparse :math:`\bar A^{[i]}`, or an operator that applies it (e.g. as :math:`L_s` products
        with :math:`\hat A`, :class:`~fglcore.algorithms.fedstruct.PowerRows`); with the App. H sGNN
        (``sgnn_layers``) a :class:`~fglcore.models.structure_sage.ServerGraph`: :math:`z_v` of its rows."""
        if isinstance(self.structure, StructureSAGE):
            return self.structure(s, abar.edge_index).index_select(0, abar.rows)
        embedding = self.structure_embedding(s)
        return torch.sparse.mm(abar, embedding) if isinstance(abar, Tensor) else abar(embedding)

    def feature_forward(self, x: Tensor, edge_index: Tensor, rows: Tensor | None = None) -> Tensor:
        r""":math:`H_i = \hat A_i^{L}\,\mathrm{MLP}_{\theta_f}(X_i)` (Eq. 7), the node feature embeddings, class
        logits. ``rows`` (bool, one per node; ``None``: all) keeps the rows of those nodes and sets the others to 0:
        the official code's feature branch, whose :math:`\hat A_i` has an empty row for each node its self-loops
        miss (:func:`fglcore.algorithms.fedstruct.official_feature_rows`)."""
        h = self.feature(x, edge_index)
        return h if rows is None else h.masked_fill(~rows.unsqueeze(-1), 0.0)

    def forward(self, x: Tensor, edge_index: Tensor, s: Tensor,
                abar: Tensor | Callable[[Tensor], Tensor] | ServerGraph, feature_rows: Tensor | None = None) -> Tensor:
        if self.feature is None:
            return self.structure_forward(s, abar)
        h = self.feature_forward(x, edge_index, feature_rows)  # before the structure branch: the dropout draw order
        return self.combine(h, self.structure_forward(s, abar))
