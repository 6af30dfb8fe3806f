#!/usr/bin/env bash
# Installs what GBGBridge needs, builds it, and runs the demonstration.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product gbgbridge
exec .build/release/gbgbridge demo "$@"
