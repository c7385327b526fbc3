#!/usr/bin/env bash
# Installs Debian's Chromium for the dashboard's browser test (playwright-core drives it at
# /usr/bin/chromium). Does nothing when it is there already. Needs root or sudo for apt-get.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "weir: the browser test needs Chromium at /usr/bin/chromium (or WEIR_CHROMIUM=<path>); this machine has no apt-get to install it" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" != "0" ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "weir: installing Chromium needs root: run 'apt-get install -y chromium' as root, or set WEIR_CHROMIUM=<path>" >&2
    exit 1
  fi
  as_root=(sudo)
fi
echo "weir: installing Debian's chromium for the browser test (apt-get install chromium)" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${as_root[@]}" apt-get install -y -q --no-install-recommends chromium >&2; then
  "${as_root[@]}" apt-get update -q >&2
  "${as_root[@]}" apt-get install -y -q --no-install-recommends chromium >&2
fi
