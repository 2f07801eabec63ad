#!/usr/bin/env python3
"""Table (capacity.md) and plot (capacity.svg) of scripts/capacity-scaling.sh's runs: per FTL and
size, the random-read phase's CMT and model hit ratios, double reads (translation reads per host
page read), IOPS, the random-write phase's IOPS and WAF, the mapping DRAM, and what the run took
(wall, CPU, peak RSS) and the simulator's speed in each phase (million simulated page
operations per wall second: fill, reads, writes); metrics as docs/metrics.md defines them."""
import json
import pathlib
import re
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/capacity")
SIZES = ["30GiB", "1TiB", "3.75TiB"]
FTLS = ["dftl", "tpftl", "leaftl", "learnedftl"]


def took(path):
    """(wall s, CPU s, peak RSS GiB) from a /usr/bin/time -v report."""
    text = path.read_text()
    field = lambda name: re.search(rf"{name}: (.*)", text).group(1)
    wall = 0.0
    for part in field(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\)").split(":"):
        wall = wall * 60 + float(part)
    cpu = float(field(r"User time \(seconds\)")) + float(field(r"System time \(seconds\)"))
    return wall, cpu, int(field(r"Maximum resident set size \(kbytes\)")) / 2**20


rows = []
for ftl in FTLS:
    for size in SIZES:
        f = out / f"{ftl}-{size}.json"
        if not f.exists():
            continue
        phases = {p["phase"]: p for p in json.loads(f.read_text())["phases"]}
        fill, rd, wr = phases["precondition"], phases["randread"], phases["randwrite"]
        reads = rd["flash"]["reads"]
        wall, cpu, rss = took(out / f"{ftl}-{size}.time")
        rows.append(dict(ftl=ftl, size=size, cmt=rd["cmt_hit_ratio"], model=rd["model_hit_ratio"],
                         double=reads["translation_read"] / reads["user"], riops=rd["iops"],
                         wiops=wr["iops"], waf=wr["waf"], dram=rd["dram_bytes"]["total"] / 2**20,
                         wall=wall, cpu=cpu, rss=rss,
                         speed=[p["sim_page_ops_per_sec"] / 1e6 for p in (fill, rd, wr)]))

lines = ["| FTL | logical size | CMT hits | model hits | double reads | read IOPS | write IOPS | "
         "write WAF | mapping DRAM MiB | wall s | CPU s | peak RSS GiB | "
         "M page ops/s fill / reads / writes |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    lines.append(f"| {r['ftl']} | {r['size']} | {100 * r['cmt']:.1f} % | {100 * r['model']:.1f} % | "
                 f"{r['double']:.3f} | {r['riops']:,.0f} | {r['wiops']:,.0f} | {r['waf']:.2f} | "
                 f"{r['dram']:,.1f} | {r['wall']:.0f} | {r['cpu']:.0f} | {r['rss']:.1f} | "
                 + " / ".join(f"{v:.1f}" for v in r["speed"]) + " |")
(out / "capacity.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))

# Read IOPS (y) against the logical size (x, one tick per size), one line per FTL.
W, H, L, B, T, R = 560, 360, 80, 50, 30, 130
COLOURS = {"dftl": "#d62728", "tpftl": "#1f77b4", "leaftl": "#9467bd", "learnedftl": "#2ca02c"}
top = max(r["riops"] for r in rows) * 1.1
sx = lambda i: L + i * (W - L - R) / (len(SIZES) - 1)
sy = lambda v: H - B - v / top * (H - B - T)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
       f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">logical capacity (paper geometry, same DRAM ratios)</text>',
       f'<text x="16" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 16 {(T + H - B) / 2})">random 4 KiB read IOPS</text>']
for i, size in enumerate(SIZES):
    svg.append(f'<text x="{sx(i)}" y="{H - B + 16}" text-anchor="middle">{size}</text>')
step = 10 ** (len(str(int(top))) - 1)
v = 0
while v <= top:
    svg.append(f'<text x="{L - 6}" y="{sy(v) + 4}" text-anchor="end">{v / 1000:,.0f} k</text>')
    svg.append(f'<line x1="{L}" y1="{sy(v)}" x2="{W - R}" y2="{sy(v)}" stroke="#ddd"/>')
    v += step
for ftl in FTLS:
    pts = [(SIZES.index(r["size"]), r["riops"]) for r in rows if r["ftl"] == ftl]
    if not pts:
        continue
    c = COLOURS[ftl]
    svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
               + " ".join(f"{sx(i):.1f},{sy(v):.1f}" for i, v in pts) + '"/>')
    for i, v in pts:
        svg.append(f'<circle cx="{sx(i):.1f}" cy="{sy(v):.1f}" r="4" fill="{c}"/>')
    i, v = pts[-1]
    svg.append(f'<text x="{sx(i) + 8:.1f}" y="{sy(v) + 4:.1f}" fill="{c}">{ftl}</text>')
svg.append("</svg>")
(out / "capacity.svg").write_text("\n".join(svg) + "\n")
