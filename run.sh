#!/usr/bin/env bash
# dpuq's entry point for users and CI. Each sub-command sets up .venv by itself (idempotent).
#   ./run.sh demo [ARGS]   the main job: `dpuq demo` on sklearn's digits
#   ./run.sh test          lint + the default test suite (what CI runs; see .ci/run)
#   ./run.sh slow          the slow statistical suites (pytest -m slow)
#   ./run.sh bench         the benchmarks (medians into docs/benchmarks.md)
#   ./run.sh dpuq ARGS     any other dpuq command
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=.venv

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.dpuq-setup" want
  want=$(cat pyproject.toml run.sh | sha256sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "run.sh: installing dpuq and its dependencies into $VENV ..." >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q -e ".[dev]"
    echo "$want" >"$stamp"
  fi
}

cmd=${1:-help}
shift || true
case "$cmd" in
  demo)
    setup
    exec "$VENV/bin/dpuq" demo "$@"
    ;;
  test)
    setup
    "$VENV/bin/ruff" check src tests benchmarks
    "$VENV/bin/ruff" format --check src tests benchmarks
    exec "$VENV/bin/python" -m pytest -m "not slow" "$@"
    ;;
  slow)
    setup
    exec "$VENV/bin/python" -m pytest -m slow "$@"
    ;;
  bench)
    setup
    for f in benchmarks/bench_*.py; do "$VENV/bin/python" "$f"; done
    ;;
  dpuq)
    setup
    exec "$VENV/bin/dpuq" "$@"
    ;;
  *)
    sed -n '2,8p' "$0"
    [ "$cmd" = help ] && exit 0 || exit 2
    ;;
esac
