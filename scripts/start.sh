#!/usr/bin/env bash
# npm start: set up what is missing, build the package, and serve the demo with the
# reference endpoint (both dialects) on http://127.0.0.1:8787 (PORT and HOST override).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec node www/server/main.mjs
