#!/usr/bin/env bash
# Builds the API documentation (DocC) of the library products a Swift user reaches for —
# GBGBridge (the bridge), MRTDVerification (verifying chip evidence on a backend) and MRTD
# (reading a chip) — with the swift-docc-plugin. Any DocC warning fails the build: a parameter
# without documentation, a symbol link that no longer resolves, an article that names a type
# that is gone.
# Usage: scripts/docs.sh [OUTPUT_DIRECTORY]   (default: .build/docs; open the archives with
#        `docc preview`, or serve them as static files)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/docs}
mkdir -p "$out"
swift package --allow-writing-to-directory "$out" generate-documentation \
  --target GBGBridge --target MRTDVerification --target MRTD \
  --warnings-as-errors --transform-for-static-hosting --output-path "$out"
echo "docs: $(ls -d "$out"/*.doccarchive | tr '\n' ' ')"
