#!/usr/bin/env bash
# Installs dist/gbgbridge_*.deb into a throwaway root (dpkg --root, maintainer scripts run with
# DPKG_ROOT set) and checks what an operator gets: the files, the conffiles, the service user,
# the installed binary running `gbgbridge doctor --json` on this machine's libraries alone (no
# Swift toolchain), a changed configuration kept across a reinstall, and a clean purge.
# Usage: scripts/check-deb.sh [DEB]   (default: the newest dist/gbgbridge_*.deb)
set -euo pipefail
cd "$(dirname "$0")/.."

deb=${1:-$(ls -t dist/gbgbridge_*.deb 2>/dev/null | head -1)}
[ -f "$deb" ] || { echo "check-deb: no package; run scripts/package-deb.sh first" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "check-deb: FAIL: $*" >&2; exit 1; }

# An empty dpkg database and the account files useradd --prefix works on.
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" "$root/etc"
: > "$root/var/lib/dpkg/status"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
printf 'root:*:20000:0:99999:7:::\n' > "$root/etc/shadow"
printf 'root:*::\n' > "$root/etc/gshadow"
chmod 0640 "$root/etc/shadow" "$root/etc/gshadow"

dpkg_root() {
  # The root has no libraries of its own (Depends are this machine's), and scripts run outside it.
  # (Its complaints about dependencies missing from the empty root go to dpkg.log, shown on failure.)
  dpkg --root="$root" --force-script-chrootless --force-depends --force-not-root --log=/dev/null "$@" 2>> "$root/dpkg.log" \
    || { cat "$root/dpkg.log" >&2; fail "dpkg $*"; }
}

echo "check-deb: installing $deb into $root"
dpkg_root -i "$deb" >/dev/null

for path in usr/bin/gbgbridge usr/libexec/gbgbridge/gbgbridge-read lib/systemd/system/gbgbridge.service usr/share/polkit-1/rules.d/50-gbgbridge-pcscd.rules \
            etc/modprobe.d/gbgbridge-blacklist-nfc.conf etc/gbgbridge/gbgbridge.conf usr/share/man/man1/gbgbridge.1.gz \
            usr/share/doc/gbgbridge/copyright; do
  [ -e "$root/$path" ] || fail "$path is not installed"
done
[ -d "$root/etc/gbgbridge/trust" ] || fail "/etc/gbgbridge/trust is missing"
grep -q '^gbgbridge:' "$root/etc/passwd" || fail "the service user gbgbridge was not created"
grep -q '^blacklist pn533$' "$root/etc/modprobe.d/gbgbridge-blacklist-nfc.conf" || fail "pn533 is not blacklisted"
grep -q 'subject.user == "gbgbridge"' "$root/usr/share/polkit-1/rules.d/50-gbgbridge-pcscd.rules" || fail "the polkit rule does not name gbgbridge"
grep -q '^ExecStart=/usr/bin/gbgbridge serve --config /etc/gbgbridge/gbgbridge.conf$' "$root/lib/systemd/system/gbgbridge.service" \
  || fail "the unit does not run serve with the configuration file"
dpkg-deb -f "$deb" Depends | grep -q 'pcscd' || fail "Depends lacks pcscd"
dpkg-deb -f "$deb" Depends | grep -q 'libpcsclite1' || fail "Depends lacks libpcsclite1"
dpkg-deb -f "$deb" Recommends | grep -q 'chromium' || fail "Recommends lacks chromium"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify --man=no "$root/lib/systemd/system/gbgbridge.service" 2>&1 | grep -v 'Failed to .*gbgbridge' | grep -i 'error\|unknown' \
    && fail "systemd-analyze finds problems in the unit"
fi

# The installed binary, with nothing of the build environment: no Swift toolchain on its paths.
for binary in usr/bin/gbgbridge usr/libexec/gbgbridge/gbgbridge-read; do
  ldd "$root/$binary" | grep -q 'not found' && fail "$binary misses libraries: $(ldd "$root/$binary" | grep 'not found')"
  ldd "$root/$binary" | grep -q 'swift' && fail "$binary links Swift libraries dynamically"
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
set +e
env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" doctor --json --config "$root/etc/gbgbridge/gbgbridge.conf" \
  --trust "$root/etc/gbgbridge/trust" --port "$port" > "$root/doctor.json" 2> "$root/doctor.err"
status=$?
set -e
[ "$status" -le 1 ] || fail "gbgbridge doctor exited $status: $(cat "$root/doctor.err")"
/usr/bin/python3 - "$root/doctor.json" <<'EOF' || fail "gbgbridge doctor --json: $(cat "$root/doctor.json")"
import json, sys
report = json.load(open(sys.argv[1]))
names = {check["name"]: check for check in report["checks"]}
for check in report["checks"]:
    assert set(check) >= {"name", "status", "finding", "fix"}, check
    assert check["status"] in ("ok", "warning", "error"), check
for needed in ("config", "pcscd", "trust-store", "kernel-modules", "port"):
    assert needed in names, f"no {needed} check: {sorted(names)}"
assert names["config"]["status"] == "ok", names["config"]
print("check-deb: installed gbgbridge doctor --json: " + ", ".join(f"{n} {c['status']}" for n, c in names.items()))
EOF
grep -q 'Unable to find USB busses\|libnfc' "$root/doctor.err" && fail "doctor started libnfc without a libnfc device: $(cat "$root/doctor.err")"

# The journey developer's kit, from any directory: demo serves the sample journey and the script,
# emulate finds a field profile and the test signer (the kit in usr/share/gbgbridge, found beside
# the installed binary).
for path in usr/share/gbgbridge/journey/index.html usr/share/gbgbridge/passports/utopia-demo.json \
            usr/share/gbgbridge/passports/field/de-passport-2023.json usr/share/gbgbridge/pki/ds.cert.pem \
            usr/share/gbgbridge/cvc/UTIS0000001.pkcs8 usr/share/gbgbridge/README; do
  [ -e "$root/$path" ] || fail "$path is not installed"
done
demo_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd / && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" demo --port "$demo_port" > "$root/demo.out" 2> "$root/demo.err") &
demo=$!
/usr/bin/python3 - "$demo_port" <<'EOF' || { kill "$demo" 2>/dev/null; fail "gbgbridge demo from /: $(cat "$root/demo.out" "$root/demo.err")"; }
import sys, time, urllib.request
port = sys.argv[1]
for _ in range(100):
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read().decode()
        script = urllib.request.urlopen(f"http://127.0.0.1:{port}/gbg-bridge.js", timeout=2).read().decode()
        break
    except OSError:
        time.sleep(0.1)
else:
    raise SystemExit("no answer")
assert "<html" in page.lower() and "GBGBridge" in script, (page[:200], script[:200])
EOF
kill "$demo"; wait "$demo" 2>/dev/null || true
grep -q 'Open in a browser' "$root/demo.out" || fail "gbgbridge demo from / printed: $(cat "$root/demo.out" "$root/demo.err")"
# emulate a field profile behind an emulated PN532 and read it with the installed `gbgbridge read`
# through libnfc (no pcscd needed), which runs in the lean reader (/proc/PID/exe says which).
(cd / && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" emulate --profile de-passport-2023 \
  --pn532-pty > "$root/emulate.out" 2> "$root/emulate.err") &
emulator=$!
for _ in $(seq 100); do [ -s "$root/emulate.out" ] && break; sleep 0.1; done
first=$(head -1 "$root/emulate.out")
case "$first" in
  pn532_uart:/dev/pts/*) ;;
  *) kill "$emulator" 2>/dev/null; fail "gbgbridge emulate --profile from / printed '$first': $(cat "$root/emulate.err")" ;;
esac
mrz=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["mrz"]))' "$root/usr/share/gbgbridge/passports/field/de-passport-2023.json")
(cd / && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" read --reader "libnfc:$first" --mrz "$mrz" --trust "$root/usr/share/gbgbridge/pki/csca.cert.pem" \
  --data-groups DG1 --json --timeout 20 > "$root/read.json" 2> "$root/read.err") &
reader=$!
: > "$root/read-exe"
while kill -0 "$reader" 2>/dev/null; do readlink "/proc/$reader/exe" >> "$root/read-exe" 2>/dev/null; sleep 0.05; done
wait "$reader"; status=$?
kill "$emulator" 2>/dev/null; wait "$emulator" 2>/dev/null || true
[ "$status" = 0 ] || fail "gbgbridge read of the emulated de-passport-2023 exited $status: $(cat "$root/read.err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["document"]["issuingState"]=="UTO", r["document"]; assert r["accessControl"]=="PACE", r["accessControl"]; assert r["verification"]["chip"]["status"]=="valid", r["verification"]["chip"]' "$root/read.json" \
  || fail "gbgbridge read gave: $(head -c 400 "$root/read.json")"
grep -q 'libexec/gbgbridge/gbgbridge-read$' "$root/read-exe" || fail "gbgbridge read did not run in the lean reader: $(sort -u "$root/read-exe")"
echo "check-deb: from /, demo served the sample journey, and read (in the lean reader, through libnfc) the chip emulate --profile de-passport-2023 put behind $first"

# A changed configuration survives a reinstall (it is a conffile); the package's is not forced on it.
echo "port: 8461" >> "$root/etc/gbgbridge/gbgbridge.conf"
dpkg_root -i "$deb" >/dev/null
grep -q '^port: 8461$' "$root/etc/gbgbridge/gbgbridge.conf" || fail "a reinstall overwrote the changed configuration"

# Remove keeps the configuration; purge takes everything of the package.
dpkg_root -r gbgbridge >/dev/null
[ -e "$root/usr/bin/gbgbridge" ] && fail "remove left the binary"
[ -e "$root/etc/gbgbridge/gbgbridge.conf" ] || fail "remove took the configuration"
dpkg_root -P gbgbridge >/dev/null
[ -e "$root/etc/gbgbridge/gbgbridge.conf" ] && fail "purge left the configuration"
[ -e "$root/var/lib/gbgbridge" ] && fail "purge left /var/lib/gbgbridge"
echo "check-deb: ok ($deb installed, checked, reinstalled with a changed configuration kept, purged)"
