#!/usr/bin/env bash
# A real kernel's virtual camera for tests: boots Debian's own kernel package (unpacked, never
# installed) in qemu-system-x86_64 under software emulation, with the kernel's vivid V4L2 test
# driver loaded from an initramfs built here (busybox-static, the kernel's modules, this
# package's gbgbridge and v4l2-ctl with the shared libraries they need), and runs a scenario
# script in it. A host directory is shared with the guest at /share (9p): the scenario comes from
# there and writes its results there. Guest TCP port 8451 is forwarded to 127.0.0.1:PORT.
#
# Usage:
#   scripts/vivid-vm.sh fetch                    download and unpack the kernel package (apt-get download)
#   scripts/vivid-vm.sh check                    exit 0 when the VM can run here (qemu, kernel, busybox), else say why
#   scripts/vivid-vm.sh run --binary GBGBRIDGE --share DIR [--forward PORT] [--timeout S] [--memory MB] [--cpus N]
#                           [--modules "M1 M2"] [--host-root]
#
# --modules loads more of the kernel's modules (with what they depend on), e.g. "bluetooth hci_vhci".
# --host-root shares this machine's / read-only with the guest at /host (9p): a scenario can chroot
# there and run the host's own programs (bluetoothd, dbus-daemon, btvirt, python3, a gbgbridge
# linked against the Swift runtime) on the guest's kernel. --binary is then optional.
#
# The scenario is DIR/scenario.sh, run by the guest's init as root; its exit status lands in
# DIR/status and the kernel console in DIR/console.log. Env: GBGBRIDGE_VM_CACHE (default
# ~/.cache/gbgbridge-vm) holds the kernel package, its unpacked tree and the built initramfs.
set -euo pipefail

cache=${GBGBRIDGE_VM_CACHE:-${HOME:-/root}/.cache/gbgbridge-vm}

die() { echo "vivid-vm: $*" >&2; exit 1; }

kernel_tree() {
  local vmlinuz
  vmlinuz=$(ls "$cache"/root/boot/vmlinuz-* 2>/dev/null | head -1 || true)
  [ -n "$vmlinuz" ] || return 1
  echo "$vmlinuz"
}

fetch() {
  mkdir -p "$cache"
  if kernel_tree >/dev/null; then return 0; fi
  command -v apt-get >/dev/null || die "apt-get is needed to download the kernel package"
  local package
  package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$package" ] || die "apt-cache knows no linux-image-amd64 (run apt-get update)"
  (cd "$cache" && apt-get download "$package" >/dev/null 2>&1) || die "apt-get download $package failed"
  rm -rf "$cache/root"
  dpkg-deb -x "$cache/${package}"_*.deb "$cache/root" || die "cannot unpack $package"
  kernel_tree >/dev/null || die "$package holds no /boot/vmlinuz"
}

check() {
  command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 is not installed (apt install qemu-system-x86)"; return 1; }
  [ -x /bin/busybox ] && /bin/busybox --list | grep -x insmod >/dev/null || { echo "busybox-static is not installed (apt install busybox-static)"; return 1; }
  command -v v4l2-ctl >/dev/null || { echo "v4l2-ctl is not installed (apt install v4l-utils)"; return 1; }
  kernel_tree >/dev/null || { echo "no kernel package in $cache (scripts/vivid-vm.sh fetch)"; return 1; }
  # A machine where qemu cannot start at all (no /dev/shm, seccomp…) says so here.
  qemu-system-x86_64 -machine none -nographic -no-reboot -S -monitor none -serial none -display none \
    -daemonize -pidfile "$cache/probe.pid" >/dev/null 2>&1 || { echo "qemu-system-x86_64 cannot start here"; return 1; }
  # KILL: a test runner may have left SIGTERM ignored, and that is inherited; a probe left behind holds its pipes.
  kill -KILL "$(cat "$cache/probe.pid")" 2>/dev/null || true
  return 0
}

# Copies an executable and every shared library ldd names into the initramfs tree.
copy_program() {
  local source=$1 target=$2 root=$3
  install -D -m 0755 "$source" "$root$target"
  local lib
  for lib in $(ldd "$source" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
    [ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
}

build_initramfs() {
  local binary=$1 out=$2 extra=$3
  local vmlinuz release modules root
  vmlinuz=$(kernel_tree) || die "no kernel: run scripts/vivid-vm.sh fetch"
  release=${vmlinuz##*/vmlinuz-}
  modules="$cache/root/lib/modules/$release"
  root=$(mktemp -d)
  chmod 0755 "$root"
  mkdir -p "$root"/{bin,dev,proc,sys,tmp,share,lib/modules,etc,root}
  install -m 0755 /bin/busybox "$root/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
  echo "kiosk:x:1000:1000:kiosk:/tmp:/bin/sh" >> "$root/etc/passwd"
  printf 'root:x:0:\nvideo:x:44:\nkiosk:x:1000:\n' > "$root/etc/group"
  # vivid and the virtio network and 9p modules, each after what it depends on (modinfo's
  # depends=, read from the module files: no depmod or kmod needed on the host).
  python3 - "$modules" "$root/lib/modules" "$extra" <<'PY'
import os, re, shutil, sys
tree, target, extra = sys.argv[1], sys.argv[2], sys.argv[3].split()
index = {}
for directory, _, files in os.walk(os.path.join(tree, "kernel")):
    for name in files:
        if name.endswith(".ko"):
            index[name[:-3].replace("-", "_")] = os.path.join(directory, name)
def depends(name):
    data = open(index[name], "rb").read()
    match = re.search(rb"\x00depends=([^\x00]*)\x00", data) or re.search(rb"^depends=([^\x00]*)\x00", data)
    return [d.decode().replace("-", "_") for d in match.group(1).split(b",") if d] if match else []
order, seen = [], set()
def visit(name):
    if name in seen: return
    seen.add(name)
    if name not in index: sys.exit(f"module {name} is not in the kernel package")
    for dependency in depends(name): visit(dependency)
    order.append(name)
for wanted in ["vivid", "virtio_pci", "virtio_net", "9pnet_virtio", "9p"] + extra:
    visit(wanted)
with open(os.path.join(target, "order"), "w") as listing:
    for name in order:
        shutil.copy(index[name], target)
        listing.write(os.path.basename(index[name]) + "\n")
PY
  [ -n "$binary" ] && copy_program "$binary" /bin/gbgbridge "$root"
  copy_program "$(command -v v4l2-ctl)" /bin/v4l2-ctl "$root"
  cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
for module in $(cat /lib/modules/order); do insmod "/lib/modules/$module" || echo "vivid-vm: insmod $module failed"; done
ip link set lo up
if ip link set eth0 up 2>/dev/null; then ip addr add 10.0.2.15/24 dev eth0; ip route add default via 10.0.2.2; fi
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /share || echo "vivid-vm: cannot mount the share"
if grep -q hostroot /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag 2>/dev/null; then
  mkdir -p /host && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot /host || echo "vivid-vm: cannot mount the host's root"
fi
echo "VM-READY $(cut -d' ' -f1 /proc/uptime)"
status=127
if [ -f /share/scenario.sh ]; then
  cd /share && sh /share/scenario.sh > /share/scenario.log 2>&1
  status=$?
fi
echo "$status" > /share/status
sync
echo "VM-DONE $status $(cut -d' ' -f1 /proc/uptime)"
poweroff -f
INIT
  chmod 0755 "$root/init"
  (cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) > "$out"
  rm -rf "$root"
}

run() {
  local binary="" share="" forward="" timeout=240 memory=1024 cpus=2 modules="" hostroot=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --binary) binary=$2; shift 2 ;;
      --share) share=$2; shift 2 ;;
      --forward) forward=$2; shift 2 ;;
      --timeout) timeout=$2; shift 2 ;;
      --memory) memory=$2; shift 2 ;;
      --cpus) cpus=$2; shift 2 ;;
      --modules) modules=$2; shift 2 ;;
      --host-root) hostroot=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  if [ "$hostroot" = 0 ] || [ -n "$binary" ]; then
    [ -x "$binary" ] || die "--binary must name the gbgbridge executable to run in the guest"
  fi
  [ -d "$share" ] || die "--share must name a directory"
  if [ -n "$binary" ] && ldd "$binary" | grep -q 'libswiftCore'; then
    die "$binary links the Swift runtime dynamically; build it with --static-swift-stdlib"
  fi
  local why
  why=$(check) || die "$why"
  share=$(cd "$share" && pwd)
  rm -f "$share/status"
  local initramfs="$cache/initramfs-$$.cpio"
  build_initramfs "$binary" "$initramfs" "$modules"
  local host=()
  [ "$hostroot" = 1 ] && host=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap,id=hostroot")
  local net=(-netdev user,id=net0 -device virtio-net-pci,netdev=net0)
  [ -n "$forward" ] && net=(-netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$forward-:8451" -device virtio-net-pci,netdev=net0)
  local accel=tcg
  [ -w /dev/kvm ] && grep -qE 'vmx|svm' /proc/cpuinfo && accel=kvm
  set +e
  # A guest whose kernel never reaches init (under qemu's emulation, once in a few hundred boots:
  # the console stays at the firmware's lines) is booted again, once, after boot_limit seconds —
  # not left to the whole run's timeout. A guest that started is never booted again.
  local boot_limit=180 attempt qemu
  for attempt in 1 2; do
    timeout --kill-after=10 "$timeout" qemu-system-x86_64 -accel "$accel" -m "$memory" -smp "$cpus" -nographic -no-reboot \
      -kernel "$(kernel_tree)" -initrd "$initramfs" -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
      "${net[@]}" -virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" "${host[@]}" > "$share/console.log" 2>&1 &
    local vm=$! waited=0 started=0
    while kill -0 "$vm" 2>/dev/null; do
      if grep -q VM-READY "$share/console.log" 2>/dev/null; then started=1; break; fi
      [ "$waited" -ge "$boot_limit" ] && break
      sleep 1
      waited=$((waited + 1))
    done
    if [ "$started" = 0 ] && kill -0 "$vm" 2>/dev/null; then
      kill "$vm" 2>/dev/null
      wait "$vm" 2>/dev/null
      if [ "$attempt" = 1 ]; then
        echo "vivid-vm: the guest did not start within ${boot_limit} s (last console lines: $(tail -2 "$share/console.log" | tr '\n' ' ')); booting it again" >&2
        continue
      fi
      qemu=124
      break
    fi
    wait "$vm"
    qemu=$?
    break
  done
  set -e
  rm -f "$initramfs"
  [ -f "$share/status" ] || die "the guest did not finish (qemu exit $qemu; last console lines: $(tail -5 "$share/console.log" | tr '\n' ' '))"
  return "$(cat "$share/status")"
}

case "${1:-}" in
  fetch) fetch ;;
  check) check ;;
  run) shift; run "$@" ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
