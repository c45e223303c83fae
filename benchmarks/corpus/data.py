"""Real-looking samples for the corpus models, made offline and deterministically.

Images are the photographs that scikit-image ships in its wheel (no download), cropped and
resized as a user's preprocessing would; document images (OCR) are its scanned page and text
images. Audio is synthesized speech-like sound: a glottal pulse train whose pitch glides,
shaped by vowel formants, between noise bursts for consonants, over a faint room noise.
Text is English sentences hashed to word-piece-like ids with BERT's special ids and padding.
Tabular rows are plausible customer records, standardized as a feature pipeline would.
"""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np

SAMPLES = 8
PHOTOS = (
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "motorcycle",
    "hubble_deep_field",
    "immunohistochemistry",
    "retina",
)
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def _rng(tag: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(tag.encode()))


@cache
def _photo(name: str) -> np.ndarray:
    """An RGB uint8 photograph bundled with scikit-image."""
    from skimage import data

    image = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    return np.ascontiguousarray(image[..., :3])


def _resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """``image`` (HxWxC or HxW, any dtype) resized to floats in [0, 1]."""
    from skimage.transform import resize

    image = image.astype(np.float32) / 255.0 if image.dtype == np.uint8 else image
    return resize(image, (height, width), anti_aliasing=True, preserve_range=True).astype(
        np.float32
    )


def _normalize(rgb: np.ndarray, norm: str) -> np.ndarray:
    """HxWx3 floats in [0, 1] to a 1x3xHxW input: ``imagenet`` mean/std, ``unit`` [0, 1],
    ``symmetric`` [-1, 1] (PaddleOCR, ViT's default processor)."""
    if norm == "imagenet":
        rgb = (rgb - IMAGENET_MEAN) / IMAGENET_STD
    elif norm == "symmetric":
        rgb = rgb * 2.0 - 1.0
    elif norm != "unit":
        raise ValueError(norm)
    return np.ascontiguousarray(rgb.transpose(2, 0, 1)[None], dtype=np.float32)


def photos(height: int, width: int | None = None, norm: str = "imagenet") -> list[np.ndarray]:
    """One 1x3xHxW image per sample: a different photograph each, a random crop of 60-100 %
    of its short side (the center for the first), resized."""
    width = width or height
    rng = _rng(f"photos{height}x{width}")
    out = []
    for i in range(SAMPLES):
        image = _photo(PHOTOS[i % len(PHOTOS)])
        h, w = image.shape[:2]
        aspect = width / height
        ch = int(min(h, w / aspect) * (1.0 if i == 0 else rng.uniform(0.6, 1.0)))
        cw = int(ch * aspect)
        top = (h - ch) // 2 if i == 0 else int(rng.integers(0, h - ch + 1))
        left = (w - cw) // 2 if i == 0 else int(rng.integers(0, w - cw + 1))
        crop = image[top : top + ch, left : left + cw]
        out.append(_normalize(_resize(crop, height, width), norm))
    return out


def letterboxed(size: int) -> list[np.ndarray]:
    """One 1x3xSxS image per sample as YOLO preprocesses: the whole photograph scaled to fit,
    padded with gray (114), in [0, 1]."""
    out = []
    for i in range(SAMPLES):
        image = _photo(PHOTOS[i % len(PHOTOS)])
        h, w = image.shape[:2]
        scale = size / max(h, w)
        nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
        canvas = np.full((size, size, 3), 114 / 255, np.float32)
        top, left = (size - nh) // 2, (size - nw) // 2
        canvas[top : top + nh, left : left + nw] = _resize(image, nh, nw)
        out.append(_normalize(canvas, "unit"))
    return out


@cache
def _documents() -> list[np.ndarray]:
    """scikit-image's scanned page and text images, dark text on light paper, floats."""
    from skimage import data

    return [data.page().astype(np.float32) / 255.0, data.text().astype(np.float32) / 255.0]


def document_crops(height: int, width: int, norm: str = "imagenet") -> list[np.ndarray]:
    """One 1x3xHxW crop of a scanned document per sample, as an OCR text detector gets."""
    rng = _rng(f"documents{height}x{width}")
    out = []
    for i in range(SAMPLES):
        page = _documents()[i % 2]
        h, w = page.shape
        scale = rng.uniform(0.7, 1.0)
        ch, cw = int(h * scale), int(min(w, h * scale * width / height))
        top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        gray = _resize(page[top : top + ch, left : left + cw], height, width)
        out.append(_normalize(np.stack([gray] * 3, axis=-1), norm))
    return out


def _text_lines(page: np.ndarray) -> list[np.ndarray]:
    """The text lines of a scanned page, found by its rows' ink (a horizontal projection of
    a Sauvola binarization, which copes with the page's uneven lighting)."""
    from skimage.filters import threshold_sauvola

    dark = page < threshold_sauvola(page, window_size=25)
    rows = dark.mean(axis=1) > 0.03
    lines, start = [], None
    for y, on in enumerate([*rows, False]):
        if on and start is None:
            start = y
        elif not on and start is not None:
            if y - start >= 6:
                top, bottom = max(0, start - 2), min(page.shape[0], y + 2)
                columns = np.nonzero(dark[top:bottom].mean(axis=0) > 0.05)[0]
                if columns.size:
                    lines.append(page[top:bottom, columns[0] : columns[-1] + 1])
            start = None
    return lines


def text_lines(height: int, width: int, norm: str = "symmetric") -> list[np.ndarray]:
    """One 1x3xHxW text-line crop per sample, as an OCR recognizer gets: a line of a scanned
    page scaled to the height, its width kept (up to ``width``, cut beyond), padded right."""
    lines = _text_lines(_documents()[0])
    out = []
    for i in range(SAMPLES):
        line = lines[i % len(lines)]
        w = min(width, max(8, round(line.shape[1] * height / line.shape[0])))
        canvas = np.ones((height, width), np.float32)
        canvas[:, :w] = _resize(line, height, w)
        out.append(_normalize(np.stack([canvas] * 3, axis=-1), norm))
    return out


def speech(seconds: float = 1.0, rate: int = 16000) -> list[np.ndarray]:
    """One waveform (floats, peak 0.5) per sample: 2-4 syllables of synthesized speech."""
    from scipy.signal import lfilter

    vowels = [(730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480)]
    rng = _rng(f"speech{seconds}{rate}")
    total = int(seconds * rate)
    out = []
    for _ in range(SAMPLES):
        wave = rng.normal(0, 0.002, total)
        at = int(rng.uniform(0.05, 0.15) * rate)
        for _ in range(int(rng.integers(2, 5))):
            burst = int(rng.uniform(0.02, 0.06) * rate)
            if at + burst < total:  # a consonant: high-passed noise
                noise = lfilter([1, -0.95], [1], rng.normal(0, 0.05, burst))
                wave[at : at + burst] += noise * np.hanning(burst)
            at += burst
            length = min(int(rng.uniform(0.12, 0.25) * rate), total - at)
            if length <= 64:
                break
            f0 = np.linspace(rng.uniform(110, 220), rng.uniform(90, 180), length)
            phase = np.cumsum(f0 / rate)
            source = np.diff(np.floor(phase), prepend=0.0)  # a pulse each period
            voiced = lfilter([1.0], [1, -0.9], source)  # glottal roll-off
            formants = vowels[int(rng.integers(4))]
            for formant, bandwidth in zip(formants, (80, 120, 160), strict=True):
                r = np.exp(-np.pi * bandwidth / rate)
                theta = 2 * np.pi * formant / rate
                voiced = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], voiced)
            wave[at : at + length] += voiced / (np.abs(voiced).max() + 1e-9) * np.hanning(length)
            at += length + int(rng.uniform(0.02, 0.08) * rate)
            if at >= total:
                break
        out.append((wave / np.abs(wave).max() * 0.5).astype(np.float32))
    return out


def log_mel(wave: np.ndarray, rate: int = 16000, mels: int = 40) -> np.ndarray:
    """[frames, mels] log-mel energies (25 ms windows, 10 ms hop), as speech front ends make."""
    window, hop, nfft = int(0.025 * rate), int(0.010 * rate), 512
    frames = 1 + (len(wave) - window) // hop
    index = np.arange(window)[None] + hop * np.arange(frames)[:, None]
    power = np.abs(np.fft.rfft(wave[index] * np.hanning(window), nfft)) ** 2

    def to_mel(hz: np.ndarray) -> np.ndarray:
        return 2595 * np.log10(1 + hz / 700)

    edges = 700 * (10 ** (np.linspace(0, to_mel(np.array(rate / 2)), mels + 2) / 2595) - 1)
    bins = np.fft.rfftfreq(nfft, 1 / rate)
    bank = np.zeros((mels, bins.size))
    for m in range(mels):
        low, mid, high = edges[m : m + 3]
        bank[m] = np.clip(
            np.minimum((bins - low) / (mid - low), (high - bins) / (high - mid)), 0, 1
        )
    return np.log(power @ bank.T + 1e-6).astype(np.float32)


SENTENCES = (
    "the camera on the loading dock flagged a pallet that was left in the walkway",
    "please turn the thermostat down two degrees before the meeting starts",
    "what time does the last train leave for the airport tonight",
    "our quarterly numbers beat the forecast despite the supply delays",
    "the sensor reported an unusual vibration in pump number four",
    "can you summarize the customer complaints from last week",
    "battery level is low so the drone will return to its base",
    "the recipe calls for two cups of flour and a pinch of salt",
    "is the pedestrian crossing clear",
    "shipping was fast and the headphones sound great",
    "reset the router and then try connecting again",
    "the forecast says light rain in the afternoon with strong winds near the coast",
)
CLS, SEP, PAD = 101, 102, 0


def _word_ids(sentence: str, vocab: int) -> list[int]:
    ids = []
    for word in sentence.split():
        pieces = [word[:6], word[6:]] if len(word) > 6 else [word]  # word-piece-like splits
        ids += [1000 + zlib.crc32(p.encode()) % (vocab - 1000) for p in pieces if p]
    return ids


def token_batches(length: int, vocab: int, pairs: bool = False) -> list[dict[str, np.ndarray]]:
    """One sample per sentence: ``input_ids`` ([CLS] words [SEP], padded with 0),
    ``attention_mask`` (1 on tokens, 0 on padding) and, with ``pairs``, ``token_type_ids``
    (every other sample holds two sentences, the second typed 1), all int64 [1, length]."""
    out = []
    for i in range(SAMPLES):
        first = [CLS, *_word_ids(SENTENCES[i], vocab), SEP]
        types = [0] * len(first)
        if pairs and i % 2:
            second = [*_word_ids(SENTENCES[(i + 5) % len(SENTENCES)], vocab), SEP]
            first, types = first + second, types + [1] * len(second)
        first, types = first[:length], types[:length]
        pad = length - len(first)
        sample = {
            "input_ids": np.array([first + [PAD] * pad], np.int64),
            "attention_mask": np.array([[1] * len(first) + [0] * pad], np.int64),
        }
        if pairs:
            sample["token_type_ids"] = np.array([types + [0] * pad], np.int64)
        out.append(sample)
    return out


CATEGORIES = {"weekday": 7, "region": 12, "device": 4, "plan": 3}
NUMERIC = ("age", "log_income", "tenure_months", "monthly_spend", "sessions_7d", "days_idle")


def tabular_rows() -> list[dict[str, np.ndarray]]:
    """One customer record per sample: ``categorical`` int64 [1, 4] codes and ``numeric``
    float32 [1, 6] standardized values."""
    rng = _rng("tabular")
    out = []
    for _ in range(SAMPLES):
        codes = [int(rng.integers(n)) for n in CATEGORIES.values()]
        raw = np.array(
            [
                rng.integers(18, 80),
                np.log(rng.lognormal(10.5, 0.6)),
                rng.integers(0, 120),
                rng.gamma(2.0, 25.0),
                rng.poisson(9),
                rng.exponential(6.0),
            ]
        )
        mean = np.array([45.0, 10.5, 40.0, 50.0, 9.0, 6.0])
        std = np.array([15.0, 0.6, 30.0, 35.0, 3.0, 6.0])
        out.append(
            {
                "categorical": np.array([codes], np.int64),
                "numeric": ((raw - mean) / std)[None].astype(np.float32),
            }
        )
    return out
