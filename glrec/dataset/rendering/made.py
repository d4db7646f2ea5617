"""A sequence made in full when first read: a batch's metadata, its columns, a chunk's packed plans."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar, overload

__all__ = ["MadeWhenRead"]

T = TypeVar("T")


class MadeWhenRead(Sequence[T]):
    """A sequence made in full when first read (:meth:`materialise`): a list to every reader, and through pickle."""

    def materialise(self) -> list[T]:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        return self.materialise()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self.materialise())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (MadeWhenRead, list, tuple)):
            return self.materialise() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.materialise(),))
