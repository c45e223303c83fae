"""`LabgridSession`: a `PlacePool` on a real labgrid coordinator (labgrid >= 24, gRPC).

labgrid's client (`labgrid.remote.client.ClientSession`) is asyncio based: the session runs
its own event loop in a daemon thread, and each call waits for its coroutine there. Places are
acquired and released with the coordinator's ``AcquirePlace``/``ReleasePlace`` calls, under the
identity ``host/user`` labgrid gives every client (``LG_HOSTNAME``/``LG_USERNAME`` override).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from edgehub.acquire.labgrid_pool import PlaceInfo
from edgehub.errors import EnvironmentProblem

T = TypeVar("T")
_CALL_TIMEOUT_S = 30.0


def _client() -> Any:
    try:
        from labgrid.remote import client
    except ImportError:
        raise EnvironmentProblem(
            "this device uses a labgrid pool, but labgrid is not installed; install it with "
            "pip install 'edgehub[labgrid]'"
        ) from None
    return client


class LabgridSession:
    """A connection to the coordinator at ``address`` (``HOST:PORT``)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._labgrid = _client()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="edgehub-labgrid", daemon=True
        )
        self._thread.start()
        try:
            self._session = self._call(self._start())
        except BaseException:
            self._stop_loop()
            raise

    async def _start(self) -> Any:
        session = self._labgrid.ClientSession(self.address, asyncio.get_running_loop())
        try:
            await asyncio.wait_for(session.start(), _CALL_TIMEOUT_S)
        except (TimeoutError, self._labgrid.Error) as error:
            await session.close()
            raise EnvironmentProblem(
                f"cannot reach the labgrid coordinator at {self.address}: {error or 'timeout'}; "
                "check devices.<name>.labgrid.coordinator"
            ) from None
        return session

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(_CALL_TIMEOUT_S + 5)

    async def _places(self) -> list[PlaceInfo]:
        session = self._session
        await session.sync_with_coordinator()
        found = []
        for place in session.places.values():
            service = self._network_service(place)
            found.append(
                PlaceInfo(
                    name=place.name,
                    tags={str(k): str(v) for k, v in place.tags.items()},
                    acquired_by=place.acquired or None,
                    address=service.get("address"),
                    username=service.get("username"),
                    port=int(service["port"]) if service.get("port") else None,
                    comment=str(place.comment or ""),
                )
            )
        return sorted(found, key=lambda p: p.name)

    def _network_service(self, place: Any) -> dict[str, Any]:
        """The params of the first ``NetworkService`` resource the place matches."""
        for exporter, groups in sorted(self._session.resources.items()):
            for group_name, group in sorted(groups.items()):
                for name, resource in sorted(group.items()):
                    path = (exporter, group_name, resource.cls, name)
                    if resource.cls == "NetworkService" and place.hasmatch(path):
                        return dict(resource.params)
        return {}

    def places(self) -> list[PlaceInfo]:
        return self._call(self._places())

    async def _acquire(self, name: str) -> bool:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as messages

        try:
            await self._session.stub.AcquirePlace(messages.AcquirePlaceRequest(placename=name))
        except Exception as error:  # grpc.aio.AioRpcError: held by someone else, or gone
            if "already acquired" in str(error) or "already acquired" in repr(error):
                return False
            raise EnvironmentProblem(f"labgrid could not acquire place {name}: {error}") from None
        await self._session.sync_with_coordinator()
        return True

    def acquire(self, name: str) -> bool:
        return self._call(self._acquire(name))

    async def _release(self, name: str, fromuser: str | None) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as messages

        request = messages.ReleasePlaceRequest(placename=name)
        if fromuser is not None:
            request.fromuser = fromuser
        await self._session.stub.ReleasePlace(request)
        await self._session.sync_with_coordinator()

    def release(self, name: str, fromuser: str | None = None) -> None:
        self._call(self._release(name, fromuser))

    async def _set_comment(self, name: str, comment: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as messages

        request = messages.SetPlaceCommentRequest(placename=name, comment=comment)
        await self._session.stub.SetPlaceComment(request)

    def set_comment(self, name: str, comment: str) -> None:
        self._call(self._set_comment(name, comment))

    async def _close(self) -> None:
        await self._session.stop()
        await self._session.close()

    def close(self) -> None:
        try:
            self._call(self._close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()
