#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser strangers feed (issue 44; Docs/hostile-input.md, "Fuzzing"):
# libFuzzer with AddressSanitizer over the targets of Sources/FuzzTargets (gbgbridge-fuzz list).
#
#   scripts/fuzz.sh [TARGET…] [--seconds N]     every target (or those named), N seconds each (60)
#
# One line per target: `fuzz: NAME runs=R execs/s=E coverage=C (seeds S) crashes=K`; exit 1 when
# any crashed. Corpora grow in .build/fuzz/NAME/corpus (seeded from Fixtures and, when it is beside
# the checkout, ../shared/fixtures — read at run time, never copied into the repository); crashing
# inputs are kept in .build/fuzz/NAME/crashes/ with the command that replays them.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds takes a whole number" >&2; exit 2; }

# The replayer and seed writer: an ordinary build.
swift build --product gbgbridge-fuzz >/dev/null
replayer=.build/debug/gbgbridge-fuzz
mapfile -t known < <("$replayer" list | awk '{print $1}')
[ ${#targets[@]} -gt 0 ] || targets=("${known[@]}")
for target in "${targets[@]}"; do
  printf '%s\n' "${known[@]}" | grep -qx "$target" || { echo "fuzz.sh: no target '$target' (gbgbridge-fuzz list)" >&2; exit 2; }
done

# The fuzzing build: libFuzzer drives LLVMFuzzerTestOneInput, AddressSanitizer watches Swift and C.
echo "fuzz.sh: building with -sanitize=fuzzer,address (.build-fuzz)"
swift build -c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
  -Xswiftc -parse-as-library -Xcc -fsanitize=address -Xcc -fsanitize=fuzzer-no-link --product gbgbridge-fuzz >/dev/null 2>&1
fuzzer=$PWD/.build-fuzz/release/gbgbridge-fuzz
work=$PWD/.build/fuzz
rm -rf "$work/seeds"
"$replayer" seeds "$work/seeds" >/dev/null

status=0
for target in "${targets[@]}"; do
  dir=$work/$target
  mkdir -p "$dir/corpus" "$dir/crashes"
  cp -n "$work/seeds/$target/"* "$dir/corpus/" 2>/dev/null || true
  seeds=$(ls "$work/seeds/$target" 2>/dev/null | wc -l)
  log=$dir/last.log
  before=$(ls "$dir/crashes" | wc -l)
  set +e
  GBGBRIDGE_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 "$fuzzer" "$dir/corpus" \
    -max_total_time="$seconds" -artifact_prefix="$dir/crashes/" -print_final_stats=1 -rss_limit_mb=2048 -timeout=20 \
    -max_len=1048576 >"$log" 2>&1
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  initial=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$log" | tail -1)
  final=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  crashes=$(( $(ls "$dir/crashes" | wc -l) - before ))
  echo "fuzz: $target runs=${runs:-0} execs/s=${speed:-0} coverage=${final:-0} (seeds ${seeds}, coverage ${initial:-0} after them) crashes=$crashes"
  if [ "$crashes" -gt 0 ] || grep -q 'ERROR: libFuzzer\|ERROR: AddressSanitizer' "$log"; then
    status=1
    for input in $(ls -t "$dir/crashes" | head -$(( crashes > 0 ? crashes : 1 ))); do
      echo "  replay: GBGBRIDGE_FUZZ_TARGET=$target $fuzzer $dir/crashes/$input   (log: $log)"
    done
  fi
done
exit $status
