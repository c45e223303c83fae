"""Fixed runs written straight into a run store, for tests and benchmarks that need stable ids,
times and samples (the store's own writers make random ids and real times)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from edgehub.tracking import RunStore

DEVICES = ("local", "rpi")
TYPES = ("PROFILE", "COMPILE", "INFERENCE")


def fill_store(root: Path, *, count: int, at: float, samples: int = 200) -> list[str]:
    """``count`` finished runs, one a minute up to ``at``; returns their ids newest first.
    Every run alternates type, device and status; profile runs get a profile.json with
    ``samples`` raw latencies."""
    store = RunStore(root)
    rng = random.Random(7)
    ids = []
    try:
        for index in range(count):
            run_id = f"{index:04d}" + "ab" * 14
            started = at - 60.0 * (count - index)
            run_type = TYPES[index % len(TYPES)]
            run_dir = root / "runs" / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            store.create_run(
                run_id=run_id,
                project="tui-tests",
                name=f"{run_type.lower()}-{index}",
                run_type=run_type,
                component=None,
                parent_run_id=None,
                artifact_dir=run_dir,
                started_at=started,
                device=DEVICES[index % len(DEVICES)],
            )
            device = DEVICES[index % len(DEVICES)]
            store.log_param(run_id, "$runtime", "onnxruntime", started)
            store.log_param(run_id, "device", device, started)
            store.log_param(run_id, "option.runs", 100 + index, started)
            median = 1.0 + 0.25 * index
            store.log_metrics(run_id, {"latency_median_ms": median, "fps": 1000 / median}, started)
            store.log_environment(run_id, {"image": "edgehub-onnxruntime:fixed", "host": device})
            if run_type == "PROFILE":
                profile = run_dir / "profile.json"
                values = [round(median * 1000 * rng.uniform(0.9, 1.3), 3) for _ in range(samples)]
                profile.write_text(json.dumps({"samples_us": values}))
                store.log_artifact(
                    artifact_id=f"{run_id}-p",
                    run_id=run_id,
                    name="output_file",
                    file_name="profile.json",
                    sha256=hashlib.sha256(profile.read_bytes()).hexdigest(),
                    size=profile.stat().st_size,
                    path=str(profile),
                    device=None,
                    logged_at=started,
                )
            status = "FAILED" if index % 5 == 4 else "FINISHED"
            store.end_run(run_id, status, ended_at=started + 1.5 + index * 0.1)
            ids.append(run_id)
    finally:
        store.close()
    return ids[::-1]


def _artifact(store: RunStore, run_id: str, name: str, path: Path, at: float) -> None:
    store.log_artifact(
        artifact_id=f"{run_id}-{name}",
        run_id=run_id,
        name=name,
        file_name=path.name,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        size=path.stat().st_size,
        path=str(path),
        device=None,
        logged_at=at,
    )


def add_eval_run(root: Path, *, at: float) -> str:
    """A finished EVAL run recorded as `edgehub.ops.eval.measure` records one: figures and
    task metrics, a missed goal, worst samples, per_sample.json and a layer search whose first
    divergent layer is ``relu3`` (``conv3`` fused into it)."""
    run_id = "e" * 32
    run_dir = root / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    store = RunStore(root)
    try:
        store.create_run(
            run_id=run_id,
            project="tui-tests",
            name="eval-outlier",
            run_type="EVAL",
            component="Evaluator",
            parent_run_id=None,
            artifact_dir=run_dir,
            started_at=at - 30.0,
            device="local",
        )
        samples = [f"{i:03d}.npz" for i in range(8)]
        cosines = [0.91, 0.42, 0.88, 0.97, 0.35, 0.93, 0.9, 0.95]
        goals = [
            {"goal": "cosine>=0.99", "passed": False, "checks": [
                {"metric": "cosine", "output": "logits", "value": 0.789, "threshold": 0.99,
                 "passed": False}]},
            {"goal": "top1>=0.5*reference", "passed": True, "checks": [
                {"metric": "top1", "value": 0.75, "threshold": 0.4375, "passed": True}]},
        ]  # fmt: skip
        params = {
            "$runtime": "onnxruntime",
            "samples": len(samples),
            "task_metrics": ["top1"],
            "goals": [g["goal"] for g in goals],
            "goal_results": goals,
            "first_divergent_layer": "relu3",
            "worst_samples": {"logits": ["004.npz", "001.npz"]},
        }
        for key, value in params.items():
            store.log_param(run_id, key, value, at - 30.0)
        store.log_metrics(
            run_id,
            {
                "samples": 8.0,
                "logits.cosine": 0.789,
                "logits.cosine_min": 0.35,
                "logits.max_abs": 41.5,
                "logits.mean_abs": 3.25,
                "logits.snr_db": 9.5,
                "logits.psnr_db": 21.25,
                "top1": 0.75,
                "reference.top1": 0.875,
                "goals_passed": 0.0,
                "layers.runs": 4.0,
            },
            at - 1.0,
        )
        per_sample = run_dir / "per_sample.json"
        per_sample.write_text(json.dumps({
            "samples": samples,
            "outputs": {"logits": {"cosine": cosines, "max_abs": [9.0 + i for i in range(8)]}},
            "tasks": {"top1": {"model": [1.0] * 6 + [0.0] * 2, "reference": [1.0] * 7 + [0.0]}},
        }))  # fmt: skip
        rows = [("relu1", 0.01, 0.02), ("relu2", 0.03, 0.05), ("relu3", 0.41, 0.97),
                ("relu4", 0.45, 0.9), ("conv6", 0.47, 0.88)]  # fmt: skip
        measured = [
            {"index": 2 * i + 1, "node": node, "op": "Conv" if node == "conv6" else "Relu",
             "tensor": f"s{i + 1}", "compiled_tensor": f"s{i + 1}_DequantizeLinear_Output",
             "rel_l2": rel, "channel_rel_l2": channel, "cosine": 1.0 - rel / 2,
             "snr_db": 20.0 - 30 * rel, "growth": channel - (rows[i - 1][2] if i else 0.0),
             "fused": [f"conv{i + 1}"] if node.startswith("relu") else []}
            for i, (node, rel, channel) in enumerate(rows)
        ]  # fmt: skip
        layers = run_dir / "layers.json"
        layers.write_text(json.dumps({
            "threshold": 0.2, "samples": 4, "layers": 11, "runs": 4,
            "first_divergent": measured[2], "measured": measured,
            "fused_or_renamed": [{"node": f"conv{i}", "op": "Conv", "tensor": f"c{i}"}
                                 for i in range(1, 6)],
        }))  # fmt: skip
        _artifact(store, run_id, "per_sample", per_sample, at - 1.0)
        _artifact(store, run_id, "layers", layers, at - 1.0)
        store.end_run(run_id, "FINISHED", ended_at=at)
    finally:
        store.close()
    return run_id
