"""The trtexec parser on the documented output formats of TensorRT 10.x / 8.6 and 8.0-8.5
(files in trtexec_outputs/, written from sampleReporting.cpp's formats), and on the JSON exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgehub.toolchains.tensorrt import trtexec_parse as tp

OUTPUTS = Path(__file__).with_name("trtexec_outputs")


def test_trt10_summary_has_every_statistic_with_all_percentiles() -> None:
    summary = tp.parse_summary((OUTPUTS / "summary_trt10.txt").read_text())
    assert summary.version == "10.4.0"
    assert summary.throughput_qps == 234.19
    assert set(summary.statistics) == {"latency", "enqueue", "h2d", "gpu_compute", "d2h"}
    latency = summary.statistics["latency"]
    assert (latency.min, latency.median, latency.max) == (4.27838, 4.29718, 5.82495)
    assert latency.percentiles == {50.0: 4.29718, 90.0: 4.30725, 95.0: 4.31128, 99.0: 4.32874}
    assert summary.host_walltime_s == 3.00884 and summary.gpu_compute_total_s == 3.00455
    assert summary.queries == 702 and summary.warmup_queries == 47
    assert summary.unstable_cov_pct == 2.13
    assert summary.warnings and summary.warnings[0].startswith("GPU compute time is unstable")
    metrics = tp.summary_metrics(summary)
    assert metrics["latency_p99_ms"] == 4.32874 and metrics["latency_median_ms"] == 4.29718
    assert metrics["gpu_compute_p90_ms"] == 4.28711 and metrics["d2h_mean_ms"] == 0.00736491
    assert metrics["throughput_qps"] == 234.19


def test_trt84_summary_with_one_percentile_and_end_to_end_latency() -> None:
    summary = tp.parse_summary((OUTPUTS / "summary_trt84.txt").read_text())
    assert summary.version == "8.4.3"
    assert summary.statistics["latency"].percentiles == {99.0: 33.8}
    assert summary.statistics["end_to_end"].mean == 63.4
    assert summary.statistics["enqueue"].min == pytest.approx(0.012)  # exponent notation
    assert summary.unstable_cov_pct is None and summary.queries == 94


@pytest.mark.parametrize(
    ("banner", "version"),
    [
        ("[TensorRT v8601]", "8.6.1"),
        ("[TensorRT v8205]", "8.2.5"),
        ("[TensorRT v100800]", "10.8.0"),
    ],
)
def test_version_banners(banner: str, version: str) -> None:
    assert tp.parse_version(f"&&&& RUNNING TensorRT.trtexec {banner} # trtexec") == version


def test_text_without_a_summary() -> None:
    summary = tp.parse_summary("[E] Error[1]: engine plan file is not compatible\n")
    assert not summary.found and tp.summary_metrics(summary) == {}


def test_exported_times_give_per_query_samples() -> None:
    queries = [
        {"startEnqMs": 0.0, "endEnqMs": 0.05, "h2dMs": 0.01, "computeMs": 4.2, "d2hMs": 0.007,
         "latencyMs": 4.217},
        {"startEnqMs": 5.0, "endEnqMs": 5.04, "h2dMs": 0.012, "computeMs": 4.3, "d2hMs": 0.008,
         "latencyMs": 4.32},
    ]  # fmt: skip
    samples = tp.parse_times(json.dumps(queries))
    assert samples["latency"] == [4.217, 4.32] and samples["gpu_compute"] == [4.2, 4.3]
    assert samples["enqueue"] == pytest.approx([0.05, 0.04])
    with pytest.raises(ValueError, match="not JSON"):
        tp.parse_times("{oops")


def test_exported_layer_profile() -> None:
    text = json.dumps(
        [
            {"count": 702},
            {"name": "conv1 + relu1", "timeMs": 70.2, "averageMs": 0.1, "medianMs": 0.099,
             "percentage": 60.0},
            {"name": "fc", "timeMs": 46.8, "averageMs": 0.0667, "percentage": 40.0},
        ]
    )  # fmt: skip
    rows = tp.parse_layer_profile(text)
    assert [r["name"] for r in rows] == ["conv1 + relu1", "fc"]
    assert rows[0]["runs"] == 702 and rows[0]["share"] == 0.6
    assert rows[1]["median_ms"] == 0.0667  # older versions export no median


def test_exported_outputs_keep_the_engine_dtypes() -> None:
    text = json.dumps(
        [
            {"name": "probabilities", "dimensions": "1x3", "values": [0.25, 0.5, 0.25]},
            {"name": "label", "dimensions": "1", "values": [2]},
            {"name": "mask", "dimensions": "2x1", "values": [1, 0]},
            {"name": "half", "dimensions": "2", "values": [0.1, "inf"]},
        ]
    )
    dtypes = {"probabilities": "float32", "label": "int64", "mask": "bool", "half": "float16"}
    outputs = tp.parse_exported_outputs(text, dtypes)
    assert outputs["probabilities"].dtype == np.float32 and outputs["probabilities"].shape == (1, 3)
    assert outputs["label"].dtype == np.int64 and outputs["label"].tolist() == [2]
    assert outputs["mask"].dtype == np.bool_ and outputs["mask"].tolist() == [[True], [False]]
    assert outputs["half"].dtype == np.float16 and np.isinf(outputs["half"][1])
    with pytest.raises(ValueError, match="3 values but dimensions"):
        tp.parse_exported_outputs(
            json.dumps([{"name": "x", "dimensions": "2x2", "values": [1, 2, 3]}])
        )


def test_profile_document_from_a_profile_runs_files(tmp_path: Path) -> None:
    from edgehub.toolchains.tensorrt.local import profile_document

    (tmp_path / "trtexec.log").write_text((OUTPUTS / "summary_trt10.txt").read_text())
    latencies = [4.2, 4.3, 4.25, 4.4, 4.22]
    (tmp_path / "times.json").write_text(
        json.dumps([{"latencyMs": v, "computeMs": v - 0.02} for v in latencies])
    )
    document = profile_document(tmp_path)
    metrics = document["metrics"]
    assert metrics["latency_median_ms"] == 4.25 and metrics["latency_max_ms"] == 4.4
    assert metrics["gpu_compute_median_ms"] == 4.23
    assert metrics["trtexec_latency_p99_ms"] == 4.32874 and metrics["throughput_qps"] == 234.19
    assert document["trtexec_version"] == "10.4.0"
