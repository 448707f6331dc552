#!/usr/bin/env bash
# Container entrypoint: exec `minibroker serve` with the container's listener, data directory and
# advertised listener, so that the broker *is* the container's main process and receives SIGTERM
# from `docker stop` itself (it then flushes, writes its checkpoints and the clean-shutdown marker).
#
# Settings (environment; the defaults suit the image, the tests set them to run this script on
# the host):
#   MINIBROKER_HOST                  listen address          (default 0.0.0.0)
#   MINIBROKER_PORT                  listen port             (default 9092)
#   MINIBROKER_ADVERTISED_LISTENERS  what clients are told   (default PLAINTEXT://localhost:$MINIBROKER_PORT)
#   MINIBROKER_DATA_DIR              log.dirs                (default /var/lib/minibroker, the image's volume)
#   MINIBROKER_LOG_LEVEL             DEBUG|INFO|WARNING|ERROR (default INFO)
#   MINIBROKER_METRICS_PORT          if set: Prometheus /metrics and /healthz on $MINIBROKER_HOST:this port
#                                    (metrics.listeners; off by default; the healthcheck then uses /healthz)
#   MINIBROKER_OVERRIDES             whitespace-separated key=value broker properties, each passed as
#                                    --override (values cannot contain whitespace; use arguments then)
#
# Arguments: if the first one starts with "-" they are all appended to `minibroker serve`, after
# the settings above, so they win (`docker run minibroker --override num.partitions=3`).
# Anything else is run instead of the broker (`docker run -it minibroker bash`,
# `docker run minibroker minibroker dump-log ...`).
set -euo pipefail

if [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ]; then
    exec "$@"
fi

port="${MINIBROKER_PORT:-9092}"
args=(
    serve
    --host "${MINIBROKER_HOST:-0.0.0.0}"
    --port "$port"
    --data-dir "${MINIBROKER_DATA_DIR:-/var/lib/minibroker}"
    --log-level "${MINIBROKER_LOG_LEVEL:-INFO}"
    --override "advertised.listeners=${MINIBROKER_ADVERTISED_LISTENERS:-PLAINTEXT://localhost:$port}"
)
if [ -n "${MINIBROKER_METRICS_PORT:-}" ]; then
    args+=(--override "metrics.listeners=http://${MINIBROKER_HOST:-0.0.0.0}:$MINIBROKER_METRICS_PORT")
fi
# `read -a` splits on whitespace (newlines too, with -d '') and, unlike an unquoted expansion,
# never expands globs. It returns 1 at end of input, which is the normal case here.
read -r -d '' -a overrides <<< "${MINIBROKER_OVERRIDES:-}" || true
for kv in "${overrides[@]}"; do
    args+=(--override "$kv")
done

exec minibroker "${args[@]}" "$@"
