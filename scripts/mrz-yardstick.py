#!/usr/bin/env python3
"""The MRZ benchmark's yardstick: PassportEye (PyPI `passporteye`) driving Tesseract 5 with Debian's
`eng` model, as it does out of the box, on the same images as gbgbridge's reader.

Usage: scripts/mrz-yardstick.py IMAGE...   → one JSON object per line:
  {"file", "found", "valid", "lines", "documentNumber", "dateOfBirth", "dateOfExpiry", "checks", "ms"}
`valid` is PassportEye's own verdict (every check digit holds); `checks` its per-field checks.
Install: pip install passporteye (needs tesseract-ocr and tesseract-ocr-eng from Debian).
"""
import json
import sys
import time

try:
    from passporteye import read_mrz
except ImportError:
    print(json.dumps({"error": "passporteye is not installed (pip install passporteye)"}))
    sys.exit(3)

for path in sys.argv[1:]:
    started = time.monotonic()
    try:
        mrz = read_mrz(path)
    except Exception as error:  # a crash of the yardstick is a no-read, not a stop
        mrz = None
        failure = str(error)[:200]
    else:
        failure = None
    ms = int((time.monotonic() - started) * 1000)
    if mrz is None:
        print(json.dumps({"file": path, "found": False, "valid": False, "ms": ms, "error": failure}), flush=True)
        continue
    data = mrz.to_dict()
    checks = {
        "documentNumber": bool(data.get("valid_number")),
        "dateOfBirth": bool(data.get("valid_date_of_birth")),
        "dateOfExpiry": bool(data.get("valid_expiration_date")),
        "composite": bool(data.get("valid_composite")),
    }
    print(json.dumps({
        "file": path,
        "found": True,
        "valid": bool(data.get("valid_score", 0) == 100),
        "lines": (mrz.aux or {}).get("text", "").split("\n") if hasattr(mrz, "aux") else [],
        "documentNumber": (data.get("number") or "").replace("<", ""),
        "dateOfBirth": data.get("date_of_birth") or "",
        "dateOfExpiry": data.get("expiration_date") or "",
        "checks": checks,
        "ms": ms,
    }), flush=True)
