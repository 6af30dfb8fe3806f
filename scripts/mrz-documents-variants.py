#!/usr/bin/python3
"""The real specimen documents (../shared/fixtures/mrz-real-documents) as a person's camera or
scanner might give them — turned a quarter, upside down, stored turned with an EXIF orientation,
tilted, in a wide margin, faint, dim, blurred, smaller, CMYK, JPEG q25, at half size, a phone's
photo (perspective, light falling off, JPEG), printed and scanned back, printed with an offset
press's halftone screen and scanned, photographed off a screen (moiré), IR and UV captures, a
SPECIMEN stamp, a lamp's glare — read by `gbgbridge mrz --json`; per variant: the printed key as
first candidate, among the candidates, as accessKeyValid, and false accessKeyValid and false
valid (Docs/mrz.md, "Pages on their side"). Exits 1 on any false claim.

    scripts/mrz-documents-variants.py [--gbgbridge PATH] [--work DIR] [--only VARIANT,...] [--list] [--all]

Needs Pillow and NumPy (Debian: python3-pil, python3-numpy). The variants are drawn the same way each run (the tilt's
angle is chosen from the document's name), so runs compare.
"""
import argparse, collections, json, os, random, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOCUMENTS = os.path.join(HERE, '..', '..', 'shared', 'fixtures', 'mrz-real-documents')


def key(lines):
    if len(lines) == 3:
        return (lines[0][5:14].rstrip('<'), lines[1][0:6], lines[1][8:14])
    return (lines[1][0:9].rstrip('<'), lines[1][13:19], lines[1][21:27])


def variants(image, name):
    from PIL import Image, ImageEnhance, ImageFilter
    width, height = image.size
    chooser = random.Random(name)
    margin = Image.new('RGB', (int(width * 2.4), int(height * 2.2)), (238, 238, 235))
    margin.paste(image, (int(width * 0.5), int(height * 0.7)))
    yield 'rot90', image.transpose(Image.ROTATE_90), 'PNG', {}
    yield 'rot270', image.transpose(Image.ROTATE_270), 'PNG', {}
    yield 'rot180', image.transpose(Image.ROTATE_180), 'PNG', {}
    yield 'margin', margin, 'PNG', {}
    yield 'faint', Image.blend(image, Image.new('RGB', image.size, (255, 255, 255)), 0.55), 'PNG', {}
    yield 'dim', ImageEnhance.Brightness(image).enhance(0.35), 'PNG', {}
    yield 'scale07', image.resize((int(width * 0.7), int(height * 0.7)), Image.BOX), 'PNG', {}
    yield 'blur', image.filter(ImageFilter.GaussianBlur(1.2)), 'PNG', {}
    yield 'tilt', image.rotate(chooser.choice([-8, -5, 5, 8]), resample=Image.BICUBIC, expand=True, fillcolor=(90, 80, 70)), 'PNG', {}
    yield 'cmyk', image.convert('CMYK'), 'JPEG', {'quality': 85}
    yield 'q25', image, 'JPEG', {'quality': 25}
    exif = Image.Exif()
    exif[0x0112] = 6  # stored turned; the tag says turn it back
    yield 'exif6', image.transpose(Image.ROTATE_90), 'JPEG', {'quality': 92, 'exif': exif}
    yield 'scale05', image.resize((max(1, width // 2), max(1, height // 2)), Image.BOX), 'PNG', {}
    yield 'phone', phone_photo(image, chooser), 'JPEG', {'quality': 70}
    yield 'printscan', print_scan(image), 'PNG', {}
    yield 'ir', infrared(image), 'PNG', {}
    yield 'uv', ultraviolet(image, chooser), 'PNG', {}
    yield 'stamp', stamped(image, chooser), 'PNG', {}
    yield 'glare', glare(image, chooser), 'JPEG', {'quality': 85}
    yield 'halftone', halftone(image, chooser), 'PNG', {}
    yield 'screen', off_screen(image, chooser), 'JPEG', {'quality': 80}


def phone_photo(image, chooser):
    """Held in a hand: a few percent of perspective, light falling off across the page, a little
    blur, on a darker table."""
    from PIL import Image, ImageChops, ImageFilter
    width, height = image.size
    pad = int(0.08 * max(width, height))
    canvas = Image.new('RGB', (width + 2 * pad, height + 2 * pad), (70, 62, 55))
    canvas.paste(image, (pad, pad))
    w, h = canvas.size
    jitter = lambda: chooser.uniform(-0.035, 0.035)
    # the source quadrilateral's corners in PIL's order: upper left, lower left, lower right, upper right
    corners = [(jitter() * w, jitter() * h), (jitter() * w, h + jitter() * h),
               (w + jitter() * w, h + jitter() * h), (w + jitter() * w, jitter() * h)]
    warped = canvas.transform((w, h), Image.QUAD, [c for corner in corners for c in corner], Image.BICUBIC,
                              fillcolor=(70, 62, 55))
    shade = Image.linear_gradient('L').resize((w, h)).rotate(chooser.choice([0, 90, 180, 270]))
    shade = shade.point(lambda v: 150 + v * 105 // 255)
    lit = ImageChops.multiply(warped, Image.merge('RGB', [shade] * 3))
    return lit.filter(ImageFilter.GaussianBlur(0.7))


def print_scan(image):
    """Printed on an office printer and scanned back: halftoned with dots a third of a pixel
    (Floyd–Steinberg at three times the size), the scanner's pixels averaging them, a little
    blur, paper not white and toner not black."""
    from PIL import Image, ImageFilter
    width, height = image.size
    large = image.convert('L').resize((width * 3, height * 3), Image.BICUBIC)
    dots = large.convert('1').convert('L')
    back = dots.resize((width, height), Image.BOX).filter(ImageFilter.GaussianBlur(0.6))
    return back.point(lambda v: 40 + v * 185 // 255).convert('RGB')


def infrared(image):
    """An IR capture: the colour inks of the background vanish (each pixel as light as its
    lightest channel), the carbon ink of the zone stays; grey, soft."""
    from PIL import ImageChops, ImageFilter
    red, green, blue = image.split()
    light = ImageChops.lighter(ImageChops.lighter(red, green), blue)
    return light.point(lambda v: 30 + v * 170 // 255).filter(ImageFilter.GaussianBlur(0.6)).convert('RGB')


def ultraviolet(image, chooser):
    """A UV capture: the page dark and blue, the zone darker still, fluorescent fibres and
    patches bright."""
    from PIL import Image, ImageDraw
    width, height = image.size
    grey = image.convert('L')
    red = grey.point(lambda v: 10 + v * 40 // 255)
    green = grey.point(lambda v: 15 + v * 55 // 255)
    blue = grey.point(lambda v: 35 + v * 150 // 255)
    picture = Image.merge('RGB', [red, green, blue])
    draw = ImageDraw.Draw(picture)
    for _ in range(60):
        x, y = chooser.uniform(0, width), chooser.uniform(0, height)
        dx, dy = chooser.uniform(-12, 12), chooser.uniform(-12, 12)
        draw.line([(x, y), (x + dx, y + dy)], fill=chooser.choice([(250, 240, 90), (120, 250, 140), (240, 90, 200)]), width=1)
    return picture


def stamped(image, chooser):
    """A SPECIMEN stamp across the lower third (where most zones are), red and half seen through."""
    from PIL import Image, ImageDraw, ImageFont
    width, height = image.size
    layer = Image.new('RGBA', image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    size = max(12, height // 7)
    try:
        font = ImageFont.load_default(size=size)
    except TypeError:
        font = ImageFont.load_default()
    draw.text((width * chooser.uniform(0.05, 0.3), height * chooser.uniform(0.7, 0.82)), 'SPECIMEN', font=font,
              fill=(200, 30, 40, 150), stroke_width=max(1, size // 18), stroke_fill=(200, 30, 40, 150))
    layer = layer.rotate(chooser.uniform(-6, 6), center=(width / 2, height * 0.8))
    return Image.alpha_composite(image.convert('RGBA'), layer).convert('RGB')


def glare(image, chooser):
    """A lamp's reflection: a bright soft patch somewhere on the page."""
    from PIL import Image, ImageChops, ImageDraw, ImageFilter
    width, height = image.size
    patch = Image.new('L', image.size, 0)
    radius = min(width, height) * chooser.uniform(0.12, 0.22)
    x, y = width * chooser.uniform(0.2, 0.8), height * chooser.uniform(0.55, 0.9)
    ImageDraw.Draw(patch).ellipse([x - radius * 1.6, y - radius, x + radius * 1.6, y + radius], fill=150)
    patch = patch.filter(ImageFilter.GaussianBlur(radius / 3))
    return ImageChops.screen(image, Image.merge('RGB', [patch] * 3))


def halftone(image, chooser):
    """Printed with an offset press's halftone (round dots on a screen at 45°, two pixels a
    period: about 150 lines an inch scanned at 300 dpi) and scanned back: the dots drawn at four
    times the size, averaged by the scanner's pixels, a little blur."""
    import numpy
    from PIL import Image, ImageFilter
    width, height = image.size
    factor, period = 4, 2.0 * 4
    large = numpy.asarray(image.convert('L').resize((width * factor, height * factor), Image.BICUBIC), dtype=numpy.float32) / 255
    ys, xs = numpy.mgrid[0:large.shape[0], 0:large.shape[1]].astype(numpy.float32)
    angle = numpy.radians(45 + chooser.uniform(-3, 3))
    u = xs * numpy.cos(angle) + ys * numpy.sin(angle)
    v = -xs * numpy.sin(angle) + ys * numpy.cos(angle)
    screen = 0.5 + 0.25 * (numpy.cos(2 * numpy.pi * u / period) + numpy.cos(2 * numpy.pi * v / period))
    dots = Image.fromarray(((large > screen) * 255).astype(numpy.uint8))
    back = dots.resize((width, height), Image.BOX).filter(ImageFilter.GaussianBlur(0.5))
    return back.point(lambda v: 25 + v * 205 // 255).convert('RGB')


def off_screen(image, chooser):
    """The page shown on a display at twice its size and photographed: the display's pixel grid
    (red, green and blue stripes, a dark line between rows) a little turned against the camera's
    pixels, about 1.3 display pixels to one of the camera's, which sample it into moiré bands;
    a little soft."""
    import numpy
    from PIL import Image, ImageFilter
    width, height = image.size
    zoom, subpixels = 2, 3
    large = numpy.asarray(image.resize((width * zoom * subpixels, height * zoom * subpixels), Image.NEAREST), dtype=numpy.float32)
    grid = numpy.zeros_like(large)
    for channel in range(3):
        grid[:, channel::subpixels, channel] = 1.0
    grid[subpixels - 1::subpixels, :, :] *= 0.4
    shown = Image.fromarray(numpy.clip(large * grid * 3.2, 0, 255).astype(numpy.uint8))
    shown = shown.rotate(chooser.uniform(1, 3) * chooser.choice([-1, 1]), resample=Image.BILINEAR, expand=True, fillcolor=(20, 20, 20))
    scale = 1 / (subpixels * chooser.uniform(1.2, 1.4))
    taken = shown.resize((int(shown.width * scale), int(shown.height * scale)), Image.BILINEAR)
    # The camera's exposure: the bright page near white again.
    pixels = numpy.asarray(taken, dtype=numpy.float32)
    bright = max(1.0, float(numpy.percentile(pixels, 98)))
    exposed = Image.fromarray(numpy.clip(pixels * (235 / bright), 0, 255).astype(numpy.uint8))
    return exposed.filter(ImageFilter.GaussianBlur(0.5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--gbgbridge', default=os.path.join(HERE, '..', '.build', 'release', 'gbgbridge'))
    parser.add_argument('--work', default='/tmp/mrz-documents-variants')
    parser.add_argument('--only', default='')
    parser.add_argument('--list', action='store_true', help='each image whose first candidate is not the printed key')
    parser.add_argument('--all', action='store_true',
                        help='also the documents whose printed key fails its check digits and the page without an MRZ '
                             '(any accessKeyValid there is false)')
    options = parser.parse_args()
    try:
        from PIL import Image, ImageOps
    except ImportError:
        sys.exit('needs Pillow: apt-get install python3-pil')
    truth_file = os.path.join(DOCUMENTS, 'truth.json')
    if not os.path.exists(truth_file):
        sys.exit(f'no {truth_file}')
    only = set(filter(None, options.only.split(',')))
    os.makedirs(options.work, exist_ok=True)
    rows = []
    for entry in json.load(open(truth_file)):
        checks = entry.get('checks') or {}
        holds = entry['format'] != 'none' and bool(checks.get('number') and checks.get('birth') and checks.get('expiry'))
        if not holds and not options.all:
            continue
        image = ImageOps.exif_transpose(Image.open(os.path.join(DOCUMENTS, entry['file']))).convert('RGB')
        base = os.path.splitext(entry['file'])[0]
        for variant, picture, kind, save in variants(image, base):
            if only and variant not in only:
                continue
            path = os.path.join(options.work, f'{base}.{variant}.{"png" if kind == "PNG" else "jpg"}')
            picture.save(path, kind, **save)
            rows.append((path, key(entry['lines']) if holds else None, variant, entry['lines'] if holds else None))
    # per variant: images whose key holds, first candidate, any candidate, accessKeyValid right,
    # false accessKeyValid, false valid, images without a holding key
    tally = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0])
    for start in range(0, len(rows), 20):
        chunk = rows[start:start + 20]
        output = subprocess.run([options.gbgbridge, 'mrz', '--json'] + [row[0] for row in chunk], capture_output=True, text=True).stdout
        results = json.loads(output)
        results = results if isinstance(results, list) else [results]
        for (path, truth, variant, lines), result in zip(chunk, results):
            counts = tally[variant]
            keys = [(c['documentNumber'], c['dateOfBirth'], c['dateOfExpiry']) for c in result.get('accessKeyCandidates', [])]
            if truth is None:
                counts[6] += 1
            else:
                counts[0] += 1
                counts[1] += bool(keys) and keys[0] == truth
                counts[2] += truth in keys
            if result.get('accessKeyValid'):
                claimed = (result['documentNumber'], result['dateOfBirth'], result['dateOfExpiry'])
                counts[3 if truth is not None and claimed == truth else 4] += 1
                if claimed != truth:
                    print(f'  FALSE accessKeyValid: {os.path.basename(path)} claimed {list(claimed)}, printed {list(truth) if truth else "no holding key"}')
            if result.get('valid') and result.get('lines') != lines:
                counts[5] += 1
                print(f'  FALSE valid: {os.path.basename(path)} claimed {result.get("lines")}')
            if options.list and truth is not None and (not keys or keys[0] != truth):
                print(f'  {os.path.basename(path)}: first candidate {list(keys[0]) if keys else []}, printed {list(truth)}'
                      f'{" (" + result["reason"] + ")" if result.get("reason") else ""}')
    print('variant   images  first cand.  any cand.  accessKeyValid  false accessKeyValid  false valid  (+ images without a holding key)')
    percent = lambda part, whole: f'{100 * part / whole:.1f} %' if whole else '—'
    for variant, counts in sorted(tally.items()):
        n, first, any_, valid, false, false_valid, keyless = counts
        print(f'{variant:9} {n:6}  {percent(first, n):>11}  {percent(any_, n):>9}  {percent(valid, n):>14}  {false:20}  {false_valid:11}  (+{keyless})')
    totals = [sum(counts[i] for counts in tally.values()) for i in range(7)]
    print(f'{"all":9} {totals[0]:6}  {percent(totals[1], totals[0]):>11}  {percent(totals[2], totals[0]):>9}  '
          f'{percent(totals[3], totals[0]):>14}  {totals[4]:20}  {totals[5]:11}  (+{totals[6]})')
    return 1 if totals[4] or totals[5] else 0


if __name__ == '__main__':
    sys.exit(main())
