"""Group configs (KIP-848, KIP-932): per-group overrides of the broker's group settings, set
with IncrementalAlterConfigs / AlterConfigs on resource type GROUP (32), listed by
DescribeConfigs and ListConfigResources, as ``kafka-configs.sh --entity-type groups`` does.

Keys, their broker defaults and the bounds Kafka checks:

=================================  =========================================  ======================
key                                default (broker config)                    valid
=================================  =========================================  ======================
consumer.session.timeout.ms        group.consumer.session.timeout.ms          within group.consumer.min/max.session.timeout.ms
consumer.heartbeat.interval.ms     group.consumer.heartbeat.interval.ms       within group.consumer.min/max.heartbeat.interval.ms
share.session.timeout.ms           group.share.session.timeout.ms             > 0
share.heartbeat.interval.ms        group.share.heartbeat.interval.ms          > 0
share.record.lock.duration.ms      group.share.record.lock.duration.ms        1000..3600000
share.auto.offset.reset            latest                                     latest, earliest, by_duration:<ISO-8601 duration>
share.isolation.level              read_uncommitted                           read_uncommitted, read_committed
=================================  =========================================  ======================

An unknown key: INVALID_CONFIG "Unknown group config name: x"; a bad value: INVALID_CONFIG with
the bound. The set is kept in ``<log.dir>/group-configs.json`` (``{"version": 1, "groups": {group:
{key: value}}}``), replaced whole by ``atomic_write`` on every change: a crash leaves the old or
the new file (Kafka keeps them as ConfigRecords in its metadata log). Changes apply to what
starts afterwards: a new share-partition, a member's next heartbeat.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from client.protocol.api import ErrorCode

from ..config import BrokerConfig
from ..errors import ApiError
from ..storage.fileutil import atomic_write, read_atomic_file

__all__ = ["GroupConfigStore", "GroupConfigError", "GROUP_CONFIG_KEYS", "GROUP_CONFIGS_FILE"]

GROUP_CONFIGS_FILE = "group-configs.json"

#: key -> the broker config its default comes from (None: a fixed default)
GROUP_CONFIG_KEYS: dict[str, str | None] = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "share.auto.offset.reset": None,
    "share.isolation.level": None,
}
_FIXED_DEFAULTS = {"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted"}
_DURATION = re.compile(r"^by_duration:P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


class GroupConfigError(ApiError):
    def __init__(self, message: str, code: int = ErrorCode.INVALID_CONFIG) -> None:
        super().__init__(message, error_code=code)


def duration_ms(value: str) -> int | None:
    """``by_duration:PnDTnHnMnS`` in milliseconds (None when not that form)."""
    m = _DURATION.match(value)
    if m is None or value == "by_duration:P" or value.endswith("T"):
        return None
    days, hours, minutes, seconds = (float(x) if x else 0.0 for x in m.groups())
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


class GroupConfigStore:
    def __init__(self, log_dir: str, config: BrokerConfig) -> None:
        self.path = os.path.join(log_dir, GROUP_CONFIGS_FILE)
        self.config = config
        self.groups: dict[str, dict[str, str]] = {}
        raw = read_atomic_file(self.path, "the group configs file", GroupConfigError)
        if raw is not None:
            try:
                data = json.loads(raw)
                groups = data["groups"]
                assert data["version"] == 1 and isinstance(groups, dict)
                self.groups = {str(g): {str(k): str(v) for k, v in c.items()} for g, c in groups.items()}
            except (ValueError, KeyError, TypeError, AssertionError) as e:
                raise GroupConfigError(f"{self.path} cannot be used: {e}") from None

    def default(self, key: str) -> str:
        source = GROUP_CONFIG_KEYS[key]
        return self.config.get(source) if source is not None else _FIXED_DEFAULTS[key]

    def get(self, group_id: str, key: str) -> str:
        return self.groups.get(group_id, {}).get(key, self.default(key))

    def get_int(self, group_id: str, key: str) -> int:
        return int(self.get(group_id, key))

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self.groups.get(group_id, {}))

    def describe(self, group_id: str) -> list[tuple[str, str, bool]]:
        """(key, value, is the group's own) for every group config."""
        own = self.groups.get(group_id, {})
        return [(k, own.get(k, self.default(k)), k in own) for k in GROUP_CONFIG_KEYS]

    def validate(self, configs: Mapping[str, str]) -> None:
        cfg = self.config
        for key, value in configs.items():
            if key not in GROUP_CONFIG_KEYS:
                raise GroupConfigError(f"Unknown group config name: {key}")
            if key == "share.auto.offset.reset":
                if value not in ("latest", "earliest") and duration_ms(value) is None:
                    raise GroupConfigError(f"Invalid value {value} for configuration {key}: must be latest, earliest"
                                           " or by_duration:<ISO-8601 duration>")
                continue
            if key == "share.isolation.level":
                if value not in ("read_uncommitted", "read_committed"):
                    raise GroupConfigError(f"Invalid value {value} for configuration {key}: String must be one of:"
                                           " read_committed, read_uncommitted")
                continue
            try:
                n = int(value)
            except ValueError:
                raise GroupConfigError(f"Invalid value {value} for configuration {key}: Not a number of type INT"
                                       ) from None
            lo, hi = 1, 2**31 - 1
            if key.startswith("consumer."):
                name = key.removeprefix("consumer.")
                lo, hi = cfg.int(f"group.consumer.min.{name}"), cfg.int(f"group.consumer.max.{name}")
            elif key == "share.record.lock.duration.ms":
                lo, hi = 1000, 3_600_000
            if not lo <= n <= hi:
                raise GroupConfigError(f"Invalid value {value} for configuration {key}: must be between {lo}"
                                       f" and {hi}")

    def set(self, group_id: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        """Replace ``group_id``'s overrides (validated first; nothing changes on an error)."""
        self.validate(configs)
        if validate_only:
            return
        groups = dict(self.groups)
        if configs:
            groups[group_id] = dict(configs)
        else:
            groups.pop(group_id, None)
        atomic_write(self.path, json.dumps({"version": 1, "groups": groups}, sort_keys=True).encode())
        self.groups = groups
