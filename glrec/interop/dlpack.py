"""A minimal DLPack exporter for uint8 device arrays (``torch.from_dlpack(frame)``).

DLPack hands a consumer a ``DLManagedTensor`` inside a PyCapsule named
``"dltensor"``; the consumer renames it to ``"used_dltensor"`` and calls the
tensor's deleter when done. The deleter here drops the reference that kept the
owning frame (and so its device buffer) alive; a capsule that was never
consumed runs the deleter from its own destructor.
"""

from __future__ import annotations

import ctypes
from typing import Any

_KDL_CUDA = 2
_KDL_UINT = 1


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

# Keeps each exported tensor's structs and owner alive until its deleter runs, keyed by address.
_LIVE: dict[int, tuple[Any, ...]] = {}


@_DELETER
def _delete(managed: Any) -> None:
    _LIVE.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Indexing (not attribute access) gives private function objects whose argtypes nobody else changes.
_is_valid = ctypes.pythonapi["PyCapsule_IsValid"]
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_get_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_new = ctypes.pythonapi["PyCapsule_New"]
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_NAME = b"dltensor"


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule: int) -> None:
    # Only an unconsumed capsule still carries the name "dltensor"; a consumer renamed it
    # and owns the deleter call from then on.
    if _is_valid(capsule, _NAME):
        _LIVE.pop(int(_get_pointer(capsule, _NAME)), None)


def capsule(ptr: int, shape: tuple[int, ...], device_id: int, *, owner: object) -> Any:
    """A DLPack capsule for a C-contiguous uint8 array of ``shape`` at device pointer ``ptr``."""
    shape_arr = (ctypes.c_int64 * len(shape))(*shape)
    managed = _Managed()
    managed.dl_tensor.data = ptr
    managed.dl_tensor.device = _Device(_KDL_CUDA, device_id)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = _DataType(_KDL_UINT, 8, 1)
    managed.dl_tensor.shape = shape_arr
    managed.dl_tensor.strides = None  # NULL: compact row-major
    managed.dl_tensor.byte_offset = 0
    managed.manager_ctx = None
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _LIVE[address] = (managed, shape_arr, owner)
    return _new(address, _NAME, _capsule_destructor)
