#!/usr/bin/env bash
# The unit suites under a sanitizer (issue 44; Docs/hostile-input.md, "Fuzzing and sanitizers"):
#
#   scripts/sanitize.sh address|undefined|thread
#
# Builds the package and its tests with `-sanitize=KIND` for Swift and `-fsanitize=KIND` for the C
# shims, in .build-KIND, and runs the suites that need no pcscd, browser or VM: parsers, crypto,
# verification, biometrics, images and their confined decoder, the MRZ decoder, the bridge core, CV
# certificates. address and undefined must pass clean; thread reports what it finds.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case "$kind" in
  address|undefined|thread) ;;
  *) echo "usage: scripts/sanitize.sh address|undefined|thread" >&2; exit 2 ;;
esac
suites='BiometricsTests|LDSTests|MRTDCryptoTests|MRTDVerificationTests|ImageCodecsTests|ImageSandboxTests|CVCertificatesTests|GBGBridgeTests|MRZTests.MRZDecoderTests'
echo "sanitize.sh: $kind — suites: ${suites//|/, }"
started=$(date +%s)
flags=(-Xswiftc "-sanitize=$kind" -Xcc "-fsanitize=$kind")
[ "$kind" = undefined ] && flags=(-Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=undefined -Xswiftc -sanitize=undefined)
swift build --build-tests --scratch-path ".build-$kind" "${flags[@]}"
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TSAN_OPTIONS=halt_on_error=0
set +e
swift test --skip-build --scratch-path ".build-$kind" --filter "$suites" 2>&1 | tee ".build-$kind/sanitize.log" | grep -E '✔ Suite|✘|passed after|failed after|SUMMARY|WARNING: ThreadSanitizer' 
status=${PIPESTATUS[0]}
set -e
findings=$(grep -c 'ERROR: AddressSanitizer\|runtime error:\|WARNING: ThreadSanitizer' ".build-$kind/sanitize.log" || true)
echo "sanitize.sh: $kind — exit $status, $findings sanitizer reports, $(( $(date +%s) - started )) s (log: .build-$kind/sanitize.log)"
exit $status
