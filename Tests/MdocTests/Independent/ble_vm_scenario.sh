#!/bin/sh
# Runs inside the BLE VM (scripts/vivid-vm.sh --host-root), chrooted into the host's root on the
# guest's kernel: a system D-Bus, btvirt's two virtual LE controllers on one simulated radio, the
# real bluetoothd, pcscd with vpcd, and for each case an independent holder (mdoc_holder.py: NFC
# engagement through vpcd, the session as a BlueZ GATT peripheral on hci0) read by
# `gbgbridge mdoc read --transport auto` (which looks on every powered adapter).
# Usage: ble_vm_scenario.sh GBGBRIDGE OUT_DIR CASE... where CASE is CONFIG:MODE:HANDOVER
#   CONFIG  one (main.conf [GATT] Channels = 1) | default (BlueZ's own: Enhanced ATT, 3 channels)
#   MODE    good | wrong-ident | endless | never-ends | disconnect | l2cap | l2cap-huge | l2cap-dead
#           (bluez_peripheral_holder.py: mdoc peripheral server mode; l2cap* also offer an L2CAP channel),
#           or central-good | central-never-start (bluez_central_holder.py: mdoc central client mode),
#           or emulated | emulated-l2cap (the project's own test wallet: gbgbridge emulate --mdoc-profile utopia-mdl
#           --transport ble [--l2cap])
#   HANDOVER static | negotiated (NFC engagement through vpcd) | qr (the holder shows a QR code: its text drawn by
#           qrencode, read by `mdoc read --qr-from-image`; no vpcd) | qr-camera (the same code looped through vivid's
#           HDMI input, read by `mdoc read --qr-from-camera --camera /dev/video0`)
# Each case leaves OUT_DIR/CASE.json (stdout), .err (stderr), .status, .seconds and .holder (its log);
# OUT_DIR/bluetoothd-alive-CASE says whether bluetoothd still ran after it.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
binary=$1 out=$2
shift 2
here=$(dirname "$0")
service=7d2fe1a4-3c55-4c4e-9d2b-6f1e0a8b5c31
mkdir -p /run/dbus /run/pcscd "$out"
dbus-daemon --system --fork || exit 10
btvirt -L -l2 > "$out/btvirt.log" 2>&1 &
i=0
while [ ! -e /sys/class/bluetooth/hci1 ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
[ -e /sys/class/bluetooth/hci1 ] || { echo "btvirt made no two controllers"; exit 11; }
pcscd -f > "$out/pcscd.log" 2>&1 &
printf '[GATT]\nChannels = 1\n' > /tmp/main-one.conf
printf '# BlueZ defaults\n' > /tmp/main-default.conf
config=""
bluetoothd=""

start_bluetoothd() {
  [ -n "$bluetoothd" ] && kill "$bluetoothd" 2>/dev/null && wait "$bluetoothd" 2>/dev/null
  /usr/libexec/bluetooth/bluetoothd -n -f "/tmp/main-$1.conf" >> "$out/bluetoothd.log" 2>&1 &
  bluetoothd=$!
  config=$1
  sleep 2
  btmgmt --index 0 power on > /dev/null
  btmgmt --index 1 power on > /dev/null
}

# Ends every link with a proper disconnection. Not a controller reset (power off): btvirt then
# leaves the other controller believing in the link, and it neither advertises nor sees adverts
# again. Not left to the holders either: a link a killed client made stays up in bluetoothd.
disconnect_all() {
  /usr/bin/python3 - <<'PY'
import dbus
bus = dbus.SystemBus()
objects = bus.get_object("org.bluez", "/").GetManagedObjects(dbus_interface="org.freedesktop.DBus.ObjectManager")
for path, interfaces in objects.items():
    device = interfaces.get("org.bluez.Device1")
    if device and device.get("Connected"):
        try:
            bus.get_object("org.bluez", path).Disconnect(dbus_interface="org.bluez.Device1", timeout=10)
        except dbus.DBusException as error:
            print("disconnect %s: %s" % (path, error))
PY
  sleep 1
}

for case in "$@"; do
  wanted=${case%%:*}
  rest=${case#*:}
  mode=${rest%%:*}
  handover=${rest#*:}
  [ "$wanted" = "$config" ] || start_bluetoothd "$wanted"
  name=$(echo "$case" | tr ':' '-')
  rm -f /tmp/iaca.pem /tmp/holder.out /tmp/code.txt /tmp/code.png
  engage=qr:/tmp/code.txt
  case "$handover" in qr*) ;; *) engage=$handover ;; esac
  if [ "${mode%-l2cap}" = emulated ]; then
    cp "$here/../../../Fixtures/mdoc/iaca.cert.pem" /tmp/iaca.pem
    offer=""
    [ "$mode" = emulated-l2cap ] && offer=--l2cap
    if [ "$handover" != static ] && [ "$handover" != negotiated ]; then
      # No vpcd: the code's text in /tmp/code.txt; ready once BlueZ took the service and advertisement.
      "$binary" emulate --mdoc-profile utopia-mdl --handover qr --qr-file /tmp/code.txt --transport ble --bluetooth-adapter hci0 $offer \
        > "$out/$name.holder" 2>&1 &
      ready="BLE: advertising"
    else
      "$binary" emulate --mdoc-profile utopia-mdl --handover "$handover" --transport ble --bluetooth-adapter hci0 --vpcd-port 35963 $offer \
        > "$out/$name.holder" 2>&1 &
      ready="Waiting for vpcd"
    fi
    holder=$!
    watch="$out/$name.holder"
  else
    case "$mode" in
      central-*) where="bluez-central:hci0:${mode#central-}" ;;
      *) where="bluez:hci0:$mode" ;;
    esac
    /usr/bin/python3 "$here/mdoc_holder.py" 35963 /tmp/iaca.pem "$engage" signature ble "$service" "$where" \
      > /tmp/holder.out 2> "$out/$name.holder" &
    holder=$!
    ready=ble-ready
    watch=/tmp/holder.out
  fi
  i=0
  while ! grep -q "$ready" "$watch" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
  started=$(cut -d' ' -f1 /proc/uptime)
  looper=""
  if [ "$handover" = qr ]; then
    # BlueZ took the holder's service and advertisement ("ble-ready"); its code is in /tmp/code.txt.
    qrencode -o /tmp/code.png -s 3 "$(cat /tmp/code.txt)" || echo "qrencode failed" >> "$out/$name.holder"
    set -- --qr-from-image /tmp/code.png
  elif [ "$handover" = qr-camera ]; then
    # The code in front of the camera: vivid's HDMI output (video1) looped into its input 3 (video0).
    qrencode -o /tmp/code.png -s 3 "$(cat /tmp/code.txt)" && /usr/bin/python3 "$here/yuyv_frame.py" /tmp/code.png /tmp/code.yuyv \
      || echo "the camera frame was not made" >> "$out/$name.holder"
    v4l2-ctl -d /dev/video0 -i 3 && v4l2-ctl -d /dev/video1 -o 1 && v4l2-ctl -d /dev/video0 -c osd_text_mode=2 -c loop_video=1
    v4l2-ctl -d /dev/video1 --set-fmt-video-out=width=1280,height=720,pixelformat=YUYV
    v4l2-ctl -d /dev/video1 --stream-out-mmap --stream-from=/tmp/code.yuyv --stream-loop --stream-count=1000000 > /dev/null 2>&1 &
    looper=$!
    sleep 1
    set -- --qr-from-camera --camera /dev/video0
  else
    set -- --reader "Virtual PCD 00 00"
  fi
  GBGBRIDGE_BLUEZ_MAIN_CONF="/tmp/main-$config.conf" "$binary" mdoc read "$@" --timeout 30 --json \
    --trust /tmp/iaca.pem --transport auto > "$out/$name.json" 2> "$out/$name.err"
  echo $? > "$out/$name.status"
  [ -n "$looper" ] && kill "$looper" 2>/dev/null && wait "$looper" 2>/dev/null
  ended=$(cut -d' ' -f1 /proc/uptime)
  echo "$started $ended" | awk '{ print $2 - $1 }' > "$out/$name.seconds"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  if kill -0 "$bluetoothd" 2>/dev/null; then echo yes; else echo no; fi > "$out/bluetoothd-alive-$name"
  disconnect_all >> "$out/disconnects.log" 2>&1
  echo "case $case: status $(cat "$out/$name.status") in $(cat "$out/$name.seconds") s"
done
exit 0
