#!/usr/bin/env bash
# Builds dist/gbgbridge_<version>_<arch>.deb: the gbgbridge binary (release, Swift runtime linked
# statically, so the package needs no Swift toolchain), the systemd unit gbgbridge.service, the
# polkit rule for the "gbgbridge" service user, a modprobe.d file that keeps the kernel's
# pn533/nfc drivers off PN53x readers, /etc/gbgbridge/gbgbridge.conf (a conffile: a changed one
# is never overwritten) and /etc/gbgbridge/trust/, the man page and the deployment guide.
# Depends: from dpkg-shlibdeps (the libraries the binary links) plus pcscd and libccid; chromium
# is a Recommends (only --kiosk needs it). lintian must find no error.
#
# Usage: scripts/package-deb.sh [--no-build | --build-only]
#        (--no-build packages the binaries already built; --build-only builds them and stops)
# Env:   GBG_DEB_MAINTAINER="Name <address>"     (the Maintainer field)
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
package=1
[ "${1:-}" = "--no-build" ] && build=0
[ "${1:-}" = "--build-only" ] && package=0

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/GBGBridgeRead/GBGBridgeVersion.swift)
[ -n "$version" ] || { echo "package-deb: cannot find the version in Sources/GBGBridgeRead/GBGBridgeVersion.swift" >&2; exit 1; }
arch=$(dpkg --print-architecture)
maintainer=${GBG_DEB_MAINTAINER:-"GBGBridge for Linux <gbgbridge-linux@example.org>"}
# Reproducible dates: the last commit's, else now.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

# Linked by lld with packed relative relocations (DT_RELR, glibc >= 2.36): the loader's
# relocation table shrinks from ~1 MiB to ~10 KiB, and with it the pages every start maps
# (Docs/reading-and-verification.md, "Peak memory").
link=(-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
if [ "$build" = 1 ]; then
  swift build -c release --static-swift-stdlib "${link[@]}" --product gbgbridge
  swift build -c release --static-swift-stdlib "${link[@]}" --product gbgbridge-read
  swift build -c release --static-swift-stdlib "${link[@]}" --product gbgbridge-decode
fi
[ "$package" = 1 ] || exit 0
binary=.build/release/gbgbridge
# `gbgbridge read` execs the lean reader (no server code mapped: a third less memory per read).
reader=.build/release/gbgbridge-read
# The confined image decoder both start for every hostile image (a chip's face, a photo).
decoder=.build/release/gbgbridge-decode
for file in "$binary" "$reader" "$decoder"; do
  [ -x "$file" ] || { echo "package-deb: $file is missing (run without --no-build)" >&2; exit 1; }
  if ldd "$file" | grep -q 'libswiftCore\|/opt/swift\|libFoundation'; then
    echo "package-deb: $file links the Swift runtime dynamically; build with --static-swift-stdlib" >&2
    exit 1
  fi
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/gbgbridge_${version}_${arch}"
src=packaging/debian

install -D -m 0755 "$binary" "$root/usr/bin/gbgbridge"
install -D -m 0755 "$reader" "$root/usr/libexec/gbgbridge/gbgbridge-read"
install -D -m 0755 "$decoder" "$root/usr/libexec/gbgbridge/gbgbridge-decode"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/gbgbridge" "$root/usr/libexec/gbgbridge/gbgbridge-read" \
  "$root/usr/libexec/gbgbridge/gbgbridge-decode"
install -D -m 0644 "$src/gbgbridge.service" "$root/lib/systemd/system/gbgbridge.service"
# trust refresh as a daily timer: installed, not enabled (it needs sources in the configuration).
install -D -m 0644 "$src/gbgbridge-trust-refresh.service" "$root/lib/systemd/system/gbgbridge-trust-refresh.service"
install -D -m 0644 "$src/gbgbridge-trust-refresh.timer" "$root/lib/systemd/system/gbgbridge-trust-refresh.timer"
install -D -m 0644 "$src/50-gbgbridge-pcscd.rules" "$root/usr/share/polkit-1/rules.d/50-gbgbridge-pcscd.rules"
install -D -m 0644 "$src/gbgbridge-blacklist-nfc.conf" "$root/etc/modprobe.d/gbgbridge-blacklist-nfc.conf"
install -D -m 0644 "$src/gbgbridge.conf" "$root/etc/gbgbridge/gbgbridge.conf"
install -d -m 0755 "$root/etc/gbgbridge/trust"

# What `gbgbridge demo` and `emulate` need from any directory (KitData looks in
# /usr/share/gbgbridge): the sample journey, the virtual passports and field profiles with their
# faces, and the test PKI and CV certificates. All test-only: serve trusts nothing from here.
kit="$root/usr/share/gbgbridge"
install -d -m 0755 "$kit"
for dir in journey passports faces; do
  (cd Fixtures && find "$dir" -type f ! -name '*.md' -print0) | while IFS= read -r -d '' file; do
    install -D -m 0644 "Fixtures/$file" "$kit/$file"
  done
done
for file in pki/ds.cert.pem pki/ds.key.pem pki/csca.cert.pem \
            cvc/UTCVCA00001.cvcert cvc/UTDVIS00001.cvcert cvc/UTIS0000001.cvcert cvc/UTIS0000001.pkcs8 \
            mdoc/utopia-mdl.json mdoc/utopia-pid.json mdoc/iaca.cert.pem mdoc/ds.cert.pem mdoc/ds.key.pem mdoc/device.key.pem \
            mdoc/ds-expired.cert.pem mdoc/ds-other.cert.pem mdoc/reader.cert.pem mdoc/reader.key.pem mdoc/reader-root.cert.pem; do
  install -D -m 0644 "Fixtures/$file" "$kit/$file"
done
cat > "$kit/README" <<'EOF_KIT'
Test data for `gbgbridge demo` and `gbgbridge emulate`: a sample journey, virtual passports
(passports/, field profiles in passports/field/), their face images, and a TEST PKI (pki/: a
test CSCA and document signer, private key included) and TEST CV certificates (cvc/: a test
CVCA, DV and Inspection System with its key); mdoc/: virtual phones' mobile documents (an mDL
and an EU PID) with a TEST IACA, document signer, device and reader keys. Nothing here is trusted by `gbgbridge serve`
unless an operator passes it with --trust; never do that on a kiosk that reads real documents.
EOF_KIT
chmod 0644 "$kit/README"

doc="$root/usr/share/doc/gbgbridge"
install -D -m 0644 "$src/copyright" "$doc/copyright"
install -D -m 0644 "$src/lintian-overrides" "$root/usr/share/lintian/overrides/gbgbridge"
install -m 0644 Docs/kiosk-deployment.md "$doc/kiosk-deployment.md"
gzip -9n "$doc/kiosk-deployment.md"
date_rfc2822=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
cat > "$doc/changelog" <<EOF
gbgbridge ($version) unstable; urgency=medium

  * Release $version: see /usr/share/doc/gbgbridge/kiosk-deployment.md.gz.

 -- $maintainer  $date_rfc2822
EOF
gzip -9n "$doc/changelog"
# Man pages and shell completions from the command definitions themselves (ArgumentParser's
# --experimental-dump-help and --generate-completion-script), so they cannot drift from --help:
# gbgbridge(1) with the hand-written FILES and SECURITY sections, and one page per command
# (gbgbridge-read(1), gbgbridge-trust-import(1) …).
install -d -m 0755 "$root/usr/share/man/man1"
python3 scripts/generate-man.py "$binary" "$stage/man" "$version" "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" \
  --extra "$src/gbgbridge.1.extra" >/dev/null
for page in "$stage"/man/*.1; do
  gzip -9n < "$page" > "$root/usr/share/man/man1/$(basename "$page").gz"
  chmod 0644 "$root/usr/share/man/man1/$(basename "$page").gz"
done
install -d -m 0755 "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d"
# bash-completion sources the file: ArgumentParser's `#!/bin/bash` line is dropped (lintian's
# bash-completion-with-hashbang).
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' > "$root/usr/share/bash-completion/completions/gbgbridge"
"$binary" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_gbgbridge"
"$binary" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/gbgbridge.fish"
chmod 0644 "$root/usr/share/bash-completion/completions/gbgbridge" "$root/usr/share/zsh/vendor-completions/_gbgbridge" \
  "$root/usr/share/fish/vendor_completions.d/gbgbridge.fish"

# The shared libraries the binary needs, as Debian packages with versions.
mkdir -p "$stage/debian"
printf 'Source: gbgbridge\n\nPackage: gbgbridge\nArchitecture: any\n' > "$stage/debian/control"
shlibs=$(cd "$stage" && dpkg-shlibdeps -O "$root/usr/bin/gbgbridge" "$root/usr/libexec/gbgbridge/gbgbridge-read" \
  "$root/usr/libexec/gbgbridge/gbgbridge-decode" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "package-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
rm -rf "$stage/debian"

install -d -m 0755 "$root/DEBIAN"
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: gbgbridge
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $shlibs, pcscd, libccid, passwd
Recommends: chromium, pcsc-tools
Suggests: vsmartcard-vpcd
Section: utils
Priority: optional
Homepage: https://github.com/gbgplc/gbgbridge-linux
Description: host bridging kiosk web journeys to ePassport/eID chip readers
 GBGBridge for Linux lets an unmodified web identity-verification journey,
 running in a kiosk browser, use the native capabilities of a Linux kiosk
 over the GBGBridge JSON message protocol: above all reading the chip of an
 ePassport or eID card (ICAO Doc 9303: BAC, PACE, chip, active and passive
 authentication) through a USB NFC reader, via pcscd or libnfc.
 .
 The package runs the host as the systemd service gbgbridge.service under
 the system user gbgbridge (allowed into pcscd by a polkit rule), configured
 by /etc/gbgbridge/gbgbridge.conf, and keeps the kernel's pn533/nfc drivers
 off PN53x readers. "gbgbridge doctor" checks a machine; "gbgbridge trust
 import" fills the trust store.
EOF
printf '/etc/gbgbridge/gbgbridge.conf\n/etc/modprobe.d/gbgbridge-blacklist-nfc.conf\n' > "$root/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  install -m 0755 "$src/$script" "$root/DEBIAN/$script"
done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

mkdir -p dist
deb="dist/gbgbridge_${version}_${arch}.deb"
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "built $deb ($(du -h "$deb" | cut -f1))"

if command -v lintian >/dev/null 2>&1; then
  # Errors fail the build; warnings are shown. The one override (libyaml inside Yams) is in
  # packaging/debian/lintian-overrides with its reason.
  lintian --fail-on error --tag-display-limit 0 "$deb"
  echo "lintian: no errors"
else
  echo "package-deb: lintian is not installed (scripts/install-deps.sh installs it); not checked" >&2
fi
