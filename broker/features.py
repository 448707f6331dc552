"""Feature versions (KIP-584, KIP-778, KIP-1022) as a single combined Kafka 4.2 KRaft node
reports and changes them: what ApiVersions v3+ advertises (supported ranges, the finalized
levels and their epoch) and what UpdateFeatures may change.

**Supported ranges** are Kafka 4.2's (``BrokerFeatures.defaultSupportedFeatures`` with
``unstable.feature.versions.enable=false``): ``metadata.version`` 7-29 (3.3-IV3, Kafka 4's
``MetadataVersion.MINIMUM_VERSION``, to 4.2-IV1, its ``LATEST_PRODUCTION``), ``kraft.version``
0-1, ``transaction.version`` 0-2, ``group.version`` 0-1, ``eligible.leader.replicas.version``
0-1, ``share.version`` 0-1, ``streams.version`` 0-1.

**Finalized levels** are what ``kafka-storage format --standalone`` gives a new Kafka 4.2
combined node, except the features whose behaviour this broker does not implement:
``metadata.version`` 29, ``kraft.version`` 1 (a dynamic quorum of one voter, KIP-853: see
DescribeQuorum), ``eligible.leader.replicas.version`` 1 (one replica: its ELR is always empty);
``transaction.version`` 0 (Kafka's is 2: transactions V2 are implemented, broker/txn/, but a
data directory turns them on when an operator finalizes level 2 with UpdateFeatures, as a
cluster upgraded from Kafka 3.x does), ``group.version`` 1 (KIP-848 consumer groups:
ConsumerGroupHeartbeat and ConsumerGroupDescribe are advertised while it is finalized at 1, as
Kafka 4 does), ``share.version`` 1 (KIP-932 share groups, broker/share/: their APIs are
advertised while it is finalized at 1) and ``streams.version`` 0 (no streams groups).
A level of 0 is not finalized (Kafka removes the feature; ApiVersions omits it).
``IMPLEMENTED`` holds the highest level of each feature the broker implements: UpdateFeatures
refuses a higher one with INVALID_UPDATE_VERSION, since a client that saw it finalized would
use what it enables (a Java producer seeing ``transaction.version`` 2 sends EndTxn v5); the
work that implements a level raises it there.

**Epoch**: Kafka's finalized-features epoch is the offset of its metadata log; here it starts
at 0 and every accepted UpdateFeatures that is not ``validate_only`` and names a feature moves
it up by one (Kafka's moves on every metadata record).

**Updates** follow Kafka 4.2's ``FeatureControlManager.updateFeature`` check by check, and
QuorumController's all-or-nothing answer: the first refused feature refuses the request, with
INVALID_UPDATE_VERSION and "The update failed for all features since the following feature had
an error: ...". The checks, in order: an unknown upgrade type; a level below 0; a level outside
the supported range ("Local controller <id> only supports versions 0-2", "... does not support
this feature." for a feature this node does not know); a level above ``IMPLEMENTED`` (ours); a
lower level with upgrade type UPGRADE, a higher one with a downgrade type; then per feature:
``metadata.version`` may go down only if no version in between changed the metadata format
(``MetadataVersion.checkIfMetadataChanged``; an UNSAFE_DOWNGRADE is refused as Kafka 4.2
refuses it), ``kraft.version`` never goes down, and the others need the levels their level
depends on (``FeatureVersion.dependencies``: ``kraft.version`` 1 needs ``metadata.version`` 21,
``eligible.leader.replicas.version`` 1 needs 24, ``share.version`` 1 needs 27).

**File**: ``<log.dir>/finalized-features.json`` (minibroker's own; Kafka keeps the levels as
FeatureLevelRecords in its metadata log), written when a data directory is first used and on
every accepted change, whole, by ``atomic_write`` (a crash leaves the old or the new levels)::

    {"version": 1, "epoch": 0, "features": {"eligible.leader.replicas.version": 1,
     "kraft.version": 1, "metadata.version": 29}}

A file that cannot be read as this format, or that finalizes a feature this broker does not
know or a level outside its supported range or above what it implements, stops start-up with
``FeatureFileError`` (Kafka's broker shuts down on finalized features it does not support).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import NamedTuple

from .storage.fileutil import atomic_write, read_atomic_file

__all__ = ["FeatureStore", "FeatureFileError", "FeatureUpdate", "FEATURES_FILE", "SUPPORTED", "IMPLEMENTED",
           "INITIAL", "METADATA_VERSION", "KRAFT_VERSION", "TRANSACTION_VERSION", "GROUP_VERSION",
           "ELR_VERSION", "SHARE_VERSION", "STREAMS_VERSION", "METADATA_VERSIONS", "UPGRADE", "SAFE_DOWNGRADE",
           "UNSAFE_DOWNGRADE", "INVALID_UPDATE_VERSION"]

FEATURES_FILE = "finalized-features.json"
FORMAT_VERSION = 1
INVALID_UPDATE_VERSION = 95

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
ELR_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

#: metadata.version feature level -> (Kafka's name of it, whether it changed the metadata
#: format: Kafka's MetadataVersion enum, from MINIMUM_VERSION 3.3-IV3 to 4.2's LATEST_PRODUCTION)
METADATA_VERSIONS: dict[int, tuple[str, bool]] = {
    7: ("3.3-IV3", True), 8: ("3.4-IV0", True), 9: ("3.5-IV0", False), 10: ("3.5-IV1", False),
    11: ("3.5-IV2", True), 12: ("3.6-IV0", False), 13: ("3.6-IV1", True), 14: ("3.6-IV2", True),
    15: ("3.7-IV0", True), 16: ("3.7-IV1", False), 17: ("3.7-IV2", True), 18: ("3.7-IV3", False),
    19: ("3.7-IV4", False), 20: ("3.8-IV0", False), 21: ("3.9-IV0", False), 22: ("4.0-IV0", False),
    23: ("4.0-IV1", True), 24: ("4.0-IV2", False), 25: ("4.0-IV3", False), 26: ("4.1-IV0", False),
    27: ("4.1-IV1", False), 28: ("4.2-IV0", False), 29: ("4.2-IV1", False),
}

#: Kafka 4.2's supported range of every feature (min, max), as its brokers advertise them
SUPPORTED: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (min(METADATA_VERSIONS), max(METADATA_VERSIONS)),
    KRAFT_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
    GROUP_VERSION: (0, 1),
    ELR_VERSION: (0, 1),
    SHARE_VERSION: (0, 1),
    STREAMS_VERSION: (0, 1),
}

#: the highest level of each feature this broker implements (see the module docstring)
IMPLEMENTED: dict[str, int] = {
    METADATA_VERSION: max(METADATA_VERSIONS),
    KRAFT_VERSION: 1,
    TRANSACTION_VERSION: 2,  # KIP-890 transactions V2 (broker/txn/coordinator.py)
    GROUP_VERSION: 1,  # KIP-848 consumer groups (broker/group/consumer_coordinator.py)
    ELR_VERSION: 1,
    SHARE_VERSION: 1,  # KIP-932 share groups (broker/share/)
    STREAMS_VERSION: 0,  # KIP-1071 streams groups: not served
}

#: the finalized levels of a new data directory (level 0: not finalized)
INITIAL: dict[str, int] = {METADATA_VERSION: max(METADATA_VERSIONS), KRAFT_VERSION: 1, ELR_VERSION: 1,
                           GROUP_VERSION: 1, SHARE_VERSION: 1}

#: (feature, level) -> {feature: the level it needs at least} (Kafka's FeatureVersion.dependencies)
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {
    (KRAFT_VERSION, 1): {METADATA_VERSION: 21},  # 3.9-IV0
    (ELR_VERSION, 1): {METADATA_VERSION: 24},  # 4.0-IV2
    (GROUP_VERSION, 1): {METADATA_VERSION: 22},  # 4.0-IV0
    (SHARE_VERSION, 1): {METADATA_VERSION: 27},  # 4.1-IV1
}

#: FeatureUpdate.UpgradeType codes (UpdateFeatures v1+)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3

FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


class FeatureFileError(Exception):
    """The features file exists but cannot be used (the message names it, on one line)."""


class FeatureUpdate(NamedTuple):
    """One entry of an UpdateFeatures request."""

    feature: str
    level: int
    upgrade_type: int = UPGRADE


def _range_text(lo: int, hi: int) -> str:
    """Kafka's VersionRange.toString."""
    return str(lo) if lo == hi else f"{lo}-{hi}"


def metadata_changed(source: int, target: int) -> bool:
    """Whether a version after the lower of the two, up to the higher, changed the metadata
    format (Kafka's MetadataVersion.checkIfMetadataChanged)."""
    low, high = sorted((source, target))
    return any(METADATA_VERSIONS[v][1] for v in range(low + 1, high + 1))


def _decode(data: bytes) -> tuple[int, dict[str, int]]:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"unsupported version {doc.get('version')!r} (this broker reads version {FORMAT_VERSION})")
    epoch, features = doc.get("epoch"), doc.get("features")
    if type(epoch) is not int or epoch < 0:
        raise ValueError('"epoch" is not an integer >= 0')
    if not isinstance(features, dict):
        raise ValueError('"features" is not an object')
    out: dict[str, int] = {}
    for name, level in features.items():
        if type(level) is not int:
            raise ValueError(f"the level of {name} is not an integer")
        if name not in SUPPORTED:
            raise ValueError(f"{name} is not a feature this broker knows")
        lo, hi = SUPPORTED[name]
        if not lo <= level <= hi:
            raise ValueError(f"{name} {level} is outside the supported range {_range_text(lo, hi)}")
        if level > IMPLEMENTED[name]:
            raise ValueError(f"{name} {level} is above what this broker implements ({IMPLEMENTED[name]})")
        if level:
            out[name] = level
    if METADATA_VERSION not in out:
        raise ValueError("no metadata.version")
    return epoch, out


def _encode(epoch: int, features: dict[str, int]) -> bytes:
    return (json.dumps({"version": FORMAT_VERSION, "epoch": epoch, "features": dict(sorted(features.items()))})
            + "\n").encode()


class FeatureStore:
    """The finalized feature levels of one data directory, and the checks that change them."""

    def __init__(self, log_dir: str, node_id: int = 0) -> None:
        self.path = os.path.join(log_dir, FEATURES_FILE)
        self.node_id = node_id
        self.epoch, self._levels = self._load()

    def _load(self) -> tuple[int, dict[str, int]]:
        data = read_atomic_file(self.path, "the features file", FeatureFileError)
        if data is None:
            atomic_write(self.path, _encode(0, INITIAL))  # a new data directory: its levels from now on
            return 0, dict(INITIAL)
        try:
            return _decode(data)
        except (ValueError, UnicodeDecodeError) as e:
            reason = str(e).replace("\n", " ")
            raise FeatureFileError(f"the features file {self.path} cannot be used ({reason}); restore it from a"
                                   " backup, or remove it to start with a new data directory's levels") from e

    def finalized(self) -> dict[str, int]:
        """The finalized levels (every feature at level 0 left out), by name."""
        return dict(sorted(self._levels.items()))

    def level(self, feature: str) -> int:
        return self._levels.get(feature, 0)

    @staticmethod
    def supported() -> dict[str, tuple[int, int]]:
        return dict(sorted(SUPPORTED.items()))

    def update(self, updates: Iterable[FeatureUpdate], validate_only: bool) -> tuple[int, str | None]:
        """Apply ``updates`` all or none: (0, None) when accepted (and, unless ``validate_only``,
        durable: the levels and the epoch are written before they change in memory; OSError
        leaves both as they were), else (INVALID_UPDATE_VERSION, Kafka's message)."""
        wanted: dict[str, FeatureUpdate] = {}
        for u in updates:  # a feature named twice: the last entry, as Kafka's map of updates keeps
            wanted[u.feature] = u
        proposed = dict(self._levels)
        proposed.update({name: u.level for name, u in wanted.items()})
        for name, u in wanted.items():
            reason = self._refusal(name, u, proposed)
            if reason is not None:
                return INVALID_UPDATE_VERSION, FAILED_PREFIX + reason
        if validate_only or not wanted:
            return 0, None
        new = {name: level for name, level in proposed.items() if level}
        epoch = self.epoch + 1
        atomic_write(self.path, _encode(epoch, new))  # the commit point
        self._levels, self.epoch = new, epoch
        return 0, None

    def _refusal(self, name: str, u: FeatureUpdate, proposed: dict[str, int]) -> str | None:
        """Why Kafka 4.2's FeatureControlManager.updateFeature refuses ``u``, or None."""
        level, kind = u.level, u.upgrade_type

        def invalid(message: str) -> str:
            return f"Invalid update version {level} for feature {name}. {message}"

        if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return invalid("The controller does not support the given upgrade type.")
        current = self.level(name)
        if level < 0:
            return invalid("A feature version cannot be less than 0.")
        lo, hi = SUPPORTED.get(name, (0, 0))
        if not lo <= level <= hi:
            if hi == 0:
                return invalid(f"Local controller {self.node_id} does not support this feature.")
            return invalid(f"Local controller {self.node_id} only supports versions {_range_text(lo, hi)}")
        if name in IMPLEMENTED and level > IMPLEMENTED[name]:
            return invalid(f"minibroker does not implement {name} {level} yet: it implements levels up to"
                           f" {IMPLEMENTED[name]}.")
        if level < current and kind == UPGRADE:
            return invalid("Can't downgrade the version of this feature without setting the upgrade type to"
                           " either safe or unsafe downgrade.")
        if level > current and kind != UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if name == METADATA_VERSION:
            if level < current and metadata_changed(current, level):
                why = ("Unsafe metadata downgrade is not supported in this version." if kind == UNSAFE_DOWNGRADE
                       else "Refusing to perform the requested downgrade because it might delete metadata"
                            " information.")
                return f"Unsupported metadata.version downgrade from {current} to {level}. {why}"
            return None
        if name == KRAFT_VERSION:
            if kind != UPGRADE and level != current:
                return invalid("Can't downgrade the version of this feature.")
            return None
        if name not in SUPPORTED:
            return invalid(f"Feature {name} not found.")
        for dependency, needed in DEPENDENCIES.get((name, level), {}).items():
            if proposed.get(dependency, 0) < needed:
                return invalid(f"{name} could not be set to {level} because it depends on {dependency} level {needed}")
        return None
