"""Tabular models: an MLP over embedded categorical codes (int64) and standardized numeric
features, with two outputs, and an FT-Transformer (every feature a token, attention across
features, a [CLS] token's readout)."""

from __future__ import annotations

import torch
from torch import nn

from corpus import data
from corpus.spec import Built, model

CARDINALITIES = tuple(data.CATEGORIES.values())
NUMERIC = len(data.NUMERIC)
BATCH = {0: "batch"}


class EmbeddingMLP(nn.Module):
    """Each categorical code embedded, concatenated with the numeric features, three
    Linear-BatchNorm-ReLU layers: churn ``logits`` [batch, 2] and ``probability`` [batch, 1]."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(n, min(8, n)) for n in CARDINALITIES)
        cin = sum(min(8, n) for n in CARDINALITIES) + NUMERIC
        layers: list[nn.Module] = []
        for cout in (width, width, width // 2):
            layers += [nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU()]
            cin = cout
        self.body = nn.Sequential(*layers)
        self.classify = nn.Linear(cin, 2)

    def forward(
        self, categorical: torch.Tensor, numeric: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        embedded = [table(categorical[:, i]) for i, table in enumerate(self.embeddings)]
        logits = self.classify(self.body(torch.cat([*embedded, numeric], 1)))
        return logits, logits.softmax(-1)[:, 1:]


@model(
    "tabular_mlp",
    "tabular",
    "torch.nn (embedding MLP)",
    ["dynamic_batch", "int64_input", "multi_input", "multi_output"],
)
def tabular_mlp() -> Built:
    return Built(
        model=EmbeddingMLP(),
        samples=data.tabular_rows(),
        outputs=["logits", "probability"],
        dynamic=dict.fromkeys(["categorical", "numeric", "logits", "probability"], BATCH),
    )


class FTTransformer(nn.Module):
    """Feature tokenizer (an embedding per categorical column, a weight and bias per numeric
    one), a [CLS] token, two transformer layers, a regression head on [CLS]."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        offsets = torch.tensor([0, *CARDINALITIES[:-1]]).cumsum(0)
        self.register_buffer("offsets", offsets)
        self.categorical = nn.Embedding(sum(CARDINALITIES), width)
        self.weight = nn.Parameter(torch.randn(NUMERIC, width) * 0.1)
        self.bias = nn.Parameter(torch.zeros(NUMERIC, width))
        self.cls = nn.Parameter(torch.randn(1, 1, width) * 0.1)
        layer = nn.TransformerEncoderLayer(
            width, 4, 64, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, categorical: torch.Tensor, numeric: torch.Tensor) -> torch.Tensor:
        tokens = torch.cat(
            [
                self.cls.expand(categorical.shape[0], -1, -1),
                self.categorical(categorical + self.offsets),
                numeric.unsqueeze(-1) * self.weight + self.bias,
            ],
            1,
        )
        return self.head(self.encoder(tokens)[:, 0])


@model(
    "tabular_ft_transformer",
    "tabular",
    "torch.nn (FT-Transformer)",
    ["dynamic_batch", "int64_input", "multi_input", "attention"],
    dynamo=True,
)
def tabular_ft_transformer() -> Built:
    return Built(
        model=FTTransformer(),
        samples=data.tabular_rows(),
        outputs=["spend_forecast"],
        dynamic={"categorical": BATCH, "numeric": BATCH, "spend_forecast": BATCH},
    )
