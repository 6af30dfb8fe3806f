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
suites='BiometricsTests|LDSTests|MRTDCryptoTests|MRTDVerificationTests|ImageCodecsTests|CVCertificatesTests|GBGBridgeTests|MRZTests.MRZDecoderTests'
if [ "$kind" = undefined ]; then
  suites="$suites|ImageSandboxTests"
else
  # AddressSanitizer and ThreadSanitizer reserve terabytes of address space for their shadow
  # memory at start-up; the confined decoder child sets RLIMIT_AS (by design), so under them it
  # cannot start ("AddressSanitizer: out of memory … InternalMmapVector"). The codecs themselves run
  # under the sanitizer in process: ImageCodecsTests and the fuzz target `image`.
  echo "sanitize.sh: $kind — not ImageSandboxTests (the confined child's RLIMIT_AS refuses the sanitizer's shadow memory; the codecs run under $kind in ImageCodecsTests)"
fi
echo "sanitize.sh: $kind — suites: ${suites//|/, }"
started=$(date +%s)
flags=(-Xswiftc "-sanitize=$kind" -Xcc "-fsanitize=$kind")
if [ "$kind" = undefined ]; then
  # Swift has no -sanitize=undefined on Linux (its own arithmetic and bounds are checked always):
  # the C and C++ code (our shims, and the dependencies' C) is built with -fsanitize=undefined and
  # every program linked against the toolchain's UBSan runtime.
  runtime=$(ls -d "$(dirname "$(readlink -f "$(command -v swift)")")"/../lib/clang/*/lib/linux | head -1)
  flags=(-Xcc -fsanitize=undefined -Xcc -fno-sanitize=vptr,function -Xcc -fno-sanitize-recover=undefined
         -Xlinker --no-as-needed -Xlinker -rpath -Xlinker "$runtime" -Xlinker "$runtime/libclang_rt.ubsan_standalone-x86_64.so")
fi
swift build --build-tests --scratch-path ".build-$kind" "${flags[@]}"
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TSAN_OPTIONS=halt_on_error=0
set +e
swift test --skip-build --scratch-path ".build-$kind" --filter "$suites" 2>&1 | tee ".build-$kind/sanitize.log" | grep -E '✔ Suite|✘|passed after|failed after|SUMMARY|WARNING: ThreadSanitizer' 
status=${PIPESTATUS[0]}
set -e
findings=$(grep -c 'ERROR: AddressSanitizer\|runtime error:\|WARNING: ThreadSanitizer' ".build-$kind/sanitize.log" || true)
echo "sanitize.sh: $kind — exit $status, $findings sanitizer reports, $(( $(date +%s) - started )) s (log: .build-$kind/sanitize.log)"
exit $status
