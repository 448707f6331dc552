# Sourced by scripts/run and scripts/test: create or update .venv and install the project.
# Usage: . scripts/_venv.sh [extras]   (extras e.g. "test" or "test,spark")
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "scripts: creating virtualenv in $VENV" >&2
    "$PY" -m venv "$VENV"
fi
EXTRAS="${1:-}"
SPEC="$ROOT"
[ -n "$EXTRAS" ] && SPEC="$ROOT[$EXTRAS]"
# Reinstall only when pyproject.toml or the C extension's source changed since the last install
# (a stamp file per extras set); the editable install builds the C extensions in place.
STAMP="$VENV/.installed-${EXTRAS:-base}"
NEED_INSTALL=0
[ -f "$STAMP" ] || NEED_INSTALL=1
for f in "$ROOT/pyproject.toml" "$ROOT/client/records/_codec.c" "$ROOT/client/_record_future.c"; do
    if [ -f "$f" ] && [ "$f" -nt "$STAMP" ]; then NEED_INSTALL=1; fi
done
if [ "$NEED_INSTALL" = 1 ]; then
    echo "scripts: installing minibroker${EXTRAS:+[$EXTRAS]} into $VENV" >&2
    "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
    "$VENV/bin/python" -m pip install --quiet -e "$SPEC" >&2
    touch "$STAMP"
fi
