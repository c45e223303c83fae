"""Providers other than a runtime's local one are imported when a device of their type first
runs a component (issue 39), and the `@Component.provider` API behaves as when every provider
registered on import: the same provider list, a second ``ssh`` provider refused, a user's own
provider type served. Each case runs in a fresh interpreter, as a user's script does."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_describing_a_runtime_imports_no_other_provider_nor_what_only_some_commands_use() -> None:
    done = _python(
        """
        import sys
        from edgehub.core.runtimes import get_runtime
        ort = get_runtime("onnxruntime")
        print(ort.invoker.providers())
        for name in ("remote.ssh_agent", "onnxruntime.batch", "ab_agent", "qai_hub.compile",
                     "onnxruntime.embedl_onnxruntime"):
            print(name, f"edgehub.toolchains.{name}" in sys.modules)
        """
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "['local', 'ssh', 'qai_hub', 'embedl_onnxruntime']"
    assert [line.split()[1] for line in lines[1:]] == ["False"] * 5


def test_a_second_provider_for_a_type_served_on_demand_is_refused() -> None:
    for runtime, component, provider in (
        ("onnxruntime", "invoker", "ssh"),
        ("tflite", "profiler", "ssh"),
        ("tensorrt", "compiler", "trtexec"),
    ):
        done = _python(
            f"""
            from edgehub.core.runtimes import get_runtime
            cls = get_runtime({runtime!r}).{component}
            try:
                cls.provider({provider!r})(lambda ctx, *a, device=None, **kw: None)
            except ValueError as error:
                print(error)
            """
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"Duplicate provider type {provider!r}"), done.stdout


def test_a_users_provider_is_served_and_the_announced_ones_still_load() -> None:
    done = _python(
        """
        from edgehub.core.invoke import ONNXRuntimeInvoker

        @ONNXRuntimeInvoker.provider("my_board")
        def mine(ctx, model, input_data=None, *, device=None, **kwargs):
            return "mine"

        print(ONNXRuntimeInvoker.providers())
        print(ONNXRuntimeInvoker.provider_for("my_board")[0] is mine)
        print(ONNXRuntimeInvoker.provider_for("ssh")[0].__name__)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['local', 'ssh', 'qai_hub', 'embedl_onnxruntime', 'my_board']",
        "True",
        "_invoke_local",
    ]
