"""Helpers shared by the model files: resetting submodules and the widths of stacked layers."""
from __future__ import annotations

from torch import nn
from torch_geometric.nn.inits import reset


def reset_children(module: nn.Module) -> None:
    """Reset every direct child the way PyG does (its ``reset_parameters()``, or recurse into its children)."""
    for child in module.children():
        reset(child)


def layer_widths(in_channels: int, hidden_channels: int, out_channels: int, num_layers: int) -> list[tuple[int, int]]:
    """``(in, out)`` of each of ``num_layers`` layers: in -> hidden -> ... -> hidden -> out."""
    widths = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
    return list(zip(widths[:-1], widths[1:]))
