"""Text encoders: transformers' BERT (three int64 inputs) and DistilBERT for question
answering (two outputs), and a hand-written ``nn.TransformerEncoder`` sentence embedder that
takes a boolean padding mask."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from corpus import data
from corpus.blocks import hf
from corpus.spec import Built, model

VOCAB = 8000
LENGTH = 32
TOKENS = {0: "batch", 1: "sequence"}


@model(
    "bert",
    "text",
    "transformers.BertForSequenceClassification",
    ["dynamic_batch", "int64_input", "multi_input", "attention"],
)
def bert() -> Built:
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
        num_labels=3,
    )
    names = ["input_ids", "attention_mask", "token_type_ids"]
    return Built(
        model=hf(BertForSequenceClassification(config), names, ["logits"]),
        samples=data.token_batches(LENGTH, VOCAB, pairs=True),
        outputs=["logits"],
        dynamic={**dict.fromkeys(names, TOKENS), "logits": {0: "batch"}},
    )


@model(
    "distilbert_qa",
    "text",
    "transformers.DistilBertForQuestionAnswering",
    ["dynamic_batch", "int64_input", "multi_input", "multi_output", "attention"],
    dynamo=True,
)
def distilbert_qa() -> Built:
    from transformers import DistilBertConfig, DistilBertForQuestionAnswering

    config = DistilBertConfig(
        vocab_size=VOCAB, dim=64, n_layers=2, n_heads=2, hidden_dim=128, max_position_embeddings=128
    )
    names, outputs = ["input_ids", "attention_mask"], ["start_logits", "end_logits"]
    return Built(
        model=hf(DistilBertForQuestionAnswering(config), names, outputs),
        samples=data.token_batches(LENGTH, VOCAB),
        outputs=outputs,
        dynamic={**dict.fromkeys(names + outputs, TOKENS)},
    )


class SentenceEncoder(nn.Module):
    """Token and learned position embeddings, ``nn.TransformerEncoder`` with the padding
    mask (True = padding), mean over the real tokens, L2-normalized: [batch, 64]."""

    def __init__(self, vocab: int = VOCAB, width: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width, padding_idx=0)
        self.positions = nn.Parameter(torch.randn(1, 128, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, tokens: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        x = self.tokens(tokens) + self.positions[:, : tokens.shape[1]]
        x = self.encoder(x, src_key_padding_mask=padding_mask)
        keep = (~padding_mask).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return nn.functional.normalize(pooled, dim=-1)


@model(
    "sentence_encoder_boolmask",
    "text",
    "torch.nn.TransformerEncoder (bool padding mask)",
    ["dynamic_batch", "int64_input", "bool_input", "multi_input", "attention"],
)
def sentence_encoder_boolmask() -> Built:
    samples = [
        {"tokens": s["input_ids"], "padding_mask": s["attention_mask"] == 0}
        for s in data.token_batches(LENGTH, VOCAB)
    ]
    assert all(s["padding_mask"].dtype == np.bool_ for s in samples)
    return Built(
        model=SentenceEncoder(),
        samples=samples,
        outputs=["embedding"],
        dynamic={"tokens": TOKENS, "padding_mask": TOKENS, "embedding": {0: "batch"}},
    )
