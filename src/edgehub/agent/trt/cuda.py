"""GPU memory and streams for running engines, through the CUDA driver library (ctypes).

Neither TensorRT image carries a Python CUDA package, but a container started with the GPU
passed through has the driver's ``libcuda.so.1``; the few calls an engine run needs (a context,
device buffers, copies, streams) are made on it directly. Every call's status is checked: a
failing one raises `RuntimeFailure` naming the call and CUDA's own message. Standard library
+ numpy.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..protocol import MissingDependencyError, RuntimeFailure

LIBRARY = "libcuda.so.1"


class Cuda:
    """The first GPU's primary context, current on this thread, with a default stream. Memory
    is held as buffers kept by name and grown as needed (`buffer`, for a sample loop) or as plain
    allocations the caller frees (`malloc` / `free`); ``close`` frees the buffers and context."""

    def __init__(self) -> None:
        try:
            self._lib = ctypes.CDLL(LIBRARY)
        except OSError as exc:
            raise MissingDependencyError(
                f"the CUDA driver ({LIBRARY}) cannot be loaded here ({exc}): run the container "
                "with the GPU passed through (docker --gpus all, NVIDIA Container Toolkit)"
            ) from exc
        self._call("cuInit", 0)
        self._device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(self._device), 0)
        self._context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self._context), self._device)
        self._call("cuCtxSetCurrent", self._context)
        self.stream = self.new_stream()  # the default stream of this context
        self._buffers: dict[str, tuple[int, int]] = {}  # name -> (address, bytes)

    def _call(self, name: str, *args: Any) -> None:
        code = getattr(self._lib, name)(*args)
        if code != 0:
            text = ctypes.c_char_p()
            self._lib.cuGetErrorString(code, ctypes.byref(text))
            detail = text.value.decode("utf-8", "replace") if text.value else f"error {code}"
            raise RuntimeFailure(f"CUDA {name} failed: {detail}")

    def malloc(self, nbytes: int) -> int:
        """A device allocation of at least ``nbytes`` bytes; the caller frees it."""
        address = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(address), ctypes.c_size_t(max(nbytes, 1)))
        return int(address.value)

    def free(self, address: int) -> None:
        self._call("cuMemFree_v2", ctypes.c_uint64(address))

    def buffer(self, name: str, nbytes: int) -> int:
        """The device address of ``name``'s buffer, of at least ``nbytes`` bytes."""
        held = self._buffers.get(name)
        if held is not None and held[1] >= nbytes:
            return held[0]
        if held is not None:
            del self._buffers[name]
            self.free(held[0])
        address = self.malloc(nbytes)
        self._buffers[name] = (address, max(nbytes, 1))
        return address

    def upload(self, address: int, array: Any) -> None:
        """Copy a C-contiguous numpy array to device memory at ``address``."""
        data = array.ctypes.data_as(ctypes.c_void_p)
        self._call("cuMemcpyHtoD_v2", ctypes.c_uint64(address), data, ctypes.c_size_t(array.nbytes))

    def download(self, array: Any, address: int) -> None:
        data = array.ctypes.data_as(ctypes.c_void_p)
        self._call("cuMemcpyDtoH_v2", data, ctypes.c_uint64(address), ctypes.c_size_t(array.nbytes))

    def new_stream(self) -> int:
        handle = ctypes.c_void_p()
        self._call("cuStreamCreate", ctypes.byref(handle), 0)
        return int(handle.value or 0)

    def synchronize(self, stream: int | None = None) -> None:
        """Wait for ``stream`` (the default stream when none is named)."""
        chosen = self.stream if stream is None else stream
        self._call("cuStreamSynchronize", ctypes.c_void_p(chosen))

    def destroy_stream(self, stream: int) -> None:
        self._call("cuStreamDestroy_v2", ctypes.c_void_p(stream))

    def close(self) -> None:
        """Free the named buffers and the default stream, and release the context."""
        for address, _ in self._buffers.values():
            self._lib.cuMemFree_v2(ctypes.c_uint64(address))
        self._buffers.clear()
        if self.stream:
            self._lib.cuStreamDestroy_v2(ctypes.c_void_p(self.stream))
            self.stream = 0
        self._lib.cuDevicePrimaryCtxRelease_v2(self._device)
