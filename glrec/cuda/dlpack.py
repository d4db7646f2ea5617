"""Minimal DLPack both ways: exporting uint8 device frames, importing arrays handed to ``Recorder.write``.

DLPack hands a consumer a ``DLManagedTensor`` inside a PyCapsule named
``"dltensor"``; the consumer renames it to ``"used_dltensor"`` and calls the
tensor's deleter when done. The deleter here drops the reference that kept the
owning frame (and so its device buffer) alive; a capsule that was never
consumed runs the deleter from its own destructor. :func:`import_capsule` is
the consumer's half: it reads the tensor's description and returns a view
whose ``release()`` calls the producer's deleter once.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
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


def _delete_managed(managed: Any) -> None:
    _LIVE.pop(ctypes.addressof(managed.contents), None)


_delete = _DELETER(_delete_managed)  # the C callback; kept at module level so it is never collected


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _capi(name: str, restype: Any, *argtypes: Any) -> Any:
    """A private function object for the C API function ``name``.

    Indexing (not attribute access) gives a new function object, whose argtypes nobody else changes.
    """
    fn = ctypes.pythonapi[name]
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR)
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_is_valid_obj = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_get_pointer_obj = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_NAME = b"dltensor"
_USED = b"used_dltensor"


def _destroy_capsule(capsule: int) -> None:
    # Only an unconsumed capsule still carries the name "dltensor"; a consumer renamed it
    # and owns the deleter call from then on.
    if _is_valid(capsule, _NAME):
        _LIVE.pop(int(_get_pointer(capsule, _NAME)), None)


_capsule_destructor = _CAPSULE_DESTRUCTOR(_destroy_capsule)


def capsule(
    ptr: int,
    shape: tuple[int, ...],
    device_id: int,
    *,
    owner: object,
    dtype: str = "u1",
    strides: tuple[int, ...] | None = None,
    byte_offset: int = 0,
    device_type: int = _KDL_CUDA,
) -> Any:
    """A DLPack capsule for an array of ``shape`` at device pointer ``ptr`` (+ ``byte_offset``).

    Defaults: C-contiguous uint8 in CUDA memory. ``dtype`` is a numpy type string
    (``"u1"``, ``"u2"``, ``"f4"``, ...), ``strides`` are in elements, as DLPack counts
    them (None: C-contiguous); ``device_type`` a DLPack device type (1: host memory).
    ``owner`` is kept alive until the consumer calls the deleter.
    """
    code_bits = {v: k for k, v in _DTYPES.items()}.get(dtype)
    if code_bits is None:
        raise ValueError(f"DLPack export of dtype {dtype!r} is not supported; valid: {', '.join(sorted(_BY_NAME))}.")
    if strides is not None and len(strides) != len(shape):
        raise ValueError(f"strides {strides} do not match shape {shape}.")
    shape_arr = (ctypes.c_int64 * len(shape))(*shape)
    strides_arr = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
    managed = _Managed()
    managed.dl_tensor.data = ptr
    managed.dl_tensor.device = _Device(device_type, device_id)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = _DataType(code_bits[0], code_bits[1], 1)
    managed.dl_tensor.shape = shape_arr
    managed.dl_tensor.strides = strides_arr  # NULL: compact row-major
    managed.dl_tensor.byte_offset = byte_offset
    managed.manager_ctx = None
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _LIVE[address] = (managed, shape_arr, strides_arr, owner)
    return _new(address, _NAME, _capsule_destructor)


#: DLPack device types glrec knows by name (``DLDeviceType``).
DEVICE_TYPES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI",
                10: "ROCm", 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI"}  # fmt: skip
#: DLPack type codes: (code, bits) -> numpy type string.
_DTYPES = {(1, 8): "u1", (1, 16): "u2", (1, 32): "u4", (1, 64): "u8", (0, 8): "i1", (0, 16): "i2", (0, 32): "i4",
           (0, 64): "i8", (2, 16): "f2", (2, 32): "f4", (2, 64): "f8", (4, 16): "bfloat16", (6, 8): "bool"}  # fmt: skip
_BY_NAME = {name for name in _DTYPES.values() if name not in ("bfloat16", "bool")}


@dataclass
class ImportedTensor:
    """What a consumed DLPack capsule describes. Valid until :meth:`release`, which calls the producer's deleter."""

    ptr: int  # address of element 0 (data + byte_offset)
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in bytes; DLPack's NULL strides filled in as C order
    dtype: str  # numpy type string ("u1", "f4", ...), or "bfloat16" / "bool" / "code:bits"
    itemsize: int
    device_type: int
    device_id: int
    _address: int | None = field(default=None, repr=False)
    _deleter: Any = field(default=None, repr=False)

    def release(self) -> None:
        """Hand the tensor back to its producer. Safe twice."""
        address, self._address = self._address, None
        if address is not None and self._deleter:
            self._deleter(ctypes.cast(address, ctypes.POINTER(_Managed)))


def import_capsule(capsule: object) -> ImportedTensor:
    """Consume a ``"dltensor"`` capsule (from ``x.__dlpack__()``); the caller must release the result."""
    if not _is_valid_obj(capsule, _NAME):
        raise TypeError("not an unconsumed DLPack capsule (named 'dltensor')")
    address = int(_get_pointer_obj(capsule, _NAME))
    managed = _Managed.from_address(address)
    t = managed.dl_tensor
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    code, bits, lanes = int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)
    itemsize = max(1, bits // 8) * lanes
    dtype = _DTYPES.get((code, bits), f"{code}:{bits}") if lanes == 1 else f"{code}:{bits}x{lanes}"
    if t.strides:
        strides = tuple(int(t.strides[i]) * itemsize for i in range(t.ndim))
    else:  # NULL: compact row-major
        compact: list[int] = []
        step = itemsize
        for n in reversed(shape):
            compact.insert(0, step)
            step *= n
        strides = tuple(compact)
    deleter = managed.deleter
    # From here on the deleter is ours to call: the producer's capsule destructor skips renamed capsules.
    _set_name(capsule, _USED)
    return ImportedTensor(
        ptr=int(t.data or 0) + int(t.byte_offset), shape=shape, strides=strides, dtype=dtype, itemsize=itemsize,
        device_type=int(t.device.device_type), device_id=int(t.device.device_id), _address=address,
        _deleter=deleter if ctypes.cast(deleter, ctypes.c_void_p).value else None,
    )  # fmt: skip
