#!/usr/bin/env python3
"""The chip confirms, measured on real documents' photos (issue 50's acceptance, rehearsed).

For each real specimen document whose printed key's check digits hold (truth.json in
../shared/fixtures/mrz-real-documents, transcribed by eye), a virtual passport carrying that MRZ
is put into pcscd through vpcd (`gbgbridge emulate --passport`), and `gbgbridge read
--mrz-from-image PHOTO --json` is run against it as a user runs it: the photo's key candidates
tried on the chip. Prints per document whether the chip opened, with which candidate after how
many tries, and whether the MRZ shown is the chip's DG1; then the share opened within three tries.
Visas carry no chip and are skipped.

Needs the release binaries (swift build -c release: gbgbridge and gbgbridge-decode, the confined
child that reads the photo — a stale one measures old code), pcscd with Debian's
vsmartcard-vpcd (started here with `pcscd -f` when none runs), and ../shared. Not a test: the
documents are the reader's measurement set, and a run takes a few minutes.

Usage: scripts/mrz-documents-chip.py [--documents DIR] [--gbgbridge PATH] [--only NAME] [--slow-after-wrong-key MS]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
READER = "Virtual PCD 00 00"
VALUES = {**{str(d): d for d in range(10)}, **{chr(ord("A") + i): 10 + i for i in range(26)}, "<": 0}


def check_digit(text):
    return str(sum(VALUES[c] * (7, 3, 1)[i % 3] for i, c in enumerate(text)) % 10)


def key_fields(fmt, lines):
    """(number field with its check digit, birth with check, expiry with check) as ICAO 9303 lays them."""
    if fmt == "TD1":
        l1, l2 = lines[0], lines[1]
        return (l1[5:14], l1[14]), (l2[0:6], l2[6]), (l2[8:14], l2[14])
    l2 = lines[1]
    return (l2[0:9], l2[9]), (l2[13:19], l2[19]), (l2[21:27], l2[27])


def key_holds(fmt, lines):
    try:
        fields = key_fields(fmt, lines)
        if fmt == "TD1" and lines[0][14] == "<":
            return False  # a long number's continuation: not in this set
        return all(check_digit(text) == check for text, check in fields)
    except (IndexError, KeyError):
        return False


def pcscd_running():
    return subprocess.run(["pidof", "pcscd"], capture_output=True).returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", default=os.path.join(ROOT, "..", "shared", "fixtures", "mrz-real-documents"))
    parser.add_argument("--gbgbridge", default=os.path.join(ROOT, ".build", "release", "gbgbridge"))
    parser.add_argument("--only", help="one document's file name")
    parser.add_argument("--slow-after-wrong-key", type=int, default=0,
                        help="the chip answers this many ms later after each refused key (a real field behaviour)")
    args = parser.parse_args()
    truth_file = os.path.join(args.documents, "truth.json")
    if not os.path.exists(truth_file):
        print(f"no {truth_file}: ../shared is not here", file=sys.stderr)
        return 2
    if not os.access(args.gbgbridge, os.X_OK):
        print(f"no gbgbridge at {args.gbgbridge} (swift build -c release)", file=sys.stderr)
        return 2
    entries = json.load(open(truth_file))
    started_pcscd = None
    if not pcscd_running():
        started_pcscd = subprocess.Popen(["pcscd", "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
    face = os.path.join(ROOT, "Fixtures", "faces", "face-jpeg.jpg")
    opened = eligible = first = dg1_shown = 0
    try:
        for entry in entries:
            fmt, lines, name = entry.get("format", ""), entry.get("lines", []), entry["file"]
            if args.only and name != args.only:
                continue
            if fmt not in ("TD1", "TD2", "TD3") or entry.get("legible") is False or not key_holds(fmt, lines):
                continue
            eligible += 1
            with tempfile.TemporaryDirectory() as work:
                description = {"description": f"a chip carrying the MRZ of {name}", "mrz": lines, "faceImage": face}
                if args.slow_after_wrong_key:
                    description["quirks"] = {"slowAfterWrongKey": args.slow_after_wrong_key}
                passport = os.path.join(work, "passport.json")
                json.dump(description, open(passport, "w"))
                emulator = subprocess.Popen([args.gbgbridge, "emulate", "--passport", passport, "--vpcd-port", "35963"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                time.sleep(1.5)
                try:
                    read = subprocess.run([args.gbgbridge, "read", "--reader", READER, "--mrz-from-image",
                                           os.path.join(args.documents, name), "--json",
                                           "--trust", os.path.join(ROOT, "Fixtures", "pki", "csca.cert.pem"), "--timeout", "30"],
                                          capture_output=True, text=True, timeout=120)
                finally:
                    emulator.send_signal(signal.SIGINT)
                    try:
                        emulator.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        emulator.kill()
            try:
                report = json.loads(read.stdout)
            except json.JSONDecodeError:
                report = {}
            source = report.get("accessKeyFrom") or {}
            shown = report.get("mrz") == "\n".join(lines)
            if read.returncode == 0 and source.get("source") == "photo":
                opened += 1
                first += source.get("candidate") == 1
                dg1_shown += shown
                print(f"opened   {name}: candidate {source.get('candidate')} of {source.get('tried')} tried; DG1's MRZ shown: {shown}")
            else:
                reason = (report.get("error") or {}).get("code") if isinstance(report.get("error"), dict) else report.get("code")
                last = (read.stderr.strip().splitlines() or [""])[-1][:160]
                print(f"refused  {name}: exit {read.returncode} {reason or ''} — {last}")
    finally:
        if started_pcscd:
            started_pcscd.terminate()
            started_pcscd.wait(timeout=10)
    if eligible:
        print(f"{opened} of {eligible} chips opened from the photo within three tries ({100 * opened / eligible:.1f} %), "
              f"{first} with the first candidate; DG1's MRZ shown for {dg1_shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
