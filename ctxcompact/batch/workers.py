"""Running a batch's inputs in worker processes (``compact --jobs N``, ``eval`` on many files).

Where the OS has ``fork``, ``--jobs N`` is this process and N − 1 children forked from it once
everything the work needs is loaded (the tokenizer, the strategies' code): each takes the next
input from a shared counter as it finishes one — reading the input list it inherited, so
nothing is sent to it — and sends back only the results, which this process takes in between
its own inputs. Elsewhere the inputs go to a pool of ``spawn``-ed workers, at most
``2 × jobs`` in flight. Either way each worker is told the batch's shared bound on summary
requests (:mod:`ctxcompact.llm.gate`), the parent's memory stays flat however many files the
batch has, and results are handed to the caller with their input's index, so reports keep
input order.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import IO, TYPE_CHECKING, Any, TypeVar

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
    before its work and its workers never print, so no lock another thread of the parent
    holds is needed in a child. ``spawn`` elsewhere."""
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
    when a task is taken, ``on_done(index, result)`` as each completes (in completion order),
    both in this process. The results must pickle; where there is no ``fork``, ``work`` and
    the tasks too (a module-level function, plain data). An exception ``work`` raises
    propagates here once no task is handed out any more and every worker has ended.
    ``warm_up``: loads here what every worker needs, when they are forked from this process
    (they inherit it).

    Ctrl-C is this process's to handle: it stops handing out tasks and exits 130; a worker
    ignores it and finishes the file it is writing (atomically) instead of dying with a
    traceback each; this process waits for that, or, on a second Ctrl-C, kills the workers.
    Either way they are reaped. A task whose result was not handed to ``on_done`` is not in
    the journal, so ``--resume`` simply does it again."""
    context = _context()
    gate = context.BoundedSemaphore(max(1, llm_concurrency))
    if context.get_start_method() == "fork":
        if warm_up is not None:
            warm_up()
        _run_forked(list(tasks), work, jobs=jobs, gate=gate, on_start=on_start, on_done=on_done, patient=True)
    else:
        _run_spawned(tasks, work, jobs=jobs, gate=gate, context=context, on_start=on_start, on_done=on_done)


def _run_spawned(
    tasks: Iterable[tuple[int, T]],
    work: Callable[[T], R],
    *,
    jobs: int,
    gate: AbstractContextManager[Any],
    context: multiprocessing.context.BaseContext,
    on_start: Callable[[int], None],
    on_done: Callable[[int, R], None],
) -> None:
    """:func:`run_in_workers` in ``jobs`` spawned processes, this one only handing out tasks."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=(gate,))
    pending: dict[Future[R], int] = {}
    queue = iter(tasks)

    def submit_next() -> None:
        for index, task in queue:
            on_start(index)
            pending[pool.submit(work, task)] = index
            return

    try:
        for _ in range(jobs * QUEUE_PER_JOB):
            submit_next()
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


def _run_forked(
    tasks: Sequence[tuple[int, T]],
    work: Callable[[T], R],
    *,
    jobs: int,
    on_start: Callable[[int], None],
    on_done: Callable[[int, R], None],
    gate: AbstractContextManager[Any] | None = None,
    patient: bool = False,
) -> None:
    """:func:`run_in_workers` in this process and ``jobs`` − 1 forked children (``patient``:
    on Ctrl-C or a failure here the children finish their task, else they are killed at once).

    A pool whose parent only hands out work spent ~0.7 ms of CPU per file on it (pickling
    tasks and results through queues, its threads waking up) on a machine whose cores the
    workers already filled: ``--jobs 2`` reached 90 % of what two bare processes gain."""
    import gc
    import pickle  # noqa: F401 (what _Worker and _Sender use, imported once for every process)
    import struct  # noqa: F401
    import tempfile

    from ctxcompact.llm.gate import install_request_gate

    store = tempfile.TemporaryFile()  # noqa: SIM115 (closed below, after the children)
    handout = _Handout(len(tasks), store)

    def serve(send: Callable[[tuple[str, int, Any]], None]) -> None:
        while (n := handout.take()) is not None:
            index, task = tasks[n]
            send((_STARTED, index, None))
            try:
                result = work(task)
            except BaseException as exc:  # raised in the parent
                send((_FAILED, index, exc))
                return
            send((_DONE, index, result))

    def receive(message: tuple[str, int, Any]) -> None:
        kind, index, value = message
        if kind == _STARTED:
            on_start(index)
        elif kind == _DONE:
            on_done(index, value)
        else:
            raise value

    # The objects that exist now stay out of the children's collections: a collection would
    # touch (and so copy) every page they live on.
    gc.freeze()
    children: list[_Worker] = []
    if gate is not None:  # this process's and, forked, its children's
        install_request_gate(gate)
    try:
        try:
            for _ in range(jobs - 1):
                children.append(_Worker.fork(serve))
        finally:
            gc.unfreeze()
        while True:
            _Worker.collect(children, receive, block=False)
            n = handout.take()
            if n is None:
                break
            index, task = tasks[n]
            on_start(index)
            on_done(index, work(task))
        _Worker.collect(children, receive, block=True)
    except BaseException:
        handout.stop()
        _Worker.end(children, patient=patient)
        raise
    finally:
        if gate is not None:
            install_request_gate(None)
        _Worker.end(children, patient=False)
        store.close()


_STARTED, _DONE, _FAILED, _ENDED = "started", "done", "failed", "ended"


class _Handout:
    """The number of the next task to take, shared by this process and the children forked
    after it is made: kept in an unlinked temporary file, under a POSIX record lock (owned by
    a process, so a child killed while holding it releases it; no semaphore, so nothing of
    ``multiprocessing`` is loaded)."""

    def __init__(self, count: int, store: IO[bytes]) -> None:
        self._count = count
        self._file = store
        self._write(0)

    def take(self) -> int | None:
        """The next task's number, or None when every task is taken (or :meth:`stop` was called)."""
        with self._locked():
            n = self._read()
            if n >= self._count:
                return None
            self._write(n + 1)
        return n

    def stop(self) -> None:
        """Hand out nothing more."""
        with self._locked():
            self._write(self._count)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        fcntl.lockf(self._file.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(self._file.fileno(), fcntl.LOCK_UN)

    def _read(self) -> int:
        return int.from_bytes(os.pread(self._file.fileno(), 8, 0), "little")

    def _write(self, n: int) -> None:
        os.pwrite(self._file.fileno(), n.to_bytes(8, "little"), 0)


class _Worker:
    """A forked child serving tasks, and the pipe its messages come back through."""

    def __init__(self, pid: int, reader: int) -> None:
        self.pid = pid
        self.reader = reader
        self.received = bytearray()
        self.finished = False  # it said it ended
        self.ended = False  # its pipe is closed (and it reaped)
        self.status = 0

    @classmethod
    def fork(cls, serve: Callable[[Callable[[tuple[str, int, Any]], None]], None]) -> _Worker:
        """A child running ``serve(send)`` with Ctrl-C ignored; ``send`` pickles a message to
        this process without waiting (what the pipe cannot take yet waits in the child while
        it works on). The child exits without running this process's exit handlers or flushing
        its buffers (what they hold is this process's to write)."""
        reader, writer = os.pipe()
        pid = os.fork()
        if pid:
            os.close(writer)
            os.set_blocking(reader, False)
            return cls(pid, reader)
        status = 0
        try:
            os.close(reader)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            out = _Sender(writer)
            serve(out.send)
            out.send((_ENDED, 0, None))
            out.flush()
        except BaseException:  # a child never returns into the caller's code
            status = 70
        finally:
            os._exit(status)

    @staticmethod
    def collect(
        workers: Sequence[_Worker], receive: Callable[[tuple[str, int, Any]], None], *, block: bool
    ) -> None:
        """Hand each message the workers sent to ``receive``: what has come so far, or, with
        ``block``, everything until each has ended."""
        import select

        while live := [w for w in workers if not w.ended]:
            ready, _, _ = select.select([w.reader for w in live], [], [], None if block else 0)
            for worker in live:
                if worker.reader in ready:
                    for message in worker._read():
                        receive(message)
            if not block:
                return

    def _read(self) -> list[tuple[str, int, Any]]:
        import pickle
        import struct

        while True:
            try:
                chunk = os.read(self.reader, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                self._close()
                break
            self.received += chunk
        messages = []
        while len(self.received) >= 4:
            (size,) = struct.unpack_from("=I", self.received)
            if len(self.received) < 4 + size:
                break
            message = pickle.loads(self.received[4 : 4 + size])
            del self.received[: 4 + size]
            if message[0] == _ENDED:
                self.finished = True
            else:
                messages.append(message)
        if self.ended and not self.finished:
            raise RuntimeError(f"a worker process ended without a result (exit status {self.status})")
        return messages

    def _close(self) -> None:
        os.close(self.reader)
        _, status = os.waitpid(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(status)
        self.ended = True

    @staticmethod
    def end(workers: Sequence[_Worker], *, patient: bool) -> None:
        """End every worker: ``patient``, let each finish its task (its messages read and
        dropped) unless Ctrl-C comes again; then kill and reap whatever is left."""
        try:
            if patient:
                _Worker.collect(workers, lambda _message: None, block=True)
        except (KeyboardInterrupt, Exception):  # Ctrl-C again, or a worker that ended badly
            pass  # this process has an error to raise already
        finally:
            for worker in workers:
                if not worker.ended:
                    _end_child(worker.pid, worker.reader)
                    worker.ended = True


class _Sender:
    """A child's end of its pipe: length-prefixed pickles, written as far as the pipe takes
    them without waiting (the rest is kept for the next send), all of them at :meth:`flush`."""

    def __init__(self, writer: int) -> None:
        self.writer = writer
        self.pending = bytearray()
        os.set_blocking(writer, False)

    def send(self, message: tuple[str, int, Any]) -> None:
        import pickle
        import struct

        kind, index, value = message
        if kind == _FAILED:
            message = (kind, index, _portable(value))
        try:
            data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a result that does not travel: its error does
            data = pickle.dumps((_FAILED, index, _portable(exc)), pickle.HIGHEST_PROTOCOL)
        self.pending += struct.pack("=I", len(data)) + data
        try:
            while self.pending:
                del self.pending[: os.write(self.writer, self.pending)]
        except BlockingIOError:
            pass

    def flush(self) -> None:
        os.set_blocking(self.writer, True)
        while self.pending:
            del self.pending[: os.write(self.writer, self.pending)]
        os.close(self.writer)


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
    processes = min(processes, len(units))
    if processes <= 1 or not hasattr(os, "fork"):
        return [work(unit) for unit in units]
    done: dict[int, R] = {}
    _run_forked(
        list(enumerate(units)), work, jobs=processes, on_start=lambda _i: None, on_done=done.__setitem__
    )
    return [done[i] for i in range(len(units))]


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
