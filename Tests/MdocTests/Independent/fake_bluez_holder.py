#!/usr/bin/python3
"""A stand-in for bluetoothd with one LE holder in mdoc peripheral server mode on a private D-Bus
(dbus-python, libdbus): the object tree, methods and file descriptors BlueZ's D-Bus API
(doc/org.bluez.Adapter.rst, Device.rst, GattCharacteristic.rst) gives a GATT client, and behind
them a holder written from ISO 18013-5 §8.3.3.1.1: State, Client2Server, Server2Client and
Ident (00000001/2/3/8-a123-48ce-896b-4c76973373e6), pieces led by 0x01 (more) or 0x00 (last).
The holder answers each message with b"ANSWER:" + the message reversed, in pieces of its MTU.
For a host without a Bluetooth stack; the real bluetoothd is exercised in the BLE VM tests.

Usage: fake_bluez_holder.py SERVICE_UUID IDENT_HEX MODE
MODE: good | known | wrong-ident | endless | never-ends | disconnect | bad-lead | oversized | no-state | hidden
      | l2cap-garbage (an L2CAP characteristic of 3 bytes: no PSM) | l2cap-unreachable (a PSM no channel can reach
      here: the stand-in has no radio) — the reader reads both over GATT
Prints "ready" once it owns org.bluez; writes what the reader did to stderr.
Imported (mdoc_holder.py's BLE side): serve(bus, service, ident, respond) with a real holder's
ident() and respond(message) in place of the echo."""
import socket
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

SERVICE, MODE = "", "good"
IDENT = lambda: b""  # noqa: E731
RESPOND = lambda message: b"ANSWER:" + message[::-1]  # noqa: E731
BASE = "-a123-48ce-896b-4c76973373e6"
STATE, C2S, S2C, IDENT_UUID = ("0000000%d" % n + BASE for n in (1, 2, 3, 8))
L2CAP_UUID = "0000000a" + BASE
ADAPTER = "/org/bluez/hci0"
DEVICE = ADAPTER + "/dev_00_11_22_33_44_55"
GATT = DEVICE + "/service0010"
MTU = 185
PROPS = "org.freedesktop.DBus.Properties"

state = {"discovering": False, "seen": MODE == "known", "connected": False, "notify": None, "write": None,
         "buffer": b"", "states": [], "pieces": 0}


def log(text):
    print(text, file=sys.stderr, flush=True)


def objects():
    tree = {dbus.ObjectPath(ADAPTER): {"org.bluez.Adapter1": {"Address": "00:AA:01:00:00:00", "Powered": dbus.Boolean(True),
                                                             "Discovering": dbus.Boolean(state["discovering"])}}}
    if state["seen"] and MODE != "hidden":
        tree[dbus.ObjectPath(DEVICE)] = {"org.bluez.Device1": {
            "Address": "00:11:22:33:44:55", "AddressType": "random", "Adapter": dbus.ObjectPath(ADAPTER),
            "UUIDs": dbus.Array([SERVICE], signature="s"), "Connected": dbus.Boolean(state["connected"]),
            "ServicesResolved": dbus.Boolean(state["connected"])}}
        if state["connected"]:
            tree[dbus.ObjectPath(GATT)] = {"org.bluez.GattService1": {"UUID": SERVICE, "Device": dbus.ObjectPath(DEVICE),
                                                                     "Primary": dbus.Boolean(True)}}
            chars = [(STATE, "0011", ["write-without-response"]), (C2S, "0013", ["write-without-response"]),
                     (S2C, "0015", ["notify"]), (IDENT_UUID, "0017", ["read"])]
            if MODE.startswith("l2cap"):
                chars.append((L2CAP_UUID, "0019", ["read"]))
            for uuid, handle, flags in chars:
                if MODE == "no-state" and uuid == STATE:
                    continue
                tree[dbus.ObjectPath(GATT + "/char" + handle)] = {"org.bluez.GattCharacteristic1": {
                    "UUID": uuid, "Service": dbus.ObjectPath(GATT), "Flags": dbus.Array(flags, signature="s")}}
    return tree


def send_pieces(message):
    sock = state["notify"]
    size = MTU - 3 - 1
    pieces = [message[i:i + size] for i in range(0, len(message), size)] or [b""]
    for index, chunk in enumerate(pieces):
        lead = b"\x00" if index == len(pieces) - 1 else b"\x01"
        if MODE == "bad-lead":
            lead = b"\x07"
        sock.send(lead + chunk)
        if MODE == "disconnect":
            sock.close()
            return
        if MODE == "never-ends" and index == 1:
            return


def flood():
    # A holder that notifies forever: bounded by the reader, which closes its end.
    try:
        state["notify"].send(b"\x01" + b"\xAA" * (MTU - 4))
        return True
    except OSError:
        log("flood stopped")
        return False


def on_write(source, condition):
    sock = state["write"]
    try:
        piece = sock.recv(4096)
    except OSError:
        return False
    if not piece:
        return False
    state["pieces"] += 1
    state["buffer"] += piece[1:]
    if piece[0] == 0x00:
        message, state["buffer"] = state["buffer"], b""
        log("message %d bytes in %d pieces" % (len(message), state["pieces"]))
        state["pieces"] = 0
        if MODE == "endless":
            GLib.idle_add(flood)
        elif MODE == "oversized":
            state["notify"].send(b"\x00" + b"\xBB" * 700)
        else:
            answer = RESPOND(message)
            if answer:
                send_pieces(answer)
    return True


class Root(dbus.service.Object):
    @dbus.service.method("org.freedesktop.DBus.ObjectManager", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return objects()


class Adapter(dbus.service.Object):
    @dbus.service.method("org.bluez.Adapter1", in_signature="a{sv}")
    def SetDiscoveryFilter(self, options):
        log("filter %s %s" % ([str(u) for u in options.get("UUIDs", [])], str(options.get("Transport"))))

    @dbus.service.method("org.bluez.Adapter1")
    def StartDiscovery(self):
        state["discovering"] = True
        log("scan started")
        GLib.timeout_add(300, lambda: state.update(seen=True) or False)

    @dbus.service.method("org.bluez.Adapter1")
    def StopDiscovery(self):
        state["discovering"] = False
        log("scan stopped")


class Device(dbus.service.Object):
    @dbus.service.method("org.bluez.Device1")
    def Connect(self):
        state["connected"] = True
        log("connected")

    @dbus.service.method("org.bluez.Device1")
    def Disconnect(self):
        state["connected"] = False
        log("disconnected; states %s" % state["states"])

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if name in ("ServicesResolved", "Connected"):
            return dbus.Boolean(state["connected"])
        if name in ("Address", "AddressType"):
            return dbus.String({"Address": "00:11:22:33:44:55", "AddressType": "random"}[name])
        raise dbus.exceptions.DBusException("no " + name, name="org.freedesktop.DBus.Error.InvalidArgs")


class Characteristic(dbus.service.Object):
    def __init__(self, bus, path, uuid):
        super().__init__(bus, path)
        self.uuid = uuid

    @dbus.service.method("org.bluez.GattCharacteristic1", in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        if self.uuid == L2CAP_UUID:
            log("L2CAP read")
            return dbus.Array(b"\x00\x80\x00" if MODE == "l2cap-garbage" else b"\x00\x00\x00\x80", signature="y")
        if self.uuid != IDENT_UUID:
            raise dbus.exceptions.DBusException("Not permitted", name="org.bluez.Error.NotPermitted")
        value = IDENT() if MODE != "wrong-ident" else bytes(16)
        return dbus.Array(value, signature="y")

    @dbus.service.method("org.bluez.GattCharacteristic1", in_signature="aya{sv}")
    def WriteValue(self, value, options):
        if self.uuid == STATE:
            state["states"].append(bytes(value).hex())
            log("state %s (%s)" % (bytes(value).hex(), str(options.get("type"))))
        else:
            raise dbus.exceptions.DBusException("Not permitted", name="org.bluez.Error.NotPermitted")

    @dbus.service.method("org.bluez.GattCharacteristic1", in_signature="a{sv}", out_signature="hq")
    def AcquireNotify(self, options):
        if self.uuid != S2C:
            raise dbus.exceptions.DBusException("Not supported", name="org.bluez.Error.NotSupported")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        state["notify"] = ours
        mtu = 65535 if MODE == "oversized" else MTU
        return dbus.types.UnixFd(theirs.fileno()), dbus.UInt16(mtu)

    @dbus.service.method("org.bluez.GattCharacteristic1", in_signature="a{sv}", out_signature="hq")
    def AcquireWrite(self, options):
        if self.uuid != C2S:
            raise dbus.exceptions.DBusException("Not supported", name="org.bluez.Error.NotSupported")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        state["write"] = ours
        GLib.io_add_watch(ours.fileno(), GLib.IO_IN | GLib.IO_HUP, on_write)
        return dbus.types.UnixFd(theirs.fileno()), dbus.UInt16(MTU)


def serve(bus, service, ident, respond, mode="good"):
    """Owns org.bluez on `bus` and serves the holder's GATT side; the caller runs the GLib loop."""
    global SERVICE, IDENT, RESPOND, MODE
    SERVICE, IDENT, RESPOND, MODE = service.lower(), ident, respond, mode
    state["seen"] = mode == "known"
    name = dbus.service.BusName("org.bluez", bus)
    keep = [name, Root(bus, "/"), Adapter(bus, ADAPTER), Device(bus, DEVICE)]
    for uuid, handle in ((STATE, "0011"), (C2S, "0013"), (S2C, "0015"), (IDENT_UUID, "0017"), (L2CAP_UUID, "0019")):
        keep.append(Characteristic(bus, GATT + "/char" + handle, uuid))
    return keep


if __name__ == "__main__":
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    fixed_ident = bytes.fromhex(sys.argv[2])
    objects_kept = serve(dbus.SessionBus(), sys.argv[1], lambda: fixed_ident, RESPOND, sys.argv[3])
    print("ready", flush=True)
    GLib.MainLoop().run()
