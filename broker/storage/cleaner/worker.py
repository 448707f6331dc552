"""The cleaner worker process (``log.cleaner.mode=process``): one per cleaner thread, doing the
cleaning's CPU work (offset map, batch filtering, writing ``.cleaned`` segments) outside the
broker's process, so that none of it competes with the event loop for the GIL.

Parent side: ``CleanerWorker`` (driven by one cleaner thread, manager.py). The process is
started at its first cleaning (broker start-up and idle memory stay as they are), with
``sys.executable -c`` (no fork of a threaded process: only the worker's own modules are
imported) and one end of a socketpair. It lowers its CPU priority (``os.nice(WORKER_NICENESS)``)
so that, when the cores are busy, the kernel runs the broker and its clients first.

A cleaning, as messages over the socketpair (pickled by ``multiprocessing.connection``; every
message carries the job number, messages of another job are stale and dropped)::

    parent                                   worker
    ("clean", job, CleaningInput, params) ->
                                          <- ("swap", job, base, [old bases], [old sizes])
    ("swapped", job) | ("refused", job, aborted?, text) ->
                                          <- ("step", job, name)      (crash tests only)
    ("go", job) ->
                                          <- ("done", job, end, stats) | ("aborted", job, text)
                                             | ("failed", job, traceback)
    ("abort", job) -> (any time; checked every CHECK_INTERVAL_S of work)

The worker opens the old segments' ``.log`` files read-only and writes the ``.cleaned`` files
with descriptors of its own; it never renames anything. Each group's swap is the parent's:
it opens the flushed ``.cleaned`` segment and runs ``Log.replace_segments`` where the broker
wants it (its event loop), exactly as in thread mode, so the crash-safety rules (``.cleaned``
-> ``.swap`` -> final name; recovery in log_loader.py) are the same. The worker then fsyncs the
directory and goes on with the next group.

Failures: a refused swap aborts the cleaning (the worker deletes its ``.cleaned`` files, as a
thread does). When the parent dies the worker dies with it (``PR_SET_PDEATHSIG`` on Linux; a
closed socket or a changed parent pid otherwise) without touching any file: leftovers are the
loader's, as after any crash. When the worker dies (killed, out of memory), the parent reaps
it, deletes the ``.cleaned`` files of the log it was cleaning (only the cleaner writes them,
one cleaning per log at a time) and raises CleanerWorkerError; the next cleaning starts a new
worker.

Costs: one more Python process per cleaner thread (an interpreter with the storage modules,
plus the offset map, which lives there instead of in the broker), an interpreter start at its
first cleaning, a few pickled messages per segment group; the throttler
(``log.cleaner.io.max.bytes.per.second``) is split evenly between the workers instead of
being shared, so one busy worker gets only its share. A worker that cannot be started (out of
processes, say) makes the cleaning give up, to be tried again at the next one.
"""

from __future__ import annotations

import glob
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from ..errors import LogCleaningAbortedError, StorageError
from ..segment import CLEANED_FILE_SUFFIX, LogSegment
from .cleaner import Cleaner, CleanerStats, CleaningInput, SegmentFile, SwapFn
from .offset_map import OffsetMap
from .throttler import Throttler

__all__ = ["CleanerWorker", "CleanerWorkerError", "WorkerParams", "WORKER_NICENESS", "main"]

logger = logging.getLogger(__name__)

#: Added to the worker's nice value: under CPU contention the kernel's fair scheduler gives it
#: about a tenth of a core-share of a normal process (weights 110 vs 1024). 19 would starve
#: compaction on a busy machine; 0 would let it take a core the broker wants.
WORKER_NICENESS = 10
#: How often the worker looks for an abort and for its parent, in seconds of work.
CHECK_INTERVAL_S = 0.01
#: How often the parent's cleaner thread checks whether the cleaning must stop.
POLL_INTERVAL_S = 0.05
#: How long an aborted worker may take to answer before it is killed.
ABORT_TIMEOUT_S = 10.0
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_CHILD = "from broker.storage.cleaner.worker import main; main()"


class CleanerWorkerError(StorageError):
    """The worker process died or broke the protocol during a cleaning."""


class WorkerParams(NamedTuple):
    """The cleaner settings a worker needs, sent with every cleaning."""

    map_memory: int
    load_factor: float
    io_buffer_size: int
    max_io_bytes_per_second: float
    report_steps: bool


# ---------------------------------------------------------------------- parent side

class CleanerWorker:
    """One worker process and the cleaning protocol, for the cleaner thread that owns it."""

    def __init__(self, niceness: int = WORKER_NICENESS) -> None:
        self.niceness = niceness
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._job = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _ensure_started(self) -> Connection:
        if self._conn is not None and self._proc is not None and self._proc.poll() is None:
            return self._conn
        self.close()
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(theirs.fileno()), str(os.getpid()), str(self.niceness)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
        except OSError as e:
            ours.close()
            logger.warning("cannot start a log cleaner worker process (%s): retrying at the next cleaning", e)
            raise LogCleaningAbortedError(f"cannot start a log cleaner worker process: {e}") from e
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        logger.info("started log cleaner worker process %d", self._proc.pid)
        return self._conn

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the worker (asked to exit when idle, killed after ``timeout_s``)."""
        conn, proc = self._conn, self._proc
        self._conn = self._proc = None
        if conn is not None:
            try:
                conn.send(("exit",))
            except OSError:
                pass
            conn.close()
        if proc is not None:
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _died(self, inp: CleaningInput) -> CleanerWorkerError:
        """The worker is gone mid-cleaning: reap it, remove what it was writing."""
        proc = self._proc
        if proc is not None:
            try:
                proc.wait(ABORT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        status = proc.returncode if proc is not None else None
        self.close()
        for path in glob.glob(os.path.join(glob.escape(inp.directory), "*" + CLEANED_FILE_SUFFIX)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return CleanerWorkerError(f"log cleaner worker process exited (status {status}) while cleaning"
                                  f" {inp.directory}")

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()

    def clean(self, inp: CleaningInput, params: WorkerParams, *, check_done: Callable[[], None], swap: SwapFn,
              pause_at: Callable[[str], None] | None) -> tuple[int, CleanerStats]:
        """Have the worker clean ``inp``; swap each group in with ``swap`` here; raise
        LogCleaningAbortedError when ``check_done`` does (after the worker gave up)."""
        conn = self._ensure_started()
        self._job += 1
        job = self._job
        abort_deadline: float | None = None
        swap_error: BaseException | None = None
        try:
            conn.send(("clean", job, inp, params))
            while True:
                ready = conn.poll(POLL_INTERVAL_S)
                if abort_deadline is None:  # checked before every message too: a swap must not follow an abort
                    try:
                        check_done()
                    except LogCleaningAbortedError:
                        conn.send(("abort", job))
                        abort_deadline = time.monotonic() + ABORT_TIMEOUT_S
                elif time.monotonic() > abort_deadline:
                    self._kill()
                if not ready:
                    continue
                msg = conn.recv()
                if msg[1] != job:
                    continue
                kind = msg[0]
                if kind == "swap":
                    reply, swap_error = self._swap(inp, msg, swap, job, aborted=abort_deadline is not None)
                    conn.send(reply)
                elif kind == "step":
                    if pause_at is not None:
                        pause_at(msg[2])
                    conn.send(("go", job))
                elif kind == "done":
                    return msg[2], msg[3]
                elif kind == "aborted":
                    if swap_error is not None and not isinstance(swap_error, LogCleaningAbortedError):
                        raise swap_error
                    raise LogCleaningAbortedError(msg[2])
                elif kind == "failed":
                    if swap_error is not None:
                        raise swap_error
                    raise CleanerWorkerError(f"log cleaner worker failed:\n{msg[2]}")
        except (EOFError, OSError) as e:
            raise self._died(inp) from e

    def _swap(self, inp: CleaningInput, msg: tuple[Any, ...], swap: SwapFn, job: int,
              aborted: bool) -> tuple[tuple[Any, ...], BaseException | None]:
        """Open the worker's flushed ``.cleaned`` segment and swap it in; the reply to send."""
        _, _, base, old_bases, old_sizes = msg
        if aborted:
            return ("refused", job, True, "cleaning aborted"), None
        group = [SegmentFile(b, "", s) for b, s in zip(old_bases, old_sizes, strict=True)]
        try:
            cleaned = LogSegment.open_with_config(inp.directory, base, inp.config, file_already_exists=True,
                                                  file_suffix=CLEANED_FILE_SUFFIX)
        except OSError as e:
            return ("refused", job, False, f"cannot open cleaned segment {base}: {e}"), e
        cleaned.log.release()  # inactive: opened on demand, as a loaded segment
        try:
            swap(cleaned, group)
        except LogCleaningAbortedError as e:
            cleaned.delete_if_exists()
            return ("refused", job, True, str(e)), e
        except Exception as e:  # noqa: BLE001 - reported to the worker, raised here once it stopped
            cleaned.delete_if_exists()
            return ("refused", job, False, f"{type(e).__name__}: {e}"), e
        return ("swapped", job), None


# ---------------------------------------------------------------------- worker side

def _die_with_parent(parent_pid: int) -> None:
    """Linux: have the kernel SIGKILL this process when the parent (thread) that started it
    goes; elsewhere the parent-pid check in ``_Child.check`` and the socket's EOF do it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


class _Child:
    def __init__(self, conn: Connection, parent_pid: int) -> None:
        self.conn = conn
        self.parent_pid = parent_pid
        self.job = 0
        self.next_check = 0.0
        self.offset_map: OffsetMap | None = None
        self.throttler: Throttler | None = None  # long-lived, as a LogCleaner's: its periods span cleanings

    def recv(self) -> tuple[Any, ...]:
        try:
            msg: tuple[Any, ...] = self.conn.recv()
            return msg
        except (EOFError, OSError):
            os._exit(0)  # the parent is gone: leave every file as it is (a crash, for the loader)

    def send(self, msg: tuple[Any, ...]) -> None:
        try:
            self.conn.send(msg)
        except OSError:
            os._exit(0)

    def serve(self) -> None:
        while True:
            msg = self.recv()
            if msg[0] == "exit":
                return
            if msg[0] == "clean":
                self.clean(msg[1], msg[2], msg[3])

    def clean(self, job: int, inp: CleaningInput, params: WorkerParams) -> None:
        self.job = job
        m = self.offset_map
        if m is None or (m.memory, m.load_factor) != (params.map_memory, params.load_factor):
            m = self.offset_map = OffsetMap(params.map_memory, params.load_factor)
        t = self.throttler
        if t is None or t.desired_rate != params.max_io_bytes_per_second:
            t = self.throttler = Throttler(params.max_io_bytes_per_second)
        cleaner = Cleaner(m, t, check_done=self.check,
                          io_buffer_size=params.io_buffer_size,
                          pause_at=self.report_step if params.report_steps else None)
        try:
            end, stats = cleaner.clean(inp, self.swap)
            self.send(("done", job, end, stats))
        except LogCleaningAbortedError as e:
            self.send(("aborted", job, str(e)))
        except Exception:  # noqa: BLE001 - reported to the parent, which decides
            self.send(("failed", job, traceback.format_exc()))
        finally:
            m.clear()

    def reply(self) -> tuple[Any, ...]:
        """The parent's next message for this job; an abort raises."""
        while True:
            msg = self.recv()
            if len(msg) > 1 and msg[1] == self.job:
                if msg[0] == "abort":
                    raise LogCleaningAbortedError("cleaning aborted by the broker")
                return msg

    def check(self) -> None:
        now = time.monotonic()
        if now < self.next_check:
            return
        self.next_check = now + CHECK_INTERVAL_S
        if os.getppid() != self.parent_pid:
            os._exit(1)
        while self.conn.poll():
            msg = self.recv()
            if msg[0] == "abort" and msg[1] == self.job:
                raise LogCleaningAbortedError("cleaning aborted by the broker")

    def swap(self, cleaned: LogSegment, group: list[SegmentFile]) -> None:
        cleaned.close_handlers()  # flushed; the parent opens the files itself
        self.send(("swap", self.job, cleaned.base_offset, [f.base_offset for f in group], [f.size for f in group]))
        msg = self.reply()
        if msg[0] == "refused":
            if msg[2]:
                raise LogCleaningAbortedError(msg[3])
            raise CleanerWorkerError(msg[3])

    def report_step(self, step: str) -> None:
        self.send(("step", self.job, step))
        self.reply()


def main() -> None:
    """The worker's entry point: ``python -c <_CHILD> FD PARENT_PID NICENESS``."""
    fd, parent_pid, niceness = (int(a) for a in sys.argv[1:4])
    _die_with_parent(parent_pid)
    if niceness:
        try:
            os.nice(niceness)
        except OSError:
            pass
    _Child(Connection(fd), parent_pid).serve()
