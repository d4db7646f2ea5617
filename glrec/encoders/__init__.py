"""Encoders: frames in, :class:`~glrec.frame.Packet` lists out; each in a room of its own, listed by the registry."""

from .encoder import Encoder, Packet, device_frame, encode_each

__all__ = ["Encoder", "Packet", "device_frame", "encode_each"]
