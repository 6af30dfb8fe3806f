#!/usr/bin/env bash
# Installs the Debian packages GBGBridge needs to build, test and run, skipping what is present.
# Usage: scripts/install-deps.sh            install what is missing (apt-get; root or sudo)
#        scripts/install-deps.sh --check    list what is missing and exit 1 (installing nothing); 0 when nothing is
#
# What needs which package is declared here, and SourceRulesTests holds the project to it: every
# provider Package.swift names (`.apt([...])`), every pkg-config module and linked library, every
# program the tests and scripts start by path or look up with `command -v`, has its package below.
set -euo pipefail

packages=(
  pkg-config
  libpcsclite-dev pcscd vsmartcard-vpcd   # PC/SC reader access; vpcd lets the emulator act as a card
  libnfc-dev                              # PN53x readers
  libssl-dev                              # OpenSSL 3: BAC/PACE/CA/AA/passive authentication
  libcurl4-openssl-dev                    # trust refresh fetches through libcurl (TLS by the system's OpenSSL)
  libseccomp-dev                          # the confined image decoder's seccomp filter (CSeccomp)
  libeac-dev openpace                     # OpenPACE: the independent PACE/CA peer of OpenPACEInteropTests; cvc-create/cvc-print
  libopenjp2-7-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev  # images
  chromium fonts-dejavu-core              # the browser end-to-end tests (and the kiosk)
  curl ca-certificates
  gdb                                     # scripts/test.sh prints the stacks of a test run that hangs
  time                                    # /usr/bin/time: the peak memory of a CLI run (FileCeilingTests)
  python3 python3-cryptography            # the backend example of Docs/server-side-verification.md, run by the tests
  python3-jsonschema                      # validates every nfc.read message against Docs/nfc-read.schema.json in the tests
  python3-prometheus-client               # an independent parser of /metrics in the tests
  dpkg-dev binutils lintian               # scripts/package-deb.sh: dpkg-shlibdeps, strip, the package's check
  systemd                                 # systemd-analyze: scripts/check-deb.sh verifies the packaged units
  libp11-kit-dev softhsm2                 # PKCS#11 terminal keys: the header, and SoftHSM2 as the token in the tests
  qemu-system-x86 busybox-static v4l-utils  # the vivid camera VM tests (scripts/vivid-vm.sh): a real kernel's V4L2 test driver
  libjpeg-turbo-progs                     # cjpeg makes the real MJPEG frames the camera tests decode
  fonts-ocr-b libfreetype-dev             # the MRZ tests photograph synthetic pages drawn in OCR-B (MRZSynthesis)
  fonts-liberation fonts-urw-base35 fonts-freefont-ttf fonts-inconsolata fonts-noto-mono  # other fonts: the MRZ classifier's "not OCR-B" examples and the look-alike-font attacks
  python3-pil                             # an independent JPEG encoder: CMYK and YCCK scans for gbgbridge mrz's tests
  python3-cbor2                           # an independent CBOR parser: mdoc responses and transcripts in the tests
  python3-pyscard                         # an independent mdoc reader (PC/SC from Python) reads the emulated holder in the tests
  libarchive-dev                          # trust refresh: a master list published as a ZIP (the BSI's), unpacked bounded
  mmdebstrap                              # scripts/fresh-machine.sh: a throwaway Debian root
  libsystemd-dev                          # sd-bus: BlueZ (bluetoothd) is reached over the system D-Bus (mdoc over BLE)
  dbus python3-dbus python3-gi            # a private D-Bus and a stand-in BlueZ object tree for doctor's bluetooth check in the tests
  libzbar-dev                             # ZBar: an mdoc holder's QR engagement read in the confined decoder
  qrencode                                # an independent QR encoder: the holders' codes in the QR engagement tests
  bluez bluez-test-tools                  # the BLE VM tests: the real bluetoothd, btmgmt, and btvirt's virtual LE controllers (hci_vhci)
)

# Programs the tests and scripts start, and the package each comes from (program:package).
programs=(
  python3:python3
  pcscd:pcscd
  cvc-create:openpace cvc-print:openpace
  softhsm2-util:softhsm2
  chromium:chromium
  gdb:gdb
  time:time
  cjpeg:libjpeg-turbo-progs
  qemu-system-x86_64:qemu-system-x86
  v4l2-ctl:v4l-utils
  busybox:busybox-static
  lintian:lintian
  dpkg-shlibdeps:dpkg-dev
  strip:binutils
  systemd-analyze:systemd
  openssl:openssl
  curl:curl
  mmdebstrap:mmdebstrap
  dbus-daemon:dbus
  btmgmt:bluez
  btvirt:bluez-test-tools
  qrencode:qrencode
)

# Libraries Package.swift links by name (linkedLibrary), and the package with their development files.
libraries=(
  eac:libeac-dev
  crypto:libssl-dev
  jpeg:libjpeg62-turbo-dev
  dl:libc6-dev
)

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps.sh: unknown option $1 (--check, --help)" >&2; exit 2 ;;
esac

for entry in "${programs[@]}" "${libraries[@]}"; do
  package=${entry#*:}
  case " ${packages[*]} " in
    *" $package "*) ;;
    *) packages+=("$package") ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "$check_only" -eq 1 ]; then
  status=0
  if [ ${#missing[@]} -gt 0 ]; then
    echo "missing Debian packages: ${missing[*]}"
    status=1
  fi
  for entry in "${programs[@]}"; do
    program=${entry%%:*}
    package=${entry#*:}
    if ! command -v "$program" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$program" ] && [ ! -x "/sbin/$program" ]; then
      echo "missing program: $program (package $package)"
      status=1
    fi
  done
  command -v swift >/dev/null 2>&1 || { echo "missing: the Swift toolchain (6.0 or later) on PATH"; status=1; }
  [ "$status" -eq 0 ] && echo "nothing missing: ${#packages[@]} packages, ${#programs[@]} programs"
  exit "$status"
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v swift >/dev/null 2>&1; then
  for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    [ -x "$candidate/swift" ] && { echo "Swift found at $candidate; add it to PATH." >&2; break; }
  done
  echo "error: the Swift toolchain (6.0 or later) is not on PATH." >&2
  exit 1
fi
