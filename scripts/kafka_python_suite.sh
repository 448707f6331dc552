#!/bin/bash
# Run kafka-python's own integration suite (test/integration) against minibroker, as issue 33
# asks: with KAFKA_VERSION=4.2.0, then 3.9.0 (the versions its fixtures, and the clients they
# make with api_version=KAFKA_VERSION, take the broker to be).
#
# Usage: scripts/kafka_python_suite.sh [PYTEST ARGS ...]   (e.g. -k test_describe_configs)
# Environment:
#   KAFKA_PYTHON_SRC  a kafka-python source tree (test/ and servers/ of the release line the
#                     installed kafka-python comes from; default: a clone of its 3.0 branch in
#                     $WORKDIR/kafka-python; the PyPI sdist has no test/service.py or servers/)
#   KAFKA_VERSIONS    the KAFKA_VERSION values to run with (default "4.2.0 3.9.0")
#   WORKDIR           where the run's files go (default /tmp/kafka-python-suite)
#   PYTHON            the interpreter with minibroker's test dependencies and kafka-python
#                     (default .venv/bin/python)
#
# The suite's files are run as they are. Its fixtures start a Kafka from a distribution with
# the broker settings of servers/.../kafka.properties; scripts/_kafka_python_fixture.py (a
# pytest plugin loaded from outside the suite's tree) replaces only the Java parts of them: each
# broker the suite asks for is a minibroker process started with the suite's own rendered
# kafka.properties (minibroker reads Kafka's property names and ignores, with a warning, those
# it has no use for), ZooKeeper starts nothing, kafka-topics.sh --list is minibroker topics.
# The tests are run from a copy of test/ and servers/ only, so that kafka is the installed
# kafka-python, not the tree's.
#
# Output: pytest's, per version, with the skip reasons (-rs); logs in $WORKDIR/logs-VERSION
# (each broker's log). Exit status: the number of versions with failures.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORKDIR="${WORKDIR:-/tmp/kafka-python-suite}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
VERSIONS="${KAFKA_VERSIONS:-4.2.0 3.9.0}"
mkdir -p "$WORKDIR"
SRC="${KAFKA_PYTHON_SRC:-$WORKDIR/kafka-python}"
if [ ! -d "$SRC/test/integration" ]; then
    git clone --quiet --depth 1 --branch 3.0 https://github.com/dpkp/kafka-python "$SRC" || exit 100
fi

SUITE="$WORKDIR/suite"
rm -rf "$SUITE" && mkdir -p "$SUITE" "$WORKDIR/no-kafka"
cp -r "$SRC/test" "$SRC/servers" "$SUITE/"
# pytest's options of the suite (pyproject.toml) without --timeout, which needs pytest-timeout
printf '[pytest]\nlog_level = DEBUG\naddopts = --durations=10\n' > "$SUITE/pytest.ini"
"$PY" -c 'import kafka; print("kafka-python", kafka.__version__)'

failed=0
for v in $VERSIONS; do
    echo "=== KAFKA_VERSION=$v"
    rm -rf "$WORKDIR/logs-$v"
    (cd "$SUITE" && KAFKA_VERSION="$v" KAFKA_ROOT="$WORKDIR/no-kafka" MINIBROKER_PYTHON="$PY" \
        MINIBROKER_ROOT="$ROOT" MINIBROKER_SUITE_LOGS="$WORKDIR/logs-$v" PYTHONPATH="$ROOT/scripts" \
        timeout 3600 "$PY" -m pytest -p _kafka_python_fixture -p no:cacheprovider -p no:xdist -rs -q \
        test/integration "$@") || failed=$((failed + 1))
done
exit $failed
