#!/usr/bin/env bash
# Builds and runs the package the honest way (issue 48): in a throwaway Debian 12 root holding only
# what swift.org lists for the Swift toolchain on Debian 12, with the toolchain and this machine's
# Swift package copies bind-mounted read-only (and the same git URL mapping), and a clone of HEAD
# inside. There it runs the README's commands — scripts/install-deps.sh, the build
# (`swift build --build-tests`), scripts/demo.sh until its page answers — and checks the sample
# journey's nfc.read returns the passport with its photo (scripts/journey-check.py). Prints each
# step's time. Too slow for every CI run: run it before you stop whenever dependencies, scripts or
# Package.swift changed (README, "Contributing").
#
# Usage: scripts/fresh-machine.sh [--keep] [--skip-tests-build] [--root DIR]
#   --keep               leave the root in place afterwards (default: removed)
#   --skip-tests-build   skip `swift build --build-tests` (the demo's release build still runs)
#   --root DIR           where to build the root (default: a new directory under /var/tmp)
# Env: GBGBRIDGE_SWIFT (default: the toolchain of `swift` on PATH), GBGBRIDGE_SWIFT_PACKAGES
# (default /opt/swift-packages, mapped for github.com as on this machine when it exists).
# Needs root (mmdebstrap, chroot, mounts) and Debian's mmdebstrap (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$(pwd)

keep=0
tests_build=1
root=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --skip-tests-build) tests_build=0 ;;
    --root) root=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-machine.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || { echo "fresh-machine.sh: needs root (mmdebstrap, chroot and mounts)" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "fresh-machine.sh: mmdebstrap is not installed (scripts/install-deps.sh)" >&2; exit 2; }
swift_bin=$(command -v swift || true)
[ -n "$swift_bin" ] || { echo "fresh-machine.sh: no swift on PATH" >&2; exit 2; }
toolchain=${GBGBRIDGE_SWIFT:-$(dirname "$(dirname "$(dirname "$(readlink -f "$swift_bin")")")")}
packages=${GBGBRIDGE_SWIFT_PACKAGES:-/opt/swift-packages}
[ -x "$toolchain/usr/bin/swift" ] || { echo "fresh-machine.sh: no toolchain at $toolchain (GBGBRIDGE_SWIFT)" >&2; exit 2; }

# What swift.org lists for its Debian 12 toolchain, and nothing else (ca-certificates: apt over
# https mirrors; git is in the list).
swift_deps=binutils,binutils-gold,gcc,git,libcurl4-openssl-dev,libedit-dev,libicu-dev,libncurses-dev,libpython3-dev,libsqlite3-dev,libstdc++-12-dev,libxml2-dev,pkg-config,tzdata,uuid-dev,ca-certificates

[ -n "$root" ] || root=$(mktemp -d /var/tmp/gbgbridge-fresh-XXXXXX)
mkdir -p "$root"
log=$root.log
: > "$log"
mounted=()
demo_pid=""

cleanup() {
  [ -z "$demo_pid" ] || kill "$demo_pid" 2>/dev/null || true
  # Processes the demo left in the root (the host, pcscd) before unmounting.
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && kill -9 "$pid" 2>/dev/null || true
  done
  sleep 1
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  if [ "$keep" -eq 0 ]; then rm -rf --one-file-system "$root" "$log"; else echo "kept: $root (log $log)"; fi
}
trap cleanup EXIT

step_start=0
step() { step_start=$(date +%s); printf '%-50s' "$1"; }
done_step() { printf '%5d s\n' $(( $(date +%s) - step_start )); }
fail() { echo; echo "fresh-machine: $1 failed; the last lines of $log:" >&2; tail -40 "$log" >&2; keep=1; exit 1; }

total_start=$(date +%s)
step "debian 12 root (mmdebstrap, swift.org's list)"
# The machine's own apt sources, as mmdebstrap reads a sources file given as its mirror.
sources=$(mktemp)
cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v '^#' > "$sources" || true
if ! grep -q '^URIs:\|^deb ' "$sources"; then echo "deb http://deb.debian.org/debian bookworm main" > "$sources"; fi
cp "$sources" "$root.sources"
rm -f "$sources"
mmdebstrap --variant=minbase --include="$swift_deps" --format=directory --skip=check/empty bookworm "$root" "$root.sources" >>"$log" 2>&1 \
  || { rm -f "$root.sources"; fail "mmdebstrap"; }
rm -f "$root.sources"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
done_step

bind() {  # bind SOURCE TARGET [ro]
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  mounted+=("$root$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$root$2"; fi
}
step "toolchain, package copies, clone of HEAD"
mount -t proc proc "$root/proc"; mounted+=("$root/proc")
bind /sys /sys ro
bind /dev /dev
mount -t tmpfs tmpfs "$root/dev/shm" 2>/dev/null && mounted+=("$root/dev/shm") || true
bind "$toolchain" /opt/swift ro
if [ -d "$packages" ]; then
  bind "$packages" /opt/swift-packages ro
  cat > "$root/etc/gitconfig" <<EOF
[url "/opt/swift-packages/"]
	insteadOf = https://github.com/
	insteadOf = git@github.com:
	insteadOf = ssh://git@github.com/
[safe]
	directory = *
EOF
fi
git clone -q --no-local "$checkout" "$root/src/gbgbridge" >>"$log" 2>&1 || fail "git clone"
git -C "$root/src/gbgbridge" checkout -q "$(git rev-parse HEAD)" >>"$log" 2>&1 || true
done_step

# Everything below runs in the root as a fresh machine's root user would.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb /bin/bash -c "cd /src/gbgbridge && $1"
}

step "scripts/install-deps.sh"
in_root "scripts/install-deps.sh" >>"$log" 2>&1 || fail "scripts/install-deps.sh"
done_step

step "scripts/install-deps.sh --check"
in_root "scripts/install-deps.sh --check" >>"$log" 2>&1 || fail "scripts/install-deps.sh --check"
done_step

if [ "$tests_build" -eq 1 ]; then
  step "swift build --build-tests"
  in_root "swift build --build-tests" >>"$log" 2>&1 || fail "swift build --build-tests"
  done_step
fi

step "scripts/demo.sh until its page answers"
port=18450
in_root "scripts/demo.sh --port $port" >>"$log" 2>&1 &
demo_pid=$!
answered=0
for _ in $(seq 1 3600); do
  if curl -fs -o /dev/null "http://127.0.0.1:$port/"; then answered=1; break; fi
  kill -0 "$demo_pid" 2>/dev/null || break
  sleep 1
done
[ "$answered" -eq 1 ] || fail "scripts/demo.sh"
done_step

step "the sample journey's nfc.read, with its photo"
in_root "python3 scripts/journey-check.py --port $port" >"$root.journey" 2>&1 || { cat "$root.journey" >>"$log"; fail "the journey check"; }
done_step
sed 's/^/  /' "$root.journey"
rm -f "$root.journey"

echo "fresh machine: every step held in $(( $(date +%s) - total_start )) s"
