#!/usr/bin/env python3
"""Plot (docs/capacity-reproduce.svg) of `reproduce`'s random-read and random-write experiments
at 30 GiB, 1 TiB and 4 TiB (3.75 TiB logical), from their table in docs/reproduction.md ("At full
size", the table whose header starts `| FTL | logical size | precondition WAF | CMT hits |
model hits | double reads | read IOPS | write IOPS |`): read IOPS and
write IOPS against the logical capacity, one line per FTL; cells not measured ("–") are left out.
    scripts/capacity-reproduce.py [docs/reproduction.md] [docs/capacity-reproduce.svg]"""
import pathlib
import sys

doc = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/reproduction.md")
out = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "docs/capacity-reproduce.svg")
HEADER = ("| FTL | logical size | precondition WAF | CMT hits | model hits | double reads | "
          "read IOPS | write IOPS |")
SIZES = ["30GiB", "1TiB", "3.75TiB"]
COLOURS = {"ideal": "#7f7f7f", "dftl": "#d62728", "tpftl": "#1f77b4", "leaftl": "#9467bd",
           "learnedftl": "#2ca02c"}

lines = doc.read_text().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith(HEADER)), None)
if start is None:
    sys.exit(f"{doc}: no table whose header starts {HEADER!r}")
names = [c.strip() for c in lines[start].strip("|").split("|")]
rows = []
for n, line in enumerate(lines[start + 2:], start + 3):
    if not line.startswith("|"):
        break
    cells = dict(zip(names, (c.strip() for c in line.strip("|").split("|"))))
    if cells["FTL"] not in COLOURS:
        continue
    if cells["logical size"] not in SIZES:
        sys.exit(f"{doc}:{n}: size {cells['logical size']!r} is not one of {SIZES}")
    num = lambda key: None if cells[key] == "–" else float(cells[key].replace(",", ""))
    rows.append((cells["FTL"], SIZES.index(cells["logical size"]), num("read IOPS"),
                 num("write IOPS")))

W, H, L, B, T, R, GAP = 900, 360, 80, 50, 40, 100, 90
PW = (W - L - R - GAP) / 2
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>']
for panel, (col, title) in enumerate([(2, "random 4 KiB reads (after 6x random 512 KiB)"),
                                      (3, "random 4 KiB writes (the space once)")]):
    x0 = L + panel * (PW + GAP)
    top = max(r[col] for r in rows if r[col] is not None) * 1.1
    sx = lambda i: x0 + 20 + i * (PW - 40) / (len(SIZES) - 1)
    sy = lambda v: H - B - v / top * (H - B - T)
    svg += [f'<text x="{x0 + PW / 2}" y="{T - 16}" text-anchor="middle">{title}</text>',
            f'<line x1="{x0}" y1="{H - B}" x2="{x0 + PW}" y2="{H - B}" stroke="black"/>',
            f'<line x1="{x0}" y1="{T}" x2="{x0}" y2="{H - B}" stroke="black"/>',
            f'<text x="{x0 + PW / 2}" y="{H - 12}" text-anchor="middle">logical capacity '
            '(paper geometry, same DRAM ratios)</text>',
            f'<text x="{x0 - 60}" y="{(T + H - B) / 2}" text-anchor="middle" '
            f'transform="rotate(-90 {x0 - 60} {(T + H - B) / 2})">IOPS</text>']
    for i, size in enumerate(SIZES):
        svg.append(f'<text x="{sx(i)}" y="{H - B + 16}" text-anchor="middle">{size}</text>')
    step = 10 ** (len(str(int(top))) - 1)
    step *= 2 if top / step > 5 else 1
    v = 0
    while v <= top:
        svg += [f'<text x="{x0 - 6}" y="{sy(v) + 4}" text-anchor="end">{v / 1000:,.0f} k</text>',
                f'<line x1="{x0}" y1="{sy(v)}" x2="{x0 + PW}" y2="{sy(v)}" stroke="#ddd"/>']
        v += step
    labels = []
    for ftl, c in COLOURS.items():
        pts = [(r[1], r[col]) for r in rows if r[0] == ftl and r[col] is not None]
        if not pts:
            continue
        dash = ' stroke-dasharray="4 3"' if ftl == "ideal" else ""
        svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="'
                   + " ".join(f"{sx(i):.1f},{sy(v):.1f}" for i, v in pts) + '"/>')
        svg += [f'<circle cx="{sx(i):.1f}" cy="{sy(v):.1f}" r="4" fill="{c}"/>' for i, v in pts]
        labels.append([sx(pts[-1][0]) + 8, sy(pts[-1][1]) + 4, ftl, c])
    # Labels of lines ending close together are spread apart vertically.
    labels.sort(key=lambda l: (l[0], l[1]))
    for a, b in zip(labels, labels[1:]):
        if b[0] == a[0] and b[1] - a[1] < 13:
            b[1] = a[1] + 13
    svg += [f'<text x="{x:.1f}" y="{y:.1f}" fill="{c}">{ftl}</text>' for x, y, ftl, c in labels]
svg.append("</svg>")
out.write_text("\n".join(svg) + "\n")
print(f"{out}: {len(rows)} rows")
