#!/usr/bin/python3
"""A holder in mdoc peripheral server mode on the real bluetoothd (dbus-python, libdbus), written
from ISO 18013-5 §8.3.3.1.1 and BlueZ's own D-Bus API (doc/org.bluez.GattManager.rst,
GattService.rst, GattCharacteristic.rst, LEAdvertisingManager.rst): a GATT application with the
engagement's service — State (notify, write without response), Client2Server (write without
response), Server2Client (notify), Ident (read) — registered with an adapter's GattManager1, and
an LE advertisement of that service registered with its LEAdvertisingManager1. Messages arrive
in pieces led by 0x01 (more) or 0x00 (last); answers leave as notifications of at most the
link's ATT MTU − 3 bytes (the "mtu" BlueZ gives each WriteValue) and never more than an attribute
value's 512, led the same way.

With an l2cap MODE the service also has the L2CAP characteristic (…0A, read: the PSM, 4 bytes
big-endian, as the Android holders publish it) of an LE credit-based channel the kernel listens on
(socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP) bound with an LE address type through ctypes:
CPython's own L2CAP addresses have no address type); a reader that connects sends each message led
by its length (4 bytes, big-endian), in SDUs of its MTU, and is answered the same way.

Imported by mdoc_holder.py (the wallet-like holder: NFC engagement in vpcd, the session here):
serve(bus, adapter, service, ident, respond, mode) registers everything; the caller runs GLib's loop.
MODE: good | wrong-ident | endless | never-ends | disconnect | l2cap | l2cap-huge (over L2CAP the answer
announces 2 GiB) | l2cap-dead (the characteristic names a PSM nothing listens on: the reader must fall
back to GATT)
Writes what the reader did to stderr."""
import ctypes
import socket
import struct
import sys
import threading

import dbus
import dbus.exceptions
import dbus.service
from gi.repository import GLib

BASE = "-a123-48ce-896b-4c76973373e6"
STATE, C2S, S2C, IDENT_UUID = ("0000000%d" % n + BASE for n in (1, 2, 3, 8))
L2CAP_UUID = "0000000a" + BASE
SOL_BLUETOOTH, BT_SNDMTU = 274, 12
ROOT = "/org/gbgbridge/holder"
PROPS = "org.freedesktop.DBus.Properties"
CHAR = "org.bluez.GattCharacteristic1"

state = {"buffer": b"", "mtu": 23, "notifying": set(), "states": [], "device": None}


def log(text):
    print("bluez holder: " + text, file=sys.stderr, flush=True)


class Application(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, ROOT)
        self.children = []

    @dbus.service.method("org.freedesktop.DBus.ObjectManager", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return {child.path: child.properties() for child in self.children}


class Service(dbus.service.Object):
    def __init__(self, bus, uuid):
        self.path = dbus.ObjectPath(ROOT + "/service0")
        super().__init__(bus, self.path)
        self.uuid = uuid

    def properties(self):
        return {"org.bluez.GattService1": {"UUID": self.uuid, "Primary": dbus.Boolean(True)}}


class Characteristic(dbus.service.Object):
    def __init__(self, bus, index, uuid, flags, holder):
        self.path = dbus.ObjectPath(ROOT + "/service0/char%d" % index)
        super().__init__(bus, self.path)
        self.uuid, self.flags, self.holder = uuid, flags, holder

    def properties(self):
        return {CHAR: {"UUID": self.uuid, "Service": dbus.ObjectPath(ROOT + "/service0"),
                       "Flags": dbus.Array(self.flags, signature="s")}}

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        return self.properties()[CHAR][name]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties()[CHAR] if interface == CHAR else {}

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def notify(self, value):
        self.PropertiesChanged(CHAR, {"Value": dbus.Array(value, signature="y")}, [])

    @dbus.service.method(CHAR, in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        if self.uuid == L2CAP_UUID:
            log("L2CAP PSM read (%d)" % self.holder["psm"])
            return dbus.Array(struct.pack(">I", self.holder["psm"]), signature="y")
        if self.uuid != IDENT_UUID:
            raise dbus.exceptions.DBusException("not readable", name="org.bluez.Error.NotPermitted")
        value = self.holder["ident"]() if self.holder["mode"] != "wrong-ident" else bytes(16)
        log("Ident read")
        return dbus.Array(value, signature="y")

    @dbus.service.method(CHAR, in_signature="aya{sv}")
    def WriteValue(self, value, options):
        value = bytes(value)
        if "mtu" in options:
            state["mtu"] = int(options["mtu"])
        if self.uuid == STATE:
            state["states"].append(value.hex())
            log("State %s (mtu %d)" % (value.hex(), state["mtu"]))
            return
        if self.uuid != C2S:
            raise dbus.exceptions.DBusException("not writable", name="org.bluez.Error.NotPermitted")
        if not value or value[0] not in (0, 1):
            log("a piece led by %r" % value[:1])
            return
        state["buffer"] += value[1:]
        if value[0] == 0:
            message, state["buffer"] = state["buffer"], b""
            log("message of %d bytes" % len(message))
            GLib.idle_add(self.holder["answer"], message)

    @dbus.service.method(CHAR)
    def StartNotify(self):
        state["notifying"].add(self.uuid)
        log("notifications on for %s" % self.uuid[:8])

    @dbus.service.method(CHAR)
    def StopNotify(self):
        state["notifying"].discard(self.uuid)
        log("notifications off for %s" % self.uuid[:8])


class Advertisement(dbus.service.Object):
    def __init__(self, bus, uuid):
        self.path = dbus.ObjectPath(ROOT + "/advertisement0")
        super().__init__(bus, self.path)
        self.uuid = uuid

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"Type": "peripheral", "ServiceUUIDs": dbus.Array([self.uuid], signature="s")}

    @dbus.service.method("org.bluez.LEAdvertisement1")
    def Release(self):
        log("advertisement released")


def l2cap_listener():
    """A listening LE L2CAP socket on a PSM the kernel picks: (socket, psm)."""
    libc = ctypes.CDLL(None, use_errno=True)
    sock = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_SEQPACKET, socket.BTPROTO_L2CAP)
    # struct sockaddr_l2: family, psm (le16), bdaddr (BDADDR_ANY), cid, bdaddr_type (1: LE public), padding.
    address = struct.pack("<HH6sHBx", socket.AF_BLUETOOTH, 0, bytes(6), 0, 1)
    if libc.bind(sock.fileno(), ctypes.c_char_p(address), len(address)) != 0:
        raise OSError(ctypes.get_errno(), "bind")
    sock.listen(1)
    bound = ctypes.create_string_buffer(16)
    length = ctypes.c_uint(16)
    if libc.getsockname(sock.fileno(), bound, ctypes.byref(length)) != 0:
        raise OSError(ctypes.get_errno(), "getsockname")
    return sock, struct.unpack_from("<H", bound.raw, 2)[0]


def serve_l2cap(listener, respond, mode):
    """Accepts the reader's channel and answers its length-led messages until it closes."""
    conn, _ = listener.accept()
    mtu = struct.unpack("<H", conn.getsockopt(SOL_BLUETOOTH, BT_SNDMTU, 2))[0] or 23
    log("L2CAP channel opened (send MTU %d)" % mtu)
    buffer = b""
    while True:
        sdu = conn.recv(65535)
        if not sdu:
            log("L2CAP channel closed by the reader")
            return
        buffer += sdu
        while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
            length = int.from_bytes(buffer[:4], "big")
            message, buffer = buffer[4:4 + length], buffer[4 + length:]
            log("L2CAP message of %d bytes" % len(message))
            reply = respond(message)
            if not reply:
                continue
            framed = (0x7FFFFFFF).to_bytes(4, "big") + reply if mode == "l2cap-huge" else len(reply).to_bytes(4, "big") + reply
            for offset in range(0, len(framed), mtu):
                conn.send(framed[offset:offset + mtu])
            log("L2CAP answered %d bytes" % len(reply))


def serve(bus, adapter, service, ident, respond, mode="good"):
    """Registers the holder's GATT application and advertisement on `adapter` (/org/bluez/hci0)."""
    holder = {"ident": ident, "mode": mode, "psm": 0}
    application = Application(bus)
    service_object = Service(bus, service.lower())
    chars = [Characteristic(bus, 0, STATE, ["notify", "write-without-response"], holder),
             Characteristic(bus, 1, C2S, ["write-without-response"], holder),
             Characteristic(bus, 2, S2C, ["notify"], holder),
             Characteristic(bus, 3, IDENT_UUID, ["read"], holder)]
    if mode.startswith("l2cap"):
        listener, holder["psm"] = l2cap_listener()
        if mode == "l2cap-dead":
            listener.close()  # the PSM published, nothing listening on it
            log("L2CAP PSM %d offered, nothing listening" % holder["psm"])
        else:
            log("L2CAP listening on PSM %d" % holder["psm"])
            threading.Thread(target=serve_l2cap, args=(listener, respond, mode), daemon=True).start()
        chars.append(Characteristic(bus, 4, L2CAP_UUID, ["read"], holder))
    application.children = [service_object] + chars
    server2client = chars[2]

    def send(message):
        size = max(min(state["mtu"] - 3, 512) - 1, 1)  # an attribute value is at most 512 bytes (Core Vol 3 Part F 3.2.9)
        pieces = [message[i:i + size] for i in range(0, len(message), size)] or [b""]
        for index, chunk in enumerate(pieces):
            server2client.notify((b"\x00" if index == len(pieces) - 1 else b"\x01") + chunk)
            if mode == "never-ends" and index == 1:
                log("stopped mid-message")
                return
            if mode == "disconnect":
                log("dropping the link mid-message")
                for path, interfaces in bus.get_object("org.bluez", "/").GetManagedObjects(
                        dbus_interface="org.freedesktop.DBus.ObjectManager").items():
                    device = interfaces.get("org.bluez.Device1")
                    if device and device.get("Connected") and str(device.get("Adapter")) == adapter:
                        bus.get_object("org.bluez", path).Disconnect(dbus_interface="org.bluez.Device1")
                return

    def flood():
        server2client.notify(b"\x01" + b"\xAA" * max(min(state["mtu"] - 3, 512) - 1, 1))
        return True

    def answer(message):
        if mode == "endless":
            log("flooding")
            GLib.timeout_add(5, flood)
            return False
        reply = respond(message)
        if reply:
            send(reply)
        return False
    holder["answer"] = answer

    adapter_object = bus.get_object("org.bluez", adapter)
    done = {"gatt": False, "advertisement": False}

    def registered(what):
        def ok():
            done[what] = True
            log("%s registered on %s" % (what, adapter))
            if all(done.values()):
                print("ble-ready", flush=True)
        return ok

    def failed(what):
        def error(exception):
            log("registering the %s failed: %s" % (what, exception))
            sys.exit(3)
        return error
    adapter_object.RegisterApplication(dbus.ObjectPath(ROOT), {}, dbus_interface="org.bluez.GattManager1",
                                       reply_handler=registered("gatt"), error_handler=failed("gatt"))
    advertisement = Advertisement(bus, service.lower())
    adapter_object.RegisterAdvertisement(advertisement.path, {}, dbus_interface="org.bluez.LEAdvertisingManager1",
                                         reply_handler=registered("advertisement"), error_handler=failed("advertisement"))
    return [application, service_object, advertisement] + chars
