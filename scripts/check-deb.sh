#!/usr/bin/env bash
# Installs dist/gbgbridge_*.deb into a throwaway root (dpkg --root, maintainer scripts run with
# DPKG_ROOT set) and checks what an operator gets: the files, the conffiles, the service user,
# the installed binary running `gbgbridge doctor --json` on this machine's libraries alone (no
# Swift toolchain), a changed configuration kept across a reinstall, and a clean purge.
# Usage: scripts/check-deb.sh [--update-golden] [DEB]   (default: the newest dist/gbgbridge_*.deb)
#        --update-golden rewrites packaging/debian/files.golden from DEB (after an intended change)
set -euo pipefail
cd "$(dirname "$0")/.."

update_golden=0
if [ "${1:-}" = "--update-golden" ]; then update_golden=1; shift; fi
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

# The package's files against the golden list: nothing from the build tree, no test-only binary,
# nothing lost on the way.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||; s|/$||' | grep -v '^$' | LC_ALL=C sort > "$root/files.actual"
if [ "$update_golden" = 1 ]; then
  cp "$root/files.actual" packaging/debian/files.golden
  echo "check-deb: packaging/debian/files.golden rewritten ($(wc -l < packaging/debian/files.golden) entries)"
fi
diff -u packaging/debian/files.golden "$root/files.actual" > "$root/files.diff" \
  || fail "the package's files differ from packaging/debian/files.golden (scripts/check-deb.sh --update-golden if intended):
$(cat "$root/files.diff")"
grep -E '\.build|\.swiftmodule|\.o$|bench|soak|mrz-lab|Tests' "$root/files.actual" && fail "build-tree or test-only files in the package"

echo "check-deb: installing $deb into $root"
dpkg_root -i "$deb" >/dev/null

for path in usr/bin/gbgbridge usr/libexec/gbgbridge/gbgbridge-read usr/libexec/gbgbridge/gbgbridge-decode lib/systemd/system/gbgbridge.service usr/share/polkit-1/rules.d/50-gbgbridge-pcscd.rules \
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
  # The service confined as a whole (issue 43): exposure at most 3.0 ("OK").
  exposure=$(systemd-analyze security --offline=yes "$root/lib/systemd/system/gbgbridge.service" 2>/dev/null \
    | sed -n 's/.*Overall exposure level for gbgbridge.service: \([0-9.]*\).*/\1/p')
  [ -n "$exposure" ] || fail "systemd-analyze security gave no exposure level"
  python3 -c "import sys; sys.exit(0 if float('$exposure') <= 3.0 else 1)" || fail "the unit's exposure is $exposure (more than 3.0)"
  echo "check-deb: systemd-analyze security: exposure $exposure"
  # trust refresh (issue 45): a service and a daily timer, both accepted by systemd-analyze, the
  # service confined (exposure at most 3.0 too), the timer not enabled by the package.
  for unit in gbgbridge-trust-refresh.service gbgbridge-trust-refresh.timer; do
    [ -e "$root/lib/systemd/system/$unit" ] || fail "$unit is not installed"
    systemd-analyze verify --man=no "$root/lib/systemd/system/$unit" 2>&1 | grep -v 'Failed to .*gbgbridge\|is not executable' | grep -i 'error\|unknown' \
      && fail "systemd-analyze finds problems in $unit"
  done
  refresh_exposure=$(systemd-analyze security --offline=yes "$root/lib/systemd/system/gbgbridge-trust-refresh.service" 2>/dev/null \
    | sed -n 's/.*Overall exposure level for gbgbridge-trust-refresh.service: \([0-9.]*\).*/\1/p')
  python3 -c "import sys; sys.exit(0 if float('${refresh_exposure:-99}') <= 3.0 else 1)" \
    || fail "gbgbridge-trust-refresh.service's exposure is ${refresh_exposure:-unknown} (more than 3.0)"
  [ -e "$root/etc/systemd/system/timers.target.wants/gbgbridge-trust-refresh.timer" ] && fail "the package enabled the trust refresh timer"
  grep -q '^Persistent=yes$' "$root/lib/systemd/system/gbgbridge-trust-refresh.timer" || fail "the timer is not Persistent"
  grep -q '^RandomizedDelaySec=' "$root/lib/systemd/system/gbgbridge-trust-refresh.timer" || fail "the timer has no RandomizedDelaySec"
  echo "check-deb: gbgbridge-trust-refresh.service (exposure $refresh_exposure) and .timer installed, verified, not enabled"
fi

# The installed binary, with nothing of the build environment: no Swift toolchain on its paths.
for binary in usr/bin/gbgbridge usr/libexec/gbgbridge/gbgbridge-read usr/libexec/gbgbridge/gbgbridge-decode; do
  ldd "$root/$binary" | grep -q 'not found' && fail "$binary misses libraries: $(ldd "$root/$binary" | grep 'not found')"
  ldd "$root/$binary" | grep -q 'swift' && fail "$binary links Swift libraries dynamically"
  # One TLS stack, the system's: a second (BoringSSL, compiled in) would mean its own CA handling and updates.
  grep -qa 'BoringSSL' "$root/$binary" && fail "$binary carries BoringSSL; TLS goes through libcurl and the system's OpenSSL"
  printf 'check-deb: %-40s %6.1f MB, links %s\n' "$binary" "$(stat -c %s "$root/$binary" | awk '{print $1/1048576}')" \
    "$(ldd "$root/$binary" | awk '/=>/ {print $1}' | grep -E 'libcurl|libssl|libcrypto|libpcsclite|libnfc|libpng|libjpeg|libturbojpeg|libopenjp2|libtesseract|libarchive|libseccomp|libzbar' | sort | tr '\n' ' ')"
done
case "$(ldd "$root/usr/bin/gbgbridge")" in
  *libcurl*) ;;
  *) fail "gbgbridge does not link libcurl (trust refresh fetches through it)" ;;
esac
echo "check-deb: package $(basename "$deb") $(stat -c %s "$deb" | awk '{printf "%.1f", $1/1048576}') MB, installed $(du -sm "$root/usr" | cut -f1) MB under /usr"
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

# The installed gbgbridge finds the installed decoder (../libexec/gbgbridge/gbgbridge-decode) and
# reads a photo through it, confined: a PNG of nothing is "not found", never DECODER_FAILED.
python3 -c 'import zlib,struct,sys
raw=b"".join(b"\x00"+b"\xf0"*(3*64) for _ in range(48))
chunk=lambda t,d: struct.pack(">I",len(d))+t+d+struct.pack(">I",zlib.crc32(t+d)&0xffffffff)
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n"+chunk(b"IHDR",struct.pack(">IIBBBBB",64,48,8,2,0,0,0))+chunk(b"IDAT",zlib.compress(raw))+chunk(b"IEND",b""))' > "$root/blank.png"
env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" mrz --json "$root/blank.png" > "$root/mrz.json" || true
grep -q '"found" : false' "$root/mrz.json" && ! grep -q 'errorCode' "$root/mrz.json" \
  || fail "the installed gbgbridge mrz did not read through its decoder: $(cat "$root/mrz.json")"
echo "check-deb: the installed gbgbridge mrz reads through the installed, confined decoder"

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
# ... and a page's nfc.read reads the virtual passport (a raw RFC 6455 client: the page's socket).
/usr/bin/python3 - "$demo_port" "$root/usr/share/gbgbridge/passports/utopia-demo.json" <<'EOF' || { kill "$demo" 2>/dev/null; fail "nfc.read from a page on gbgbridge demo: $(tail -5 "$root/demo.err")"; }
import base64, json, os, re, socket, struct, sys, urllib.request
port, passport = sys.argv[1], json.load(open(sys.argv[2]))
origin = f"http://127.0.0.1:{port}"
script = urllib.request.urlopen(origin + "/gbg-bridge.js", timeout=5).read().decode()
token = re.search(r'var token = "([^"]+)";', script).group(1)
sock = socket.create_connection(("127.0.0.1", int(port)), timeout=60)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /gbg-bridge/ws?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
              f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n\r\n").encode())
head = b""
while b"\r\n\r\n" not in head:
    head += sock.recv(1)
assert head.startswith(b"HTTP/1.1 101"), head
def send(text):
    data, mask = text.encode(), os.urandom(4)
    header = bytes([0x81]) + (bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data)))
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
def exactly(n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise SystemExit("the socket closed")
        out += chunk
    return out
def receive():
    first, second = exactly(2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack(">H", exactly(2))[0]
    elif length == 127:
        length = struct.unpack(">Q", exactly(8))[0]
    return first & 0x0F, exactly(length)
lines = passport["mrz"]
access = {"documentNumber": lines[1][0:9].rstrip("<"), "dateOfBirth": lines[1][13:19], "dateOfExpiry": lines[1][21:27]}
send(json.dumps({"version": "1.0", "correlationId": "check-deb-1", "type": "request", "timestamp": 1700000000000,
                 "payload": {"action": "nfc.read", "data": {"accessKey": access, "dataGroups": ["DG1", "DG2"]}}}))
for _ in range(5000):
    opcode, body = receive()
    if opcode != 1:
        continue
    message = json.loads(body)
    if message.get("correlationId") == "check-deb-1" and message.get("type") == "response":
        payload = message["payload"]
        assert payload.get("status") == "success", payload
        assert payload["data"]["document"]["documentNumber"] == access["documentNumber"], payload["data"]["document"]
        print("check-deb: a page's nfc.read on demo read the virtual passport (" + str(payload["data"].get("accessControl")) + ")")
        break
else:
    raise SystemExit("no response to nfc.read")
EOF
# The page went away without a closing handshake: the host must still be serving.
if ! kill -0 "$demo" 2>/dev/null; then
  status=0; wait "$demo" || status=$?
  fail "gbgbridge demo exited ($status) after a page's nfc.read: $(tail -20 "$root/demo.err")"
fi
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
# (the reader may exit between the two calls: readlink failing then is no error)
while kill -0 "$reader" 2>/dev/null; do readlink "/proc/$reader/exe" >> "$root/read-exe" 2>/dev/null || true; sleep 0.05; done
status=0; wait "$reader" || status=$?
kill "$emulator" 2>/dev/null; wait "$emulator" 2>/dev/null || true
[ "$status" = 0 ] || fail "gbgbridge read of the emulated de-passport-2023 exited $status: $(cat "$root/read.err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["document"]["issuingState"]=="UTO", r["document"]; assert r["accessControl"]=="PACE", r["accessControl"]; assert r["verification"]["chip"]["status"]=="valid", r["verification"]["chip"]' "$root/read.json" \
  || fail "gbgbridge read gave: $(head -c 400 "$root/read.json")"
grep -q 'libexec/gbgbridge/gbgbridge-read$' "$root/read-exe" || fail "gbgbridge read did not run in the lean reader: $(sort -u "$root/read-exe")"
echo "check-deb: from /, demo served the sample journey, and read (in the lean reader, through libnfc) the chip emulate --profile de-passport-2023 put behind $first"

# The same through PC/SC: emulate a passport by name into the vpcd reader of a private pcscd and
# read it from /tmp with the installed gbgbridge read. Debian's pcscd always binds
# /run/pcscd/pcscd.comm, so this one runs in a mount namespace of its own (as the tests' harness
# does), on two free vpcd ports, and the reader reaches it through PCSCLITE_CSOCK_NAME.
vpcd_driver=/usr/lib/pcsc/drivers/serial/libifdvpcd.so
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && [ -x /usr/sbin/pcscd ] && [ -f "$vpcd_driver" ]; then
  pcsc_dir=$(mktemp -d /tmp/gbg-check-deb-pcscd.XXXXXX)
  chmod 0755 "$pcsc_dir"
  vport=$(python3 -c '
import socket
for port in range(36100, 37000, 2):
    try:
        for p in (port, port + 1):
            s = socket.socket(); s.bind(("127.0.0.1", p)); s.close()
        print(port); break
    except OSError:
        pass')
  hex=$(printf '0x%X' "$vport")
  printf 'FRIENDLYNAME "Virtual PCD"\nDEVICENAME   /dev/null:%s\nLIBPATH      %s\nCHANNELID    %s\n' "$hex" "$vpcd_driver" "$hex" > "$pcsc_dir/reader.conf"
  unshare --mount --propagation private -- /bin/sh -c 'mkdir -p /run/pcscd && mount --bind "$0" /run/pcscd && exec /usr/sbin/pcscd --foreground -c "$1"' \
    "$pcsc_dir" "$pcsc_dir/reader.conf" > "$pcsc_dir/pcscd.log" 2>&1 &
  pcscd_pid=$!
  for _ in $(seq 100); do [ -S "$pcsc_dir/pcscd.comm" ] && break; sleep 0.05; done
  [ -S "$pcsc_dir/pcscd.comm" ] || fail "the private pcscd did not start: $(cat "$pcsc_dir/pcscd.log")"
  (cd / && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" emulate --passport utopia-demo \
    --vpcd-port "$vport" > "$root/emulate-pcsc.out" 2> "$root/emulate-pcsc.err") &
  emulator=$!
  demo_mrz=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["mrz"]))' "$root/usr/share/gbgbridge/passports/utopia-demo.json")
  set +e
  (cd /tmp && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent PCSCLITE_CSOCK_NAME="$pcsc_dir/pcscd.comm" "$root/usr/bin/gbgbridge" read \
    --reader "Virtual PCD 00 00" --mrz "$demo_mrz" --trust "$root/usr/share/gbgbridge/pki/csca.cert.pem" --data-groups DG1,DG2 \
    --json --timeout 30 > "$root/read-pcsc.json" 2> "$root/read-pcsc.err")
  status=$?
  set -e
  kill "$emulator" 2>/dev/null || true
  wait "$emulator" 2>/dev/null || true
  sleep 1  # pcscd notices the passport leave the reader before the phone comes
  # A phone's mDL from the packaged kit (mdoc/utopia-mdl.json), read and verified with the kit's test IACA.
  (cd / && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent "$root/usr/bin/gbgbridge" emulate --mdoc-profile utopia-mdl \
    --handover negotiated --vpcd-port "$vport" > "$root/emulate-mdoc.out" 2> "$root/emulate-mdoc.err") &
  emulator=$!
  sleep 1
  set +e
  (cd /tmp && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent PCSCLITE_CSOCK_NAME="$pcsc_dir/pcscd.comm" "$root/usr/bin/gbgbridge" mdoc read \
    --reader "Virtual PCD 00 00" --trust "$root/usr/share/gbgbridge/mdoc/iaca.cert.pem" --request identity \
    --json --timeout 30 > "$root/mdoc-pcsc.json" 2> "$root/mdoc-pcsc.err")
  mdoc_status=$?
  set -e
  kill "$emulator" "$pcscd_pid" 2>/dev/null || true
  wait "$emulator" "$pcscd_pid" 2>/dev/null || true
  rm -rf "$pcsc_dir"
  [ "$status" = 0 ] || fail "gbgbridge read (PC/SC) of emulate --passport utopia-demo exited $status: $(cat "$root/read-pcsc.err" "$root/emulate-pcsc.err")"
  [ "$mdoc_status" = 0 ] || fail "gbgbridge mdoc read of emulate --mdoc-profile utopia-mdl exited $mdoc_status: $(cat "$root/mdoc-pcsc.err" "$root/emulate-mdoc.err")"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["issuer"]=="valid" and r["device"]=="valid" and r["portrait"]["data"], r' "$root/mdoc-pcsc.json" \
    || fail "gbgbridge mdoc read gave: $(head -c 400 "$root/mdoc-pcsc.json")"
  echo "check-deb: from /tmp, the installed mdoc read read and verified the mDL emulate --mdoc-profile utopia-mdl put into vpcd (negotiated handover, portrait re-encoded)"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["verification"]["passive"]["status"]=="valid", r["verification"]["passive"]' "$root/read-pcsc.json" \
    || fail "gbgbridge read (PC/SC) gave: $(head -c 400 "$root/read-pcsc.json")"
  echo "check-deb: from /tmp, read (through a private pcscd) the passport emulate --passport utopia-demo put into vpcd; passive authentication valid"
else
  echo "check-deb: SKIPPED the PC/SC read (needs root for a private pcscd, unshare, pcscd and vsmartcard-vpcd)"
fi

# The shell completions, generated from the commands: bash completes `gbgbridge re<TAB>` to read
# and readers, and an option of read; zsh and fish files are there.
for path in usr/share/bash-completion/completions/gbgbridge usr/share/zsh/vendor-completions/_gbgbridge \
            usr/share/fish/vendor_completions.d/gbgbridge.fish; do
  [ -s "$root/$path" ] || fail "$path is not installed"
done
completions=$(env -i PATH="$root/usr/bin:/usr/bin:/bin" bash --norc -c '
  source "$1"
  fn=$(complete -p gbgbridge | sed "s/.*-F \([^ ]*\).*/\1/")
  COMP_WORDS=(gbgbridge re); COMP_CWORD=1; COMP_LINE="gbgbridge re"; COMP_POINT=${#COMP_LINE}
  "$fn" gbgbridge re gbgbridge; echo "${COMPREPLY[*]}"
  COMP_WORDS=(gbgbridge read --mrz-f); COMP_CWORD=2; COMP_LINE="gbgbridge read --mrz-f"; COMP_POINT=${#COMP_LINE}
  "$fn" gbgbridge --mrz-f read; echo "${COMPREPLY[*]}"' _ "$root/usr/share/bash-completion/completions/gbgbridge")
echo "$completions" | head -1 | grep -qw read && echo "$completions" | head -1 | grep -qw readers \
  || fail "bash completion of 'gbgbridge re': $completions"
echo "$completions" | tail -1 | grep -q -- '--mrz-from-camera' || fail "bash completion of 'gbgbridge read --mrz-f': $completions"

# The man pages, generated from the same definitions: each renders without errors, and
# gbgbridge-read(1) names every option `gbgbridge read --help` does.
for page in "$root"/usr/share/man/man1/*.1.gz; do
  man --warnings=w -l "$page" > "$root/man.txt" 2> "$root/man.err" || fail "man $(basename "$page"): $(cat "$root/man.err")"
  grep -v 'cannot adjust line\|cannot break line' "$root/man.err" | grep -q . && fail "man $(basename "$page") warns: $(cat "$root/man.err")"
  [ -s "$root/man.txt" ] || fail "man $(basename "$page") is empty"
done
for command in read serve emulate mrz "trust import" "camera capture"; do
  page="$root/usr/share/man/man1/gbgbridge-${command// /-}.1.gz"
  [ -f "$page" ] || fail "no man page for gbgbridge $command"
  MANWIDTH=200 man -l "$page" 2>/dev/null | grep -o -- '--[a-z0-9-]*' | sort -u > "$root/man-options"
  "$root/usr/bin/gbgbridge" $command --help | grep -o -- '--[a-z0-9-]*' | sort -u > "$root/help-options"
  missing=$(comm -13 "$root/man-options" "$root/help-options" | tr '\n' ' ')
  [ -z "$missing" ] || fail "man gbgbridge-${command// /-} lacks what --help lists: $missing"
done
echo "check-deb: completions (bash completes 'gbgbridge re' to: $(echo "$completions" | head -1)), $(ls "$root"/usr/share/man/man1 | wc -l) man pages rendering and matching --help"

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
