#!/usr/bin/env bash
# Installs what GBGBridge needs, builds it, and runs the demo: the bridge host with a virtual
# passport and the sample journey at http://127.0.0.1:8450/ (Ctrl-C to stop). Extra arguments go
# to `gbgbridge demo` (e.g. --port 0, --passport utopia-td3-jpeg2000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product gbgbridge
exec .build/release/gbgbridge demo "$@"
