"""The resident agent server: a warm process that forks one job per call.

- :mod:`.serve`: ``edgehub-agent serve --socket PATH [--idle S] [--preload NS]``, the server.
- :mod:`.client`: ``edgehub-agent --server PATH COMMAND ...``, a call handed to it.
- :mod:`.job`: the forked process that runs one job.
- :mod:`.wire`: what the two say to each other on the Unix socket.
- :mod:`.spawn`: starting a server in the background for the next call.

`benchmarks/bench_ort_local.py` (b), (e) keeps what it is for: a warm job's wall time and host
CPU against ``docker exec`` of a bare script; `benchmarks/bench_ssh.py` (b) the same over SSH.
"""
