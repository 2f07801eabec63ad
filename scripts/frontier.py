#!/usr/bin/env python3
"""Table (frontier.md) and plot (frontier.svg) of scripts/learnedftl-frontier.sh's runs: for each
variant, the random-write phase's WAF and IOPS and the random-read phase's model hit ratio and
IOPS (metrics as docs/metrics.md defines them)."""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/frontier")
rows = []
for f in sorted(out.glob("*.json")):
    r = json.loads(f.read_text())
    ph = {p["phase"]: p for p in r["phases"]}
    w, rd = ph["randwrite"], ph["randread"]
    rows.append(dict(name=f.stem, waf=w["waf"], wiops=w["iops"], gc=w["gc"]["events"],
                     hit=rd["model_hit_ratio"], riops=rd["iops"]))
ref = next(r for r in rows if r["name"] == "tpftl")
def order(r):
    """TPFTL first, then the paper ablation, then the budgets in increasing order."""
    budget = r["name"].removeprefix("log-budget-")
    return (r["name"] != "tpftl", r["name"].startswith("log"), float(budget) if budget != r["name"] else 0)
lines = ["| variant | write WAF | × TPFTL | write IOPS | × TPFTL | GC events | model hit after | read IOPS | × TPFTL |",
         "|---|---|---|---|---|---|---|---|---|"]
for r in sorted(rows, key=order):
    lines.append(f"| {r['name']} | {r['waf']:.2f} | {r['waf'] / ref['waf']:.2f} | {r['wiops']:,.0f} | "
                 f"{r['wiops'] / ref['wiops']:.2f} | {r['gc']:,} | {100 * r['hit']:.1f} % | "
                 f"{r['riops']:,.0f} | {r['riops'] / ref['riops']:.2f} |")
(out / "frontier.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))

# A scatter plot, model hit ratio (y) against write WAF relative to TPFTL (x).
W, H, L, B, T, R = 640, 420, 70, 60, 30, 30
xs = [r["waf"] / ref["waf"] for r in rows]
x0, x1 = 0.9, max(xs) * 1.05
sx = lambda v: L + (v - x0) / (x1 - x0) * (W - L - R)
sy = lambda v: H - B - v * (H - B - T)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
       f'<text x="{(L + W - R) / 2}" y="{H - 20}" text-anchor="middle">write-phase WAF / TPFTL\'s (lower is better)</text>',
       f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 18 {(T + H - B) / 2})">model hit ratio after the writes</text>']
for v in (0, 0.25, 0.5, 0.75, 1.0):
    svg.append(f'<text x="{L - 6}" y="{sy(v) + 4}" text-anchor="end">{int(v * 100)} %</text>')
    svg.append(f'<line x1="{L}" y1="{sy(v)}" x2="{W - R}" y2="{sy(v)}" stroke="#ddd"/>')
t = 1.0
while t <= x1:
    svg.append(f'<text x="{sx(t)}" y="{H - B + 16}" text-anchor="middle">{t:.1f}</text>')
    t += 0.1 if x1 < 2 else 0.25
svg.append(f'<line x1="{sx(1.1)}" y1="{T}" x2="{sx(1.1)}" y2="{H - B}" stroke="#c00" stroke-dasharray="4"/>')
svg.append(f'<line x1="{L}" y1="{sy(0.5)}" x2="{W - R}" y2="{sy(0.5)}" stroke="#c00" stroke-dasharray="4"/>')
svg.append(f'<text x="{sx(1.1) + 4}" y="{T + 12}" fill="#c00">targets: WAF ≤ 1.1×, hits ≥ 50 %</text>')
for r, x in zip(rows, xs):
    colour = "#1f77b4" if r["name"].startswith("log") else "#d62728"
    svg.append(f'<circle cx="{sx(x):.1f}" cy="{sy(r["hit"]):.1f}" r="4" fill="{colour}"/>')
    label = r["name"].replace("log-budget-", "budget ")
    svg.append(f'<text x="{sx(x) + 6:.1f}" y="{sy(r["hit"]) - 6:.1f}">{label}</text>')
svg.append("</svg>")
(out / "frontier.svg").write_text("\n".join(svg) + "\n")
