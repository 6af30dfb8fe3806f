#!/usr/bin/python3
"""A picture (a holder's QR code, drawn by qrencode) on a 1280×720 YUYV frame for vivid's HDMI loop
(BT.709, limited range, as vivid's HDMI output takes it): centred on a grey ground, scaled by
SCALE (default 2), nearest neighbour. Written with PIL alone (no GBGBridge code).
Usage: yuyv_frame.py PICTURE OUT.yuyv [SCALE]"""
import sys

from PIL import Image

WIDTH, HEIGHT = 1280, 720
picture = Image.open(sys.argv[1]).convert("RGB")
scale = int(sys.argv[3]) if len(sys.argv) > 3 else 2
picture = picture.resize((picture.width * scale, picture.height * scale), Image.NEAREST)
frame = Image.new("RGB", (WIDTH, HEIGHT), (70, 80, 90))
frame.paste(picture, ((WIDTH - picture.width) // 2, (HEIGHT - picture.height) // 2))
pixels = frame.load()


def clip(value):
    return max(0, min(255, int(round(value))))


out = bytearray()
for y in range(HEIGHT):
    for x in range(0, WIDTH, 2):
        a, b = pixels[x, y], pixels[x + 1, y]
        luma = [16 + (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) * 219 / 255 for c in (a, b)]
        r, g, bl = [(a[i] + b[i]) / 2 for i in range(3)]
        average = 0.2126 * r + 0.7152 * g + 0.0722 * bl
        cb = 128 + (bl - average) / 1.8556 * 224 / 255
        cr = 128 + (r - average) / 1.5748 * 224 / 255
        out += bytes([clip(luma[0]), clip(cb), clip(luma[1]), clip(cr)])
open(sys.argv[2], "wb").write(out)
