"""Access to the ``qai_hub`` client: loading it (the one seam tests replace), checking that it
is usable (accepted version, a configured token, which edgehub never shows) and mapping its
errors to edgehub's. A service it cannot reach is `QAIHubUnreachable` (an environment problem),
after `CONNECT_RETRIES` short retries instead of the client's six long ones (about 47 s).
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from edgehub.errors import EdgehubError, EnvironmentProblem, ToolchainError

ACCEPTED_CLIENT = "0.56"  # the minor release the pinned extra installs (qai-hub==0.56.0)
INSTALL_HINT = "pip install 'edgehub[qai-hub]'"
CONFIGURE_HINT = (
    "run `qai-hub configure --api_token TOKEN` (it writes ~/.qai_hub/client.ini; "
    "$QAIHUB_CLIENT_INI points elsewhere); the token never goes in hub.toml"
)
CONNECT_RETRIES = 2  # retries of a failed request (the client's default is 6)
RETRY_BACKOFF_S = 0.25  # first pause between them, doubling (the client's default: 0.75)
T = TypeVar("T")


class QAIHubSetupError(EnvironmentProblem):
    """The qai-hub client is missing, of a version edgehub does not accept, or has no token."""


def load_qai_hub() -> Any:
    """The ``qai_hub`` module (imported here, only when a qai_hub device is used)."""
    try:
        import qai_hub
    except ImportError:
        raise QAIHubSetupError(f"the qai-hub client is not installed; {INSTALL_HINT}") from None
    _bound_retries()
    return qai_hub


class QAIHubUnreachable(EnvironmentProblem):
    """Qualcomm AI Hub cannot be reached from here (no network, DNS, proxy, firewall)."""


def _bound_retries() -> None:
    """Fewer and shorter retries in the client's HTTP sessions (read when each is made)."""
    try:
        from qai_hub.util import session
    except ImportError:  # another client layout: its own defaults apply
        return
    session.MAX_RETRIES = min(getattr(session, "MAX_RETRIES", CONNECT_RETRIES), CONNECT_RETRIES)
    session.BACKOFF_FACTOR = RETRY_BACKOFF_S


def _connection_failure(error: BaseException) -> str | None:
    """Why the connection failed, if ``error`` (or what caused it) is a failed connection or a
    timeout of the HTTP library underneath the client; else ``None``."""
    seen: set[int] = set()
    found: str | None = None
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        module = type(current).__module__.split(".")[0]
        name = type(current).__name__
        if module in ("requests", "urllib3") and ("Connection" in name or "Timeout" in name):
            found = found or name
        if isinstance(current, OSError) and current.strerror:
            found = current.strerror  # the innermost reason: "Connection refused"
        current = current.__cause__ or current.__context__
    if found is None and isinstance(error, (ConnectionError, TimeoutError)):
        found = type(error).__name__
    return found


def config_path() -> Path:
    """Where qai-hub reads its configuration: ``$QAIHUB_CLIENT_INI``, else the default."""
    return Path(os.environ.get("QAIHUB_CLIENT_INI") or "~/.qai_hub/client.ini").expanduser()


def token_configured(path: Path | None = None) -> bool:
    """Whether qai-hub's configuration file has a non-empty ``[api] api_token``."""
    parser = configparser.ConfigParser()
    try:
        if not parser.read(path or config_path()):
            return False
    except configparser.Error:
        return False
    return bool(parser.get("api", "api_token", fallback="").strip())


def version_accepted(version: str | None) -> bool:
    if not version:
        return False
    return version == ACCEPTED_CLIENT or version.startswith(ACCEPTED_CLIENT + ".")


def installed_client_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("qai-hub")
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class QAIHubCheck:
    """What ``hub devices check`` reports for a qai_hub device (never the token itself)."""

    config_path: str
    token_configured: bool
    client_version: str | None
    version_accepted: bool

    @property
    def ok(self) -> bool:
        return self.token_configured and self.version_accepted

    @property
    def message(self) -> str:
        if self.client_version is None:
            return f"qai-hub client not installed; {INSTALL_HINT}"
        if not self.version_accepted:
            return (
                f"qai-hub {self.client_version} is installed but edgehub works with "
                f"{ACCEPTED_CLIENT}.x; {INSTALL_HINT}"
            )
        if not self.token_configured:
            return f"no API token in {self.config_path}; {CONFIGURE_HINT}"
        return f"qai-hub {self.client_version}, API token configured in {self.config_path}"


def check_qai_hub() -> QAIHubCheck:
    """Whether Qualcomm AI Hub is usable from here: an accepted client and a token (offline)."""
    version = installed_client_version()
    return QAIHubCheck(
        config_path=str(config_path()),
        token_configured=token_configured(),
        client_version=version,
        version_accepted=version_accepted(version),
    )


def ready_client() -> Any:
    """The ``qai_hub`` module after checking its version and that a token is configured."""
    hub = load_qai_hub()
    version = str(getattr(hub, "__version__", "") or "")
    if not version_accepted(version):
        raise QAIHubSetupError(
            f"qai-hub {version or '(unknown version)'} is installed but edgehub works with "
            f"{ACCEPTED_CLIENT}.x; {INSTALL_HINT}"
        )
    if not token_configured():
        raise QAIHubSetupError(f"no Qualcomm AI Hub API token in {config_path()}; {CONFIGURE_HINT}")
    return hub


_BOX = re.compile(r"[\u2500-\u257f]+")


def one_line(message: str) -> str:
    """A client message (often drawn in a text box over several lines) as one line."""
    return " ".join(_BOX.sub(" ", message).split())


def hub_call(
    hub: Any,
    failure: type[ToolchainError],
    what: str,
    fn: Callable[..., T],
    *args: Any,
    **kwargs: Any,
) -> T:
    """Call ``fn`` of the client; its errors become one-line edgehub errors saying ``what``
    was being done (a ``failure`` for the service's refusals and failures)."""
    try:
        return fn(*args, **kwargs)
    except EdgehubError:
        raise
    except Exception as error:
        text = one_line(str(error)) or type(error).__name__
        reason = _connection_failure(error)
        if reason is not None:
            raise QAIHubUnreachable(
                f"cannot reach Qualcomm AI Hub while {what} ({reason}); check the network "
                "connection and proxy settings (HTTPS_PROXY), then try again"
            ) from None
        if isinstance(error, getattr(hub, "UserError", ())):
            lowered = text.lower()
            if "no longer supported" in lowered:
                raise QAIHubSetupError(
                    f"Qualcomm AI Hub no longer accepts qai-hub "
                    f"{getattr(hub, '__version__', '?')}: update edgehub's qai-hub pin and "
                    f"{INSTALL_HINT}"
                ) from None
            if "authenticate" in lowered or "api token" in lowered:
                raise QAIHubSetupError(
                    f"Qualcomm AI Hub rejected the API token while {what}; {CONFIGURE_HINT}"
                ) from None
            raise failure(f"Qualcomm AI Hub refused {what}: {text}") from None
        if type(error).__name__ == "RateLimitedError":  # not exported by qai_hub 0.56
            raise failure(
                f"Qualcomm AI Hub is rate-limiting {what}: {text}; try again later"
            ) from None
        if isinstance(error, getattr(hub, "Error", ())):
            raise failure(f"Qualcomm AI Hub failed while {what}: {text}") from None
        raise failure(
            f"could not reach Qualcomm AI Hub while {what}: {type(error).__name__}: {text}"
        ) from None
