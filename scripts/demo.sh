#!/usr/bin/env bash
# Installs what GBGBridge needs, builds it, and runs the demo: the bridge host with a virtual
# passport and the sample journey at http://127.0.0.1:8450/ (Ctrl-C to stop). Extra arguments go
# to `gbgbridge demo` (e.g. --port 0, --passport utopia-td3-jpeg2000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Every executable the product starts: the host, the confined image decoder every chip photo and
# MRZ photo goes through (found beside gbgbridge), and the lean reader `gbgbridge read` execs.
for product in gbgbridge gbgbridge-decode gbgbridge-read; do
  swift build -c release --product "$product"
done
exec .build/release/gbgbridge demo "$@"
