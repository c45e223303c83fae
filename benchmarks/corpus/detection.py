"""Object detectors: a YOLOv8n-style network as users write or vendor it (CSP backbone,
PAN neck, an anchor-free Detect head with distribution focal loss that decodes boxes from
anchors it makes from the feature maps' shapes), an SSD-lite with fixed priors and two
outputs, and transformers' YOLOS and DETR."""

from __future__ import annotations

import math

import torch
from torch import nn

from corpus import data
from corpus.blocks import ConvBNAct, DepthwiseSeparable, hf
from corpus.spec import Built, model


class Bottleneck(nn.Module):
    def __init__(self, channels: int, shortcut: bool = True) -> None:
        super().__init__()
        self.convs = nn.Sequential(ConvBNAct(channels, channels), ConvBNAct(channels, channels))
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.convs(x) if self.shortcut else self.convs(x)


class C2f(nn.Module):
    """Split a 1x1 conv's output in two, chain bottlenecks on one half, concatenate every
    intermediate result and fuse them with another 1x1 conv (YOLOv8's CSP block)."""

    def __init__(self, cin: int, cout: int, blocks: int = 1, shortcut: bool = False) -> None:
        super().__init__()
        self.hidden = cout // 2
        self.enter = ConvBNAct(cin, 2 * self.hidden, 1)
        self.blocks = nn.ModuleList(Bottleneck(self.hidden, shortcut) for _ in range(blocks))
        self.leave = ConvBNAct((2 + blocks) * self.hidden, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(self.enter(x).chunk(2, 1))
        for block in self.blocks:
            parts.append(block(parts[-1]))
        return self.leave(torch.cat(parts, 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: three chained 5x5 max pools, concatenated."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.enter = ConvBNAct(cin, cin // 2, 1)
        self.pool = nn.MaxPool2d(5, 1, 2)
        self.leave = ConvBNAct(cin * 2, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.enter(x)
        b = self.pool(a)
        c = self.pool(b)
        return self.leave(torch.cat([a, b, c, self.pool(c)], 1))


class DetectHead(nn.Module):
    """Per level, a box branch (4 x ``bins`` distance logits) and a class branch; their maps
    are flattened and concatenated over levels, the distances decoded (softmax expectation
    over the bins) against anchors made from each map's size: [batch, 4 + classes, anchors]
    of xywh boxes in input pixels and class scores."""

    def __init__(self, classes: int, channels: tuple[int, ...], strides: tuple[int, ...]):
        super().__init__()
        self.classes, self.bins, self.strides = classes, 16, strides
        box_width, cls_width = max(16, channels[0] // 4, 4 * self.bins), max(channels[0], classes)
        self.box = nn.ModuleList(
            nn.Sequential(
                ConvBNAct(c, box_width),
                ConvBNAct(box_width, box_width),
                nn.Conv2d(box_width, 4 * self.bins, 1),
            )
            for c in channels
        )
        self.cls = nn.ModuleList(
            nn.Sequential(
                ConvBNAct(c, cls_width),
                ConvBNAct(cls_width, cls_width),
                nn.Conv2d(cls_width, classes, 1),
            )
            for c in channels
        )
        self.register_buffer("bin_values", torch.arange(self.bins, dtype=torch.float32))
        for branch, stride in zip(self.cls, strides, strict=True):  # a trained model's priors
            nn.init.constant_(branch[-1].bias, math.log(5 / classes / (640 / stride) ** 2))
        for branch in self.box:
            nn.init.constant_(branch[-1].bias, 1.0)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        batch = features[0].shape[0]
        maps, anchors, scales = [], [], []
        for x, box, cls, stride in zip(features, self.box, self.cls, self.strides, strict=True):
            height, width = x.shape[2], x.shape[3]
            maps.append(
                torch.cat([box(x), cls(x)], 1).view(batch, 4 * self.bins + self.classes, -1)
            )
            ys = torch.arange(height, dtype=torch.float32) + 0.5
            xs = torch.arange(width, dtype=torch.float32) + 0.5
            grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
            anchors.append(torch.stack([grid_x, grid_y], -1).view(-1, 2))
            scales.append(torch.full((height * width, 1), float(stride)))
        flat = torch.cat(maps, 2)
        points = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
        scale = torch.cat(scales).transpose(0, 1).unsqueeze(0)
        distances, logits = flat.split([4 * self.bins, self.classes], 1)
        anchor_count = distances.shape[2]
        probs = distances.view(batch, 4, self.bins, anchor_count).softmax(2)
        expected = (probs * self.bin_values.view(1, 1, -1, 1)).sum(2)
        left_top, right_bottom = expected.chunk(2, 1)
        top_left = points - left_top
        bottom_right = points + right_bottom
        xywh = torch.cat([(top_left + bottom_right) / 2, bottom_right - top_left], 1)
        return torch.cat([xywh * scale, logits.sigmoid()], 1)


class YoloV8(nn.Module):
    """YOLOv8n's layout (width 0.25, depth 0.33) for ``classes`` classes."""

    def __init__(self, classes: int = 80) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            ConvBNAct(3, 16, 3, 2), ConvBNAct(16, 32, 3, 2), C2f(32, 32, 1, True)
        )
        self.p3 = nn.Sequential(ConvBNAct(32, 64, 3, 2), C2f(64, 64, 2, True))
        self.p4 = nn.Sequential(ConvBNAct(64, 128, 3, 2), C2f(128, 128, 2, True))
        self.p5 = nn.Sequential(ConvBNAct(128, 256, 3, 2), C2f(256, 256, 1, True), SPPF(256, 256))
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.top4 = C2f(384, 128)
        self.top3 = C2f(192, 64)
        self.down3 = ConvBNAct(64, 64, 3, 2)
        self.bottom4 = C2f(192, 128)
        self.down4 = ConvBNAct(128, 128, 3, 2)
        self.bottom5 = C2f(384, 256)
        self.detect = DetectHead(classes, (64, 128, 256), (8, 16, 32))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        p3 = self.p3(self.stem(images))
        p4 = self.p4(p3)
        p5 = self.p5(p4)
        t4 = self.top4(torch.cat([self.up(p5), p4], 1))
        n3 = self.top3(torch.cat([self.up(t4), p3], 1))
        n4 = self.bottom4(torch.cat([self.down3(n3), t4], 1))
        n5 = self.bottom5(torch.cat([self.down4(n4), p5], 1))
        return self.detect([n3, n4, n5])


def yolo_built() -> Built:
    return Built(
        model=YoloV8(),
        samples=[{"images": x} for x in data.letterboxed(320)],
        outputs=["output0"],
        dynamic={
            "images": {0: "batch", 2: "height", 3: "width"},
            "output0": {0: "batch", 2: "anchors"},
        },
    )


@model(
    "yolov8n",
    "detection",
    "torch.nn (YOLOv8n layout, anchor-free DFL Detect head)",
    ["dynamic_batch", "dynamic_spatial", "symbolic_output"],
)
def yolov8n() -> Built:
    return yolo_built()


@model(
    "yolov8n_dynamo",
    "detection",
    "torch.nn (YOLOv8n layout, anchor-free DFL Detect head)",
    ["dynamic_batch", "dynamic_spatial", "symbolic_output"],
    dynamo=True,
)
def yolov8n_dynamo() -> Built:
    return yolo_built()


class SSDLite(nn.Module):
    """MobileNet-v1 features, four extra down-sampling layers and per-level class and box
    convolutions; boxes decoded against fixed priors: ``scores`` [batch, priors, classes+1]
    (softmax, background first) and ``boxes`` [batch, priors, 4] (normalized corners)."""

    def __init__(self, classes: int = 20, size: int = 256) -> None:
        super().__init__()
        self.stage1 = nn.Sequential(
            ConvBNAct(3, 16, 3, 2, act=nn.ReLU6),
            DepthwiseSeparable(16, 32),
            DepthwiseSeparable(32, 64, 2),
            DepthwiseSeparable(64, 64),
            DepthwiseSeparable(64, 96, 2),
            DepthwiseSeparable(96, 96, 2),
            DepthwiseSeparable(96, 96),
        )  # stride 16
        self.stage2 = nn.Sequential(DepthwiseSeparable(96, 192, 2), DepthwiseSeparable(192, 192))
        self.extras = nn.ModuleList(
            nn.Sequential(ConvBNAct(c, c // 2, 1, act=nn.ReLU6), DepthwiseSeparable(c // 2, o, 2))
            for c, o in ((192, 128), (128, 128), (128, 64))
        )
        channels, per_cell = (96, 192, 128, 128, 64), (4, 6, 6, 6, 6)
        self.classes = classes + 1
        self.cls = nn.ModuleList(
            nn.Conv2d(c, k * self.classes, 3, padding=1)
            for c, k in zip(channels, per_cell, strict=True)
        )
        self.loc = nn.ModuleList(
            nn.Conv2d(c, k * 4, 3, padding=1) for c, k in zip(channels, per_cell, strict=True)
        )
        self.register_buffer("priors", self._priors(size, channels, per_cell))

    @staticmethod
    def _priors(size: int, channels: tuple[int, ...], per_cell: tuple[int, ...]) -> torch.Tensor:
        boxes = []
        cells = [size // 16 // 2**i for i in range(len(channels))]
        scales = torch.linspace(0.1, 0.9, len(cells) + 1).tolist()
        for level, (cell, count) in enumerate(zip(cells, per_cell, strict=True)):
            scale, bigger = scales[level], math.sqrt(scales[level] * scales[level + 1])
            shapes = [(scale, scale), (bigger, bigger)]
            for ratio in (2.0, 3.0)[: (count - 2) // 2]:
                r = math.sqrt(ratio)
                shapes += [(scale * r, scale / r), (scale / r, scale * r)]
            for y in range(cell):
                for x in range(cell):
                    boxes += [((x + 0.5) / cell, (y + 0.5) / cell, w, h) for w, h in shapes]
        return torch.tensor(boxes, dtype=torch.float32).clamp(0, 1)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = [self.stage1(image)]
        features.append(self.stage2(features[-1]))
        for extra in self.extras:
            features.append(extra(features[-1]))
        batch = image.shape[0]
        logits = torch.cat(
            [
                c(f).permute(0, 2, 3, 1).reshape(batch, -1, self.classes)
                for c, f in zip(self.cls, features, strict=True)
            ],
            1,
        )
        offsets = torch.cat(
            [
                loc(f).permute(0, 2, 3, 1).reshape(batch, -1, 4)
                for loc, f in zip(self.loc, features, strict=True)
            ],
            1,
        )
        centers = self.priors[:, :2] + offsets[..., :2] * 0.1 * self.priors[:, 2:]
        sizes = self.priors[:, 2:] * torch.exp(offsets[..., 2:] * 0.2)
        boxes = torch.cat([centers - sizes / 2, centers + sizes / 2], -1)
        return logits.softmax(-1), boxes


@model(
    "ssdlite",
    "detection",
    "torch.nn (SSD-lite: MobileNet-v1 features, prior-box decoding)",
    ["dynamic_batch", "multi_output"],
)
def ssdlite() -> Built:
    return Built(
        model=SSDLite(),
        samples=[{"image": x} for x in data.photos(256, norm="symmetric")],
        outputs=["scores", "boxes"],
        dynamic={"image": {0: "batch"}, "scores": {0: "batch"}, "boxes": {0: "batch"}},
    )


@model(
    "yolos",
    "detection",
    "transformers.YolosForObjectDetection",
    ["dynamic_batch", "attention", "multi_output"],
)
def yolos() -> Built:
    from transformers import YolosConfig, YolosForObjectDetection

    config = YolosConfig(
        image_size=[128, 128],
        patch_size=16,
        hidden_size=96,
        num_hidden_layers=4,
        num_attention_heads=3,
        intermediate_size=384,
        num_detection_tokens=20,
        num_labels=91,
    )
    outputs = ["logits", "pred_boxes"]
    return Built(
        model=hf(YolosForObjectDetection(config), ["pixel_values"], outputs),
        samples=[{"pixel_values": x} for x in data.photos(128)],
        outputs=outputs,
        dynamic={"pixel_values": {0: "batch"}, **{o: {0: "batch"} for o in outputs}},
    )


@model(
    "detr",
    "detection",
    "transformers.DetrForObjectDetection (ResNet backbone)",
    ["dynamic_batch", "attention", "multi_output"],
)
def detr() -> Built:
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    backbone = ResNetConfig(
        embedding_size=32,
        hidden_sizes=[32, 64, 128, 256],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage4"],
    )
    config = DetrConfig(
        use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone=None,
        backbone_config=backbone,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        num_queries=20,
        num_labels=91,
    )
    outputs = ["logits", "pred_boxes"]
    return Built(
        model=hf(DetrForObjectDetection(config), ["pixel_values"], outputs),
        samples=[{"pixel_values": x} for x in data.photos(160)],
        outputs=outputs,
        dynamic={"pixel_values": {0: "batch"}, **{o: {0: "batch"} for o in outputs}},
    )
