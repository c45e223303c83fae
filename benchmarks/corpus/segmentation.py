"""Semantic segmentation: transformers' SegFormer and MobileNetV2 DeepLabV3, and a U-Net as
users write it (skip connections, transposed convolutions, any input size)."""

from __future__ import annotations

import torch
from torch import nn

from corpus import data
from corpus.blocks import ConvBNAct, hf
from corpus.spec import Built, model


@model(
    "segformer",
    "segmentation",
    "transformers.SegformerForSemanticSegmentation",
    ["dynamic_batch", "attention"],
)
def segformer() -> Built:
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    config = SegformerConfig(
        hidden_sizes=[16, 32, 80, 128],
        depths=[1, 1, 1, 1],
        num_attention_heads=[1, 2, 5, 8],
        decoder_hidden_size=64,
        num_labels=19,
    )
    return Built(
        model=hf(SegformerForSemanticSegmentation(config), ["pixel_values"], ["logits"]),
        samples=[{"pixel_values": x} for x in data.photos(128)],
        outputs=["logits"],
        dynamic={"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
    )


@model(
    "deeplabv3_mobilenet_v2",
    "segmentation",
    "transformers.MobileNetV2ForSemanticSegmentation",
    ["dynamic_batch"],
)
def deeplabv3_mobilenet_v2() -> Built:
    from transformers import MobileNetV2Config, MobileNetV2ForSemanticSegmentation

    config = MobileNetV2Config(
        depth_multiplier=0.5, image_size=160, output_stride=16, num_labels=21
    )
    return Built(
        model=hf(MobileNetV2ForSemanticSegmentation(config), ["pixel_values"], ["logits"]),
        samples=[{"pixel_values": x} for x in data.photos(160, norm="symmetric")],
        outputs=["logits"],
        dynamic={"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
    )


class UNet(nn.Module):
    """Four levels of two convolutions, max-pooled down, transposed-conv up, skips
    concatenated; per-pixel class logits at the input's size."""

    def __init__(self, classes: int = 6, width: int = 16) -> None:
        super().__init__()
        widths = [width * 2**i for i in range(4)]
        self.down = nn.ModuleList()
        cin = 3
        for w in widths:
            self.down.append(
                nn.Sequential(ConvBNAct(cin, w, act=nn.ReLU), ConvBNAct(w, w, act=nn.ReLU))
            )
            cin = w
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList(nn.ConvTranspose2d(w * 2, w, 2, 2) for w in reversed(widths[:-1]))
        self.merge = nn.ModuleList(
            nn.Sequential(ConvBNAct(w * 2, w, act=nn.ReLU), ConvBNAct(w, w, act=nn.ReLU))
            for w in reversed(widths[:-1])
        )
        self.classify = nn.Conv2d(widths[0], classes, 1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        skips = []
        x = image
        for index, level in enumerate(self.down):
            x = level(x if index == 0 else self.pool(x))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1]), strict=True):
            x = merge(torch.cat([up(x), skip], 1))
        return self.classify(x)


@model(
    "unet",
    "segmentation",
    "torch.nn (U-Net)",
    ["dynamic_batch", "dynamic_spatial", "symbolic_output"],
    dynamo=True,
)
def unet() -> Built:
    axes = {0: "batch", 2: "height", 3: "width"}
    return Built(
        model=UNet(),
        samples=[{"image": x} for x in data.photos(128, 160)],
        outputs=["mask_logits"],
        dynamic={"image": axes},
    )
