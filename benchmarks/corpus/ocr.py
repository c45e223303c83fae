"""OCR as PaddleOCR-style pipelines run it: a DB text detector (probability map at the input's
size), CRNN recognizers (a CNN that collapses the height, a bidirectional RNN over the width,
per-step character probabilities for CTC) with a dynamic width, and a text-direction
classifier exported with the dims paddle2onnx writes (-1 batch, unnamed height and width)."""

from __future__ import annotations

import torch
from torch import nn

from corpus import data
from corpus.blocks import ConvBNAct, SqueezeExcite
from corpus.spec import Built, model

CHARSET = 96  # printable ASCII and the CTC blank


class DBNet(nn.Module):
    """A strided CNN backbone (strides 4-32), an FPN fusing its levels, every level upsampled
    to 1/4 and concatenated, and the DB head: conv, two 2x transposed convs, sigmoid."""

    def __init__(self, width: int = 16, fpn: int = 48) -> None:
        super().__init__()
        widths = [width, width * 2, width * 4, width * 8]
        self.stem = nn.Sequential(
            ConvBNAct(3, width, 3, 2, act=nn.ReLU), ConvBNAct(width, width, 3, 2, act=nn.ReLU)
        )
        self.stages = nn.ModuleList()
        cin = width
        for index, w in enumerate(widths):
            stride = 1 if index == 0 else 2
            self.stages.append(
                nn.Sequential(
                    ConvBNAct(cin, w, 3, stride, act=nn.ReLU), ConvBNAct(w, w, act=nn.ReLU)
                )
            )
            cin = w
        self.lateral = nn.ModuleList(nn.Conv2d(w, fpn, 1, bias=False) for w in widths)
        self.smooth = nn.ModuleList(
            nn.Conv2d(fpn, fpn // 4, 3, padding=1, bias=False) for _ in widths
        )
        self.head = nn.Sequential(
            ConvBNAct(fpn, fpn // 4, act=nn.ReLU),
            nn.ConvTranspose2d(fpn // 4, fpn // 4, 2, 2),
            nn.BatchNorm2d(fpn // 4),
            nn.ReLU(),
            nn.ConvTranspose2d(fpn // 4, 1, 2, 2),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels = []
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
            levels.append(x)
        fused = [lateral(level) for lateral, level in zip(self.lateral, levels, strict=True)]
        for i in range(len(fused) - 2, -1, -1):
            fused[i] = fused[i] + nn.functional.interpolate(
                fused[i + 1], scale_factor=2.0, mode="nearest"
            )
        maps = [smooth(f) for smooth, f in zip(self.smooth, fused, strict=True)]
        maps = [maps[0]] + [
            nn.functional.interpolate(m, scale_factor=float(2**i), mode="nearest")
            for i, m in enumerate(maps[1:], 1)
        ]
        return self.head(torch.cat(maps[::-1], 1))


@model(
    "ocr_det_db",
    "ocr",
    "torch.nn (DB text detector, FPN)",
    ["dynamic_batch", "dynamic_spatial", "symbolic_output"],
)
def ocr_det_db() -> Built:
    axes = {0: "batch", 2: "height", 3: "width"}
    return Built(
        model=DBNet(),
        samples=[{"x": x} for x in data.document_crops(320, 320)],
        outputs=["sigmoid_0.tmp_0"],
        dynamic={"x": axes, "sigmoid_0.tmp_0": {0: "batch"}},  # its size left to the exporter
    )


class CRNN(nn.Module):
    """Height 32 pooled to 1, width to a quarter; a two-layer bidirectional LSTM or GRU over
    the columns; per-column character probabilities [batch, steps, charset]."""

    def __init__(self, rnn: str = "lstm", hidden: int = 64) -> None:
        super().__init__()
        self.features = nn.Sequential(
            ConvBNAct(3, 32, act=nn.ReLU),
            nn.MaxPool2d(2, 2),
            ConvBNAct(32, 64, act=nn.ReLU),
            nn.MaxPool2d(2, 2),
            ConvBNAct(64, 96, act=nn.ReLU),
            ConvBNAct(96, 96, act=nn.ReLU),
            nn.MaxPool2d((2, 1), (2, 1)),
            ConvBNAct(96, 128, act=nn.ReLU),
            nn.MaxPool2d((2, 1), (2, 1)),
            ConvBNAct(128, 128, act=nn.ReLU),
            nn.MaxPool2d((2, 1), (2, 1)),
        )
        kind = nn.LSTM if rnn == "lstm" else nn.GRU
        self.rnn = kind(128, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.classify = nn.Linear(2 * hidden, CHARSET)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        columns = self.features(x).squeeze(2).permute(0, 2, 1)
        steps, _ = self.rnn(columns)
        return self.classify(steps).softmax(-1)


def crnn_built(rnn: str) -> Built:
    return Built(
        model=CRNN(rnn),
        samples=[{"x": x} for x in data.text_lines(32, 320)],
        outputs=["softmax_0.tmp_0"],
        dynamic={"x": {0: "batch", 3: "width"}, "softmax_0.tmp_0": {0: "batch", 1: "steps"}},
    )


@model(
    "ocr_rec_crnn_lstm",
    "ocr",
    "torch.nn (CRNN: CNN + BiLSTM, CTC)",
    ["dynamic_batch", "dynamic_spatial", "symbolic_output", "rnn"],
)
def ocr_rec_crnn_lstm() -> Built:
    return crnn_built("lstm")


@model(
    "ocr_rec_crnn_gru",
    "ocr",
    "torch.nn (CRNN: CNN + BiGRU, CTC)",
    ["dynamic_batch", "dynamic_spatial", "symbolic_output", "rnn"],
)
def ocr_rec_crnn_gru() -> Built:
    return crnn_built("gru")


class DirectionClassifier(nn.Module):
    """A MobileNetV3-small-like classifier (hard-swish, squeeze-excite) of 0 or 180 degrees."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            ConvBNAct(3, 16, 3, 2, act=nn.Hardswish),
            ConvBNAct(16, 16, 3, 1, groups=16, act=nn.ReLU),
            SqueezeExcite(16),
            ConvBNAct(16, 32, 1, act=nn.ReLU),
            ConvBNAct(32, 32, 3, 2, groups=32, act=nn.Hardswish),
            SqueezeExcite(32),
            ConvBNAct(32, 48, 1, act=nn.Hardswish),
            ConvBNAct(48, 48, 3, 2, groups=48, act=nn.Hardswish),
            ConvBNAct(48, 96, 1, act=nn.Hardswish),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classify = nn.Linear(96, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classify(self.features(x).flatten(1)).softmax(-1)


def paddle_dims(proto: object) -> None:
    """The dims paddle2onnx writes: batch -1 (a negative dim_value), height and width unnamed
    (neither a value nor a name), on the input; batch -1 on the output."""
    graph = proto.graph  # type: ignore[attr-defined]
    x = graph.input[0].type.tensor_type.shape.dim
    x[0].Clear()
    x[0].dim_value = -1
    x[2].Clear()
    x[3].Clear()
    y = graph.output[0].type.tensor_type.shape.dim
    y[0].Clear()
    y[0].dim_value = -1


@model(
    "ocr_cls",
    "ocr",
    "torch.nn (PaddleOCR-style text direction classifier, paddle2onnx dims)",
    ["dynamic_batch", "dynamic_spatial", "unnamed_dims"],
)
def ocr_cls() -> Built:
    return Built(
        model=DirectionClassifier(),
        samples=[{"x": x} for x in data.text_lines(48, 192)],
        outputs=["softmax_0.tmp_0"],
        dynamic={"x": {0: "N", 2: "H", 3: "W"}, "softmax_0.tmp_0": {0: "N"}},
        postprocess=paddle_dims,
    )
