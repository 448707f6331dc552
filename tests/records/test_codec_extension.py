"""The record codec's C extension (``client/records/_codec.c``) is built and in use.

It is optional at install (``optional = true`` in pyproject.toml: a machine without a C
compiler still installs, with the Python codec), so a C error would otherwise pass unnoticed:
the C tests skip themselves when the module is missing and the equivalence tests compare
results, which the Python fallback also gives. ``scripts/test`` builds it, so here it must be
there, and the codec must have picked it (unless ``MINIBROKER_PURE_PYTHON`` asks for Python)."""

from __future__ import annotations

import importlib
import os

from client.records import codec, columnar


def test_the_extension_is_built_and_in_use() -> None:
    c = importlib.import_module("client.records._codec")  # ImportError: not built
    if os.environ.get("MINIBROKER_PURE_PYTHON", "") not in ("", "0"):
        assert not codec.C_CODEC and codec.append_record is codec.append_record_py
        return
    assert codec.C_CODEC
    assert codec.append_record is c.append_record and codec.decode_lists is c.decode_lists
    assert columnar.C_DECODER and columnar.decode_records is c.decode_records
    assert columnar.decode_columns is columnar.decode_columns_c
