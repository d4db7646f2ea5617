"""In-flight bookkeeping of the shared handoff (pure Python: fake fences, a real device-pool condition)."""

import threading
import time
from typing import ClassVar

import pytest

from glrec.interop.batching import FencedBatches, PhaseGate


class FakeFence:
    """A fence the test signals by hand; records how it was used."""

    made: ClassVar[list["FakeFence"]] = []

    def __init__(self):
        self.done = False
        self.waited = False
        self.released = False
        FakeFence.made.append(self)

    def signalled(self):
        return self.done

    def wait(self):
        self.waited = True
        self.done = True

    def release(self):
        self.released = True


@pytest.fixture(autouse=True)
def fresh():
    FakeFence.made = []


def test_one_fence_per_batch_and_no_wait_while_within_depth():
    b = FencedBatches(4, 2, FakeFence)
    out = [b.add(i) for i in range(8)]
    assert out == [[]] * 8
    assert len(FakeFence.made) == 2, "one fence per batch of 4, not per frame"
    assert not any(f.waited for f in FakeFence.made)
    FakeFence.made[0].done = True  # the GPU finished the first batch
    assert b.add(8) == [0, 1, 2, 3]  # handed out without waiting
    assert not FakeFence.made[0].waited and FakeFence.made[0].released
    assert b.in_flight == 5


def test_the_producer_waits_only_beyond_depth():
    b = FencedBatches(2, 1, FakeFence)
    assert b.add(0) == [] and b.add(1) == []  # one batch in flight: within depth
    assert b.add(2) == [] and b.add(3) == [0, 1]  # a second fenced batch: the oldest is waited for
    assert FakeFence.made[0].waited and not FakeFence.made[1].waited


def test_batches_come_out_in_order_even_when_a_later_fence_signals_first():
    b = FencedBatches(1, 3, FakeFence)
    b.add("a"), b.add("b")
    FakeFence.made[1].done = True  # "b" done, "a" not: nothing may overtake "a"
    assert b.add("c") == []
    FakeFence.made[0].done = True
    assert b.add("d") == ["a", "b"]
    assert b.drain() == ["c", "d"]
    assert b.in_flight == 0


def test_depth_zero_hands_each_batch_out_as_it_completes():
    b = FencedBatches(3, 0, FakeFence)
    assert [b.add(i) for i in range(3)] == [[], [], [0, 1, 2]]
    assert b.at_batch_start and FakeFence.made[0].waited


def test_drain_fences_a_partial_batch_and_discard_releases_every_fence():
    b = FencedBatches(4, 2, FakeFence)
    for i in range(6):
        b.add(i)
    assert b.drain() == [0, 1, 2, 3, 4, 5]
    assert len(FakeFence.made) == 2 and all(f.released for f in FakeFence.made)
    for i in range(5):
        b.add(i)
    assert sorted(b.discard()) == [0, 1, 2, 3, 4]
    assert all(f.released for f in FakeFence.made)


class Pool:
    """The part of DevicePool the gate uses, with DevicePool's own wait_free logic."""

    def __init__(self, n):
        self._free = list(range(n))
        self._cond = threading.Condition()

    def acquire(self):
        with self._cond:
            return self._free.pop(0)

    def give_back(self, slot):
        with self._cond:
            self._free.append(slot)
            self._cond.notify_all()

    def wait_free(self, slots, timeout=5.0):
        from glrec.cuda.pool import DevicePool

        DevicePool.wait_free(self, slots, timeout)  # type: ignore[arg-type]


def test_phase_gate_holds_gl_until_the_consumer_released_the_last_batch():
    pool = Pool(8)
    gate = PhaseGate(pool.wait_free)
    slots = [pool.acquire() for _ in range(3)]
    gate.handed_out(slots)
    released_at = []

    def consumer():
        time.sleep(0.2)
        for s in slots:
            released_at.append(time.monotonic())
            pool.give_back(s)

    t = threading.Thread(target=consumer)
    t.start()
    gate.before_batch()
    resumed = time.monotonic()
    t.join()
    assert len(released_at) == 3 and resumed >= released_at[-1]
    gate.before_batch()  # nothing handed out since: returns at once


def test_phase_gate_wait_times_out_with_a_clear_error():
    from glrec.errors import CudaError

    pool = Pool(2)
    slot = pool.acquire()
    with pytest.raises(CudaError, match=r"slots \[0\] were not released"):
        pool.wait_free([slot], timeout=0.2)
