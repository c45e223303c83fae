"""PyTorch building blocks shared by the hand-written corpus models, and the adapter that
gives a transformers model the positional inputs and plain tensor outputs an export needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


class ConvBNAct(nn.Sequential):
    """Conv2d (no bias), BatchNorm2d and an activation: the unit of most edge CNNs."""

    def __init__(
        self,
        cin: int,
        cout: int,
        kernel: int = 3,
        stride: int = 1,
        groups: int = 1,
        act: type[nn.Module] | None = nn.SiLU,
    ) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            act() if act is not None else nn.Identity(),
        )


class DepthwiseSeparable(nn.Sequential):
    """A depthwise 3x3 and a pointwise 1x1 (MobileNet v1's block)."""

    def __init__(self, cin: int, cout: int, stride: int = 1, act: type[nn.Module] = nn.ReLU6):
        super().__init__(
            ConvBNAct(cin, cin, 3, stride, groups=cin, act=act),
            ConvBNAct(cin, cout, 1, act=act),
        )


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, reduction: int = 4) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(channels, max(8, channels // reduction), 1)
        self.expand = nn.Conv2d(max(8, channels // reduction), channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.mean((2, 3), keepdim=True)
        return x * nn.functional.hardsigmoid(self.expand(nn.functional.relu(self.reduce(scale))))


class BasicBlock(nn.Module):
    """ResNet's two-conv residual block."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.body = nn.Sequential(
            ConvBNAct(cin, cout, 3, stride, act=nn.ReLU), ConvBNAct(cout, cout, 3, act=None)
        )
        self.skip = (
            ConvBNAct(cin, cout, 1, stride, act=None)
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.relu(self.body(x) + self.skip(x))


class Adapter(nn.Module):
    """A transformers model called with positional inputs, returning the named fields of its
    output as a tuple: the wrapper users write to export one."""

    def __init__(
        self,
        inner: nn.Module,
        inputs: list[str],
        outputs: list[str],
        post: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.inputs = inputs
        self.outputs = outputs
        self.post = post

    def forward(self, *args: torch.Tensor) -> Any:
        result = self.inner(**dict(zip(self.inputs, args, strict=True)), return_dict=True)
        values = tuple(getattr(result, name) for name in self.outputs)
        if self.post is not None:
            values = self.post(values)
        return values[0] if len(values) == 1 else values


def hf(model: nn.Module, inputs: list[str], outputs: list[str]) -> Adapter:
    return Adapter(model.eval(), inputs, outputs)
