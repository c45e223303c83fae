"""Human keypoints: transformers' ViTPose (a plain ViT backbone, a deconvolution heatmap
head) and a SimpleBaseline-style network as users write it (ResNet blocks, three transposed
convs to heatmaps, and a soft-argmax that also returns the keypoints' coordinates)."""

from __future__ import annotations

import torch
from torch import nn

from corpus import data
from corpus.blocks import BasicBlock, ConvBNAct, hf
from corpus.spec import Built, model

JOINTS = 17  # COCO's keypoints


@model(
    "vitpose",
    "keypoints",
    "transformers.VitPoseForPoseEstimation",
    ["dynamic_batch", "attention"],
)
def vitpose() -> Built:
    from transformers import VitPoseBackboneConfig, VitPoseConfig, VitPoseForPoseEstimation

    backbone = VitPoseBackboneConfig(
        image_size=[128, 96],
        patch_size=[16, 16],
        hidden_size=96,
        num_hidden_layers=4,
        num_attention_heads=3,
        mlp_ratio=4,
        out_indices=[4],
    )
    config = VitPoseConfig(backbone_config=backbone, num_labels=JOINTS, use_simple_decoder=True)
    return Built(
        model=hf(VitPoseForPoseEstimation(config), ["pixel_values"], ["heatmaps"]),
        samples=[{"pixel_values": x} for x in data.photos(128, 96)],
        outputs=["heatmaps"],
        dynamic={"pixel_values": {0: "batch"}, "heatmaps": {0: "batch"}},
    )


class PoseNet(nn.Module):
    """ResNet blocks to stride 32, three 2x transposed convs to stride 4, 1x1 to heatmaps;
    keypoints by soft-argmax: [batch, joints, 3] of x, y (input pixels) and peak score."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            ConvBNAct(3, 32, 3, 2, act=nn.ReLU),
            nn.MaxPool2d(3, 2, 1),
            BasicBlock(32, 32),
            BasicBlock(32, 64, 2),
            BasicBlock(64, 128, 2),
            BasicBlock(128, 192, 2),
        )
        layers: list[nn.Module] = []
        cin = 192
        for _ in range(3):
            layers += [
                nn.ConvTranspose2d(cin, 64, 4, 2, 1, bias=False),
                nn.BatchNorm2d(64),
                nn.ReLU(),
            ]
            cin = 64
        self.deconv = nn.Sequential(*layers)
        self.heatmap = nn.Conv2d(64, JOINTS, 1)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        heatmaps = self.heatmap(self.deconv(self.backbone(image)))
        batch, joints, height, width = heatmaps.shape
        flat = heatmaps.reshape(batch, joints, height * width)
        weights = (flat * 8.0).softmax(-1).reshape(batch, joints, height, width)
        xs = (torch.arange(width, dtype=torch.float32) + 0.5) * 4.0
        ys = (torch.arange(height, dtype=torch.float32) + 0.5) * 4.0
        x = (weights.sum(2) * xs).sum(-1)
        y = (weights.sum(3) * ys).sum(-1)
        score = flat.amax(-1).sigmoid()
        return heatmaps, torch.stack([x, y, score], -1)


@model(
    "pose_simplebaseline",
    "keypoints",
    "torch.nn (SimpleBaseline heatmaps + soft-argmax)",
    ["dynamic_batch", "multi_output"],
)
def pose_simplebaseline() -> Built:
    return Built(
        model=PoseNet(),
        samples=[{"image": x} for x in data.photos(256, 192)],
        outputs=["heatmaps", "keypoints"],
        dynamic={"image": {0: "batch"}, "heatmaps": {0: "batch"}, "keypoints": {0: "batch"}},
    )
