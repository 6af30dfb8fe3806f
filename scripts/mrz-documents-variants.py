#!/usr/bin/python3
"""The real specimen documents (../shared/fixtures/mrz-real-documents) as a person's camera or
scanner might give them — turned a quarter, upside down, stored turned with an EXIF orientation,
tilted, in a wide margin, faint, dim, blurred, smaller, CMYK, JPEG q25 — read by `gbgbridge mrz
--json`; per variant: the printed key as first candidate, among the candidates, as
accessKeyValid, and false accessKeyValid (Docs/mrz.md, "Pages on their side").

    scripts/mrz-documents-variants.py [--gbgbridge PATH] [--work DIR] [--only VARIANT,...] [--list]

Needs Pillow (Debian: python3-pil). The variants are drawn the same way each run (the tilt's
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--gbgbridge', default=os.path.join(HERE, '..', '.build', 'release', 'gbgbridge'))
    parser.add_argument('--work', default='/tmp/mrz-documents-variants')
    parser.add_argument('--only', default='')
    parser.add_argument('--list', action='store_true', help='each image whose first candidate is not the printed key')
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
        if entry['format'] == 'none' or not (checks.get('number') and checks.get('birth') and checks.get('expiry')):
            continue
        image = ImageOps.exif_transpose(Image.open(os.path.join(DOCUMENTS, entry['file']))).convert('RGB')
        base = os.path.splitext(entry['file'])[0]
        for variant, picture, kind, save in variants(image, base):
            if only and variant not in only:
                continue
            path = os.path.join(options.work, f'{base}.{variant}.{"png" if kind == "PNG" else "jpg"}')
            picture.save(path, kind, **save)
            rows.append((path, key(entry['lines']), variant))
    tally = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for start in range(0, len(rows), 20):
        chunk = rows[start:start + 20]
        output = subprocess.run([options.gbgbridge, 'mrz', '--json'] + [row[0] for row in chunk], capture_output=True, text=True).stdout
        results = json.loads(output)
        results = results if isinstance(results, list) else [results]
        for (path, truth, variant), result in zip(chunk, results):
            counts = tally[variant]
            counts[0] += 1
            keys = [(c['documentNumber'], c['dateOfBirth'], c['dateOfExpiry']) for c in result.get('accessKeyCandidates', [])]
            counts[1] += bool(keys) and keys[0] == truth
            counts[2] += truth in keys
            if result.get('accessKeyValid'):
                claimed = (result['documentNumber'], result['dateOfBirth'], result['dateOfExpiry'])
                counts[3 if claimed == truth else 4] += 1
            if options.list and (not keys or keys[0] != truth):
                print(f'  {os.path.basename(path)}: first candidate {list(keys[0]) if keys else []}, printed {list(truth)}'
                      f'{" (" + result["reason"] + ")" if result.get("reason") else ""}')
    print('variant   images  first cand.  any cand.  accessKeyValid  false accessKeyValid')
    for variant, (n, first, any_, valid, false) in sorted(tally.items()):
        print(f'{variant:9} {n:6}  {100 * first / n:9.1f} %  {100 * any_ / n:7.1f} %  {100 * valid / n:12.1f} %  {false:6}')
    totals = [sum(counts[i] for counts in tally.values()) for i in range(5)]
    if totals[0]:
        print(f'{"all":9} {totals[0]:6}  {100 * totals[1] / totals[0]:9.1f} %  {100 * totals[2] / totals[0]:7.1f} %  '
              f'{100 * totals[3] / totals[0]:12.1f} %  {totals[4]:6}')
    return 1 if totals[4] else 0


if __name__ == '__main__':
    sys.exit(main())
