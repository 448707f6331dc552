#!/usr/bin/env python3
"""Benchmark: warm/cold offset-index search (KAFKA-6432) against plain binary search.

What a consumer at the head of a partition asks the active segment's ``.index`` for is an
offset among the last few entries. Plain binary search over all entries probes pages spread
over the whole file, and which pages those are changes every time the index grows by a page
(KAFKA-6432). ``OffsetIndex.lookup`` first searches the *warm section* (the last 8192 bytes
of entries), so tail lookups touch the same 2-3 pages however large the index is.

One ``OffsetIndex`` (10 MiB max, i.e. 1,310,720 entries, as Kafka's default
``segment.index.bytes``) is grown with ``append``; at each checkpoint size it is closed
(trimmed, as on a roll), measured through read-only views of the same file, and reopened and
resized to its max size (as when a log is loaded) to keep growing. Per size it prints:

- distinct 4 KiB pages touched per tail lookup (max and mean over the tail targets, and the
  union over all of them), for ``OffsetIndex.lookup`` and for plain binary search;
- lookups per second (median of ``--repeats``);
- major page faults after evicting the index from the page cache (``fsync`` once, then per
  eviction ``madvise(MADV_DONTNEED)`` on the mapping and ``posix_fadvise(POSIX_FADV_DONTNEED)``
  on the file), with the kernel's default read-around and with ``MADV_RANDOM`` (no
  read-around, so one major fault = one 4 KiB page read from disk).

Plain binary search is implemented here with Kafka's pre-KAFKA-6432 rules (check entry 0, then
``mid = (lo + hi + 1) >> 1`` over ``[0, entries - 1]``) and reads the index through the same
mmap with the index's own ``_search_value``, so probes, page touches, faults and per-probe
cost are directly comparable. Pages are counted by a subclass overriding ``_search_value``
(``slot * 8 // 4096`` for each probe) used only for counting; timings and faults use plain
``OffsetIndex`` objects.

Run from the repository root::

    .venv/bin/python scripts/bench_index.py            # full run (about a minute)
    .venv/bin/python scripts/bench_index.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import mmap
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from _benchutil import block_queue_setting, command_line, fs_type, machine_line  # noqa: E402

from broker.storage.index import KEY, WARM_SECTION_BYTES  # noqa: E402
from broker.storage.offset_index import OffsetIndex, OffsetPosition  # noqa: E402

PAGE = 4096
ENTRY = OffsetIndex.ENTRY_SIZE
ENTRIES_PER_PAGE = PAGE // ENTRY
DEFAULT_MAX_INDEX_BYTES = 10 * 1024 * 1024  # Kafka's segment.index.bytes
DEFAULT_SIZES = "1024,4096,16384,65536,262144,1048576,1310720"
KAFKA_6432_PAGES = (13, 14)  # the example in the issue: an index of 13 pages, then 14

# Synthetic index content: entry i maps the last offset of a batch of 10 records to a position
# 819 bytes further on per entry (positions stay inside an int32 up to 1.31M entries).
BASE_OFFSET = 0
OFFSET_STEP = 10
POSITION_STEP = 819


def key_of(i: int) -> int:
    return BASE_OFFSET + OFFSET_STEP * i + OFFSET_STEP - 1


def slot_for(target: int, entries: int) -> int:
    """Reference answer: the largest slot whose key <= target (-1 if none)."""
    if target < key_of(0):
        return -1
    return min(entries - 1, (target - key_of(0)) // OFFSET_STEP)


# -- instrumentation (subclasses; broker code is not modified) --


class ProbedOffsetIndex(OffsetIndex):
    """Records the slot of every entry the search reads (used only for counting pages)."""

    probes: list[int]

    def _search_value(self, slot: int, entity: int) -> int:
        self.probes.append(slot)
        return super()._search_value(slot, entity)


class EvictableOffsetIndex(OffsetIndex):
    """A read-only view whose pages can be dropped from the page cache between lookups."""

    def evict(self) -> None:
        # Pages mapped into a process are skipped by POSIX_FADV_DONTNEED, so first drop this
        # mapping's page-table entries (MADV_DONTNEED on a shared file mapping loses nothing),
        # then evict the (clean: fsync'd) pages from the page cache.
        assert self._mm is not None
        self._mm.madvise(mmap.MADV_DONTNEED)
        os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_DONTNEED)

    def set_readahead(self, enabled: bool) -> None:
        assert self._mm is not None
        self._mm.madvise(mmap.MADV_NORMAL if enabled else mmap.MADV_RANDOM)


def make_plain_lookup(index: OffsetIndex) -> Callable[[int], OffsetPosition]:
    """Kafka's search before KAFKA-6432, over the same mmap via the index's _search_value."""
    entries = index.entries
    value = index._search_value  # the same accessor the real search uses
    base = index.base_offset

    def lookup(target: int) -> OffsetPosition:
        if entries == 0 or value(0, KEY) > target:
            return OffsetPosition(base, 0)
        lo, hi = 0, entries - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = value(mid, KEY)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                lo = mid
                break
        return index.entry(lo)

    return lookup


# -- helpers --


def majflt() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_pages(path: str) -> tuple[int, int]:
    """(pages of ``path`` in the page cache, pages in the file), via mincore(2)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        length = os.fstat(fd).st_size
        npages = (length + PAGE - 1) // PAGE
        if length == 0:
            return 0, 0
        addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return -1, npages
        try:
            vec = (ctypes.c_ubyte * npages)()
            if _libc.mincore(addr, length, vec) != 0:
                return -1, npages
            return sum(b & 1 for b in vec), npages
        finally:
            _libc.munmap(addr, length)
    finally:
        os.close(fd)


def time_paired(fns: dict[str, Callable[[int], object]], targets: list[int], repeats: int,
                chunks: int = 10) -> dict[str, list[float]]:
    """Lookups/s of each function per repeat. Within a repeat the functions take turns over
    ``chunks`` slices of ``targets``, so both see the same machine noise; gc is off (as
    timeit)."""
    step = max(1, len(targets) // chunks)
    slices = [targets[i:i + step] for i in range(0, len(targets), step)]
    rates: dict[str, list[float]] = {name: [] for name in fns}
    perf = time.perf_counter
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            spent = dict.fromkeys(fns, 0.0)
            for sl in slices:
                for name, fn in fns.items():
                    t0 = perf()
                    for t in sl:
                        fn(t)
                    spent[name] += perf() - t0
            for name in fns:
                rates[name].append(len(targets) / spent[name])
    finally:
        if gc_was_enabled:
            gc.enable()
    return rates


def tail_targets(entries: int, tail: int) -> list[int]:
    """Offsets a consumer at the head fetches: each of the last ``tail`` entries' keys, an
    offset between each of them and the previous entry, and one past the last entry (its
    batch is not indexed yet)."""
    first = max(0, entries - tail)
    targets = []
    for i in range(first, entries):
        targets.append(key_of(i))
        targets.append(key_of(i) - OFFSET_STEP // 2)
    targets.append(key_of(entries - 1) + OFFSET_STEP // 2)
    return targets


def random_tail_targets(entries: int, tail: int, n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    lo = key_of(max(0, entries - tail)) - OFFSET_STEP + 1
    hi = key_of(entries - 1) + OFFSET_STEP
    return [rng.randint(lo, hi) for _ in range(n)]


def pages_of(probes: list[int], result_slot: int) -> list[int]:
    """Distinct pages in first-touch order (the result entry is read too; it is always one of
    the probed slots, added for completeness)."""
    seen: list[int] = []
    for slot in probes + ([result_slot] if result_slot >= 0 else []):
        p = slot * ENTRY // PAGE
        if p not in seen:
            seen.append(p)
    return seen


# -- measurements --


def page_touches(path: str, entries: int, targets: list[int]) -> dict:
    view = ProbedOffsetIndex(path, BASE_OFFSET, writable=False)
    try:
        assert view.entries == entries, (view.entries, entries)
        view.probes = []
        plain = make_plain_lookup(view)
        out: dict = {}
        for name, fn in (("warm_cold", view.lookup), ("plain", plain)):
            per_lookup = []
            union: set[int] = set()
            probes_n = []
            for t in targets:
                view.probes = []
                got = fn(t)
                want = slot_for(t, entries)
                expect = OffsetPosition(BASE_OFFSET, 0) if want < 0 else OffsetPosition(key_of(want), POSITION_STEP * want)
                if got != expect:
                    raise AssertionError(f"{name} lookup({t}) with {entries} entries = {got}, expected {expect}")
                pages = pages_of(view.probes, want)
                per_lookup.append(pages)
                union.update(pages)
                probes_n.append(len(view.probes))
            counts = [len(p) for p in per_lookup]
            out[name] = {
                "pages_max": max(counts),
                "pages_mean": statistics.fmean(counts),
                "pages_union": len(union),
                "probes_mean": statistics.fmean(probes_n),
            }
        return out
    finally:
        view.close()


def page_list_for_last_entry(path: str, entries: int) -> dict[str, list[int]]:
    view = ProbedOffsetIndex(path, BASE_OFFSET, writable=False)
    try:
        target = key_of(entries - 1)
        res = {}
        for name, fn in (("warm_cold", view.lookup), ("plain", make_plain_lookup(view))):
            view.probes = []
            fn(target)
            res[name] = pages_of(view.probes, entries - 1)
        return res
    finally:
        view.close()


def throughput(path: str, entries: int, targets: list[int], n_lookups: int, repeats: int) -> dict:
    view = OffsetIndex(path, BASE_OFFSET, writable=False)
    try:
        seq = (targets * (n_lookups // len(targets) + 1))[:n_lookups]
        rates = time_paired({"warm_cold": view.lookup, "plain": make_plain_lookup(view)}, seq, repeats)
        ratios = [w / p for w, p in zip(rates["warm_cold"], rates["plain"])]
        return {"warm_cold": statistics.median(rates["warm_cold"]),
                "plain": statistics.median(rates["plain"]),
                "ratio": statistics.median(ratios), "runs": rates}
    finally:
        view.close()


def page_faults(path: str, entries: int, tail: int, trials: int, burst: int, seed: int) -> dict:
    """Major faults (a) per lookup, each lookup after a fresh eviction (reported per 10k
    lookups), and (b) for ``burst`` random tail lookups after one eviction; with default
    read-around and with MADV_RANDOM."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # the appends dirtied the pages through the mmap; make them clean
    finally:
        os.close(fd)
    view = EvictableOffsetIndex(path, BASE_OFFSET, writable=False)
    try:
        plain = make_plain_lookup(view)
        methods = (("warm_cold", view.lookup), ("plain", plain))
        each_targets = random_tail_targets(entries, tail, trials, seed)
        burst_targets = random_tail_targets(entries, tail, burst, seed + 1)
        view.evict()
        resident_after_evict = resident_pages(path)
        out: dict = {"resident_after_evict": list(resident_after_evict)}
        for readahead in (True, False):
            view.set_readahead(readahead)
            mode = "readahead" if readahead else "madv_random"
            res: dict = {}
            for name, fn in methods:
                faults = 0
                for t in each_targets:
                    view.evict()
                    f0 = majflt()
                    fn(t)
                    faults += majflt() - f0
                view.evict()
                f0 = majflt()
                for t in burst_targets:
                    fn(t)
                burst_faults = majflt() - f0
                res[name] = {
                    "per_lookup_cold": faults / trials,
                    "burst_lookups": burst,
                    "burst_faults": burst_faults,
                    "per_10k_burst": burst_faults * 10_000 / burst,
                }
            out[mode] = res
        view.set_readahead(True)
        return out
    finally:
        view.close()


# -- main --


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-index-bytes", type=int, default=DEFAULT_MAX_INDEX_BYTES,
                    help="index preallocation (segment.index.bytes), default 10 MiB = 1,310,720 entries")
    ap.add_argument("--sizes", default=DEFAULT_SIZES,
                    help=f"comma-separated entry counts to measure at (default {DEFAULT_SIZES})")
    ap.add_argument("--tail", type=int, default=16,
                    help="tail targets cover the last N entries (default 16)")
    ap.add_argument("--lookups", type=int, default=100_000, help="lookups per timing repeat")
    ap.add_argument("--repeats", type=int, default=5, help="timing repeats (median reported)")
    ap.add_argument("--fault-trials", type=int, default=200,
                    help="lookups each preceded by an eviction, per method and mode")
    ap.add_argument("--fault-burst", type=int, default=10_000,
                    help="lookups after a single eviction, per method and mode")
    ap.add_argument("--no-faults", action="store_true", help="skip the page-fault measurement")
    ap.add_argument("--seed", type=int, default=6432)
    ap.add_argument("--dir", help="directory for the index file (default: a temp dir under the repo)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--quick", action="store_true",
                    help="fewer lookups, repeats and fault trials (a few seconds)")
    args = ap.parse_args(argv)
    if args.quick:
        args.lookups = min(args.lookups, 20_000)
        args.repeats = min(args.repeats, 3)
        args.fault_trials = min(args.fault_trials, 30)
        args.fault_burst = min(args.fault_burst, 2_000)

    max_entries = args.max_index_bytes // ENTRY
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or sizes[0] < 1 or sizes[-1] > max_entries:
        ap.error(f"sizes must be within 1..{max_entries} (the max index size / 8)")
    example = [p * ENTRIES_PER_PAGE for p in KAFKA_6432_PAGES]
    checkpoints = sorted(set(sizes) | {e for e in example if e <= max_entries})

    cmd = command_line()
    print("# bench_index: warm/cold OffsetIndex search (KAFKA-6432) vs plain binary search")
    print(f"# command: {cmd}")
    print(f"# {machine_line()}")
    parent = args.dir or REPO
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".bench-index-", dir=parent)
    print(f"# index file in {tmp} ({fs_type(tmp)}); read_ahead_kb of its device:"
          f" {block_queue_setting(tmp, 'read_ahead_kb')};"
          f" max index size {args.max_index_bytes} bytes = {max_entries} entries;"
          f" warm section {WARM_SECTION_BYTES} bytes = {WARM_SECTION_BYTES // ENTRY} entries")
    print(f"# tail targets: keys of the last {args.tail} entries, an offset between each and its"
          f" predecessor, and one past the last entry ({2 * args.tail + 1} targets)")
    print()

    results: dict = {"command": cmd, "args": vars(args), "sizes": {}, "kafka_6432": {}}
    path = os.path.join(tmp, f"{BASE_OFFSET:020d}.index")
    try:
        idx = OffsetIndex(path, BASE_OFFSET, args.max_index_bytes)
        grow_s = 0.0
        n = 0
        for cp in checkpoints:
            t0 = time.perf_counter()
            append = idx.append
            while n < cp:
                append(key_of(n), POSITION_STEP * n)
                n += 1
            grow_s += time.perf_counter() - t0
            idx.close()  # trims to entries * 8 (as on a roll); read-only views see `cp` entries
            row: dict = {"entries": cp, "index_pages": (cp * ENTRY + PAGE - 1) // PAGE}
            if cp in example:
                results["kafka_6432"][cp // ENTRIES_PER_PAGE] = page_list_for_last_entry(path, cp)
            if cp in sizes:
                targets = tail_targets(cp, args.tail)
                row["pages"] = page_touches(path, cp, targets)
                row["lookups_per_s"] = throughput(path, cp, targets, args.lookups, args.repeats)
                if not args.no_faults:
                    row["faults"] = page_faults(path, cp, args.tail, args.fault_trials,
                                                args.fault_burst, args.seed + cp)
                results["sizes"][cp] = row
                print_row_progress(row)
            idx = OffsetIndex(path, BASE_OFFSET, args.max_index_bytes)  # reload: entries = cp
            idx.resize(args.max_index_bytes)  # active again: back to the max size
        idx.close()
        results["grow_appends_per_s"] = n / grow_s if grow_s else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    report(results, args)
    print()
    print(f"# reproduce: {cmd}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=str)
        print(f"# JSON written to {args.json}")
    return 0


def print_row_progress(row: dict) -> None:
    sys.stdout.flush()
    print(f"  (measured {row['entries']:,} entries)", file=sys.stderr, flush=True)


def report(results: dict, args: argparse.Namespace) -> None:
    rows = list(results["sizes"].values())
    print("## Distinct 4 KiB pages touched per tail lookup (max / mean over the tail targets;"
          " union = pages touched by all of them)")
    hdr = (f"{'entries':>10} {'pages':>6} | {'warm/cold max':>13} {'mean':>5} {'union':>5}"
           f" {'probes':>6} | {'plain max':>9} {'mean':>5} {'union':>5} {'probes':>6}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        w, p = r["pages"]["warm_cold"], r["pages"]["plain"]
        print(f"{r['entries']:>10,} {r['index_pages']:>6} | {w['pages_max']:>13} {w['pages_mean']:>5.2f}"
              f" {w['pages_union']:>5} {w['probes_mean']:>6.1f} | {p['pages_max']:>9}"
              f" {p['pages_mean']:>5.2f} {p['pages_union']:>5} {p['probes_mean']:>6.1f}")
    wmax = max(r["pages"]["warm_cold"]["pages_max"] for r in rows)
    print(f"warm/cold: at most {wmax} pages per tail lookup at every size"
          f" ({'OK' if wmax <= 3 else 'MORE THAN 3'}); plain binary search:"
          f" {rows[0]['pages']['plain']['pages_max']} -> {rows[-1]['pages']['plain']['pages_max']} pages"
          f" from {rows[0]['entries']:,} to {rows[-1]['entries']:,} entries")
    print()

    ex = results["kafka_6432"]
    if ex:
        print("## KAFKA-6432 example: pages touched by a lookup of the LAST entry (in probe order)")
        for pages_n, lists in sorted(ex.items()):
            print(f"{pages_n:>3}-page index ({pages_n * ENTRIES_PER_PAGE:,} entries):"
                  f"  plain {lists['plain']}   warm/cold {lists['warm_cold']}")
        if len(ex) == 2:
            (a, la), (b, lb) = sorted(ex.items())
            for name in ("plain", "warm_cold"):
                shared = sorted(set(la[name]) & set(lb[name]))
                new = [p for p in lb[name] if p not in la[name]]
                print(f"  {name:>9}: pages shared by the {a}- and {b}-page lookups: {shared};"
                      f" pages the {b}-page lookup needs that the {a}-page one did not touch: {new}")
        print("  (the issue: 0,6,9,11,12 for 13 pages, then 0,7,10,12,13 for 14 pages)")
        print()

    print(f"## Lookups per second, tail targets, median of {args.repeats} repeats of {args.lookups:,}"
          " lookups per method (pages in the page cache; the methods alternate in 10 chunks within"
          " each repeat; ratio = median of the per-repeat ratios)")
    hdr = f"{'entries':>10} | {'warm/cold':>10} | {'plain':>10} | {'warm/cold / plain':>17}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        t = r["lookups_per_s"]
        print(f"{r['entries']:>10,} | {t['warm_cold']:>10,.0f} | {t['plain']:>10,.0f} |"
              f" {t['ratio']:>16.2f}x")
    print()

    if not args.no_faults and rows and "faults" in rows[0]:
        print("## Major page faults after evicting the index from the page cache"
              " (fsync, then madvise(MADV_DONTNEED) + posix_fadvise(POSIX_FADV_DONTNEED))")
        print(f"cold = mean faults per lookup when every lookup follows a fresh eviction"
              f" ({args.fault_trials} random tail lookups); per 10k = faults during"
              f" {args.fault_burst:,} random tail lookups after one eviction, scaled to 10k lookups."
              " Same targets for both methods; the plain search reads the same mmap through the"
              " index's own _search_value.")
        for mode, label in (("readahead", "default read-around (read_ahead_kb)"),
                            ("madv_random", "MADV_RANDOM: no read-around, 1 fault = 1 page read")):
            print(f"### {label}")
            hdr = (f"{'entries':>10} {'resident':>9} | {'warm/cold cold':>14} {'per 10k':>8} |"
                   f" {'plain cold':>10} {'per 10k':>8}")
            print(hdr)
            print("-" * len(hdr))
            for r in rows:
                f = r["faults"]
                w, p = f[mode]["warm_cold"], f[mode]["plain"]
                res = f["resident_after_evict"]
                print(f"{r['entries']:>10,} {f'{res[0]}/{res[1]}':>9} | {w['per_lookup_cold']:>14.2f}"
                      f" {w['per_10k_burst']:>8.1f} | {p['per_lookup_cold']:>10.2f} {p['per_10k_burst']:>8.1f}")
        print("resident = index pages still in the page cache right after an eviction (mincore)")
    if results.get("grow_appends_per_s"):
        print(f"(growing the index: {results['grow_appends_per_s']:,.0f} OffsetIndex.append calls/s)")


if __name__ == "__main__":
    sys.exit(main())
