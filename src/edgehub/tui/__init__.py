"""`hub-tui`: the Textual terminal UI over hub.toml, runs and live logs.

It calls `edgehub.ops` exactly as `hub` does and holds no orchestration of its own: blocking
calls run in thread workers and come back as messages (`messages`). `app` starts it;
`screens/` hold one screen per module, `widgets/` one widget per module; `runs_data` is the
only module that reads the run store.
"""
