#!/usr/bin/python3
"""A stand-in for bluetoothd's object tree on a private D-Bus (dbus-python, libdbus): what
`gbgbridge doctor` reads of BlueZ (ObjectManager.GetManagedObjects, org.bluez.Adapter1), for a
host without a Bluetooth stack. The real bluetoothd is exercised in the BLE VM tests.

Usage: fake_bluez.py MODE   (powered | off | none | denied | many)
Prints "ready" once it owns org.bluez."""
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

MODE = sys.argv[1]


class Root(dbus.service.Object):
    @dbus.service.method("org.freedesktop.DBus.ObjectManager", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        if MODE == "denied":
            raise dbus.exceptions.DBusException("not for you", name="org.freedesktop.DBus.Error.AccessDenied")
        objects = {dbus.ObjectPath("/org/bluez"): {"org.bluez.AgentManager1": {}, "org.bluez.ProfileManager1": {}}}
        adapters = {"powered": [("hci0", False), ("hci1", True)], "off": [("hci0", False)], "none": [], "many": []}[MODE]
        for name, powered in adapters:
            objects[dbus.ObjectPath("/org/bluez/" + name)] = {
                "org.freedesktop.DBus.Introspectable": {},
                "org.bluez.Adapter1": {
                    "Address": dbus.String("00:AA:01:00:00:0" + name[-1]),
                    "AddressType": dbus.String("public"),
                    "Alias": dbus.String("kiosk-" + name),
                    "Powered": dbus.Boolean(powered),
                    "UUIDs": dbus.Array(["0000110e-0000-1000-8000-00805f9b34fb"], signature="s"),
                    "Class": dbus.UInt32(0x7C0104),
                },
            }
        if MODE == "many":
            # A bus peer that answers with more objects than anyone has: bounded by the reader.
            for index in range(5000):
                objects[dbus.ObjectPath("/org/bluez/hci0/dev_%04d" % index)] = {"org.bluez.Device1": {"RSSI": dbus.Int16(-40)}}
        return objects


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName("org.bluez", bus)
Root(bus, "/")
print("ready", flush=True)
GLib.MainLoop().run()
