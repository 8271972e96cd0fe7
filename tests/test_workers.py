"""Worker processes: ``run_in_workers`` (a batch's files) and ``share_out`` (a list of work
spread over this process and forked children, results in order)."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from ctxcompact.batch.workers import run_in_workers, share_out

PARENT = os.getpid()


def _slow_pid(unit: int) -> tuple[int, int]:
    time.sleep(0.05)  # long enough that every process takes some of the units
    return unit, os.getpid()


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_results_come_back_in_order_from_several_processes() -> None:
    done = share_out(list(range(8)), _slow_pid, processes=2)
    assert [unit for unit, _ in done] == list(range(8))
    assert len({pid for _, pid in done}) == 2 and PARENT in {pid for _, pid in done}
    assert _no_children_left()


def test_one_process_or_one_unit_runs_here() -> None:
    assert {pid for _, pid in share_out(list(range(3)), _slow_pid, processes=1)} == {PARENT}
    assert share_out([7], _slow_pid, processes=4) == [(7, PARENT)]
    assert share_out([], _slow_pid, processes=4) == []


class Unpicklable(Exception):
    def __init__(self, message: str, handle: object) -> None:
        super().__init__(message)
        self.handle = handle

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("cannot travel")


def _fails_in_child(unit: int) -> int:
    time.sleep(0.05)
    if os.getpid() != PARENT:
        raise ValueError(f"unit {unit} failed in a child")
    return unit


def _fails_unpicklably_in_child(unit: int) -> int:
    time.sleep(0.05)
    if os.getpid() != PARENT:
        raise Unpicklable(f"unit {unit} failed", object())
    return unit


def test_an_exception_in_a_child_is_raised_here_after_every_child_ended() -> None:
    with pytest.raises(ValueError, match=r"unit \d failed in a child"):
        share_out(list(range(6)), _fails_in_child, processes=2)
    assert _no_children_left()
    # One that cannot be pickled comes back described, its traceback included.
    with pytest.raises(RuntimeError, match=r"(?s)_fails_unpicklably_in_child.*Unpicklable: unit \d failed"):
        share_out(list(range(6)), _fails_unpicklably_in_child, processes=2)
    assert _no_children_left()


def test_an_exception_here_ends_the_children() -> None:
    def fails_here(unit: int) -> int:
        if os.getpid() == PARENT:
            raise KeyError(unit)
        time.sleep(5)  # a child still working when this process gives up
        return unit

    started = time.monotonic()
    with pytest.raises(KeyError):
        share_out(list(range(4)), fails_here, processes=2)
    assert time.monotonic() - started < 4 and _no_children_left()


WARMED: list[str] = []


def _was_warmed(_task: int) -> list[str]:
    return WARMED


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="workers are spawned")
def test_forked_workers_inherit_what_the_warm_up_loaded_once() -> None:
    # What every worker needs (the tokenizer, the strategies' code) is loaded once, before the
    # workers are forked: --jobs 2 paid it twice (~0.13 s a worker).
    done: dict[int, list[str]] = {}
    run_in_workers(
        ((i, i) for i in range(4)),
        _was_warmed,
        jobs=2,
        on_start=lambda _i: None,
        on_done=done.__setitem__,
        warm_up=lambda: WARMED.append("loaded"),
    )
    assert done == {i: ["loaded"] for i in range(4)} and WARMED == ["loaded"]


def test_a_batch_warm_up_builds_the_counter_the_workers_use() -> None:
    from ctxcompact.batch import files

    files._worker_counter.cache_clear()
    files._warm_up(files.FileOptions())
    assert files._worker_counter.cache_info().currsize == 1
