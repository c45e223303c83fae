"""`--pin-cpus`: the CPU list check (`edgehub.ops.pinning`), the container's cpuset in its
create body, and the affinity text the conditions record."""

from __future__ import annotations

import pytest

from edgehub.agent.conditions import _cpu_list_text, static_conditions
from edgehub.errors import UsageError
from edgehub.ops.pinning import check_cpu_list
from edgehub.runners.docker.container import ContainerSettings


@pytest.mark.parametrize("text", ["0", " 0-1 ", "0,2-3", "1,3,5"])
def test_cpu_lists_are_accepted(text: str) -> None:
    assert check_cpu_list(text) == text.strip()


@pytest.mark.parametrize(
    "text", ["", "a", "0;id", "$(id)", "0 1", "-1", "1-", "3-1", "0,,1", "12345"]
)
def test_other_text_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="pin_cpus"):
        check_cpu_list(text)


def test_the_container_is_created_with_the_cpuset() -> None:
    pinned = ContainerSettings("img", cpuset="0-1").config(["true"], {}, {})
    assert pinned["HostConfig"]["CpusetCpus"] == "0-1"
    plain = ContainerSettings("img").config(["true"], {}, {})
    assert "CpusetCpus" not in plain["HostConfig"]


def test_the_affinity_is_recorded_as_a_cpu_list() -> None:
    assert _cpu_list_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    record = static_conditions()
    import os

    assert record["cpu_affinity"] == _cpu_list_text(sorted(os.sched_getaffinity(0)))
