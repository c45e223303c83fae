"""The few CUDA runtime calls ``trt.ab`` needs (device memory, a stream), through ``ctypes`` on
the CUDA runtime library the full-TensorRT image ships; no CUDA Python package is needed.

Every call's error code is checked: a failing one raises `RuntimeFailure` naming the call and
CUDA's own message.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

from ..protocol import MissingDependencyError, RuntimeFailure

HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice
LIBRARIES = ("libcudart.so.12", "libcudart.so.11.0", "libcudart.so")


class CudaRuntime:
    """Device buffers and streams on the current GPU."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib
        lib.cudaGetErrorString.restype = ctypes.c_char_p
        lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        lib.cudaFree.argtypes = [ctypes.c_void_p]
        lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lib.cudaStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        lib.cudaStreamDestroy.argtypes = [ctypes.c_void_p]

    def _check(self, code: int, call: str) -> None:
        if code != 0:
            text = self._lib.cudaGetErrorString(code)
            message = text.decode("utf-8", "replace") if text else f"error {code}"
            raise RuntimeFailure(f"CUDA {call} failed: {message}")

    def malloc(self, size: int) -> int:
        pointer = ctypes.c_void_p()
        self._check(self._lib.cudaMalloc(ctypes.byref(pointer), max(1, size)), "cudaMalloc")
        return int(pointer.value or 0)

    def free(self, pointer: int) -> None:
        self._check(self._lib.cudaFree(ctypes.c_void_p(pointer)), "cudaFree")

    def upload(self, pointer: int, array: Any) -> None:
        """Copy a C-contiguous numpy array to device memory at ``pointer``."""
        source = ctypes.c_void_p(array.ctypes.data)
        code = self._lib.cudaMemcpy(ctypes.c_void_p(pointer), source, array.nbytes, HOST_TO_DEVICE)
        self._check(code, "cudaMemcpy")

    def stream(self) -> int:
        handle = ctypes.c_void_p()
        self._check(self._lib.cudaStreamCreate(ctypes.byref(handle)), "cudaStreamCreate")
        return int(handle.value or 0)

    def synchronize(self, stream: int) -> None:
        self._check(self._lib.cudaStreamSynchronize(ctypes.c_void_p(stream)), "cudaStreamSync")

    def destroy_stream(self, stream: int) -> None:
        self._check(self._lib.cudaStreamDestroy(ctypes.c_void_p(stream)), "cudaStreamDestroy")


def load_cudart() -> CudaRuntime:
    """The CUDA runtime library of this machine."""
    found = ctypes.util.find_library("cudart")
    names = ([found] if found else []) + list(LIBRARIES)
    problems = []
    for name in names:
        try:
            return CudaRuntime(ctypes.CDLL(name))
        except OSError as exc:
            problems.append(str(exc))
    raise MissingDependencyError(
        "the CUDA runtime library (libcudart) cannot be loaded here ("
        + "; ".join(problems[:2])
        + "): run in the full tensorrt image with the GPU passed through"
    )
