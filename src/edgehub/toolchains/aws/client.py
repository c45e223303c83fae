"""The ``devicefarm`` client: made with botocore (imported when an ``aws`` device is used) from
the standard AWS credential chain, whose source is reported but never the keys; every call's
failure is one line. Tests hand in a client of their own through `client_factory`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from edgehub.errors import EnvironmentProblem, ToolchainError

INSTALL_HINT = "pip install 'edgehub[aws]'"
CHAIN_HINT = (
    "no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
    "with ~/.aws/credentials (`aws configure`), or run where an instance or container role "
    "applies; edgehub stores none of them"
)
ClientFactory = Callable[[str], Any]
_FACTORY: contextvars.ContextVar[ClientFactory | None] = contextvars.ContextVar(
    "edgehub_devicefarm_client", default=None
)


class DeviceFarmUnreachable(EnvironmentProblem):
    """AWS Device Farm cannot be reached, or refuses the credentials (exit 3)."""


@contextlib.contextmanager
def client_factory(factory: ClientFactory) -> Iterator[None]:
    """Within the block, ``factory(region)`` makes the ``devicefarm`` client."""
    token = _FACTORY.set(factory)
    try:
        yield
    finally:
        _FACTORY.reset(token)


def _session() -> Any:
    try:
        import botocore.session
    except ImportError:
        raise EnvironmentProblem(
            f"the aws provider needs botocore, which is not installed; {INSTALL_HINT}"
        ) from None
    return botocore.session.get_session()


def credential_source() -> str:
    """Where the AWS chain found credentials (never the keys); `EnvironmentProblem` if none."""
    try:
        credentials = _session().get_credentials()
    except Exception as error:  # a malformed ~/.aws/config, an unknown AWS_PROFILE
        raise EnvironmentProblem(f"AWS credentials could not be read: {_one_line(error)}") from None
    if credentials is None:
        raise EnvironmentProblem(CHAIN_HINT)
    return str(getattr(credentials, "method", "") or "unknown source")


def make_client(region: str) -> tuple[Any, str]:
    """A ``devicefarm`` client for ``region`` (a test's factory when one is set), and where its
    credentials came from."""
    factory = _FACTORY.get()
    if factory is not None:
        return factory(region), "the caller's client"
    source = credential_source()
    return _session().create_client("devicefarm", region_name=region), source


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:300] or type(error).__name__


def farm_call(
    failure: type[ToolchainError], doing: str, call: Callable[..., Any], /, **params: Any
) -> Any:
    """``call(**params)``; a service error is ``failure`` saying what was being done, and no
    network or refused credentials is `DeviceFarmUnreachable`."""
    try:
        return call(**params)
    except Exception as error:
        if not type(error).__module__.startswith(("botocore", "urllib3")):
            raise  # not the service's answer: a fault of ours, shown as such
        name = type(error).__name__
        code = ""
        response = getattr(error, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
        if name in (
            "EndpointConnectionError",
            "ConnectTimeoutError",
            "ReadTimeoutError",
        ) or code in (
            "UnrecognizedClientException",
            "InvalidSignatureException",
            "ExpiredTokenException",
            "AccessDeniedException",
        ):
            raise DeviceFarmUnreachable(
                f"AWS Device Farm {doing}: {_one_line(error)}; check the network and the "
                "credentials' permissions (devicefarm:*)"
            ) from None
        if name == "NoCredentialsError":
            raise EnvironmentProblem(CHAIN_HINT) from None
        raise failure(f"AWS Device Farm {doing}: {_one_line(error)}") from None


def farm_pages(
    failure: type[ToolchainError], doing: str, call: Callable[..., Any], key: str, /, **params: Any
) -> Iterator[dict[str, Any]]:
    """The items under ``key`` of every page of list call ``call(**params)``, following its
    ``nextToken``; each page is a `farm_call`."""
    token: str | None = None
    while True:
        answer = farm_call(
            failure, doing, call, **params, **({"nextToken": token} if token else {})
        )
        yield from answer.get(key) or []
        token = answer.get("nextToken")
        if not token:
            return
