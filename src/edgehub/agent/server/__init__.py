"""The resident agent server: a warm process that forks one job per call.

:mod:`.serve` is the server (``edgehub-agent serve``), :mod:`.client` a call handed to it
(``edgehub-agent --server PATH ...``), :mod:`.job` the forked process of one job, :mod:`.wire`
what they say on the Unix socket, :mod:`.spawn` starting a server for the next call.
`benchmarks/bench_ort_local.py` (b), (e) and `benchmarks/bench_ssh.py` (b) time a warm job.
"""
