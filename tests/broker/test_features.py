"""Feature versions: the store's levels, checks and file (broker/features.py), and over the
wire, ApiVersions v3+'s features and UpdateFeatures v0-2 against an in-process broker, kept
across a restart. Kafka's rules and messages are quoted in broker/features.py; the
authorization checks are in tests/broker/test_authorization.py, kafka-python's admin calls in
tests/compat/test_kafka42_admin.py."""

from __future__ import annotations

import json
import os

import pytest

from broker.features import (
    ELR_VERSION,
    FEATURES_FILE,
    GROUP_VERSION,
    INITIAL,
    KRAFT_VERSION,
    METADATA_VERSION,
    SAFE_DOWNGRADE,
    SHARE_VERSION,
    STREAMS_VERSION,
    SUPPORTED,
    TRANSACTION_VERSION,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureFileError,
    FeatureStore,
    FeatureUpdate,
    metadata_changed,
)
from broker.testing.inprocess import InProcessBroker
from broker.testing.wire import Conn
from client.protocol.api import ApiKey, ErrorCode

PREFIX = "The update failed for all features since the following feature had an error: "


def test_kafka_42s_supported_ranges_and_a_new_data_dirs_levels(tmp_path) -> None:
    assert SUPPORTED == {"metadata.version": (7, 29), "kraft.version": (0, 1), "transaction.version": (0, 2),
                         "group.version": (0, 1), "eligible.leader.replicas.version": (0, 1),
                         "share.version": (0, 1), "streams.version": (0, 1)}
    store = FeatureStore(str(tmp_path), node_id=3)
    assert store.finalized() == {ELR_VERSION: 1, KRAFT_VERSION: 1, METADATA_VERSION: 29, GROUP_VERSION: 1,
                                  SHARE_VERSION: 1} == INITIAL
    assert store.epoch == 0
    assert store.level(TRANSACTION_VERSION) == 0
    with open(tmp_path / FEATURES_FILE) as f:  # written at once: the data dir keeps these levels
        assert json.load(f) == {"version": 1, "epoch": 0, "features": {
            "eligible.leader.replicas.version": 1, "group.version": 1, "kraft.version": 1, "metadata.version": 29,
            "share.version": 1}}


def refusal(store: FeatureStore, *updates: FeatureUpdate) -> str | None:
    code, message = store.update(updates, validate_only=True)
    assert (code == 0) == (message is None)
    if code:
        assert code == ErrorCode.INVALID_UPDATE_VERSION and message is not None and message.startswith(PREFIX)
        return message.removeprefix(PREFIX)
    return None


def test_refusals_with_kafkas_messages(tmp_path) -> None:
    s = FeatureStore(str(tmp_path), node_id=3)
    assert refusal(s, FeatureUpdate(TRANSACTION_VERSION, 1, 0)) == \
        "Invalid update version 1 for feature transaction.version. The controller does not support the given upgrade type."
    assert refusal(s, FeatureUpdate(GROUP_VERSION, -1)) == \
        "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."
    assert refusal(s, FeatureUpdate(TRANSACTION_VERSION, 3)) == \
        "Invalid update version 3 for feature transaction.version. Local controller 3 only supports versions 0-2"
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 30)) == \
        "Invalid update version 30 for feature metadata.version. Local controller 3 only supports versions 7-29"
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 0, SAFE_DOWNGRADE)) == \
        "Invalid update version 0 for feature metadata.version. Local controller 3 only supports versions 7-29"
    assert refusal(s, FeatureUpdate("no.such.version", 1)) == \
        "Invalid update version 1 for feature no.such.version. Local controller 3 does not support this feature."
    assert refusal(s, FeatureUpdate("no.such.version", 0)) == \
        "Invalid update version 0 for feature no.such.version. Feature no.such.version not found."
    # inside Kafka's range, above what this broker implements
    assert refusal(s, FeatureUpdate(STREAMS_VERSION, 1)) == (
        "Invalid update version 1 for feature streams.version. minibroker does not implement"
        " streams.version 1 yet: it implements levels up to 0.")
    assert refusal(s, FeatureUpdate(GROUP_VERSION, 1)) is None  # KIP-848 groups are implemented
    assert refusal(s, FeatureUpdate(SHARE_VERSION, 1)) is None  # and share groups
    for name in (STREAMS_VERSION,):
        assert "does not implement" in (refusal(s, FeatureUpdate(name, 1)) or "")
    assert refusal(s, FeatureUpdate(TRANSACTION_VERSION, 2)) is None  # transactions V2 are implemented
    assert refusal(s, FeatureUpdate(ELR_VERSION, 0)) == (
        "Invalid update version 0 for feature eligible.leader.replicas.version. Can't downgrade the version of this"
        " feature without setting the upgrade type to either safe or unsafe downgrade.")
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 29, SAFE_DOWNGRADE)) is None  # no change: accepted
    assert refusal(s, FeatureUpdate(ELR_VERSION, 1, SAFE_DOWNGRADE)) is None
    # kraft.version never goes down
    assert refusal(s, FeatureUpdate(KRAFT_VERSION, 0, SAFE_DOWNGRADE)) == \
        "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."
    assert refusal(s, FeatureUpdate(KRAFT_VERSION, 1)) is None
    # the first refusal refuses the whole request; the good updates change nothing
    assert refusal(s, FeatureUpdate(ELR_VERSION, 0, SAFE_DOWNGRADE), FeatureUpdate(GROUP_VERSION, 5)) == \
        "Invalid update version 5 for feature group.version. Local controller 3 only supports versions 0-1"
    assert s.update([FeatureUpdate(ELR_VERSION, 0, SAFE_DOWNGRADE), FeatureUpdate(GROUP_VERSION, 5)], False)[0]
    assert s.finalized() == INITIAL and s.epoch == 0


def test_metadata_version_downgrades(tmp_path) -> None:
    """Down only past versions that did not change the metadata format (23, 4.0-IV1, did)."""
    assert not metadata_changed(29, 24) and metadata_changed(29, 23 - 1) and not metadata_changed(29, 29)
    s = FeatureStore(str(tmp_path))
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 22, SAFE_DOWNGRADE)) == (
        "Unsupported metadata.version downgrade from 29 to 22. Refusing to perform the requested downgrade because"
        " it might delete metadata information.")
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 22, UNSAFE_DOWNGRADE)) == \
        "Unsupported metadata.version downgrade from 29 to 22. Unsafe metadata downgrade is not supported in this version."
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 24, UPGRADE)) == (
        "Invalid update version 24 for feature metadata.version. Can't downgrade the version of this feature"
        " without setting the upgrade type to either safe or unsafe downgrade.")
    assert s.update([FeatureUpdate(METADATA_VERSION, 24, SAFE_DOWNGRADE)], False) == (0, None)
    assert s.level(METADATA_VERSION) == 24 and s.epoch == 1
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 29, SAFE_DOWNGRADE)) == \
        "Invalid update version 29 for feature metadata.version. Can't downgrade to a newer version."
    # a feature's dependencies, against the levels the request proposes
    assert refusal(s, FeatureUpdate(METADATA_VERSION, 23, SAFE_DOWNGRADE), FeatureUpdate(ELR_VERSION, 1)) == (
        "Invalid update version 1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version"
        " could not be set to 1 because it depends on metadata.version level 24")
    assert s.update([FeatureUpdate(METADATA_VERSION, 29)], False) == (0, None)
    assert s.level(METADATA_VERSION) == 29 and s.epoch == 2


def test_changes_are_durable_and_validate_only_changes_nothing(tmp_path) -> None:
    s = FeatureStore(str(tmp_path))
    assert s.update([FeatureUpdate(ELR_VERSION, 0, SAFE_DOWNGRADE)], validate_only=True) == (0, None)
    assert s.finalized() == INITIAL and s.epoch == 0
    assert s.update([], validate_only=False) == (0, None)  # nothing to change: the epoch stays
    assert s.epoch == 0
    assert s.update([FeatureUpdate(ELR_VERSION, 0, SAFE_DOWNGRADE)], validate_only=False) == (0, None)
    assert s.finalized() == {KRAFT_VERSION: 1, METADATA_VERSION: 29, GROUP_VERSION: 1, SHARE_VERSION: 1} and s.epoch == 1
    again = FeatureStore(str(tmp_path))
    assert again.finalized() == {KRAFT_VERSION: 1, METADATA_VERSION: 29, GROUP_VERSION: 1, SHARE_VERSION: 1} and again.epoch == 1
    assert again.update([FeatureUpdate(ELR_VERSION, 1)], False) == (0, None)
    assert FeatureStore(str(tmp_path)).finalized() == INITIAL and FeatureStore(str(tmp_path)).epoch == 2


@pytest.mark.parametrize("content,why", [
    (b"{not json", "cannot be used"),
    (b'{"version": 2, "epoch": 0, "features": {"metadata.version": 29}}', "unsupported version 2"),
    (b'{"version": 1, "epoch": -1, "features": {"metadata.version": 29}}', "epoch"),
    (b'{"version": 1, "epoch": 0, "features": {}}', "no metadata.version"),
    (b'{"version": 1, "epoch": 0, "features": {"metadata.version": 30}}', "outside the supported range 7-29"),
    (b'{"version": 1, "epoch": 0, "features": {"metadata.version": 29, "x.version": 1}}', "x.version is not a"),
    (b'{"version": 1, "epoch": 0, "features": {"metadata.version": 29, "streams.version": 1}}',
     "above what this broker implements"),
])
def test_a_file_it_cannot_use_stops_the_start(tmp_path, content: bytes, why: str) -> None:
    (tmp_path / FEATURES_FILE).write_bytes(content)
    with pytest.raises(FeatureFileError, match=why) as e:
        FeatureStore(str(tmp_path))
    assert str(tmp_path / FEATURES_FILE) in str(e.value) and "\n" not in str(e.value)


def test_a_torn_write_is_ignored_and_removed(tmp_path) -> None:
    FeatureStore(str(tmp_path)).update([FeatureUpdate(ELR_VERSION, 0, SAFE_DOWNGRADE)], False)
    (tmp_path / (FEATURES_FILE + ".tmp")).write_bytes(b'{"version": 1, "ep')
    s = FeatureStore(str(tmp_path))
    assert s.finalized() == {KRAFT_VERSION: 1, METADATA_VERSION: 29, GROUP_VERSION: 1, SHARE_VERSION: 1} and s.epoch == 1
    assert not os.path.exists(tmp_path / (FEATURES_FILE + ".tmp"))


# ------------------------------------------------------------------ over the wire


def _features(resp: dict) -> tuple[dict, dict, int]:
    return ({f["name"]: (f["min_version"], f["max_version"]) for f in resp["supported_features"]},
            {f["name"]: (f["min_version_level"], f["max_version_level"]) for f in resp["finalized_features"]},
            resp["finalized_features_epoch"])


def _update(c: Conn, version: int, *updates: tuple, validate_only: bool = False) -> dict:
    body = {"timeout_ms": 1000, "validate_only": validate_only, "feature_updates": [
        {"feature": name, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": kind != UPGRADE}
        for name, level, kind in updates]}
    return c.call(ApiKey.UPDATE_FEATURES, version, body)


def test_api_versions_and_update_features_over_the_wire_and_a_restart(tmp_path) -> None:
    data = str(tmp_path / "data")
    with InProcessBroker(data) as b, Conn(b.port) as c:
        v2 = c.call(ApiKey.API_VERSIONS, 2, {})
        assert "supported_features" not in v2 or v2["supported_features"] == []  # no tagged fields before v3
        hello = {"client_software_name": "t", "client_software_version": "1"}
        supported, finalized, epoch = _features(c.call(ApiKey.API_VERSIONS, 4, hello))
        assert supported == SUPPORTED
        assert finalized == {"metadata.version": (29, 29), "kraft.version": (1, 1),
                             "eligible.leader.replicas.version": (1, 1), "group.version": (1, 1),
                             "share.version": (1, 1)}
        assert epoch == 0
        # v3: the features whose minimum is 0 are left out (KAFKA-17492), the finalized ones are not
        supported3, finalized3, _ = _features(c.call(ApiKey.API_VERSIONS, 3, hello))
        assert supported3 == {"metadata.version": (7, 29)} and finalized3 == finalized

        # v0-1 answer one result per update, v2 none
        for version in (0, 1):
            r = _update(c, version, ("metadata.version", 29, UPGRADE), ("kraft.version", 1, UPGRADE))
            assert (r["error_code"], r["error_message"]) == (0, None)
            assert r["results"] == [{"feature": "metadata.version", "error_code": 0, "error_message": "NONE"},
                                    {"feature": "kraft.version", "error_code": 0, "error_message": "NONE"}]
        r = _update(c, 2, ("eligible.leader.replicas.version", 0, SAFE_DOWNGRADE), validate_only=True)
        assert (r["error_code"], r["error_message"], r["results"]) == (0, None, [])
        assert _features(c.call(ApiKey.API_VERSIONS, 4, hello))[1:] == (finalized, 2)  # validate_only: unchanged
        r = _update(c, 2, ("eligible.leader.replicas.version", 0, SAFE_DOWNGRADE))
        assert (r["error_code"], r["results"]) == (0, [])
        # v0 has no upgrade type: every update is an UPGRADE, so a downgrade is refused
        r = _update(c, 0, ("metadata.version", 24, SAFE_DOWNGRADE))
        assert r["error_code"] == ErrorCode.INVALID_UPDATE_VERSION and r["results"] == []
        assert r["error_message"] == PREFIX + (
            "Invalid update version 24 for feature metadata.version. Can't downgrade the version of this feature"
            " without setting the upgrade type to either safe or unsafe downgrade.")
        r = _update(c, 1, ("transaction.version", 3, UPGRADE))
        assert r["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
        assert r["error_message"].endswith("Local controller 0 only supports versions 0-2")
    with InProcessBroker(data) as b, Conn(b.port) as c:  # kept across the restart
        _, finalized, epoch = _features(c.call(ApiKey.API_VERSIONS, 4, hello))
        assert finalized == {"metadata.version": (29, 29), "kraft.version": (1, 1), "group.version": (1, 1),
                             "share.version": (1, 1)} and epoch == 3
