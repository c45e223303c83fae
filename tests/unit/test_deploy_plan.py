"""plan/transform/apply_backend: overlaps resolved in pattern order and reported, plans
editable, phases enforced, conversions bounded, inputs never changed, bad input refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import onnx
import pytest
from deploy_graphs import build, conv_bn, node, ops

from edgehub.deploy import (
    Backend,
    Graph,
    Match,
    Pattern,
    PatternPhaseError,
    Phase,
    PlanError,
    apply_backend,
    plan,
    reset_backends,
    set_backend,
    transform,
)
from edgehub.deploy.backend import UnknownBackendError
from edgehub.errors import ModelError

trt = pytest.importorskip("edgehub_backend_tensorrt", reason="pip install -e backends/tensorrt")


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    reset_backends()
    yield
    reset_backends()


def test_overlapping_matches_go_to_the_earlier_pattern_and_are_reported() -> None:
    model = conv_bn("Relu")
    p = plan(model, [trt.FuseConvActivation, trt.FoldConvAffine])
    fuse, fold = p.matches
    assert fuse.apply and not fold.apply
    assert fold.skipped == f"overlaps FuseConvActivation at {fuse.anchor}"
    assert p.overlaps() == [fold]
    assert list(p.by_pattern()) == ["FuseConvActivation", "FoldConvAffine"]
    report = transform(model, plan=p).report
    rows = {r.name: r for r in report.patterns}
    assert (rows["FoldConvAffine"].matched, rows["FoldConvAffine"].skipped_overlap) == (1, 1)
    assert (rows["FuseConvActivation"].applied, report.nodes_before, report.nodes_after) == (
        1,
        3,
        2,
    )
    json.dumps(report.to_dict())
    assert "- FoldConvAffine" in p.describe()


def test_an_edited_plan_is_applied_as_edited() -> None:
    model = conv_bn("Relu")
    p = plan(model, [trt.FuseConvActivation, trt.FoldConvAffine])
    p.matches[0].apply, p.matches[1].apply = False, True
    out, report = transform(model, plan=p)
    assert ops(out) == ["Conv", "Relu"] and report.fired() == {"FoldConvAffine": 1}
    assert {r.name: r.skipped_disabled for r in report.patterns}["FuseConvActivation"] == 1
    p.matches[0].apply = True
    with pytest.raises(PlanError, match="both rewrite node"):
        transform(model, plan=p)


def test_input_model_is_not_changed_and_paths_work(tmp_path: Path) -> None:
    model = conv_bn("Relu")
    before = model.SerializeToString()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    out, _ = transform(str(path), [trt.FuseConvActivation])
    assert model.SerializeToString() == before and ops(out) == ["Conv", "Relu"]
    with pytest.raises(ModelError, match="does not exist"):
        transform(tmp_path / "missing.onnx", [])
    (tmp_path / "junk.onnx").write_bytes(b"\x00not onnx\xff" * 10)
    with pytest.raises(ModelError, match="is not an ONNX model"):
        transform(tmp_path / "junk.onnx", [])


def test_transform_refuses_smooth_or_quantized_patterns() -> None:
    with pytest.raises(PatternPhaseError, match="QuantizeConv has phase 'quantized'"):
        transform(conv_bn(), [trt.FuseConvActivation, trt.QuantizeConv])


class AlwaysMatches(Pattern):
    phase = Phase.CONVERSION
    description = "A broken conversion that never stops matching."
    calls: ClassVar[list[str]] = []

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        return cls.hit(node)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        cls.calls.append(match.anchor)


def test_conversions_are_bounded() -> None:
    model = build([node("Relu", ["x"], ["y"])], {"x": [2]}, ["y"])
    report = transform(model, [AlwaysMatches]).report
    assert report.conversion_rounds == 8 and not report.converged
    assert len(AlwaysMatches.calls) == 8
    with pytest.raises(TypeError):
        AlwaysMatches()


def test_without_patterns_the_active_backend_supplies_them() -> None:
    set_backend("tensorrt")
    out, report = transform(conv_bn("Relu"))
    assert report.fired() == {"FuseConvActivation": 1}
    backend = trt.BACKEND
    expected = [p.__name__ for p in (*backend.conversion_patterns, *backend.fusion_patterns)]
    assert [r.name for r in report.patterns] == expected
    assert ops(out) == ["Conv", "Relu"]


def test_apply_backend_writes_the_model_and_reports(tmp_path: Path) -> None:
    source, target = tmp_path / "in.onnx", tmp_path / "out" / "trt.onnx"
    onnx.save(conv_bn("Relu"), str(source))
    report = apply_backend(source, "tensorrt", target)
    assert report.backend == "tensorrt" and report.fired() == {"FuseConvActivation": 1}
    assert (report.nodes_before, report.nodes_after) == (3, 2)
    assert ops(onnx.load(str(target))) == ["Conv", "Relu"]
    with pytest.raises(UnknownBackendError, match="unknown backend 'nope'; installed: "):
        apply_backend(source, "nope", target)


def test_a_backend_with_a_misplaced_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="QuantizeConv has phase 'quantized' but is listed in"):
        Backend("bad", fusion_patterns=[trt.QuantizeConv])
