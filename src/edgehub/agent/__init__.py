"""edgehub's device-side agent.

Runs where the model runs (a toolchain container, an SSH device) with only the standard library,
numpy and its namespace's runtime, on Python 3.8 or later. It ships as a zipapp built by
:mod:`edgehub.agent.bundle`, so every import inside it is relative and nothing here imports
``edgehub`` outside ``edgehub.agent``. Invocation::

    python edgehub-agent.pyz COMMAND --request REQUEST.json --result RESULT.json

Generic plumbing lives here (:mod:`.entry`, :mod:`.cli`, :mod:`.commands`, :mod:`.protocol`
for the request and result formats, ...), the resident server in :mod:`.server`, and one
subpackage per runtime namespace: command ``NS.VERB`` is the module ``NS/VERB.py``, whose
docstring lists its fields. Importing this package imports nothing heavy.
"""

from __future__ import annotations

AGENT_VERSION = "0.1.0"
PROTOCOL_VERSION = 1

__all__ = ["AGENT_VERSION", "PROTOCOL_VERSION"]
