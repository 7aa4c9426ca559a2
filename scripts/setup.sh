#!/usr/bin/env bash
# Installs what building and testing toolgate needs, only where it is missing.
# Idempotent: on a machine that has everything it takes a second or two.
#   - the wasm32-unknown-unknown Rust target, clippy and rustfmt
#   - Debian's chromium and chromium-driver
#   - wasm-bindgen-cli at exactly the version in Cargo.lock (its CLI for the package build, its test
#     runner for the browser tests)
#   - the npm dev dependencies (npm ci), when package-lock.json changed; among them binaryen's
#     wasm-opt (version 132, a Node build): Debian's binaryen 108 cannot read the externref table
#     code that wasm-bindgen emits (`table.fill`)
#   - with the argument `tests` (scripts/test.sh), the Python packages of the pydantic-ai test
#     endpoint (tests/e2e-support/pydantic-ai), pinned, in a venv of their own (.tools/pydantic-ai),
#     when its requirements changed (Debian's python3-venv first, when Python's venv module is
#     missing); the build and the demo need no Python
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

export PATH="$HOME/.cargo/bin:$PATH"

# The wasm-bindgen CLI must match the crate in Cargo.lock exactly.
WB_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$WB_VERSION" ] || { log "cannot read the wasm-bindgen version from Cargo.lock"; exit 1; }

# 1. Rust target and components.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
for comp in clippy rustfmt; do
  if ! rustup component list --installed | grep -q "^$comp"; then
    log "adding rustup component $comp"
    rustup component add "$comp"
  fi
done

# 2. Debian packages: the browser and its driver. On a fresh machine apt-get runs in the background
# while cargo builds wasm-bindgen-cli below (one waits on the network and the disk, the other on the
# CPU), and the set-up waits for it at the end.
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# For the tests' pydantic-ai endpoint (step 6): a Python 3 with its venv module (Debian's own
# python3 has it in python3-venv).
if [ "${1:-}" = tests ]; then
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
fi
apt_pid=
apt_log=
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  log "installing ${need[*]} with apt-get (in the background)"
  apt_log=$(mktemp)
  (
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
  ) > "$apt_log" 2>&1 &
  apt_pid=$!
  # Should the set-up stop before step 5 (cargo install failing), it still waits for apt-get: an
  # install cut short leaves dpkg half done, and one left running holds its lock for the next run.
  trap 'rc=$?; if [ -n "$apt_pid" ]; then wait "$apt_pid" 2>/dev/null || true; fi; exit "$rc"' EXIT
fi

# 3. The cargo-installed tool. Built without LTO to keep a fresh machine's set-up short.
export CARGO_PROFILE_RELEASE_LTO=false
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WB_VERSION" ] \
  || ! command -v wasm-bindgen-test-runner >/dev/null 2>&1; then
  log "installing wasm-bindgen-cli $WB_VERSION (a few minutes, once)"
  cargo install wasm-bindgen-cli --version "$WB_VERSION" --force
fi

# 4. npm dev dependencies, reinstalled only when the lock file changed.
if [ -f package-lock.json ]; then
  stamp=node_modules/.toolgate-lock-sha
  want=$(sha256sum package-lock.json | awk '{print $1}')
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
  fi
fi

# 5. The browser, installed in the background above (and Python's venv module, when missing).
if [ -n "$apt_pid" ]; then
  if ! wait "$apt_pid"; then
    apt_pid=
    cat "$apt_log" >&2
    log "apt-get could not install ${need[*]}"
    exit 1
  fi
  apt_pid=
  rm -f "$apt_log"
  for tool in chromium chromedriver; do
    command -v "$tool" >/dev/null 2>&1 || { log "$tool is still missing after apt-get"; exit 1; }
  done
fi

# 6. The pydantic-ai test endpoint's Python packages (tests/e2e/pydantic-ai.test.mjs), every one
# pinned, in a venv of their own, made again only when the requirements changed.
req=tests/e2e-support/pydantic-ai/requirements.txt
venv=.tools/pydantic-ai
if [ "${1:-}" = tests ] && [ -f "$req" ]; then
  want=$(sha256sum "$req" | awk '{print $1}')
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.toolgate-req-sha" 2>/dev/null)" != "$want" ]; then
    command -v python3 >/dev/null 2>&1 || { log "python3 (3.10 or later) is needed for the pydantic-ai test endpoint"; exit 1; }
    log "installing the pydantic-ai test endpoint's Python packages into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$req"
    echo "$want" > "$venv/.toolgate-req-sha"
  fi
fi
