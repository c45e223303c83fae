"""How the custom runs of tests/data/store-v1 were written (with the release of that store)."""

import sys
import time

from edgehub.core import HubContext

if len(sys.argv) > 1 and sys.argv[1] == "hang":
    with (
        HubContext(project_name="fixture", artifact_base_dir="store") as ctx,
        ctx.open_run("CUSTOM", "hangs"),
    ):
        ctx.client.log_param("note", "killed with SIGKILL")
        print("ready", flush=True)
        time.sleep(60)

TAGS = {"team": "vision", "ci": "yes"}
with HubContext(project_name="fixture", artifact_base_dir="store", tags=TAGS) as ctx:
    with ctx.open_run("EVAL", "accuracy eval") as parent:
        ctx.client.log_params(
            {"dataset": "val-100", "batch": 8, "thresholds": [0.5, 0.9], "extra": {"a": 1}}
        )
        for step, acc in enumerate([0.5, 0.7, 0.81]):
            ctx.client.log_metric("top1", acc, step=step)
        ctx.client.log_metrics({"loss": 0.42})
        (ctx.artifact_dir / "report.txt").write_text("top1=0.81\n")
        ctx.client.log_artifact(ctx.artifact_dir / "report.txt", name="report")
        ctx.client.log_tag("stage", "nightly")
    with ctx.open_run("CUSTOM", "child step", parent_run_id=parent.run_id):
        ctx.client.log_param("value", 2.5)
        ctx.client.log_metric("double", 5.0)
        ctx.client.log_environment({"gpu": "none"})
