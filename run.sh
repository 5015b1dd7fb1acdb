#!/usr/bin/env bash
# dpuq's entry point for users and CI. Each sub-command sets up .venv by itself (idempotent).
#   ./run.sh demo [ARGS]   the main job: `dpuq demo` on sklearn's digits
#   ./run.sh test          lint + the docs site (strict) + the default test suite (CI; .ci/run)
#   ./run.sh slow          the slow statistical suites (pytest -m slow)
#   ./run.sh bench         the benchmarks (medians into docs/explanation/benchmarks.md)
#   ./run.sh dpuq ARGS     any other dpuq command
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=.venv
TORCH_VERSION=${DPUQ_TORCH_VERSION:-2.13.0}

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.dpuq-setup" want
  want=$(cat pyproject.toml run.sh | sha256sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "run.sh: installing dpuq and its dependencies into $VENV ..." >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    # torch first, pinned to the CPU wheel: opacus would otherwise pull a CUDA build (GBs)
    "$VENV/bin/python" -m pip install -q "torch==$TORCH_VERSION"
    "$VENV/bin/python" -m pip install -q -e ".[dev,torch]"
    fashion_mnist
    headless_browser
    echo "$want" >"$stamp"
  fi
}

# Fashion-MNIST from Debian's dataset-fashion-mnist (IDX files), for the DP-SGLD experiment.
# Only as root with apt-get and only when missing; never fails the setup.
fashion_mnist() {
  local dir=/usr/share/datasets/fashion-mnist
  [ -d "$dir" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "run.sh: installing Debian's dataset-fashion-mnist ..." >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        dataset-fashion-mnist; } >/dev/null 2>&1 ||
      echo "run.sh: dataset-fashion-mnist not installed (Fashion-MNIST runs will skip)" >&2
  fi
  return 0
}

# Debian's chromium, for the test that opens the HTML report in a headless browser (it skips
# without one). Only as root with apt-get and only when missing; never fails the setup.
headless_browser() {
  command -v chromium >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "run.sh: installing Debian's chromium (headless report test) ..." >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium; } >/dev/null 2>&1 ||
      echo "run.sh: chromium not installed (the browser test will skip)" >&2
  fi
  return 0
}

# The documentation site (mkdocs.yml), warnings as errors, offline; built into a temp dir.
docs_site() {
  local site
  site=$(mktemp -d)
  NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet --site-dir "$site"
  rm -rf "$site"
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
    docs_site
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
