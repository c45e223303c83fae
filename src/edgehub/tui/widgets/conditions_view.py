"""`ConditionsView`: the conditions a profile's timed loop ran under (``conditions.*`` entries
of its environment, recorded by ``agent.conditions``): named plainly, in a fixed order, under
a line saying whether the measurement looks disturbed (throttling, heating, a busy machine:
`edgehub.tracking.comparability`'s own rules)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Label

from edgehub.tui.cells import plain

LABELS = {
    "cpu_model": "CPU model",
    "governor": "frequency governor",
    "cur_freq_mhz": "CPU0 frequency (MHz)",
    "max_freq_mhz": "CPU0 max frequency (MHz)",
    "online_cpus": "online CPUs",
    "usable_cpus": "usable CPUs (affinity)",
    "host_cpus": "host CPUs",
    "cpu_quota": "container CPU quota",
    "cpuset": "container cpuset",
    "mem_available_mb": "memory available (MB)",
    "cgroup_mem_limit_mb": "container memory limit (MB)",
    "load_1m": "load (1 min) at start",
    "load_1m_end": "load (1 min) at end",
    "other_cpu_share": "other processes' CPU share",
    "other_cpu_s": "other processes' CPU (s)",
    "loop_s": "timed loop (s)",
    "temp_max_c": "hottest zone at start (°C)",
    "temp_max_c_end": "hottest zone at end (°C)",
    "throttled": "throttled",
}


def disturbances(environment: dict[str, str]) -> list[str]:
    """What makes this run's own measurement suspect, by the comparability rules."""
    from edgehub.tracking.comparability import check_comparability

    reasons = check_comparability(environment, environment).reasons
    return [r.replace("run A", "this run") for r in reasons if "run A" in r]


def _shown(key: str, value: str) -> str:
    if key == "other_cpu_share":
        try:
            return f"{100 * float(value):.1f}%"
        except ValueError:
            return value
    return value


class ConditionsView(Vertical):
    DEFAULT_CSS = """
    ConditionsView { height: 1fr; padding: 0 1; }
    ConditionsView > Label { width: 100%; height: auto; }
    ConditionsView > DataTable { height: 1fr; }
    """

    def __init__(self, conditions: dict[str, str], environment: dict[str, str]) -> None:
        super().__init__(id="conditions")
        self.conditions = conditions
        self.environment = environment

    def compose(self) -> ComposeResult:
        reasons = disturbances(self.environment)
        verdict = (
            "disturbed: " + "; ".join(reasons)
            if reasons
            else "undisturbed: no throttling, heating or busy machine recorded"
        )
        yield Label(verdict, id="conditions-verdict", markup=False)
        yield DataTable(id="table-conditions", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("condition", "value")
        known = [k for k in LABELS if k in self.conditions]
        others = sorted(k for k in self.conditions if k not in LABELS)
        for key in [*known, *others]:
            table.add_row(*plain(LABELS.get(key, key), _shown(key, self.conditions[key])))
