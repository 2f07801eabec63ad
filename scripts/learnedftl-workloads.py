#!/usr/bin/env python3
"""Table of scripts/learnedftl-workloads.sh's runs: per workload and variant, the measured phase's
IOPS, WAF and model hit ratio, each against TPFTL's (the variant named `tpftl`), and the settle
phases' flash programs per host page written in the run (idle work, which no measured phase
pays). Usage: scripts/learnedftl-workloads.py OUT_DIR"""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/workloads")
runs = {}
for f in sorted(out.glob("*.json")):
    name, workload = f.stem.split("-", 1)
    r = json.loads(f.read_text())
    measured = r["phases"][-1]
    settle = sum(p["flash"]["programs"]["total"] for p in r["phases"] if p["phase"] == "settle")
    written = sum(p["page_writes"] for p in r["phases"])
    runs.setdefault(workload, {})[name] = dict(
        iops=measured["iops"], waf=measured["waf"], hit=measured["model_hit_ratio"],
        idle=settle / written)
lines = ["| workload | variant | IOPS | × TPFTL | WAF | × TPFTL | model hits | settle programs / page written in the run |",
         "|---|---|---|---|---|---|---|---|"]
for workload, by in runs.items():
    ref = by.get("tpftl")
    for name, m in sorted(by.items(), key=lambda kv: kv[0] != "tpftl"):
        iops_x = f"{m['iops'] / ref['iops']:.2f}" if ref else "–"
        waf_x = f"{m['waf'] / ref['waf']:.2f}" if ref and ref["waf"] else "–"
        waf = f"{m['waf']:.2f}" if m["waf"] else "–"
        lines.append(f"| {workload} | {name} | {m['iops']:,.0f} | {iops_x} | {waf} | {waf_x} | "
                     f"{100 * m['hit']:.1f} % | {m['idle']:.2f} |")
print("\n".join(lines))
