"""What this installation runs: its version, the Python, the event loop, and whether each C
fast path is in use. Detected here and nowhere else; ``minibroker --version``, the first log
line of ``minibroker serve`` and the metric ``minibroker_build_info`` all read ``detect()``.

The C fast paths are two optional extensions (``[[tool.setuptools.ext-modules]]`` in
pyproject.toml, ``optional = true``): the record codec (``client/records/_codec.c``) and the
producer's record futures (``client/_record_future.c``). Each module that uses one picks it at
import (``client.records.codec.C_CODEC``, ``client.record_future.C_RECORD_FUTURES``); this
module only reads those choices, so what it reports is what the code runs. A path is on the
pure-Python fallback for one of two reasons:

- ``not built``: the extension does not import. pip builds it from the sdist or a source tree
  only when a C compiler is on PATH, and without one it installs anyway, with a warning in its
  build log that nobody reads. A wheel (``scripts/build_wheel``) carries it compiled.
- ``requested``: the extension imports but was passed over, which the choosers do only when
  ``MINIBROKER_PURE_PYTHON`` is set (to anything but "" or "0"). Inferred rather than read from
  the environment, so the rule stays in the two choosers alone.

Labels (``BuildInfo.labels``, also the ``key=value`` pairs of ``summary``): ``version`` (the
installed distribution's; ``unknown`` when run from a source tree that was never installed),
``python`` (``platform.python_version()``), ``event_loop`` (``uvloop`` or ``asyncio``: inside a
running loop, that loop's kind; outside, the one ``serve`` will run, uvloop whenever it
imports), ``codec`` and ``record_future`` (``c`` or ``python``).

``python -m broker.build_info`` prints ``summary`` (and the fallback warning, if any);
``--require-c`` makes it exit 1 unless both C paths are in use, which the Dockerfile and
``scripts/image_steps`` use to refuse an image without them.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import importlib.util
import logging
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BuildInfo", "FastPath", "detect", "log_build_info", "version_text", "main"]

#: how to get the C paths when they were not built, as the warning says it
_HOW_TO_BUILD = ("install a wheel, which has them compiled (`scripts/build_wheel` in a source checkout, then"
                 " `pip install dist/minibroker-*.whl`), or install a C compiler (gcc or clang) and reinstall"
                 " with `pip install --force-reinstall --no-deps --no-cache-dir` from the sdist or source tree"
                 " (--no-cache-dir: installing from an index, pip would reuse the wheel it built without them)")


@dataclass(frozen=True)
class FastPath:
    """One C fast path: ``impl`` is ``c`` or ``python``; ``reason`` says why not C (None when
    C): ``requested``, ``not built`` or ``does not load: <ImportError>``."""

    name: str  # the label: codec, record_future
    what: str  # for people: "record codec", "record futures"
    impl: str
    reason: str | None = None


@dataclass(frozen=True)
class BuildInfo:
    version: str
    python: str
    event_loop: str
    codec: FastPath
    record_future: FastPath

    @property
    def paths(self) -> tuple[FastPath, FastPath]:
        return self.codec, self.record_future

    @property
    def all_c(self) -> bool:
        return all(p.impl == "c" for p in self.paths)

    def labels(self) -> dict[str, str]:
        return {"version": self.version, "python": self.python, "event_loop": self.event_loop,
                **{p.name: p.impl for p in self.paths}}

    def summary(self) -> str:
        """One line: ``minibroker 0.1.0 (python=3.11.7 event_loop=uvloop codec=c record_future=c)``."""
        pairs = " ".join(f"{k}={v}" for k, v in self.labels().items() if k != "version")
        return f"minibroker {self.version} ({pairs})"

    def fallback_warning(self) -> str | None:
        """One line saying which paths run in pure Python, why, and how to get C; None when
        both are C."""
        slow = [p for p in self.paths if p.impl != "c"]
        if not slow:
            return None
        names = " and ".join(p.what for p in slow)
        if all(p.reason == "requested" for p in slow):
            return (f"MINIBROKER_PURE_PYTHON is set: the pure-Python {names} were requested (about half as fast"
                    " as the C fast paths); unset it to use them")
        why = "; ".join(f"{p.what}: {p.reason}" for p in slow)
        return f"the C fast paths are not in use ({why}), so the {names} run in pure Python, about half" \
               f" as fast. To get them, {_HOW_TO_BUILD}"


def _fast_path(name: str, what: str, module: str, selected: bool) -> FastPath:
    if selected:
        return FastPath(name, what, "c")
    try:
        importlib.import_module(module)
    except ImportError as e:
        # find_spec is None: no file at all (the usual case, no compiler at install); else a
        # file that fails to load (built for another Python, a missing symbol)
        found = importlib.util.find_spec(module) is not None
        return FastPath(name, what, "python", f"does not load: {e}" if found else "not built")
    return FastPath(name, what, "python", "requested")


def _event_loop() -> str:
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
    try:  # the same test `serve` makes before it picks its runner
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def _version() -> str:
    try:
        return importlib.metadata.version("minibroker")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def detect() -> BuildInfo:
    """The build info of this process, now. Cheap after the first call (the choosers' modules
    are then imported); not cached, since the event loop depends on the caller's thread."""
    from client import record_future
    from client.records import codec

    return BuildInfo(
        version=_version(), python=platform.python_version(), event_loop=_event_loop(),
        codec=_fast_path("codec", "record codec", "client.records._codec", codec.C_CODEC),
        record_future=_fast_path("record_future", "record futures", "client._record_future",
                                 record_future.C_RECORD_FUTURES))


def log_build_info(logger: logging.Logger) -> BuildInfo:
    """``summary`` at INFO, then the fallback warning, if any, at WARNING (``minibroker serve``)."""
    info = detect()
    logger.info("%s", info.summary())
    warning = info.fallback_warning()
    if warning is not None:
        logger.warning("%s", warning)
    return info


def version_text(info: BuildInfo) -> str:
    """``minibroker --version``'s output: ``summary``, and the fallback warning on a line of its own."""
    warning = info.fallback_warning()
    return info.summary() + "\n" + ("" if warning is None else f"WARNING: {warning}\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.build_info",
                                     description="What this installation of minibroker runs.")
    parser.add_argument("--require-c", action="store_true", help="exit 1 unless both C fast paths are in use")
    args = parser.parse_args(argv)
    info = detect()
    sys.stdout.write(version_text(info))
    return 1 if args.require_c and not info.all_c else 0


if __name__ == "__main__":
    sys.exit(main())
