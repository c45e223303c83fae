"""`tensor_errors`: a channel's relative L2 judged against the tensor's scale as well."""

from __future__ import annotations

import numpy as np

from edgehub.ops.eval.layers import tensor_errors


def _tensor(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((4, 1, 8, 6, 6))  # samples, batch, channels, height, width


def test_a_near_zero_channel_rounded_away_does_not_diverge() -> None:
    rng = np.random.default_rng(0)
    reference = _tensor(rng)
    reference[:, :, 3] *= 1e-4  # a dead channel
    model = reference + 0.001 * rng.standard_normal(reference.shape)
    model[:, :, 3] = 0.0  # int8 rounds it to nothing: 100 % of its own norm
    errors = tensor_errors(model, reference)
    assert errors["channel_rel_l2"] < 0.02, errors


def test_a_crushed_channel_of_real_weight_still_diverges() -> None:
    rng = np.random.default_rng(1)
    reference = _tensor(rng)
    reference[:, :, 3] *= 0.3  # small, but no rounding error
    model = reference.copy()
    model[:, :, 3] = 0.0
    errors = tensor_errors(model, reference)
    assert errors["channel_rel_l2"] == 1.0, errors
    assert errors["rel_l2"] < 0.2, errors  # the whole tensor hides it; the channel does not
