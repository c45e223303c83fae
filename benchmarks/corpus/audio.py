"""Audio and speech: a 1-D conv keyword spotter on raw audio, a streaming GRU acoustic model
and a Silero-style voice-activity detector that take and return their recurrent state, and
transformers' wav2vec2 for CTC on a waveform of any length."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from corpus import data
from corpus.blocks import hf
from corpus.spec import Built, model

RATE = 16000


class KeywordSpotter(nn.Module):
    """M5-style: a wide strided Conv1d on the waveform, three more conv/pool stages, global
    average over time, 12 keyword logits (10 words, silence, unknown)."""

    def __init__(self, keywords: int = 12) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for cin, cout, kernel, stride in (
            (1, 32, 80, 4),
            (32, 32, 3, 1),
            (32, 64, 3, 1),
            (64, 64, 3, 1),
        ):
            layers += [
                nn.Conv1d(cin, cout, kernel, stride, padding=kernel // 2),
                nn.BatchNorm1d(cout),
                nn.ReLU(),
                nn.MaxPool1d(4),
            ]
        self.features = nn.Sequential(*layers)
        self.classify = nn.Linear(64, keywords)

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        return self.classify(self.features(waveform).mean(-1))


@model(
    "kws_conv1d",
    "audio",
    "torch.nn (M5-style 1-D conv keyword spotter)",
    ["dynamic_batch", "dynamic_length"],
)
def kws_conv1d() -> Built:
    return Built(
        model=KeywordSpotter(),
        samples=[{"waveform": w[None, None]} for w in data.speech(1.0, RATE)],
        outputs=["logits"],
        dynamic={"waveform": {0: "batch", 2: "samples"}, "logits": {0: "batch"}},
    )


class StreamingGRU(nn.Module):
    """Log-mel frames to per-frame character log-probabilities (CTC) with a two-layer GRU
    whose state the caller carries from one chunk to the next."""

    def __init__(self, mels: int = 40, hidden: int = 96, symbols: int = 29) -> None:
        super().__init__()
        self.project = nn.Sequential(nn.Linear(mels, hidden), nn.ReLU())
        self.gru = nn.GRU(hidden, hidden, num_layers=2, batch_first=True)
        self.classify = nn.Linear(hidden, symbols)

    def forward(
        self, features: torch.Tensor, h0: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        steps, hn = self.gru(self.project(features), h0)
        return self.classify(steps).log_softmax(-1), hn


@model(
    "speech_gru_state",
    "audio",
    "torch.nn (streaming GRU acoustic model, explicit state)",
    ["dynamic_batch", "dynamic_length", "state_input", "multi_input", "multi_output", "rnn"],
)
def speech_gru_state() -> Built:
    net = StreamingGRU().eval()
    samples = []
    for wave in data.speech(1.0, RATE):
        mel = data.log_mel(wave, RATE, 40)
        mel = (mel - mel.mean(0)) / (mel.std(0) + 1e-5)
        half = mel.shape[0] // 2
        with torch.no_grad():  # the state after the first half, as a stream would carry it
            _, state = net(torch.from_numpy(mel[None, :half]), torch.zeros(2, 1, 96))
        samples.append({"features": mel[None, half : 2 * half], "h0": state.numpy()})
    return Built(
        model=net,
        samples=samples,
        outputs=["log_probs", "hn"],
        dynamic={
            "features": {0: "batch", 1: "frames"},
            "h0": {1: "batch"},
            "log_probs": {0: "batch", 1: "frames"},
            "hn": {1: "batch"},
        },
        batch_axis={"h0": 1},
        output_batch_axis={"hn": 1},
    )


class VoiceActivity(nn.Module):
    """A Silero-VAD-like detector on 512-sample chunks: an STFT as a Conv1d with a fixed
    Fourier basis, a conv encoder, an LSTM cell whose (h, c) the caller carries in ``state``
    [2, batch, 64], and the speech probability [batch, 1]. ``sr`` (int64 [1]) rescales the
    chunk from the model's 16 kHz reference, as the original reads its sample rate."""

    def __init__(self, window: int = 256, hop: int = 128, hidden: int = 64) -> None:
        super().__init__()
        bins = window // 2 + 1
        n = np.arange(window)
        k = np.arange(bins)[:, None]
        hann = np.hanning(window + 1)[:-1]
        basis = np.concatenate(
            [np.cos(2 * np.pi * k * n / window), -np.sin(2 * np.pi * k * n / window)]
        )
        self.register_buffer("basis", torch.tensor(basis * hann, dtype=torch.float32)[:, None])
        self.hop, self.pad, self.bins = hop, window // 4, bins
        self.encoder = nn.Sequential(
            nn.Conv1d(bins, 96, 3, padding=1),
            nn.ReLU(),
            nn.Conv1d(96, 64, 3, 2, padding=1),
            nn.ReLU(),
            nn.Conv1d(64, hidden, 3, padding=1),
            nn.ReLU(),
        )
        self.cell = nn.LSTMCell(hidden, hidden)
        self.decoder = nn.Sequential(nn.ReLU(), nn.Conv1d(hidden, 1, 1), nn.Sigmoid())

    def forward(
        self, chunk: torch.Tensor, state: torch.Tensor, sr: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        chunk = chunk * (sr.to(torch.float32) / float(RATE))
        padded = nn.functional.pad(chunk.unsqueeze(1), (self.pad, self.pad), mode="reflect")
        spectrum = nn.functional.conv1d(padded, self.basis, stride=self.hop)
        real, imag = spectrum[:, : self.bins], spectrum[:, self.bins :]
        magnitude = torch.sqrt(real * real + imag * imag + 1e-9)
        encoded = self.encoder(torch.log(magnitude + 1e-3)).mean(-1)
        h, c = self.cell(encoded, (state[0], state[1]))
        probability = self.decoder(h.unsqueeze(-1)).mean(-1)
        return probability, torch.stack([h, c])


@model(
    "vad_lstm_state",
    "audio",
    "torch.nn (Silero-style VAD: STFT conv, LSTM cell state, int64 sample rate)",
    ["dynamic_batch", "state_input", "int64_input", "multi_input", "multi_output", "rnn"],
)
def vad_lstm_state() -> Built:
    net = VoiceActivity().eval()
    rate = torch.tensor([RATE], dtype=torch.int64)
    samples = []
    for index, wave in enumerate(data.speech(1.0, RATE)):
        state = torch.zeros(2, 1, 64)
        at = 512 * (2 + index % 20)
        with torch.no_grad():  # the state after the chunks before this one
            for start in range(0, at, 512):
                _, state = net(torch.from_numpy(wave[None, start : start + 512]), state, rate)
        samples.append(
            {"input": wave[None, at : at + 512], "state": state.numpy(), "sr": rate.numpy()}
        )
    return Built(
        model=net,
        samples=samples,
        outputs=["output", "stateN"],
        dynamic={
            "input": {0: "batch"},
            "state": {1: "batch"},
            "output": {0: "batch"},
            "stateN": {1: "batch"},
        },
        batch_axis={"state": 1, "sr": None},
        output_batch_axis={"stateN": 1},
    )


@model(
    "wav2vec2_ctc",
    "audio",
    "transformers.Wav2Vec2ForCTC",
    ["dynamic_batch", "dynamic_length", "symbolic_output", "attention"],
    dynamo=True,
)
def wav2vec2_ctc() -> Built:
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    config = Wav2Vec2Config(
        vocab_size=32,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        conv_dim=(64,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        feat_extract_norm="group",
        do_stable_layer_norm=False,
    )
    samples = []
    for wave in data.speech(1.0, RATE):  # the feature extractor's zero-mean unit-variance
        samples.append({"input_values": ((wave - wave.mean()) / (wave.std() + 1e-7))[None]})
    return Built(
        model=hf(Wav2Vec2ForCTC(config), ["input_values"], ["logits"]),
        samples=samples,
        outputs=["logits"],
        dynamic={"input_values": {0: "batch", 1: "samples"}, "logits": {0: "batch", 1: "frames"}},
    )
