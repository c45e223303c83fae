"""edgehub's device-side agent.

Runs where the model runs (inside a toolchain container, on an SSH device) with only the standard
library, numpy and the runtime of its namespace (onnxruntime, and onnx for compiling and
inspecting, for ``ort``). It is shipped as a zipapp built by :mod:`edgehub.agent.bundle`, so
every import inside this package is relative and nothing here imports ``edgehub`` outside
``edgehub.agent``. It must keep working on Python 3.8.

Invocation::

    python edgehub-agent.pyz COMMAND --request REQUEST.json --result RESULT.json

Layout: generic plumbing here (:mod:`.entry`, :mod:`.cli`, :mod:`.commands` — which module
serves a command —, :mod:`.protocol`, :mod:`.report`, :mod:`.env`, :mod:`.tensors`,
:mod:`.inputs`, :mod:`.shapes`, :mod:`.models`, :mod:`.calibration`, :mod:`.stats`,
:mod:`.lifeline`, :mod:`.bundle`), the resident server in :mod:`.server`, and one subpackage per
runtime namespace (:mod:`.ort`): command ``NS.VERB`` is the module ``NS/VERB.py``.

See :mod:`edgehub.agent.protocol` for the request and result formats and the docstrings of the
command modules for each command's fields. Importing this package imports nothing heavy.
"""

from __future__ import annotations

AGENT_VERSION = "0.1.0"
PROTOCOL_VERSION = 1

__all__ = ["AGENT_VERSION", "PROTOCOL_VERSION"]
