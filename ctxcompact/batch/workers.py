"""Running a batch's inputs in worker processes (``compact --jobs N``).

Workers come from a *fork server* where the platform has one (a clean single-threaded process
that imported ctxcompact once, so a worker starts in milliseconds and inherits no lock or
thread from the parent), else are spawned; each is told the batch's shared bound on summary
requests
(:mod:`ctxcompact.llm.gate`). At most ``2 × jobs`` inputs are in flight at once, so the
parent's memory stays flat however many files the batch has; results come back as they
complete and the caller files each under its input's index, so reports keep input order.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

# multiprocessing and concurrent.futures load only when workers start: a one-file compaction
# imports this module (the batch core) and never needs them.
if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Future

T = TypeVar("T")
R = TypeVar("R")

#: Summary requests in flight at once across all workers, unless ``--llm-concurrency`` says.
DEFAULT_LLM_CONCURRENCY = 4
#: Inputs queued per worker: enough to keep every worker busy, few enough to keep memory flat.
QUEUE_PER_JOB = 2


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity, where the OS tells), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` where the OS has it: workers start with ctxcompact imported and the tokenizer
    loaded, and on this project's 2-core machine 200 files ran 1.8× faster with 2 jobs, where
    ``forkserver`` workers gave no speed-up at all (measured 2026-11-23). The parent forks
    before any work and its workers never print, so no lock the parent holds is needed in a
    child. ``spawn`` elsewhere."""
    import multiprocessing

    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _init_worker(gate: AbstractContextManager[Any]) -> None:
    from ctxcompact.llm.gate import install_request_gate

    # Ctrl-C is the parent's to handle: it stops queuing, cancels what has not started and
    # exits 130; a worker finishes the file it is writing (atomically) instead of dying with a
    # traceback each. That file is not in the journal, so --resume simply does it again.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install_request_gate(gate)


def run_in_workers(
    tasks: Iterable[tuple[int, T]],
    work: Callable[[T], R],
    *,
    jobs: int,
    llm_concurrency: int = DEFAULT_LLM_CONCURRENCY,
    on_start: Callable[[int], None],
    on_done: Callable[[int, R], None],
    warm_up: Callable[[], None] | None = None,
) -> None:
    """Run ``work(task)`` for each ``(index, task)`` in ``jobs`` processes; ``on_start(index)``
    when a task is queued, ``on_done(index, result)`` as each completes (in completion order).
    ``work`` and the tasks must pickle (a module-level function, plain data). An exception
    ``work`` raises propagates here after the queued tasks are cancelled. ``warm_up``: loads
    here what every worker needs, when they are forked from this process (they inherit it)."""
    import gc
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    context = _context()
    forked = context.get_start_method() == "fork"
    if forked and warm_up is not None:
        warm_up()
    gate = context.BoundedSemaphore(max(1, llm_concurrency))
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=(gate,))
    pending: dict[Future[R], int] = {}
    queue = iter(tasks)

    def submit_next() -> None:
        for index, task in queue:
            on_start(index)
            pending[pool.submit(work, task)] = index
            return

    try:
        # The workers are forked at the first submit; what exists then stays out of their
        # collections (which would touch, so copy, every page it lives on).
        if forked:
            gc.freeze()
        try:
            for _ in range(jobs * QUEUE_PER_JOB):
                submit_next()
        finally:
            gc.unfreeze()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                on_done(index, future.result())
                submit_next()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def share_out(units: Sequence[T], work: Callable[[T], R], *, processes: int) -> list[R]:
    """``[work(unit) for unit in units]``, spread over ``processes`` processes: this one and
    children forked now, so each sees this process's memory as it is — what was read, counted
    and cached before the call is neither pickled to them nor done again; only each result is
    pickled back. Every process takes the next unit as it finishes one, in the order given
    (put the costliest first), so the processes end together. In this process alone where
    there is no ``fork``, for one process, or for one unit.

    The children ignore Ctrl-C (this process handles it: they are killed and reaped before the
    interrupt goes on); an exception ``work`` raises in a child is raised here, after every
    child has ended. CPU time is not saved, wall time is: the same work runs on more cores.
    """
    processes = min(processes, len(units), MAX_UNITS)
    if processes <= 1 or not hasattr(os, "fork") or len(units) > MAX_UNITS:
        return [work(unit) for unit in units]
    import gc
    import struct

    queue_out, queue_in = os.pipe()
    os.write(queue_in, b"".join(struct.pack("=H", i) for i in range(len(units))))
    os.close(queue_in)  # read to its end: every unit taken

    def take() -> Iterator[int]:
        while record := os.read(queue_out, 2):
            yield struct.unpack("=H", record)[0]

    # The objects that exist now stay out of the children's collections: a collection would
    # touch (and so copy) every page they live on.
    gc.freeze()
    children: list[tuple[int, int]] = []
    try:
        for _ in range(processes - 1):
            children.append(_fork_child(lambda: [(i, work(units[i])) for i in take()]))
    finally:
        gc.unfreeze()
    try:
        done = {i: work(units[i]) for i in take()}
        failure: BaseException | None = None
        while children:
            ok, value = _child_result(*children[0])
            children.pop(0)
            if ok:
                done.update(value)
            elif failure is None:
                failure = value
        if failure is not None:
            raise failure
        return [done[i] for i in range(len(units))]
    finally:
        os.close(queue_out)
        for pid, reader in children:  # interrupted or failed here: the children end too
            _end_child(pid, reader)


#: The most units :func:`share_out` hands out: its queue (two bytes a unit) is written whole
#: before any is taken, so it must fit in a pipe's buffer (64 KiB on Linux, 4 KiB at least).
MAX_UNITS = 2_048


def _fork_child(produce: Callable[[], Any]) -> tuple[int, int]:
    """A child that runs ``produce`` and writes ``(True, result)`` — or ``(False, exception)``
    — pickled to a pipe, then exits without running this process's exit handlers or flushing
    its buffers (what they hold is this process's to write). Its pid and the pipe's end."""
    import pickle

    reader, writer = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writer)
        return pid, reader
    status = 0
    try:
        os.close(reader)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            payload = pickle.dumps((True, produce()), pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # raised in the parent
            payload = pickle.dumps((False, _portable(exc)), pickle.HIGHEST_PROTOCOL)
        with os.fdopen(writer, "wb") as out:
            out.write(payload)
    except BaseException:  # a child never returns into the caller's code
        status = 70
    finally:
        os._exit(status)


def _end_child(pid: int, reader: int) -> None:
    """Kill a child, reap it and close its pipe, whichever of these an interruption left to do."""
    for step in (lambda: os.kill(pid, signal.SIGKILL), lambda: os.waitpid(pid, 0), lambda: os.close(reader)):
        try:
            step()
        except OSError:  # already done
            pass


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles (and unpickles), else a RuntimeError carrying its traceback."""
    import pickle
    import traceback

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # one that does not travel is described instead
        return RuntimeError("".join(traceback.format_exception(exc)))


def _child_result(pid: int, reader: int) -> tuple[bool, Any]:
    """What the child wrote, once it has ended."""
    import pickle

    with os.fdopen(reader, "rb") as source:
        payload = source.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        code = os.waitstatus_to_exitcode(status)
        return False, RuntimeError(f"a worker process ended without a result (exit status {code})")
    return pickle.loads(payload)
