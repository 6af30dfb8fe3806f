#!/usr/bin/env bash
# Installs the Debian packages GBGBridge needs to build, test and run, skipping what is present.
# Usage: scripts/install-deps.sh            (build + test dependencies)
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
  libp11-kit-dev softhsm2                 # PKCS#11 terminal keys: the header, and SoftHSM2 as the token in the tests
  qemu-system-x86 busybox-static v4l-utils  # the vivid camera VM tests (scripts/vivid-vm.sh): a real kernel's V4L2 test driver
  libjpeg-turbo-progs                     # cjpeg makes the real MJPEG frames the camera tests decode
  fonts-ocr-b libfreetype-dev             # the MRZ tests photograph synthetic pages drawn in OCR-B (MRZSynthesis)
  fonts-liberation fonts-urw-base35 fonts-freefont-ttf fonts-inconsolata fonts-noto-mono  # other fonts: the MRZ classifier's "not OCR-B" examples and the look-alike-font attacks
  python3-pil                             # an independent JPEG encoder: CMYK and YCCK scans for gbgbridge mrz's tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

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
