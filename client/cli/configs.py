"""``minibroker configs``: describe and alter topic and broker configs, and users', clients' and
ips' quotas (like ``kafka-configs.sh``).

::

    minibroker configs --describe --topic events            # the topic's overrides
    minibroker configs --describe --topic events --all      # every config, with its source
    minibroker configs --alter --topic events --add-config retention.ms=3600000,segment.bytes=1048576
    minibroker configs --alter --topic events --delete-config retention.ms
    minibroker configs --alter --broker 0 --add-config log.retention.ms=86400000   # dynamic broker config
    minibroker configs --alter --broker-defaults --add-config log.retention.ms=86400000  # cluster-wide

    minibroker configs --alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576
    minibroker configs --alter --entity-type users --entity-default --add-config consumer_byte_rate=2097152
    minibroker configs --alter --entity-type users --entity-name alice --entity-type clients --entity-name app \\
        --add-config request_percentage=50
    minibroker configs --alter --entity-type clients --entity-name app --delete-config request_percentage
    minibroker configs --alter --entity-type ips --entity-name 10.0.0.7 --add-config connection_creation_rate=20
    minibroker configs --describe --entity-type users                     # every user entity's quotas
    minibroker configs --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'

``--entity-type`` (``topics``, ``brokers``, ``users``, ``clients``, ``ips``) with
``--entity-name`` or ``--entity-default``, in pairs and in order, as Kafka's tool takes them
(``users`` and ``clients`` together name a user's client), or the flags ``--topic``, ``--broker``,
``--broker-defaults``, ``--user``, ``--user-defaults``, ``--client``, ``--client-defaults``,
``--ip``, ``--ip-defaults``.

Topics and brokers: ``--describe`` prints Kafka's layout: ``Dynamic configs for topic events
are:`` (``All configs`` with ``--all``), then one ``  name=value sensitive=false
synonyms={SOURCE:name=value, ...}`` line per config. ``--alter`` sends IncrementalAlterConfigs:
``--add-config`` sets, and ``--delete-config`` removes (the config returns to its default);
values containing commas go in square brackets (``cleanup.policy=[compact,delete]``), as in
Kafka's tool.

Users, clients, ips: quotas (DescribeClientQuotas / AlterClientQuotas, client/admin_quotas.py):
``--describe`` prints ``Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0``
per matching entity (a name left out matches every name of that type, ``--entity-default`` the
default entity), and for users named without clients their SCRAM credentials (``SCRAM credential
configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192``). ``--alter`` checks that
every key to delete is set, then sends the changes; users' ``SCRAM-SHA-256`` /
``SCRAM-SHA-512`` keys (``[iterations=N,]password=P``, 4096 iterations by default) alter their
SCRAM credentials instead, not with quotas in the same command. Messages are Kafka's
(``Completed updating config for user alice.``, ``Invalid config(s): x``, ``Only quota configs
can be added for 'clients' using --bootstrap-server. ...``).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from decimal import Decimal
from typing import Any

from . import add_common, client_options, fail, run_client

HELP = "describe or alter topic and broker configs, and user, client and ip quotas, on a running broker"

_DYNAMIC_SOURCES = {"DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"}

#: the entity types this command takes (Kafka's ConfigType names)
TOPICS, BROKERS, USERS, CLIENTS, IPS = "topics", "brokers", "users", "clients", "ips"
_ENTITY_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS)
#: the quota keys of users and clients, and of ips (Kafka's QuotaConfig)
_QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
_IP_KEYS = ("connection_creation_rate",)
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
#: Kafka's ConfigCommand default iterations for a SCRAM credential set without any
_DEFAULT_SCRAM_ITERATIONS = 4096
_QUOTA_TYPE = {USERS: "user", CLIENTS: "client-id", IPS: "ip"}
_DESCRIBED_AS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


class _Named(argparse.Action):
    """``--entity-name X`` / ``--entity-default``: kept in command-line order (Kafka pairs them
    with the ``--entity-type``s in that order)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        names = list(getattr(namespace, "entity_names", None) or [])
        names.append("" if option_string == "--entity-default" else values)
        namespace.entity_names = names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="show the entity's configs")
    action.add_argument("--alter", action="store_true", help="change the entity's configs")
    parser.add_argument("--entity-type", action="append", default=[], choices=_ENTITY_TYPES,
                        help="the entity's type (users and clients may be given together)")
    parser.add_argument("--entity-name", action=_Named, metavar="NAME", dest="entity_names",
                        help="the name of the entity of the --entity-type in the same position")
    parser.add_argument("--entity-default", action=_Named, nargs=0, dest="entity_names",
                        help="the default entity of the --entity-type in the same position (users, clients, ips,"
                             " brokers)")
    parser.add_argument("--topic", metavar="NAME", help="the topic NAME")
    parser.add_argument("--client", metavar="ID", help="the client id ID (its quotas)")
    parser.add_argument("--user", metavar="NAME", help="the user NAME, a principal's name (its quotas)")
    parser.add_argument("--broker", metavar="ID", help="the broker with node id ID (its dynamic configs)")
    parser.add_argument("--ip", metavar="ADDRESS", help="the ip ADDRESS (its connection_creation_rate)")
    parser.add_argument("--client-defaults", action="store_true", help="the default client id's quotas")
    parser.add_argument("--user-defaults", action="store_true", help="the default user's quotas")
    parser.add_argument("--broker-defaults", action="store_true", help="the cluster-wide dynamic broker defaults")
    parser.add_argument("--ip-defaults", action="store_true", help="the default ip's connection_creation_rate")
    parser.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V]",
                        help="with --alter: set configs (repeatable; [a,b] for a value with commas)")
    parser.add_argument("--delete-config", action="append", default=[], metavar="K[,K]",
                        help="with --alter: remove configs, back to their defaults (repeatable)")
    parser.add_argument("--all", action="store_true", help="with --describe: every config, not only those set")
    add_common(parser)


def parse_add_config(items: list[str]) -> dict[str, str]:
    """``k=v,k2=[a,b]`` -> {k: v, k2: "a,b"}; ValueError on a malformed item."""
    out: dict[str, str] = {}
    for item in items:
        i = 0
        while i < len(item):
            eq = item.find("=", i)
            if eq < 0:
                raise ValueError(f"--add-config expects KEY=VALUE, got {item[i:]!r}")
            key = item[i:eq].strip()
            if not key:
                raise ValueError(f"--add-config expects KEY=VALUE, got {item[i:]!r}")
            j = eq + 1
            if item.startswith("[", j):
                close = item.find("]", j)
                if close < 0:
                    raise ValueError(f"unclosed [ in --add-config {item!r}")
                value, i = item[j + 1:close], close + 1
                if i < len(item) and item[i] != ",":
                    raise ValueError(f"expected ',' after ] in --add-config {item!r}")
            else:
                comma = item.find(",", j)
                comma = len(item) if comma < 0 else comma
                value, i = item[j:comma], comma
            out[key] = value
            i += 1
    return out


def java_double(x: float) -> str:
    """A double as Java's ``Double.toString`` writes it (Kafka's tool prints quotas so):
    ``1048576.0``, ``0.5``, ``1.048576E7``, ``1.0E-4``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, exponent = _shortest(abs(x))
    if 1e-3 <= abs(x) < 1e7:
        point = len(digits) + exponent  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{len(digits) - 1 + exponent}"


def _shortest(x: float) -> tuple[str, int]:
    """The shortest digits that read back as ``x`` and their exponent: x = 0.digits... as
    int(digits) * 10**exponent."""
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    return "".join(map(str, digits)), exponent


def _entities(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Kafka's ``entityTypes`` / ``entityNames``: from --entity-type/-name/-default, or from the
    flags (in Kafka's order of them); "" is a default entity. ValueError: Kafka's message."""
    names_given = list(args.entity_names or [])
    flags = [(args.topic, TOPICS), (args.client, CLIENTS), (args.user, USERS), (args.broker, BROKERS),
             (args.ip, IPS)]
    defaults = [(args.client_defaults, CLIENTS), (args.user_defaults, USERS), (args.broker_defaults, BROKERS),
                (args.ip_defaults, IPS)]
    flagged = [t for v, t in flags if v is not None] + [t for v, t in defaults if v]
    types = list(args.entity_type) + flagged
    names = names_given + [v for v, _ in flags if v is not None] + ["" for v, _ in defaults if v]
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise ValueError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    if not types:
        raise ValueError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise ValueError(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")
    if (args.entity_type or names_given) and flagged:
        raise ValueError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    if len(names) > len(types):
        raise ValueError("More entity names specified than entity types")
    return types, names


def run(args: argparse.Namespace) -> int:
    if args.describe and (args.add_config or args.delete_config):
        return fail("configs", "--add-config and --delete-config go with --alter")
    if args.alter and not (args.add_config or args.delete_config):
        return fail("configs", "--alter needs --add-config or --delete-config")
    if args.all and not args.describe:
        return fail("configs", "--all goes with --describe")
    try:
        types, names = _entities(args)
        added = parse_add_config(args.add_config)
    except ValueError as e:
        return fail("configs", str(e))
    deleted = [k.strip() for item in args.delete_config for k in item.split(",") if k.strip()]
    if types[0] in (TOPICS, BROKERS):
        return _run_resource(args, types[0], names, added, deleted)
    if args.all:
        return fail("configs", "--all goes with --describe of topics or brokers")
    if args.alter and len(names) != len(types):
        return fail("configs", "--entity-name or --entity-default must be specified with each --entity-type for --alter")
    return _run_quotas(args, types, names, added, deleted)


def _run_resource(args: argparse.Namespace, etype: str, names: list[str], added: dict[str, str],
                  deleted: list[str]) -> int:
    """Topics and brokers: their configs (IncrementalAlterConfigs, DescribeConfigs)."""
    name = names[0] if names else None
    if etype == TOPICS:
        if not name:
            return fail("configs", "a topic needs --topic NAME or --entity-name NAME")
        rtype, rname, what = "topic", name, f"topic {name}"
    elif name is None:
        return fail("configs", "a broker needs --broker ID, --entity-name ID or --entity-default")
    elif name:
        rtype, rname, what = "broker", name, f"broker {name}"
    else:
        rtype, rname, what = "broker", "", "the broker default"

    async def main() -> int:
        from client.admin import Admin, AlterConfigOp, AlterConfigOpType

        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if args.alter:
                ops = [AlterConfigOp(k, v) for k, v in added.items()]
                ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in deleted]
                await admin.incremental_alter_configs(rtype, rname, ops)
                out.write(f"Completed updating config for {what}.\n")
            else:
                entries = await admin.describe_configs(rtype, rname, include_synonyms=True)
                shown = [e for e in entries.values() if args.all or e.source.name in _DYNAMIC_SOURCES]
                out.write(f"{'All' if args.all else 'Dynamic'} configs for {what} are:\n")
                for e in sorted(shown):
                    synonyms = ", ".join(f"{s.source.name}:{s.name}={s.value}" for s in e.synonyms)
                    out.write(f"  {e.name}={e.value} sensitive={str(e.is_sensitive).lower()}"
                              f" synonyms={{{synonyms}}}\n")
            out.flush()
        return 0

    return run_client("configs", args, main)


def _quota_filter(types: list[str], names: list[str]) -> Any:
    from client.admin import ClientQuotaFilter, ClientQuotaFilterComponent

    components = []
    for i, etype in enumerate(types):
        qtype = _QUOTA_TYPE[etype]
        if i >= len(names):
            components.append(ClientQuotaFilterComponent.of_entity_type(qtype))
        elif names[i] == "":
            components.append(ClientQuotaFilterComponent.of_default_entity(qtype))
        else:
            components.append(ClientQuotaFilterComponent.of_entity(qtype, names[i]))
    return ClientQuotaFilter.contains_only(components)


def _entity_text(entity: Any) -> str:
    """Kafka's way of naming a quota entity: ``user-principal 'alice', client-id 'app'``,
    ``the default user-principal``."""
    parts = []
    for qtype in ("user", "client-id", "ip"):
        if qtype in entity:
            name = entity[qtype]
            parts.append(f"the default {_DESCRIBED_AS[qtype]}" if name is None else f"{_DESCRIBED_AS[qtype]} '{name}'")
    return ", ".join(parts)


def _check_quota_keys(types: list[str], added: dict[str, str], deleted: list[str]) -> tuple[dict[str, str], list[str]]:
    """Kafka's checks of the keys to alter: the SCRAM ones (users only) apart. ValueError: its message."""
    head = types[0]
    if head == IPS:
        unknown = [k for k in [*added, *deleted] if k not in _IP_KEYS]
        if unknown:
            raise ValueError(f"Only connection quota configs can be added for '{IPS}' using --bootstrap-server."
                             f" Unexpected config names: {','.join(unknown)}")
        return {}, []
    scram_added = {k: v for k, v in added.items() if k in _SCRAM}
    scram_deleted = [k for k in deleted if k in _SCRAM]
    unknown_added = [k for k in added if k not in _SCRAM and k not in _QUOTA_KEYS]
    unknown_deleted = [k for k in deleted if k not in _SCRAM and k not in _QUOTA_KEYS]
    if head == CLIENTS or len(types) == 2:
        if unknown_added or scram_added:
            raise ValueError(f"Only quota configs can be added for '{CLIENTS}' using --bootstrap-server. Unexpected"
                             f" config names: {','.join(unknown_added + list(scram_added))}")
        if unknown_deleted or scram_deleted:
            raise ValueError(f"Only quota configs can be deleted for '{CLIENTS}' using --bootstrap-server."
                             f" Unexpected config names: {','.join(unknown_deleted + scram_deleted)}")
        return {}, []
    if unknown_added:
        raise ValueError(f"Only quota and SCRAM credential configs can be added for '{USERS}' using"
                         f" --bootstrap-server. Unexpected config names: {','.join(unknown_added)}")
    if unknown_deleted:
        raise ValueError(f"Only quota and SCRAM credential configs can be deleted for '{USERS}' using"
                         f" --bootstrap-server. Unexpected config names: {','.join(unknown_deleted)}")
    return scram_added, scram_deleted


def _scram_upsertion(user: str, mechanism: str, value: str) -> Any:
    from client.admin import UserScramCredentialUpsertion
    from client.security.scram import MIN_ITERATIONS

    m = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", value, re.S)
    if m is None:
        raise ValueError(f"Invalid credential property {mechanism}={value}")
    iterations = _DEFAULT_SCRAM_ITERATIONS if m.group(1) in (None, "", "-1") else int(m.group(1))
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {mechanism}")
    return UserScramCredentialUpsertion(user, mechanism, m.group(2), iterations)


def _run_quotas(args: argparse.Namespace, types: list[str], names: list[str], added: dict[str, str],
                deleted: list[str]) -> int:
    """Users, clients, ips: quotas (and users' SCRAM credentials)."""
    scram_added: dict[str, str] = {}
    scram_deleted: list[str] = []
    values: dict[str, float] = {}
    upsertions: list[Any] = []
    if args.alter:
        try:
            scram_added, scram_deleted = _check_quota_keys(types, added, deleted)
            if scram_added or scram_deleted:
                if "" in names:
                    raise ValueError("The use of --entity-default or --user-defaults is not allowed with User SCRAM"
                                     " Credentials using --bootstrap-server.")
                if len(added) > len(scram_added) or len(deleted) > len(scram_deleted):
                    raise ValueError(f"Cannot alter both quota and SCRAM credential configs simultaneously for"
                                     f" '{USERS}' using --bootstrap-server.")
            for k, v in added.items():
                if k in scram_added:
                    continue
                try:
                    values[k] = float(v)
                except ValueError:
                    raise ValueError(f"Cannot parse quota configuration value for {k}: {v}") from None
            upsertions = [_scram_upsertion(names[0], k, v) for k, v in scram_added.items()]
        except ValueError as e:
            return fail("configs", str(e))

    async def main() -> int:
        from client.admin import (
            Admin,
            ClientQuotaAlteration,
            ScramMechanism,
            UserScramCredentialDeletion,
        )
        from client.errors import ResourceNotFoundError

        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if args.alter:
                if scram_added or scram_deleted:
                    await admin.alter_user_scram_credentials(
                        upsertions, [UserScramCredentialDeletion(names[0], ScramMechanism.of(m)) for m in scram_deleted])
                else:
                    current = await admin.describe_client_quotas(_quota_filter(types, names))
                    old = next(iter(current.values()), {})
                    missing = [k for k in deleted if k not in old]
                    if missing:
                        sys.stderr.write(f"Invalid config(s): {','.join(missing)}\n")
                        return 1
                    target = {_QUOTA_TYPE[t]: (n or None) for t, n in zip(types, names, strict=True)}
                    ops = [ClientQuotaAlteration.Op(k, v) for k, v in values.items()]
                    ops += [ClientQuotaAlteration.Op(k, None) for k in deleted]
                    await admin.alter_client_quotas([ClientQuotaAlteration(target, ops)])
                head_type, head_name = types[0], names[0]
                if head_name:
                    out.write(f"Completed updating config for {head_type[:-1]} {head_name}.\n")
                else:
                    out.write(f"Completed updating default config for {head_type} in the cluster.\n")
            else:
                found = await admin.describe_client_quotas(_quota_filter(types, names))
                for entity in sorted(found, key=lambda e: sorted((k, v or "") for k, v in e.items())):
                    values_text = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(found[entity].items()))
                    out.write(f"Quota configs for {_entity_text(entity)} are {values_text}\n")
                if types == [USERS] and "" not in names:
                    users: list[str | None] = list(names) or [None]
                    for user in users:
                        try:
                            described = await admin.describe_user_scram_credentials(None if user is None else [user])
                        except ResourceNotFoundError:
                            continue
                        for name, d in sorted(described.items()):
                            infos = ", ".join(f"{i.mechanism.mechanism_name}=iterations={i.iterations}"
                                              for i in d.credential_infos)
                            out.write(f"SCRAM credential configs for user-principal '{name}' are {infos}\n")
            out.flush()
        return 0

    return run_client("configs", args, main)
