"""Record futures (client/record_future.py: client/_record_future.c delegating to the methods of
client/_record_future_py.py, or that module alone), against a real broker: they and the RecordMetadata they answer
are untracked, they still behave as futures, and failed records leave no reference cycle
behind (a cycle through an untracked object could never be freed)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import uuid

import pytest

from client import Admin, Producer, RecordMetadata
from client.errors import MessageTooLargeError  # type: ignore[attr-defined]
from client.producer_batch import BatchFuture, ProducerBatch, WaitGroup
from client.record_future import (
    RecordFuture,
    WaitingRecord,
    fresh_error,
    new_record_future,
    new_waiting_record,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: ``MINIBROKER_PURE_PYTHON=1`` asks for the Python record futures: the C types' own tests skip
PURE_PYTHON = os.environ.get("MINIBROKER_PURE_PYTHON", "") not in ("", "0")
c_types_only = pytest.mark.skipif(PURE_PYTHON, reason="MINIBROKER_PURE_PYTHON=1: the Python record futures are in use")


def test_the_extension_is_built_and_in_use() -> None:
    from client import _record_future, _record_future_py

    if PURE_PYTHON:  # the opt-out is honoured: the Python classes, though the extension is built
        assert RecordFuture is _record_future_py.RecordFuture and WaitingRecord is _record_future_py.WaitingRecord
        return

    assert RecordFuture is _record_future.RecordFuture and WaitingRecord is _record_future.WaitingRecord
    rf = RecordFuture(None, 7, 1234)
    assert (rf._index, rf._timestamp, gc.is_tracked(rf)) == (7, 1234, False)
    wr = WaitingRecord(None, "t", b"v", None, [("h", b"1")], 3, 99, 12.5)
    assert (wr.topic, wr.value, wr.key, wr.headers, wr.partition, wr.deadline) == ("t", b"v", None, [("h", b"1")], 3, 12.5)
    assert isinstance(wr, RecordFuture) and not gc.is_tracked(wr) and wr._index == 0
    wr.value = wr.key = wr.headers = None
    assert wr.value is None
    with pytest.raises(TypeError):
        RecordFuture(None, "not an int", 0)


@pytest.mark.parametrize("outcome", ["result", "exception", "cancel"])
async def test_a_batch_future_settles_its_waiters_at_once_in_order(outcome: str) -> None:
    """BatchFuture: when it resolves, its record waiters are resolved and its settle callbacks
    called within that call (not a loop turn later), in the order added; a failing callback
    goes to the loop's exception handler and the others still run."""
    loop = asyncio.get_running_loop()
    handled: list[dict] = []
    loop.set_exception_handler(lambda _loop, ctx: handled.append(ctx))
    try:
        f = BatchFuture(loop)
        seen: list[str] = []
        w1, w2 = loop.create_future(), loop.create_future()
        w2.cancel()  # a cancelled waiter (its task was cancelled) is left alone
        f.add_record_waiter(w1)
        f.add_settle_callback(seen.append, "a")
        f.add_settle_callback(lambda _arg: 1 / 0, None)
        f.add_record_waiter(w2)
        f.add_settle_callback(lambda arg: seen.append(arg + str(f.done())), "b")
        if outcome == "result":
            f.set_result(5)
        elif outcome == "exception":
            f.set_exception(KeyError("x"))
        else:
            assert f.cancel()
        assert seen == ["a", "bTrue"] and w1.done() and w1.result() is None and w2.cancelled()
        assert len(handled) == 1 and isinstance(handled[0]["exception"], ZeroDivisionError)
        if outcome == "exception":
            assert isinstance(f.exception(), KeyError)
    finally:
        loop.set_exception_handler(None)


async def test_the_fast_constructors_make_what_the_classes_make() -> None:
    """``new_record_future``/``new_waiting_record`` (the C extension's argument-tuple-free
    constructors, or the classes themselves) fill the same fields; the C ones (and the C types)
    refuse the same junk (the pure Python classes take anything)."""
    group = WaitGroup(asyncio.get_running_loop())
    checked = new_record_future is not RecordFuture
    for make, cls in ((new_record_future, RecordFuture), (RecordFuture, RecordFuture)):
        rf = make(group, 7, 1_700_000_000_123)
        assert type(rf) is cls and rf._batch is group and rf._index == 7 and rf._timestamp == 1_700_000_000_123
        if checked:
            with pytest.raises(TypeError):
                make(group, "7", 1)
    for make_w in (new_waiting_record, WaitingRecord):
        w = make_w(group, "t", b"v", b"k", [("h", None)], 3, 12, 9.5)
        assert type(w) is WaitingRecord and w._batch is group and w._index == 0 and w._timestamp == 12
        assert (w.topic, w.value, w.key, w.headers, w.partition, w.deadline) == ("t", b"v", b"k", [("h", None)], 3, 9.5)
        if checked:
            with pytest.raises(TypeError):
                make_w(group, "t", b"v", None, None, None, 12, "soon")
            with pytest.raises(TypeError):
                make_w(group, "t", b"v")


def test_fresh_error_is_an_equal_new_exception() -> None:
    try:
        raise MessageTooLargeError("MESSAGE_TOO_LARGE: too big")
    except MessageTooLargeError as e:
        original = e
    original.extra = 5  # type: ignore[attr-defined]
    copy = fresh_error(original)
    assert copy is not original and type(copy) is type(original)
    assert copy.args == original.args and str(copy) == str(original)
    assert copy.extra == 5 and copy.__traceback__ is original.__traceback__  # type: ignore[attr-defined]


@c_types_only
async def test_futures_and_metadata_are_untracked_and_behave(module_broker) -> None:
    topic = f"untracked-{uuid.uuid4().hex[:8]}"
    async with Producer(module_broker.bootstrap, acks=1) as p:
        early = [p.send_nowait(topic, b"%d" % i) for i in range(50)]  # before metadata: WaitingRecord
        assert all(type(f) is WaitingRecord and not gc.is_tracked(f) for f in early)
        mds = await asyncio.gather(*early)
        later = [p.send_nowait(topic, b"x") for _ in range(50)]
        assert all(type(f) is RecordFuture and not gc.is_tracked(f) for f in later)
        done, pending = await asyncio.wait(later)
        assert len(done) == 50 and not pending
        mds += [f.result() for f in later]
    assert [m.offset for m in mds] == list(range(100))
    assert all(type(m) is RecordMetadata and not gc.is_tracked(m) for m in mds)
    assert mds[0] == RecordMetadata(topic, 0, 0, mds[0].timestamp) and mds[0]._asdict()["offset"] == 0
    assert repr(later[0]).startswith(f"<RecordFuture {topic}-0 #")


def _batches() -> int:
    """ProducerBatch objects alive after full collections. Several passes: a cycle kept alive
    only through an untracked future (a split batch and its halves, held by the futures a dead
    frame held) is freed one pass after that frame, as it becomes unreachable only then."""
    for _ in range(3):
        gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is ProducerBatch)


async def test_failed_records_leave_no_cycle_behind(module_broker) -> None:
    topic = f"untracked-fail-{uuid.uuid4().hex[:8]}"
    async with Admin(module_broker.bootstrap) as admin:
        await admin.create_topic(topic, 1, configs={"max.message.bytes": "2000"})
    async with Producer(module_broker.bootstrap) as p:
        async def fail_every_way() -> None:
            fut = p.send_nowait(topic, b"x" * 5000)  # refused by the broker: MESSAGE_TOO_LARGE
            with pytest.raises(MessageTooLargeError):
                await fut
            futs = [p.send_nowait(topic, b"y" * 5000) for _ in range(3)]
            with pytest.raises(MessageTooLargeError):
                await asyncio.gather(*futs)
            await asyncio.wait(futs)
            exc = futs[1].exception()
            assert isinstance(exc, MessageTooLargeError)
            with pytest.raises(MessageTooLargeError):
                raise exc  # the caller's frame (holding the futures) on that exception's traceback
            with pytest.raises(MessageTooLargeError):
                futs[2].result()

        await fail_every_way()
        before = _batches()
        for _ in range(20):
            await fail_every_way()
        # each round fails 4 batches: had any of them stayed in a cycle with a record future,
        # the collector could not free it
        assert _batches() - before <= 2


def test_pure_python_record_futures_give_the_same_results(module_broker) -> None:
    """``MINIBROKER_PURE_PYTHON=1`` (or no C compiler at install) keeps the Python classes; the
    same burst, gather and failure give the same answers there, tracked by the collector."""
    script = f"""
import asyncio, gc, sys
from client import Producer
from client.record_future import RecordFuture, C_RECORD_FUTURES, place_run
assert RecordFuture.__module__ == "client._record_future_py" and "client._record_future" not in sys.modules
assert not C_RECORD_FUTURES and place_run is None
async def main():
    async with Producer({module_broker.bootstrap!r}, acks=1) as p:
        futs = [p.send_nowait("pure-python", b"%d" % i) for i in range(100)]
        assert gc.is_tracked(futs[0])
        mds = await asyncio.gather(*futs)
        print(sorted(m.offset for m in mds) == list(range(mds[0].offset, mds[0].offset + 100)))
asyncio.run(main())
"""
    env = dict(os.environ, MINIBROKER_PURE_PYTHON="1", PYTHONPATH=REPO)
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def _stub_interface() -> dict[str, set[str]]:
    """The classes of client/_record_future.pyi and the names each declares."""
    import ast

    with open(os.path.join(REPO, "client", "_record_future.pyi")) as f:
        tree = ast.parse(f.read())
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            names |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            out[node.name] = names
    return out


@c_types_only
def test_both_implementations_have_the_stubbed_interface() -> None:
    """client/_record_future.pyi is the interface of the C types and of their pure-Python twin:
    every name it declares exists on both, and client.record_future exports the C ones here.
    The C type's methods are its own (C functions), none set on it from Python."""
    import types

    from client import _record_future, _record_future_py, record_future

    stubs = _stub_interface()
    assert set(stubs) == {"RecordFuture", "WaitingRecord"}
    for name, members in stubs.items():
        for impl in (_record_future, _record_future_py):
            cls = getattr(impl, name)
            missing = {m for m in members if not hasattr(cls, m) and m not in getattr(cls, "__slots__", ())}
            assert not missing, (impl.__name__, name, missing)
    for name in ("new_record_future", "new_waiting_record", "new_metadata"):
        assert callable(getattr(_record_future_py, name)) and getattr(record_future, name) is getattr(_record_future, name)
    assert record_future.C_RECORD_FUTURES and record_future.place_run is _record_future.place_run
    for cls in (_record_future.RecordFuture, _record_future.WaitingRecord):
        assert not [k for k, v in vars(cls).items() if isinstance(v, types.FunctionType)]


@c_types_only
def test_the_c_type_delegates_only_once_configured() -> None:
    """Before ``configure`` (client.record_future calls it at import) a method the C type
    delegates to Python raises RuntimeError rather than crash; its own fast paths need no
    configuration."""
    script = """
import asyncio
from client import _record_future
rf = _record_future.RecordFuture(None, 0, 0)
for call in (lambda: rf.add_done_callback(print), lambda: repr(rf), lambda: rf.__await__(), rf.cancel):
    try:
        call()
    except RuntimeError as e:
        assert "configure" in str(e)
    else:
        raise AssertionError("no RuntimeError")
assert rf._asyncio_future_blocking is False
import client.record_future
assert rf.cancel() is False  # now the Python method's answer
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=REPO), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
