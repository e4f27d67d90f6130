"""Moving model parameters in and out of channel payloads.

A payload is a ``dict[str, Tensor]`` keyed by parameter name (as in
``module.named_parameters()``). Loading copies *into* the existing parameters,
so a model is never rebuilt between rounds and optimizers keep valid
references.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import torch
import torch_geometric.nn.norm as pyg_norm
from torch import Tensor, nn

from fglcore.fl.channel import tensor_nbytes

NORM_LAYERS: tuple[type[nn.Module], ...] = (
    nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm, nn.InstanceNorm1d, nn.InstanceNorm2d,
    nn.InstanceNorm3d, nn.LayerNorm, nn.GroupNorm, nn.RMSNorm,
    *(getattr(pyg_norm, name) for name in pyg_norm.__all__),
)
"""Normalisation layers (torch's and PyG's ``torch_geometric.nn.norm``): whose parameters
:func:`norm_parameter_names` selects."""


def module_payload(module: nn.Module, include: Callable[[str], bool] | None = None) -> dict[str, Tensor]:
    """The module's named parameters, detached, that pass ``include(name)`` (all when ``None``).

    The tensors share storage with the module; :meth:`Channel.send` makes the
    receiver's copy.
    """
    return {name: p.detach() for name, p in module.named_parameters() if include is None or include(name)}


def norm_parameter_names(module: nn.Module) -> frozenset[str]:
    """Names (as in ``module.named_parameters()``) of the parameters that belong to normalisation layers
    (:data:`NORM_LAYERS`), e.g. ``{"mlp.input_norm.weight", "mlp.input_norm.bias"}`` for a LayerNorm on an
    MLP's input. An ``include`` predicate of :func:`module_payload` that leaves them out keeps them local: what
    FedStruct's official code does with its FedAvg ("WA") weight averaging, whose models' ``state_dict`` skip
    ``nn.LayerNorm``, ``nn.BatchNorm1d`` and ``nn.InstanceNorm1d`` layers (digest §4.5)."""
    return frozenset(f"{prefix}.{name}" if prefix else name
                     for prefix, layer in module.named_modules() if isinstance(layer, NORM_LAYERS)
                     for name, _ in layer.named_parameters(recurse=False))


def gradient_payload(module: nn.Module, include: Callable[[str], bool] | None = None) -> dict[str, Tensor]:
    """The gradients of the module's named parameters that pass ``include(name)``, detached; zeros where a
    parameter has no gradient (it took no part in the loss, or there was no loss: a client without labelled
    nodes). What a FedSGD client uploads (McMahan et al., AISTATS 2017, FedSGD; FedStruct, Eqs. 3-5)."""
    return {name: (p.grad if p.grad is not None else torch.zeros_like(p)).detach()
            for name, p in module.named_parameters() if include is None or include(name)}


def load_payload(module: nn.Module, payload: Mapping[str, Tensor]) -> None:
    """Copy ``payload`` into the module's parameters of the same names, in place.

    Parameters not named in ``payload`` are left as they are (partial sharing,
    e.g. only a structure encoder). Every name and shape is checked before
    anything is copied, so a bad payload leaves the module unchanged.
    """
    params = dict(module.named_parameters())
    unknown = sorted(set(payload) - set(params))
    if unknown:
        raise ValueError(
            f"payload names {unknown} are not parameters of {type(module).__name__}; accepted: {sorted(params)}"
        )
    for name, value in payload.items():
        if tuple(value.shape) != tuple(params[name].shape):
            raise ValueError(
                f"shape mismatch for parameter {name!r}: payload has {tuple(value.shape)}, "
                f"{type(module).__name__} has {tuple(params[name].shape)}"
            )
    with torch.no_grad():
        for name, value in payload.items():
            params[name].copy_(value)


def weighted_mean(payloads: Sequence[Mapping[str, Tensor]], weights: Sequence[float]) -> dict[str, Tensor]:
    """``sum_k w_k * payload_k / sum_k w_k`` per name (FedAvg's aggregation, McMahan et al. 2017, Alg. 1).

    Computed in ``float64`` and returned in each tensor's own floating dtype
    (integer tensors give ``float64`` means). All payloads must have the same
    names and shapes; weights must be finite, non-negative and not all zero.
    """
    if not payloads:
        raise ValueError("weighted_mean needs at least one payload")
    if len(payloads) != len(weights):
        raise ValueError(f"got {len(payloads)} payloads but {len(weights)} weights")
    w = [float(x) for x in weights]
    if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights must be finite, non-negative and not all zero, got {list(weights)}")
    names = list(payloads[0])
    for k, payload in enumerate(payloads[1:], start=1):
        if set(payload) != set(names):
            raise ValueError(
                f"payload {k} has names {sorted(payload)} but payload 0 has {sorted(names)}; all must match"
            )
    coefficients = torch.tensor(w, dtype=torch.float64) / sum(w)
    mean = {}
    for name in names:
        first = payloads[0][name]
        for k, payload in enumerate(payloads):
            if payload[name].shape != first.shape:
                raise ValueError(
                    f"shape mismatch for {name!r}: payload {k} has {tuple(payload[name].shape)}, "
                    f"payload 0 has {tuple(first.shape)}"
                )
        # The float64 copies are written straight into the stack (torch.stack of .to(float64) copies made each
        # one twice): the same values, so the same tensordot, bit for bit.
        stacked = torch.empty((len(payloads), *first.shape), dtype=torch.float64, device=first.device)
        for k, payload in enumerate(payloads):
            stacked[k].copy_(payload[name].detach())
        value = torch.tensordot(coefficients.to(stacked.device), stacked, dims=1)
        mean[name] = value.to(first.dtype) if first.is_floating_point() else value
    return mean


def payload_nbytes(payload: Mapping[str, Tensor]) -> int:
    """Bytes the payload takes on the channel (``numel * element_size`` summed over tensors)."""
    return sum(tensor_nbytes(t) for t in payload.values())
