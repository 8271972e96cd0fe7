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


# --- run_in_workers: the parent works too (fork) ------------------------------------------

forked_only = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="workers are spawned"
)


@forked_only
def test_the_parent_works_beside_its_children_and_hears_every_start_and_result() -> None:
    # --jobs 2 is this process and one child (a parent that only handed out files spent ~0.7 ms
    # of CPU per file on it, on cores the workers already filled).
    events: list[tuple[str, int]] = []
    done: dict[int, tuple[int, int]] = {}

    def finished(index: int, result: tuple[int, int]) -> None:
        events.append(("done", index))
        done[index] = result

    run_in_workers(
        ((i, i) for i in range(12)),
        _slow_pid,
        jobs=2,
        on_start=lambda i: events.append(("start", i)),
        on_done=finished,
    )
    assert done.keys() == set(range(12)) and all(done[i][0] == i for i in done)
    pids = {pid for _, pid in done.values()}
    assert PARENT in pids and len(pids) == 2
    for i in range(12):  # each input started once, before it is done
        assert events.count(("start", i)) == 1 and events.count(("done", i)) == 1
        assert events.index(("start", i)) < events.index(("done", i))
    assert _no_children_left()


def _square(unit: int) -> int:
    return unit * unit


@forked_only
def test_more_tasks_than_a_pipe_holds_are_all_done() -> None:
    done: dict[int, int] = {}
    run_in_workers(
        ((i, i) for i in range(5_000)), _square, jobs=3, on_start=lambda _i: None, on_done=done.__setitem__
    )
    assert done == {i: i * i for i in range(5_000)}
    assert _no_children_left()


@forked_only
def test_a_worker_failure_is_raised_here_once_every_worker_ended() -> None:
    with pytest.raises(ValueError, match=r"unit \d+ failed in a child"):
        run_in_workers(
            ((i, i) for i in range(8)),
            _fails_in_child,
            jobs=2,
            on_start=lambda _i: None,
            on_done=lambda *_: None,
        )
    assert _no_children_left()
    with pytest.raises(RuntimeError, match=r"(?s)Unpicklable: unit \d+ failed"):
        run_in_workers(
            ((i, i) for i in range(8)),
            _fails_unpicklably_in_child,
            jobs=2,
            on_start=lambda _i: None,
            on_done=lambda *_: None,
        )
    assert _no_children_left()


def _unpicklable_result(unit: int) -> object:
    return Unpicklable("result", object()) if os.getpid() != PARENT else unit


@forked_only
def test_a_result_that_cannot_travel_is_an_error_here() -> None:
    def slow(unit: int) -> object:
        time.sleep(0.02)
        return _unpicklable_result(unit)

    with pytest.raises(TypeError, match="cannot travel"):
        run_in_workers(
            ((i, i) for i in range(8)), slow, jobs=2, on_start=lambda _i: None, on_done=lambda *_: None
        )
    assert _no_children_left()


@forked_only
def test_ctrl_c_stops_the_handing_out_and_reaps_the_children() -> None:
    # Ctrl-C reaches this process as KeyboardInterrupt (the children ignore it): nothing more is
    # handed out, the children finish the task they are on and are reaped before it goes on.
    done: list[int] = []

    def interrupted(index: int, _result: object) -> None:
        done.append(index)
        if len(done) == 3:
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_in_workers(
            ((i, i) for i in range(200)), _slow_pid, jobs=2, on_start=lambda _i: None, on_done=interrupted
        )
    assert time.monotonic() - started < 2 and len(done) == 3
    assert _no_children_left()


def _sleeps_in_child(unit: int) -> int:
    if os.getpid() != PARENT:
        time.sleep(30)  # a worker on a long file
    return unit


@forked_only
def test_a_second_ctrl_c_kills_a_child_still_working() -> None:
    import signal as signals
    import threading

    # The first Ctrl-C: raised here. The second comes while this process waits for the child's
    # long task (a timer's SIGINT, as a terminal would send it).
    second = threading.Timer(0.3, os.kill, (os.getpid(), signals.SIGINT))

    def interrupt_twice(_index: int, _result: object) -> None:
        second.start()
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_in_workers(
            ((i, i) for i in range(6)),
            _sleeps_in_child,
            jobs=2,
            on_start=lambda _i: None,
            on_done=interrupt_twice,
        )
    second.cancel()  # (had this process not waited, it must not be interrupted later)
    assert second.finished.is_set() and time.monotonic() - started < 10 and _no_children_left()


def test_sharing_out_loads_nothing_of_multiprocessing() -> None:
    # eval's strategies are shared out on every run with --jobs: a semaphore from
    # multiprocessing (~10 ms of imports) was the only thing it needed it for.
    import subprocess
    import sys

    code = (
        "import sys; from ctxcompact.batch.workers import share_out; "
        "assert share_out([1, 2, 3], abs, processes=2) == [1, 2, 3]; "
        "print(sorted(m for m in sys.modules if m.startswith('multiprocessing')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
