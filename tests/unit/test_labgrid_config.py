"""`[devices.X.labgrid]` in hub.toml, and which places of a pool match a device (no
coordinator needed: the pool's places are given as data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgehub.acquire.labgrid_pool import PlaceInfo, matching_places
from edgehub.config import load_config
from edgehub.core.device.configs import LabgridConfig
from edgehub.errors import ConfigError


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "hub.toml"
    path.write_text(text)
    return load_config(path)


def test_labgrid_table_loads_with_its_defaults(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        '[devices.rpi]\nprovider = "embedl_onnxruntime"\n[devices.rpi.labgrid]\n'
        'coordinator = "lab:20408"\nplace = "rpi-*"\ntags = ["board=rpi4"]\n',
    )
    section = config.devices["rpi"]  # type: ignore[attr-defined]
    settings = LabgridConfig(**section.labgrid.values)
    assert settings == LabgridConfig("lab:20408", "rpi-*", ("board=rpi4",), 3600.0)
    assert config.devices["local"].labgrid is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('[devices.x]\nprovider = "local"\n[devices.x.labgrid]\nplaec = "a"\n', "plaec"),
        ('[devices.x]\nprovider = "local"\n[devices.x.labgrid]\nacquire_timeout = -1\n', "timeout"),
        ('[devices.x]\nprovider = "local"\n[devices.x.labgrid]\ntags = "a=b"\n', "tags"),
        ('[devices.x]\nprovider = "qai_hub"\nspec = "S24"\n[devices.x.labgrid]\n', "qai_hub"),
    ],
)
def test_bad_labgrid_tables(tmp_path: Path, table: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        _load(tmp_path, table)


def test_matching_places_by_glob_and_tags() -> None:
    places = [
        PlaceInfo("rpi-1", {"board": "rpi4"}),
        PlaceInfo("rpi-2", {"board": "rpi5"}),
        PlaceInfo("jetson-1", {"board": "rpi4"}),
    ]
    config = LabgridConfig(place="rpi-*", tags=("board=rpi4",))
    assert [p.name for p in matching_places(places, config)] == ["rpi-1"]
    assert len(matching_places(places, LabgridConfig())) == 3
