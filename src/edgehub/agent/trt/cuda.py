"""GPU memory and a stream for running engines, through the CUDA driver library (ctypes).

Neither TensorRT image carries a Python CUDA package, but a container started with the GPU
passed through has the driver's ``libcuda.so.1``; the few calls an engine run needs (a context,
device buffers, copies, one stream) are made on it directly. Standard library + numpy.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..protocol import MissingDependencyError, RuntimeFailure

LIBRARY = "libcuda.so.1"


class Cuda:
    """The first GPU's primary context, made current on this thread, with one stream; device
    buffers are kept by name and grown when a larger array comes. ``close`` frees them all."""

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
        self._stream = ctypes.c_void_p()
        self._call("cuStreamCreate", ctypes.byref(self._stream), 0)
        self._buffers: dict[str, tuple[int, int]] = {}  # name -> (address, bytes)

    @property
    def stream(self) -> int:
        return int(self._stream.value or 0)

    def _call(self, name: str, *args: Any) -> None:
        code = getattr(self._lib, name)(*args)
        if code != 0:
            text = ctypes.c_char_p()
            self._lib.cuGetErrorString(code, ctypes.byref(text))
            detail = text.value.decode("utf-8", "replace") if text.value else f"error {code}"
            raise RuntimeFailure(f"CUDA {name} failed: {detail}")

    def buffer(self, name: str, nbytes: int) -> int:
        """The device address of ``name``'s buffer, of at least ``nbytes`` bytes."""
        held = self._buffers.get(name)
        if held is not None and held[1] >= nbytes:
            return held[0]
        if held is not None:
            self._call("cuMemFree_v2", ctypes.c_uint64(held[0]))
            del self._buffers[name]
        address = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(address), ctypes.c_size_t(max(nbytes, 1)))
        self._buffers[name] = (int(address.value), max(nbytes, 1))
        return int(address.value)

    def upload(self, address: int, array: Any) -> None:
        data = array.ctypes.data_as(ctypes.c_void_p)
        self._call("cuMemcpyHtoD_v2", ctypes.c_uint64(address), data, ctypes.c_size_t(array.nbytes))

    def download(self, array: Any, address: int) -> None:
        data = array.ctypes.data_as(ctypes.c_void_p)
        self._call("cuMemcpyDtoH_v2", data, ctypes.c_uint64(address), ctypes.c_size_t(array.nbytes))

    def synchronize(self) -> None:
        self._call("cuStreamSynchronize", self._stream)

    def close(self) -> None:
        for address, _ in self._buffers.values():
            self._lib.cuMemFree_v2(ctypes.c_uint64(address))
        self._buffers.clear()
        if self._stream.value:
            self._lib.cuStreamDestroy_v2(self._stream)
            self._stream = ctypes.c_void_p()
        self._lib.cuDevicePrimaryCtxRelease_v2(self._device)
