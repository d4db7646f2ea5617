"""NVENC's own caps query (``libnvidia-encode.so.1`` through ctypes), on the CUDA context of the GPU asked about.

PyNvVideoCodec 2.2.4 cannot ask one GPU: ``GetEncoderCaps(gpuid=...)`` ignores
``gpuid`` and opens its session on a context it creates on CUDA device 0 (so does
the caps query inside ``CreateEncoder``). :func:`query_encoder` opens one NVENC
session on the context it is given, lists the codecs that GPU's NVENC encodes
(``nvEncGetEncodeGUIDs``), reads the limits glrec checks for each
(``nvEncGetEncodeCaps``) and destroys the session: one session answers for every
codec. The session is opened on the caller's context, so a failed one leaves no
context behind (each failed ``GetEncoderCaps`` leaks the one PyNvVideoCodec made).

The structures are NVENC's as its header (``nvEncodeAPI.h``) defines them; the
four used here have kept their layout from API 11.1 to 13.0. Sessions ask for
API 12.1, the oldest PyNvVideoCodec 2.2.4 speaks, which newer drivers accept.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from ...errors import EncoderError

#: API version asked for: 12.1 (PyNvVideoCodec 2.2.4 needs a driver that speaks 12.1 or 13.0).
API_VERSION = (12, 1)
_API = API_VERSION[0] | (API_VERSION[1] << 24)  # NVENCAPI_VERSION


def _struct_version(n: int) -> int:  # NVENCAPI_STRUCT_VERSION
    return _API | (n << 16) | (0x7 << 28)


class _Guid(ctypes.Structure):
    _fields_ = [("data1", ctypes.c_uint32), ("data2", ctypes.c_uint16), ("data3", ctypes.c_uint16),
                ("data4", ctypes.c_uint8 * 8)]  # fmt: skip

    @classmethod
    def of(cls, a: int, b: int, c: int, d: bytes) -> _Guid:
        return cls(a, b, c, (ctypes.c_uint8 * 8)(*d))

    def key(self) -> tuple[int, int, int, bytes]:
        return (self.data1, self.data2, self.data3, bytes(self.data4))


#: NV_ENC_CODEC_*_GUID
CODECS: dict[str, _Guid] = {
    "h264": _Guid.of(0x6BC82762, 0x4E63, 0x4CA4, b"\xaa\x85\x1e\x50\xf3\x21\xf6\xbf"),
    "hevc": _Guid.of(0x790CDC88, 0x4522, 0x4D7B, b"\x94\x25\xbd\xa9\x97\x5f\x76\x03"),
    "av1": _Guid.of(0x0A352289, 0x0AA7, 0x4759, b"\x86\x2d\x5d\x15\xcd\x16\xd2\x54"),
}
#: NV_ENC_CAPS values glrec reads, under the names PyNvVideoCodec's ``GetEncoderCaps`` gives them.
CAPS: dict[str, int] = {"num_max_bframes": 0, "width_max": 16, "height_max": 17, "support_yuv444_encode": 33,
                        "support_lossless_encode": 34, "width_min": 45, "height_min": 46}  # fmt: skip


class _FunctionList(ctypes.Structure):  # NV_ENCODE_API_FUNCTION_LIST: 2 words, then 318 pointers
    _fields_ = [("version", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("functions", ctypes.c_void_p * 318)]


# Slots in NV_ENCODE_API_FUNCTION_LIST.functions (the header's order).
_GET_GUID_COUNT, _GET_GUIDS, _GET_CAPS, _DESTROY, _OPEN_EX = 1, 4, 7, 27, 29


class _OpenParams(ctypes.Structure):  # NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS
    _fields_ = [("version", ctypes.c_uint32), ("deviceType", ctypes.c_uint32), ("device", ctypes.c_void_p),
                ("reserved", ctypes.c_void_p), ("apiVersion", ctypes.c_uint32), ("reserved1", ctypes.c_uint32 * 253),
                ("reserved2", ctypes.c_void_p * 64)]  # fmt: skip


class _CapsParam(ctypes.Structure):  # NV_ENC_CAPS_PARAM
    _fields_ = [("version", ctypes.c_uint32), ("capsToQuery", ctypes.c_uint32), ("reserved", ctypes.c_uint32 * 62)]


_DEVICE_TYPE_CUDA = 1  # NV_ENC_DEVICE_TYPE_CUDA
_STATUS = ctypes.c_int  # NVENCSTATUS
_P = ctypes.c_void_p
_U32P = ctypes.POINTER(ctypes.c_uint32)
_OpenEx = ctypes.CFUNCTYPE(_STATUS, ctypes.POINTER(_OpenParams), ctypes.POINTER(_P))
_GuidCount = ctypes.CFUNCTYPE(_STATUS, _P, _U32P)
_Guids = ctypes.CFUNCTYPE(_STATUS, _P, ctypes.POINTER(_Guid), ctypes.c_uint32, _U32P)
_Caps = ctypes.CFUNCTYPE(_STATUS, _P, _Guid, ctypes.POINTER(_CapsParam), ctypes.POINTER(ctypes.c_int))
_Destroy = ctypes.CFUNCTYPE(_STATUS, _P)


class NvencCallError(EncoderError):
    """An NVENC API call that failed; the message has PyNvVideoCodec's form ("... returned error N")."""

    def __init__(self, call: str, status: int) -> None:
        super().__init__(f"{call} returned error {status}")
        self.status = status


@functools.lru_cache(maxsize=1)
def _functions() -> _FunctionList:
    """NVENC's function table from the driver's library (loaded once; the same library PyNvVideoCodec uses)."""
    try:
        lib = ctypes.CDLL("libnvidia-encode.so.1")
    except OSError as exc:
        raise EncoderError(f"the driver's NVENC library (libnvidia-encode.so.1) is missing: {exc}") from None
    most = ctypes.c_uint32(0)
    status = lib.NvEncodeAPIGetMaxSupportedVersion(ctypes.byref(most))
    driver = (most.value >> 4, most.value & 0xF)
    if status != 0 or driver < API_VERSION:  # 15, NV_ENC_ERR_INVALID_VERSION: what NVENC answers a too new client
        speaks = f"the driver speaks {driver[0]}.{driver[1]}"
        raise NvencCallError(f"NvEncodeAPIGetMaxSupportedVersion ({speaks})", status or 15)
    table = _FunctionList(version=_struct_version(2))
    status = lib.NvEncodeAPICreateInstance(ctypes.byref(table))
    if status != 0:
        raise NvencCallError("NvEncodeAPICreateInstance", status)
    return table


def _fn(table: _FunctionList, slot: int, kind: Any, name: str) -> Any:
    address = table.functions[slot]
    if not address:
        raise NvencCallError(f"{name} (missing from the driver's function table)", 7)  # NV_ENC_ERR_INVALID_CALL
    return kind(address)


def query_encoder(context: int) -> dict[str, dict[str, int] | None]:
    """Each codec's caps (``{"width_min": ..., ...}``), or None when the GPU behind ``context`` lacks it.

    ``context`` is a ``CUcontext`` (as an integer) on the GPU to ask; it should be current on the calling
    thread. Raises :class:`NvencCallError` when no session opens (status 2: no NVENC on this GPU).
    """
    table = _functions()
    params = _OpenParams(version=_struct_version(1), deviceType=_DEVICE_TYPE_CUDA, device=context, apiVersion=_API)
    encoder = _P()
    status = _fn(table, _OPEN_EX, _OpenEx, "nvEncOpenEncodeSessionEx")(ctypes.byref(params), ctypes.byref(encoder))
    if status != 0:
        raise NvencCallError("nvEncOpenEncodeSessionEx", status)
    try:
        count = ctypes.c_uint32(0)
        if (status := _fn(table, _GET_GUID_COUNT, _GuidCount, "nvEncGetEncodeGUIDCount")(encoder, count)) != 0:
            raise NvencCallError("nvEncGetEncodeGUIDCount", status)
        guids = (_Guid * max(1, count.value))()
        got = ctypes.c_uint32(0)
        if (status := _fn(table, _GET_GUIDS, _Guids, "nvEncGetEncodeGUIDs")(encoder, guids, count.value, got)) != 0:
            raise NvencCallError("nvEncGetEncodeGUIDs", status)
        present = {guids[i].key() for i in range(got.value)}
        get_caps = _fn(table, _GET_CAPS, _Caps, "nvEncGetEncodeCaps")
        out: dict[str, dict[str, int] | None] = {}
        for codec, guid in CODECS.items():
            if guid.key() not in present:
                out[codec] = None
                continue
            caps: dict[str, int] = {}
            for name, cap in CAPS.items():
                value = ctypes.c_int(0)
                param = _CapsParam(version=_struct_version(1), capsToQuery=cap)
                if (status := get_caps(encoder, guid, ctypes.byref(param), ctypes.byref(value))) != 0:
                    raise NvencCallError(f"nvEncGetEncodeCaps({codec}, {name})", status)
                caps[name] = value.value
            out[codec] = caps
        return out
    finally:
        _fn(table, _DESTROY, _Destroy, "nvEncDestroyEncoder")(encoder)
