#!/usr/bin/python3
"""A holder in mdoc central client mode on the real bluetoothd (dbus-python, libdbus), written
from ISO 18013-5 §8.3.3.1.1 and BlueZ's D-Bus API (doc/org.bluez.Adapter.rst, Device.rst,
GattCharacteristic.rst): the reader advertises the engagement's service and is the GATT server
(State 00000005, Client2Server 00000006, Server2Client 00000007, Ident 00000008
-a123-48ce-896b-4c76973373e6); the holder scans for it, connects, checks the reader's Ident
against HKDF(EDeviceKeyBytes, "BLEIdent"), subscribes to State and Server2Client, writes State
0x01, assembles the reader's message from notifications (pieces led by 0x01 more / 0x00 last),
answers with writes without response to Client2Server of at most min(MTU − 3, 510) bytes, and
disconnects when the reader notifies State 0x02.

Imported by mdoc_holder.py: serve(bus, adapter, service, ident, respond, mode) starts it on the
caller's GLib loop. MODE: good | never-start (connects and subscribes, never writes State 0x01)
Writes what it did to stderr."""
import sys

import dbus
from gi.repository import GLib

BASE = "-a123-48ce-896b-4c76973373e6"
STATE, C2S, S2C, IDENT_UUID = ("0000000%d" % n + BASE for n in (5, 6, 7, 8))
PROPS = "org.freedesktop.DBus.Properties"
CHAR = "org.bluez.GattCharacteristic1"


def log(text):
    print("bluez central holder: " + text, file=sys.stderr, flush=True)


def serve(bus, adapter, service, ident, respond, mode="good"):
    service = service.lower()
    s = {"phase": "scan", "device": None, "chars": {}, "buffer": b"", "mtu": 23, "receivers": []}
    root = bus.get_object("org.bluez", "/")

    def objects():
        return root.GetManagedObjects(dbus_interface="org.freedesktop.DBus.ObjectManager")

    def write(path, value):
        bus.get_object("org.bluez", path).WriteValue(dbus.Array(value, signature="y"), {"type": "command"}, dbus_interface=CHAR)

    def send(message):
        # At most 510 bytes a write: BlueZ 5.66 as GATT server (the kiosk's) passes no longer write
        # command to its application (Docs/mdoc.md, "What the real stack taught").
        size = max(min(s["mtu"] - 3, 510) - 1, 1)
        pieces = [message[i:i + size] for i in range(0, len(message), size)] or [b""]
        for index, chunk in enumerate(pieces):
            write(s["chars"][C2S], (b"\x00" if index == len(pieces) - 1 else b"\x01") + chunk)
        log("answered %d bytes in %d pieces (mtu %d)" % (len(message), len(pieces), s["mtu"]))

    def on_server2client(interface, changed, invalidated):
        if "Value" not in changed:
            return
        piece = bytes(changed["Value"])
        if not piece or piece[0] not in (0, 1):
            log("a piece led by %r" % piece[:1])
            return
        s["buffer"] += piece[1:]
        if piece[0] == 0:
            message, s["buffer"] = s["buffer"], b""
            log("message of %d bytes" % len(message))
            answer = respond(message)
            if answer:
                send(answer)

    def on_state(interface, changed, invalidated):
        if "Value" in changed and bytes(changed["Value"]) == b"\x02":
            log("the reader ended the session (State 0x02)")
            try:
                bus.get_object("org.bluez", s["device"]).Disconnect(dbus_interface="org.bluez.Device1")
            except dbus.DBusException as error:
                log("disconnect: %s" % error)
            s["phase"] = "done"

    def step():
        try:
            return advance()
        except dbus.DBusException as error:
            log("%s: %s" % (s["phase"], error))
            return True

    def advance():
        if s["phase"] == "scan":
            if not s.get("scanning"):
                adapter_object = bus.get_object("org.bluez", adapter)
                adapter_object.SetDiscoveryFilter({"UUIDs": dbus.Array([service], signature="s"), "Transport": "le"},
                                                  dbus_interface="org.bluez.Adapter1")
                adapter_object.StartDiscovery(dbus_interface="org.bluez.Adapter1")
                s["scanning"] = True
                log("scanning on %s for %s" % (adapter, service))
            for path, interfaces in objects().items():
                device = interfaces.get("org.bluez.Device1")
                # RSSI: seen advertising in this scan (BlueZ also keeps devices it saw before, stale).
                if (device and str(device.get("Adapter")) == adapter and "RSSI" in device
                        and service in [str(u).lower() for u in device.get("UUIDs", [])]):
                    s["device"] = str(path)
                    bus.get_object("org.bluez", adapter).StopDiscovery(dbus_interface="org.bluez.Adapter1")
                    log("found the reader at %s; connecting" % device.get("Address"))
                    bus.get_object("org.bluez", path).Connect(dbus_interface="org.bluez.Device1", timeout=15)
                    s["phase"] = "resolve"
                    break
            return True
        if s["phase"] == "resolve":
            device = bus.get_object("org.bluez", s["device"])
            if not device.Get("org.bluez.Device1", "ServicesResolved", dbus_interface=PROPS):
                return True
            everything = objects()
            services = [str(p) for p, i in everything.items()
                        if "org.bluez.GattService1" in i and str(i["org.bluez.GattService1"].get("Device")) == s["device"]
                        and str(i["org.bluez.GattService1"].get("UUID")).lower() == service]
            if not services:
                return True
            for path, interfaces in everything.items():
                char = interfaces.get(CHAR)
                if char and str(char.get("Service")) == services[0]:
                    s["chars"][str(char.get("UUID")).lower()] = str(path)
            missing = [u for u in (STATE, C2S, S2C, IDENT_UUID) if u not in s["chars"]]
            if missing:
                log("the reader's service lacks %s" % missing)
                s["phase"] = "done"
                return False
            seen = bytes(bus.get_object("org.bluez", s["chars"][IDENT_UUID]).ReadValue({}, dbus_interface=CHAR))
            if seen != ident():
                log("the reader's Ident %s is not ours: another reader" % seen.hex())
                device.Disconnect(dbus_interface="org.bluez.Device1")
                s["phase"] = "done"
                return False
            log("the reader's Ident holds")
            try:
                s["mtu"] = int(bus.get_object("org.bluez", s["chars"][C2S]).Get(CHAR, "MTU", dbus_interface=PROPS))
            except dbus.DBusException:
                pass
            for uuid, handler in ((S2C, on_server2client), (STATE, on_state)):
                s["receivers"].append(bus.add_signal_receiver(handler, dbus_interface=PROPS, signal_name="PropertiesChanged",
                                                              path=s["chars"][uuid]))
                bus.get_object("org.bluez", s["chars"][uuid]).StartNotify(dbus_interface=CHAR)
            if mode == "never-start":
                log("subscribed; never writing State 0x01")
                s["phase"] = "done"
                return False
            write(s["chars"][STATE], b"\x01")
            log("State 0x01 written (mtu %d)" % s["mtu"])
            s["phase"] = "session"
            return False
        return False

    GLib.timeout_add(200, step)
    print("ble-ready", flush=True)
    return s
