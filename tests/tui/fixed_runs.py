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
