#!/usr/bin/env python3
"""Table (frontier.md) and plot (frontier.svg) of scripts/learnedftl-frontier.sh's runs: for each
variant, the random-write phase's WAF and IOPS, the idle work before the reads (the settle
phase's flash programs per host page the writes wrote, and its simulated seconds), the WAF of the
writes with that idle work, and the random-read phase's model hit ratio and IOPS (metrics as
docs/metrics.md defines them)."""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/frontier")
rows = []
for f in sorted(out.glob("*.json")):
    r = json.loads(f.read_text())
    phases = r["phases"]
    names = [p["phase"] for p in phases]
    w, rd = phases[names.index("randwrite")], phases[names.index("randread")]
    idle = phases[names.index("randread") - 1]
    assert idle["phase"] == "settle", f.name
    idle_waf = idle["flash"]["programs"]["total"] / w["page_writes"]
    rows.append(dict(name=f.stem, waf=w["waf"], wiops=w["iops"], gc=w["gc"]["events"],
                     idle=idle_waf, idle_s=idle["sim_seconds"], total=w["waf"] + idle_waf,
                     hit=rd["model_hit_ratio"], riops=rd["iops"]))
ref = next(r for r in rows if r["name"] == "tpftl")


def family(r):
    """0: TPFTL, 1: the paper ablation, 2: merge budgets (issue 11), 3: idle budgets (issue 29),
    4: both budgets (issue 53)."""
    n = r["name"]
    prefixes = ("tpftl", "paper", "log", "idle", "both")
    return next(i for i, p in enumerate(prefixes) if n.startswith(p))


def order(r):
    """TPFTL, the paper ablation, the merge budgets, the idle budgets, then both, each
    increasing (both: by merge budget, then idle budget)."""
    knobs = r["name"].split("-")[1:] if family(r) == 4 else r["name"].rsplit("-", 1)[-1:]
    return (family(r), *(float(k) for k in knobs)) if family(r) >= 2 else (family(r),)


lines = ["| variant | write WAF | × TPFTL | write IOPS | × TPFTL | GC events | idle programs / page written "
         "| idle s | write + idle WAF | × TPFTL | model hit after | read IOPS | × TPFTL |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in sorted(rows, key=order):
    lines.append(f"| {r['name']} | {r['waf']:.2f} | {r['waf'] / ref['waf']:.2f} | {r['wiops']:,.0f} | "
                 f"{r['wiops'] / ref['wiops']:.2f} | {r['gc']:,} | {r['idle']:.2f} | {r['idle_s']:.1f} | "
                 f"{r['total']:.2f} | {r['total'] / ref['total']:.2f} | {100 * r['hit']:.1f} % | "
                 f"{r['riops']:,.0f} | {r['riops'] / ref['riops']:.2f} |")
(out / "frontier.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))

# A scatter plot, model hit ratio (y) against WAF relative to TPFTL's (x). Merge budgets are
# placed at their write-phase WAF (their settle does nothing); idle budgets at their write +
# idle WAF (filled), with a hollow twin at their write-phase WAF.
W, H, L, B, T, R = 680, 440, 70, 60, 30, 30
COLOURS = {0: "#d62728", 1: "#d62728", 2: "#1f77b4", 3: "#2ca02c", 4: "#9467bd"}
xs = [r["total"] / ref["total"] for r in rows]
x0, x1 = 0.9, max(xs) * 1.05
sx = lambda v: L + (v - x0) / (x1 - x0) * (W - L - R)
sy = lambda v: H - B - v * (H - B - T)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
       f'<text x="{(L + W - R) / 2}" y="{H - 20}" text-anchor="middle">WAF / TPFTL\'s: writes, plus idle work for idle budgets (lower is better)</text>',
       f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 18 {(T + H - B) / 2})">model hit ratio after the writes</text>']
for v in (0, 0.25, 0.5, 0.75, 1.0):
    svg.append(f'<text x="{L - 6}" y="{sy(v) + 4}" text-anchor="end">{int(v * 100)} %</text>')
    svg.append(f'<line x1="{L}" y1="{sy(v)}" x2="{W - R}" y2="{sy(v)}" stroke="#ddd"/>')
t = 1.0
while t <= x1:
    svg.append(f'<text x="{sx(t)}" y="{H - B + 16}" text-anchor="middle">{t:.1f}</text>')
    t += 0.1 if x1 < 2 else 0.25
svg.append(f'<line x1="{sx(1.1)}" y1="{T}" x2="{sx(1.1)}" y2="{H - B}" stroke="#c00" stroke-dasharray="4"/>')
svg.append(f'<line x1="{L}" y1="{sy(0.6)}" x2="{W - R}" y2="{sy(0.6)}" stroke="#c00" stroke-dasharray="4"/>')
svg.append(f'<text x="{sx(1.1) + 4}" y="{T + 12}" fill="#c00">targets (issue 53): write + idle WAF ≤ 1.1×, hits ≥ 60 %</text>')
svg.append(f'<text x="{W - R - 4}" y="{H - B - 38}" text-anchor="end" fill="{COLOURS[2]}">merge budgets (issue 11)</text>')
svg.append(f'<text x="{W - R - 4}" y="{H - B - 24}" text-anchor="end" fill="{COLOURS[3]}">idle budgets (issue 29): write + idle WAF; hollow: write WAF only</text>')
svg.append(f'<text x="{W - R - 4}" y="{H - B - 10}" text-anchor="end" fill="{COLOURS[4]}">both budgets (issue 53), as idle budgets</text>')
# Points that coincide (e.g. idle budgets past a whole sort) share one label.
labels = {}
for r, x in zip(rows, xs):
    label = r["name"].replace("log-budget-", "budget ").replace("idle-", "idle ")
    if family(r) == 4:
        m, i = r["name"].split("-")[1:]
        label = f"budget {m} + idle {i}"
    labels.setdefault((round(x, 4), round(r["hit"], 4)), []).append(label)
for r, x in sorted(zip(rows, xs), key=lambda rx: order(rx[0])):
    colour = COLOURS[family(r)]
    y = sy(r["hit"])
    if family(r) >= 3:
        wx = sx(r["waf"] / ref["waf"])
        svg.append(f'<line x1="{wx:.1f}" y1="{y:.1f}" x2="{sx(x):.1f}" y2="{y:.1f}" stroke="{colour}" stroke-dasharray="2"/>')
        svg.append(f'<circle cx="{wx:.1f}" cy="{y:.1f}" r="4" fill="white" stroke="{colour}"/>')
    svg.append(f'<circle cx="{sx(x):.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
    shared = labels.pop((round(x, 4), round(r["hit"], 4)), None)
    if shared:
        svg.append(f'<text x="{sx(x) + 6:.1f}" y="{y - 6:.1f}">{" = ".join(shared)}</text>')
svg.append("</svg>")
(out / "frontier.svg").write_text("\n".join(svg) + "\n")
