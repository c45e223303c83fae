"""`hub-tui` through its real entry point, in tmux at 80x24 (keys sent, the pane captured);
`--serve` is tested in test_serve_guard."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.tui.polling import wait_for
from tests.tui.tmux_session import Tmux


@pytest.mark.tmux
def test_hub_tui_in_tmux_moves_between_screens_and_quits_cleanly(project: Path, tmux: Tmux) -> None:
    tmux.start(project)
    screen = tmux.screen

    assert wait_for(lambda: "Devices of hub.toml" in screen(), 20), screen()
    expectations = {
        "2": "^r Launch",  # the footer (the button may sit below the fold at 80x24)
        "3": "runs",
        "4": "Toolchain images",
        "1": "Devices of hub.toml",
    }
    for key, text in expectations.items():
        tmux.keys(key)
        assert wait_for(lambda text=text: text in screen(), 15), (key, screen())  # type: ignore[misc]
    assert "1 Devices" in screen() and "q Quit" in screen() and "w Save" in screen()
    tmux.keys("q")
    assert tmux.exit_status() == "0", screen()


@pytest.mark.tmux
@pytest.mark.docker
def test_hub_tui_survives_an_outside_editor_breaking_hub_toml_mid_run(
    project: Path, tmux: Tmux, ort_image: str
) -> None:
    """A profile runs; another program saves hub.toml with a syntax error, then with a port out
    of range: the TUI shows the banner and stays up, ^k from the form's field cancels the run
    (KILLED), and it quits with status 0."""
    from edgehub.tracking import RunStore

    tmux.start(project, env={"EDGEHUB_KEEP_WARM": ""})
    screen = tmux.screen

    keys = tmux.keys  # one at a time, as typed

    assert wait_for(lambda: "Devices of hub.toml" in screen(), 20), screen()
    keys("2")
    assert wait_for(lambda: "profile options" in screen(), 15), screen()
    time.sleep(1.0)  # the options form is built once the screen has settled
    keys("BTab")  # from "Pick a model" back to the model field
    keys("-l", "model.onnx")
    for _ in range(5):  # pick, runtime, step, device: on to the runs option
        keys("Tab")
    keys("End", "C-u")
    keys("-l", "900000")
    assert wait_for(lambda: "900000" in screen() and "model.onnx" in screen(), 15), screen()
    keys("C-r")
    assert wait_for(lambda: "timing: 900000 runs" in screen(), 90), screen()
    assert "^k Cancel run" in screen()  # the footer offers it while the run goes
    hub_toml = project / "hub.toml"
    good = hub_toml.read_text()
    hub_toml.write_text(good + "\n[devices.broken\n")
    assert wait_for(lambda: "not valid" in screen(), 15), screen()
    far = '[devices.far]\nprovider = "local"\n[devices.far.ssh]\nhost = "h"\nuser = "u"\nport = 0\n'
    hub_toml.write_text(good + far)
    assert wait_for(lambda: "65535" in screen(), 15), screen()
    assert "^k Cancel run" in screen()  # still running
    keys("C-k")  # the focus is still in the runs field
    assert wait_for(lambda: "Cancel run" not in screen(), 60), screen()
    assert "900000" in screen()  # the field did not take ^k
    keys("C-q")
    assert tmux.exit_status() == "0", screen()
    store = RunStore(project / ".hub")
    try:
        (run,) = store.list_runs(limit=None)
        assert run.status == "KILLED"
    finally:
        store.close()
