#!/usr/bin/env python3
"""Our numbers beside the LearnedFTL paper's, from scripts/reproduce.sh results.

    scripts/summarise.py [RESULTS_DIR]     print the tables, write RESULTS_DIR/summary.md
                                           (RESULTS_DIR defaults to results/quick)
    scripts/summarise.py collect EXPERIMENT PRESET RUNS_DIR OUT.json
                                           (used by reproduce.sh: bundle one experiment's runs)

Standard library only. Every metric is defined in docs/metrics.md; what each experiment is and
why our numbers differ from the paper's is in docs/reproduction.md.
"""

import json
import os
import sys

# The order FTLs appear in, whatever order the runs used.
ORDER = ["ideal", "dftl", "tpftl", "sftl", "leaftl", "hpftl", "learnedftl"]

# What the paper (LearnedFTL, HPCA'24, §II-B and §IV) reports, per experiment and FTL.
PAPER = {
    "randread": {
        "dftl": "CMT hit ≈ 0 %; LearnedFTL 1.5×",
        "tpftl": "CMT hit ≈ 0 %; LearnedFTL 1.4×",
        "leaftl": "single 5 %, double 52 %, triple 43 %; LearnedFTL 1.6×",
        "learnedftl": "model hit 55.5 %; 89.2 % of ideal",
    },
    "seqread": {
        "dftl": "hits 61 %; LearnedFTL 1.1×",
        "tpftl": "hits 80 %; LearnedFTL 1.1×",
        "leaftl": "hits 76 %; LearnedFTL 1.1×",
        "learnedftl": "hits 90 %; 96.8 % of ideal",
    },
    "randwrite": {
        "dftl": "GCs 4,335 (1.00× DFTL's)",
        "tpftl": "GCs 4,335 (1.00×)",
        "leaftl": "GCs 4,395 (1.01×)",
        "learnedftl": "GCs 4,188 (0.97×); IOPS 1.2–1.4× the others",
    },
    "seqwrite": {
        "dftl": "GCs 4,572 (1.00× DFTL's)",
        "tpftl": "GCs 4,304 (0.94×)",
        "leaftl": "GCs 4,473 (0.98×)",
        "learnedftl": "GCs 4,285 (0.94×); IOPS within 2 % of DFTL/TPFTL",
    },
}
PAPER["seqread-shared"] = PAPER["seqread"]

# Paper Fig. 21: LearnedFTL's P99 read latency advantage on WebSearch 1–3 and Systor'17.
PAPER_TRACE_P99 = {
    "tpftl": "5.3× / 7.4× / 6.5× (WS1–3), 2.9× (Systor); mean 5.5×",
    "leaftl": "7.8× / 12.2× / 9.7× (WS1–3), 3.0× (Systor); mean 8.2×",
}


# ---- formatting ------------------------------------------------------------------------------


def pct(x):
    return "–" if x is None else f"{100 * x:.1f} %"


def num(x, digits=0):
    return "–" if x is None else f"{x:,.{digits}f}"


def times(a, b):
    """a ÷ b as "1.23×"."""
    return "–" if not a or not b else f"{a / b:.2f}×"


class Table:
    """A markdown table padded so that it also reads as an aligned plain-text table."""

    def __init__(self, headers):
        self.headers = headers
        self.rows = []

    def add(self, *cells):
        self.rows.append([str(c) for c in cells])

    def render(self):
        cols = list(zip(self.headers, *self.rows))
        widths = [max(len(c) for c in col) for col in cols]
        # Right-align columns whose cells (past the header) start with a digit.
        numeric = [all(c[:1].isdigit() or c == "–" for c in col[1:]) for col in cols]

        def line(cells):
            out = []
            for c, w, right in zip(cells, widths, numeric):
                out.append(c.rjust(w) if right else c.ljust(w))
            return "| " + " | ".join(out) + " |"

        rule = "|" + "|".join(("-" * (w + 1) + ":" if r else "-" * (w + 2))
                             for w, r in zip(widths, numeric)) + "|"
        return "\n".join([line(self.headers), rule] + [line(r) for r in self.rows])


# ---- reading reports -------------------------------------------------------------------------


def load(results, name):
    path = os.path.join(results, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def by_ftl(reports):
    """The reports of one `compare`, in ORDER."""
    rank = {f: i for i, f in enumerate(ORDER)}
    return sorted(reports, key=lambda r: rank.get(r["ftl"], len(ORDER)))


def phase(report, name):
    for p in report["phases"]:
        if p["phase"] == name:
            return p
    raise KeyError(f"{report['ftl']}: no phase {name!r}")


def lookup_split(m):
    """single / double / triple reads as fractions of page reads."""
    n = m["page_reads"] or 1
    lk = m["lookups"]
    return f"{lk['single'] / n:.2f}/{lk['double'] / n:.2f}/{lk['triple'] / n:.2f}"


def counter(m, *path):
    v = m.get("ftl_counters") or {}
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


# ---- sanity checks (simulator bugs would show here) ------------------------------------------


def check(report, phase_metrics, ideal_iops=None):
    """Warnings about numbers that cannot be: counters that do not add up, an FTL faster than
    the ideal FTL on the same reads, latencies below one flash operation."""
    ftl, m = report["ftl"], phase_metrics
    where = f"{ftl}, phase {m['phase']}"
    out = []
    lk = m["lookups"]
    if sum(lk.values()) != m["page_reads"]:
        out.append(f"{where}: lookups {lk} do not add up to {m['page_reads']} page reads")
    if m["cmt_hit_ratio"] + m["model_hit_ratio"] > 1 + 1e-9:
        out.append(f"{where}: CMT hit + model hit > 100 %")
    reads = m["flash"]["reads"]
    flash_lookups = lk["single"] + lk["double"] + lk["triple"]
    if reads["user"] > flash_lookups:
        out.append(f"{where}: {reads['user']} user reads for {flash_lookups} page reads that "
                   "needed flash")
    needed = lk["double"] + 2 * lk["triple"]
    extra = reads["translation_read"] + reads["misprediction"]
    if extra < needed:
        out.append(f"{where}: {needed} translation/misprediction reads implied by the lookups, "
                   f"{extra} counted")
    progs = m["flash"]["programs"]
    if m["page_writes"] and abs(progs["total"] / m["page_writes"] - m["waf"]) > 1e-6:
        out.append(f"{where}: WAF {m['waf']} ≠ programs / page writes")
    if progs["user"] > m["page_writes"]:
        out.append(f"{where}: {progs['user']} user programs for {m['page_writes']} page writes")
    read_us = report["config"]["device"]["timing"]["read_ns"] / 1000
    lat = m["latency_us"]["read"]
    if lat["count"] and lk["none"] == 0 and lat["p50"] < read_us * 0.99:
        out.append(f"{where}: median read latency {lat['p50']} µs below one flash read "
                   f"({read_us} µs) with no buffered or unmapped reads")
    if ideal_iops and ftl != "ideal" and m["requests"]["write"] == 0 \
            and m["iops"] > ideal_iops * 1.01:
        out.append(f"{where}: {m['iops']:,.0f} IOPS, faster than ideal ({ideal_iops:,.0f})")
    return out


# ---- experiments -----------------------------------------------------------------------------


class Section:
    def __init__(self, title):
        self.title = title
        self.parts = []

    def text(self, s):
        self.parts.append(s)

    def table(self, t):
        self.parts.append(t.render())

    def render(self):
        return f"## {self.title}\n\n" + "\n\n".join(self.parts) + "\n"


def commands(exp):
    return "\n".join(f"    {r['command']}   # {r['label']}, {r['wall_seconds']:.0f} s wall"
                     for r in exp["runs"])


def prefetch_switch(report):
    """TPFTL's selective-prefetch switch: its state at the end and how often it switched."""
    end = counter(report["result"], "cache", "selective_prefetch_on")
    if end is None:
        return ""
    off = sum(counter(p, "cache", "stats", "selective_off") or 0 for p in report["phases"])
    on = sum(counter(p, "cache", "stats", "selective_on") or 0 for p in report["phases"])
    return f"{'on' if end else 'off'} (switched off {off}×, on {on}×)"


def reads_section(exp, name, title, warnings):
    s = Section(title)
    s.text(commands(exp))
    reports = by_ftl(exp["runs"][0]["reports"])
    res = {r["ftl"]: r["result"] for r in reports}
    ideal = res.get("ideal", {}).get("iops")
    ld = res.get("learnedftl", {}).get("iops")
    t = Table(["FTL", "IOPS", "% of ideal", "LearnedFTL ÷ it", "CMT hit", "model hit",
               "CMT+model", "single/double/triple", "read p99 µs", "paper"])
    for r in reports:
        m = r["result"]
        warnings += check(r, m, ideal)
        t.add(r["ftl"], num(m["iops"]), pct(m["iops"] / ideal) if ideal else "–",
              times(ld, m["iops"]) if r["ftl"] != "learnedftl" else "",
              pct(m["cmt_hit_ratio"]), pct(m["model_hit_ratio"]),
              pct(m["cmt_hit_ratio"] + m["model_hit_ratio"]), lookup_split(m),
              num(m["latency_us"]["read"]["p99"], 1), PAPER.get(name, {}).get(r["ftl"], ""))
    s.table(t)
    # Context: the preconditioning and the drain phase that precede the measured phase.
    t = Table(["FTL", "precondition WAF", "precondition GCs", "drain-phase IOPS",
               "drain write-backs", "model coverage", "selective prefetch"])
    ideal_drain = next((phase(r, "drain")["iops"] for r in reports if r["ftl"] == "ideal"), None)
    for r in reports:
        pre, drain = phase(r, "precondition"), phase(r, "drain")
        warnings += check(r, drain, ideal_drain)
        sw = prefetch_switch(r)
        cov = counter(r["result"], "model_coverage")
        t.add(r["ftl"], num(pre["waf"], 2), num(pre["gc"]["events"]), num(drain["iops"]),
              num(drain["flash"]["programs"]["translation_writeback"]),
              pct(cov) if cov is not None else "", sw)
    s.text("Before the measured phase (the drain phase is the first reads after preconditioning; "
           "model coverage = set bitmap bits / mapped LPNs; selective prefetch = TPFTL's "
           "switch at the end, and how often it switched off/on over all phases):")
    s.table(t)
    return s


def writes_section(exp, name, title, warnings):
    s = Section(title)
    s.text(commands(exp))
    reports = by_ftl(exp["runs"][0]["reports"])
    ld = next((r["result"]["iops"] for r in reports if r["ftl"] == "learnedftl"), None)
    dftl_gcs = next((r["result"]["gc"]["events"] for r in reports if r["ftl"] == "dftl"), None)
    t = Table(["FTL", "IOPS", "LearnedFTL ÷ it", "WAF", "GCs", "GCs ÷ DFTL's", "pages moved",
               "write p99 µs", "precond. WAF", "precond. GCs", "paper"])
    for r in reports:
        m, pre = r["result"], phase(r, "precondition")
        warnings += check(r, m) + check(r, pre)
        t.add(r["ftl"], num(m["iops"]), times(ld, m["iops"]) if r["ftl"] != "learnedftl" else "",
              num(m["waf"], 2), num(m["gc"]["events"]), times(m["gc"]["events"], dftl_gcs),
              num(m["gc"]["pages_moved"]),
              num(m["latency_us"]["write"]["p99"], 0), num(pre["waf"], 2),
              num(pre["gc"]["events"]), PAPER.get(name, {}).get(r["ftl"], ""))
    for run in exp["runs"][1:]:  # variants, e.g. LearnedFTL with line-level GC
        for r in run["reports"]:
            m, pre = r["result"], phase(r, "precondition")
            warnings += check(r, m) + check(r, pre)
            t.add(run["label"], num(m["iops"]), "", num(m["waf"], 2), num(m["gc"]["events"]),
                  times(m["gc"]["events"], dftl_gcs), num(m["gc"]["pages_moved"]),
                  num(m["latency_us"]["write"]["p99"], 0), num(pre["waf"], 2),
                  num(pre["gc"]["events"]), "")
    s.table(t)
    return s


def gc_flash_ms(report, m):
    """Flash time GC spent per LUN in a phase, in ms: GC reads, programs and every erase (only
    GC erases), spread over all LUNs (a collection stripes over them)."""
    tm, g = report["config"]["device"]["timing"], report["config"]["device"]["geometry"]
    luns = g["channels"] * g["luns_per_channel"] * g["planes_per_lun"]
    f = m["flash"]
    ns = sum(f["reads"][c] * tm["read_ns"] + f["programs"][c] * tm["program_ns"]
             for c in ("gc_data", "gc_translation")) + f["erases"] * tm["erase_ns"]
    return ns / luns / 1e6


def training_section(results):
    s = Section("LearnedFTL training + sorting share of GC time (paper Fig. 17: ≤ 3.2 %)")
    t = Table(["workload", "phase", "group GCs", "sort µs/GC", "train µs/GC", "GC flash ms/GC",
               "share"])
    found = False
    for name in ("randwrite", "seqwrite", "randread", "seqread"):
        exp = load(results, name)
        if not exp:
            continue
        for r in exp["runs"][0]["reports"]:
            if r["ftl"] != "learnedftl":
                continue
            for m in r["phases"]:
                gcs = counter(m, "group_gcs")
                if not gcs:
                    continue
                found = True
                cpu_ms = (counter(m, "sort_ns") + counter(m, "train_ns")) / 1e6
                flash_ms = gc_flash_ms(r, m)
                t.add(name, m["phase"], num(gcs), num(counter(m, "sort_us_per_gc"), 1),
                      num(counter(m, "train_us_per_gc"), 1), num(flash_ms / gcs, 2),
                      pct(cpu_ms / (cpu_ms + flash_ms)))
    if not found:
        return None
    s.text("Sorting and training are the simulator's own CPU time (x86 host; the paper measured "
           "an ARM Cortex-A72 to be as fast); GC flash time is the GC reads, programs and "
           "erases of the phase at FEMU latencies divided by the LUNs they stripe over. "
           "share = CPU / (CPU + GC flash time).")
    s.table(t)
    return s


def tpftl_threads_section(exp, warnings):
    s = Section("TPFTL motivation: random vs sequential reads by thread count (paper Fig. 2: "
                "random up to 60 % below sequential)")
    s.text(commands(exp))
    runs = {r["label"]: r["reports"][0] for r in exp["runs"]}
    rnd, seq = runs.get("random"), runs.get("sequential")
    seq0 = runs.get("sequential, prefetch_threshold=0")
    if not rnd or not seq:
        s.text("(incomplete: needs the random and sequential runs)")
        return s
    head = ["jobs", "random IOPS", "sequential IOPS", "random below sequential",
            "CMT hit random", "CMT hit sequential"]
    if seq0:
        head += ["sequential IOPS, counter off", "random below it", "CMT hit, counter off"]
    t = Table(head)
    for p in rnd["phases"]:
        if not p["phase"].startswith("jobs-"):
            continue
        q = phase(seq, p["phase"])
        warnings += check(rnd, p) + check(seq, q)
        row = [p["phase"][5:], num(p["iops"]), num(q["iops"]), pct(1 - p["iops"] / q["iops"]),
               pct(p["cmt_hit_ratio"]), pct(q["cmt_hit_ratio"])]
        if seq0:
            q0 = phase(seq0, p["phase"])
            warnings += check(seq0, q0)
            row += [num(q0["iops"]), pct(1 - p["iops"] / q0["iops"]), pct(q0["cmt_hit_ratio"])]
        t.add(*row)
    s.text("\"counter off\": `--set prefetch_threshold=0`, TPFTL's selective prefetch never "
           "switches off (docs/ftls/tpftl.md).")
    s.table(t)
    return s


def cmt_sweep_section(exp, warnings):
    s = Section("TPFTL CMT-size sweep, random reads (paper Fig. 3: hit ≈ 25.9 % at 50 %)")
    s.text(commands(exp))
    t = Table(["CMT (share of mappings)", "CMT hit", "IOPS", "double reads", "cache DRAM bytes",
               "paper"])
    for run in exp["runs"]:
        r = run["reports"][0]
        m = r["result"]
        warnings += check(r, m)
        ratio = float(run["label"].split("=")[1])
        t.add(pct(ratio), pct(m["cmt_hit_ratio"]), num(m["iops"]),
              pct(m["lookups"]["double"] / (m["page_reads"] or 1)),
              num(m["dram_bytes"].get("cmt_entries", m["dram_bytes"]["total"])),
              "25.9 %" if abs(ratio - 0.5) < 1e-9 else "")
    s.table(t)
    return s


def traces_section(exp, warnings):
    s = Section("Trace replay: P99 / P99.9 read latency (paper Fig. 21: LearnedFTL 2.9–12.2× "
                "lower P99 than TPFTL and LeaFTL)")
    s.text(commands(exp))
    for run in exp["runs"]:
        reports = by_ftl(run["reports"])
        ld = next((r["result"]["latency_us"]["read"] for r in reports
                   if r["ftl"] == "learnedftl"), None)
        t = Table(["FTL", "read p99 µs", "read p99.9 µs", "read mean µs", "it ÷ LearnedFTL p99",
                   "it ÷ LearnedFTL p99.9", "CMT hit", "model hit", "single/double/triple",
                   "paper (P99 ÷ LearnedFTL's)"])
        for r in reports:
            m = r["result"]
            warnings += check(r, m)
            lat = m["latency_us"]["read"]
            mine = r["ftl"] == "learnedftl"
            t.add(r["ftl"], num(lat["p99"], 1), num(lat["p999"], 1), num(lat["mean"], 1),
                  "" if mine or not ld else times(lat["p99"], ld["p99"]),
                  "" if mine or not ld else times(lat["p999"], ld["p999"]),
                  pct(m["cmt_hit_ratio"]), pct(m["model_hit_ratio"]), lookup_split(m),
                  PAPER_TRACE_P99.get(r["ftl"], ""))
        m0 = reports[0]["result"]
        s.text(f"**{run['label']}** ({num(m0['requests']['read'])} reads, "
               f"{num(m0['requests']['write'])} writes, {m0['sim_seconds']:.3f} simulated s):")
        s.table(t)
    return s


def links_section():
    s = Section("Covered by the FTLs' own pages")
    hp = "docs/ftls/hpftl.md"
    s.text("* HP-FTL's Fig. 2 (throughput vs DRAM table size, random and Zipf 0.99 writes): "
           + (f"[{hp}](../../{hp}) (listed there as not done yet)" if os.path.exists(hp)
              else "HP-FTL's page (not on this branch yet)") + ".\n"
           "* LeaFTL's mapping-table size against DFTL and SFTL: "
           "[docs/ftls/leaftl.md](../../docs/ftls/leaftl.md#behaviour-to-demonstrate-quick-"
           "preset-commit-of-this-doc).")
    return s


def summarise(results):
    warnings = []
    sections = []
    for name, title in (("randread", "Random reads (paper Fig. 14a/b)"),
                        ("seqread", "Sequential reads, one region per job (paper Fig. 14a/b)"),
                        ("seqread-shared", "Sequential reads, all jobs over the same pages")):
        exp = load(results, name)
        if exp:
            sections.append(reads_section(exp, name, title, warnings))
    for name, title in (("randwrite", "Random writes (paper Fig. 14a/c, Fig. 16)"),
                        ("seqwrite", "Sequential writes, one region per job (paper Fig. 14a/c, "
                                     "Fig. 16)")):
        exp = load(results, name)
        if exp:
            sections.append(writes_section(exp, name, title, warnings))
    tr = training_section(results)
    if tr:
        sections.append(tr)
    for name, fn in (("tpftl-threads", tpftl_threads_section), ("cmt-sweep", cmt_sweep_section),
                     ("traces", traces_section)):
        exp = load(results, name)
        if exp:
            sections.append(fn(exp, warnings))
    sections.append(links_section())
    if not sections[:-1]:
        sys.exit(f"no results in {results} (run scripts/reproduce.sh first)")

    preset = os.path.basename(os.path.normpath(results))
    head = (f"# Reproduction summary ({preset} preset)\n\nGenerated by scripts/summarise.py from "
            f"{results}; what the experiments are and why the numbers differ from the paper's: "
            "docs/reproduction.md.\n")
    checks = Section("Sanity checks")
    checks.text("\n".join(f"* {w}" for w in warnings) if warnings else
                "None failed: lookups add up to page reads, CMT + model hits ≤ 100 %, user reads "
                "≤ reads that needed flash, WAF = programs / page writes, no FTL faster than "
                "ideal on reads, no median read below one flash read.")
    text = head + "\n" + "\n".join(s.render() for s in sections + [checks])
    print(text)
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write(text)
    return 1 if warnings else 0


def collect(experiment, preset, runs_dir, out):
    """Bundle the runs of one experiment (NNN.json + NNN.json.meta from reproduce.sh)."""
    runs = []
    for name in sorted(os.listdir(runs_dir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(runs_dir, name)
        with open(path) as f:
            reports = json.load(f)
        with open(path[:-5] + ".meta") as f:
            label, command, ms = f.read().splitlines()[:3]
        runs.append({"label": label, "command": command, "wall_seconds": int(ms) / 1000,
                     "reports": reports if isinstance(reports, list) else [reports]})
    if not runs:
        return
    with open(out, "w") as f:
        json.dump({"experiment": experiment, "preset": preset, "runs": runs}, f)


def main(argv):
    if len(argv) > 1 and argv[1] == "collect":
        if len(argv) != 6:
            sys.exit("usage: summarise.py collect EXPERIMENT PRESET RUNS_DIR OUT.json")
        collect(*argv[2:])
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        sys.exit(__doc__)
    return summarise(argv[1] if len(argv) == 2 else "results/quick")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
