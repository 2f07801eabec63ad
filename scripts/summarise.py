#!/usr/bin/env python3
"""Our numbers beside the LearnedFTL paper's (and HP-FTL's), from scripts/reproduce.sh results.

    scripts/summarise.py [RESULTS_DIR]     print the tables, write RESULTS_DIR/summary.md
                                           (RESULTS_DIR defaults to results/quick)
    scripts/summarise.py collect EXPERIMENT PRESET RUNS_DIR OUT.json
                                           (used by reproduce.sh: bundle one experiment's runs)

Standard library only. Every metric is defined in docs/metrics.md; what each experiment is and
why our numbers differ from the paper's is in docs/reproduction.md (HP-FTL's: docs/ftls/hpftl.md).
"""

import json
import os
import sys

# The order FTLs appear in, whatever order the runs used.
ORDER = ["ideal", "dftl", "tpftl", "sftl", "leaftl", "hpftl", "learnedftl", "fast", "mu-ftl"]

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


def pct(x, digits=1):
    return "–" if x is None else f"{100 * x:.{digits}f} %"


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


def settle(report, after="precondition"):
    """The `settle` phase that follows phase `after`, or None (`--settle off`)."""
    names = [p["phase"] for p in report["phases"]]
    i = names.index(after) + 1 if after in names else 0
    return report["phases"][i] if i < len(names) and names[i] == "settle" else None


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
    for run in exp["runs"][1:]:  # variants, e.g. LearnedFTL's paper design
        for r in run["reports"]:
            m = r["result"]
            warnings += check(r, m, ideal)
            t.add(run["label"], num(m["iops"]), pct(m["iops"] / ideal) if ideal else "–", "",
                  pct(m["cmt_hit_ratio"]), pct(m["model_hit_ratio"]),
                  pct(m["cmt_hit_ratio"] + m["model_hit_ratio"]), lookup_split(m),
                  num(m["latency_us"]["read"]["p99"], 1), "")
    s.table(t)
    # Context: the preconditioning and the drain phase that precede the measured phase.
    t = Table(["FTL", "precondition WAF", "precondition GCs", "settle ms", "settle write-backs",
               "settle GCs", "drain-phase IOPS", "drain write-backs", "model coverage",
               "selective prefetch"])
    ideal_drain = next((phase(r, "drain")["iops"] for r in reports if r["ftl"] == "ideal"), None)
    labelled = [(r["ftl"], r) for r in reports] + [(run["label"], r) for run in exp["runs"][1:]
                                                   for r in run["reports"]]
    for label, r in labelled:
        pre, drain, st = phase(r, "precondition"), phase(r, "drain"), settle(r)
        warnings += check(r, drain, ideal_drain)
        sw = prefetch_switch(r)
        cov = counter(r["result"], "model_coverage")
        t.add(label, num(pre["waf"], 2), num(pre["gc"]["events"]),
              num(st["sim_seconds"] * 1e3, 1) if st else "–",
              num(st["flash"]["programs"]["translation_writeback"]) if st else "–",
              num(st["gc"]["events"]) if st else "–", num(drain["iops"]),
              num(drain["flash"]["programs"]["translation_writeback"]),
              pct(cov) if cov is not None else "", sw)
    s.text("Before the measured phase (settle = the idle phase after preconditioning, \"–\" with "
           "`--settle off`; the drain phase is the first reads after it; model coverage = set "
           "bitmap bits / mapped LPNs; selective prefetch = TPFTL's switch at the end, and how "
           "often it switched off/on over all phases):")
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


def luns(report):
    g = report["config"]["device"]["geometry"]
    return g["channels"] * g["luns_per_channel"] * g["planes_per_lun"]


def flash_ns(report, m, causes=None):
    """Flash time of a phase in ns: the reads and programs of `causes` (default: every cause) at
    the device's latencies, plus every erase (erases are only ever GC's)."""
    tm, f = report["config"]["device"]["timing"], m["flash"]
    causes = causes or [c for c in f["reads"] if c != "total"]
    return sum(f["reads"][c] * tm["read_ns"] + f["programs"][c] * tm["program_ns"]
               for c in causes) + f["erases"] * tm["erase_ns"]


def gc_flash_ms(report, m):
    """Flash time GC spent per LUN in a phase, in ms: GC reads, programs and every erase, spread
    over all LUNs (a collection stripes over them)."""
    return flash_ns(report, m, ("gc_data", "gc_translation")) / luns(report) / 1e6


def training_section(results):
    s = Section("LearnedFTL training + sorting share of GC time (paper Fig. 17: ≤ 3.2 %)")
    t = Table(["workload", "LearnedFTL", "phase", "collections (group / line)", "sort µs/GC",
               "train µs/GC", "GC flash ms/GC", "share"])
    found = False
    for name in ("randwrite", "seqwrite", "randread", "seqread"):
        exp = load(results, name)
        if not exp:
            continue
        for i, run in enumerate(exp["runs"]):
            for r in run["reports"]:
                if r["ftl"] != "learnedftl":
                    continue
                # The first run is the default design; later runs are labelled variants.
                label = "default" if i == 0 else run["label"].removeprefix("learnedftl ")
                for m in r["phases"]:
                    group, line = counter(m, "group_gcs") or 0, counter(m, "line_gcs") or 0
                    gcs = group + line
                    if not gcs:
                        continue
                    found = True
                    sort_ms, train_ms = counter(m, "sort_ns") / 1e6, counter(m, "train_ns") / 1e6
                    cpu_ms = sort_ms + train_ms
                    flash_ms = gc_flash_ms(r, m)
                    t.add(name, label, m["phase"], f"{num(gcs)} ({num(group)} / {num(line)})",
                          num(sort_ms * 1e3 / gcs, 1), num(train_ms * 1e3 / gcs, 1),
                          num(flash_ms / gcs, 2), pct(cpu_ms / (cpu_ms + flash_ms)))
    if not found:
        return None
    s.text("Sorting and training are the simulator's own CPU time (x86 host; the paper measured "
           "an ARM Cortex-A72 to be as fast); GC flash time is the GC reads, programs and "
           "erases of the phase at FEMU latencies divided by the LUNs they stripe over. "
           "Collections: whole-group (`group_gcs`, merges included) plus single-line "
           "(`line_gcs`). share = CPU / (CPU + GC flash time).")
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
    # Variant runs ("<trace> speed=<s> learnedftl design=paper") join their trace's table.
    variants = {}
    for run in exp["runs"]:
        base, sep, _ = run["label"].partition(" learnedftl ")
        if sep:
            variants.setdefault(base, []).append(run)
    for run in exp["runs"]:
        if " learnedftl " in run["label"]:
            continue
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
        extra = []
        for v in variants.get(run["label"], []):
            for r in v["reports"]:
                m = r["result"]
                warnings += check(r, m)
                lat = m["latency_us"]["read"]
                t.add(v["label"].partition(" learnedftl ")[2] and
                      "learnedftl " + v["label"].partition(" learnedftl ")[2],
                      num(lat["p99"], 1), num(lat["p999"], 1), num(lat["mean"], 1), "", "",
                      pct(m["cmt_hit_ratio"]), pct(m["model_hit_ratio"]), lookup_split(m), "")
                extra.append(", ".join(
                    f"{o['ftl']} {times(o['result']['latency_us']['read']['p99'], lat['p99'])}"
                    for o in reports if o["ftl"] in ("tpftl", "leaftl")) +
                    f" (P99 ÷ `{v['label'].partition(' learnedftl ')[2]}`'s)")
        m0 = reports[0]["result"]
        s.text(f"**{run['label']}** ({num(m0['requests']['read'])} reads, "
               f"{num(m0['requests']['write'])} writes, {m0['sim_seconds']:.3f} simulated s):")
        s.table(t)
        for e in extra:
            s.text(e)
    return s


# ---- HP-FTL's paper (Ni et al.) ----------------------------------------------------------------

# What the HP-FTL paper reports (§III-B, Figs. 2 and 4-7), by workload and x-axis value.
PAPER_HP_FIG2 = {
    ("uniform", 0.4): "HP-FTL 2.6× DFTL, ≥ 94 % of PFTL; DFTL < 40 % of PFTL",
    ("uniform", 0.7): "DFTL above HP-FTL by < 2 %",
}
PAPER_HP_FIG2_TEXT = {
    "uniform": "Paper Fig. 2a (weak locality): HP-FTL nearly flat, far above DFTL at small "
               "tables; DFTL catches up by 70 %.",
    "zipf0.99": "Paper Fig. 2b (strong locality): DFTL above HP-FTL at every size; HP-FTL ≈ 95 % "
                "of DFTL, ≈ 92 % of PFTL.",
}
# Secondary table peak (8 B entries against a BTS of 4 B entries = 256 MB, p = 5), with its
# share of the LPNs (half its share of BTS), comparable to ours; m keyed by p - m.
PAPER_HP_H = {("uniform", 2): "≈ 3 MB = 1.2 % of BTS = 0.6 %; falls as h grows",
              ("zipf0.99", 3): "no decrease from h = 3 to 5"}
PAPER_HP_M = {("uniform", 0): "512 KB = 0.2 % of BTS = 0.1 % (m = p = 5)",
              ("uniform", 3): "≈ 72 MB = 28 % of BTS = 14 % (m = 2)",
              ("zipf0.99", 3): "below weak locality's (m = 2)"}


def hp_runs(exp):
    """An HP-FTL experiment's runs keyed by label ("WORKLOAD FTL [key=value ...]"), and its
    workloads in run order."""
    runs = {r["label"]: r for r in exp["runs"]}
    workloads = list(dict.fromkeys(label.split()[0] for label in runs))
    return runs, workloads


def busy(report, m):
    """Share of the LUNs' time spent on flash operations over the phase."""
    return flash_ns(report, m) / (luns(report) * m["sim_seconds"] * 1e9)


def secondary_share(m):
    return counter(m, "host_pages_secondary") / (m["page_writes"] or 1)


def hp_gc_note(exp):
    """What GC and secondary-table growth did over all runs (the experiments are meant to have
    neither)."""
    worst, moved, grown = (0, ""), 0, 0
    for run in exp["runs"]:
        for r in run["reports"]:
            g = r["result"]["gc"]
            worst = max(worst, (g["events"], run["label"]))
            moved += g["pages_moved"]
            grown += counter(r["result"], "secondary_grown") or 0
    gcs = f"at most {num(worst[0])} GC events in a run ({worst[1]})" if worst[0] else "no GC"
    return (f"GC over all runs: {gcs}, {num(moved)} pages moved in all; HP-FTL's secondary table "
            f"grew {num(grown)}×.")


def hpftl_fig2_section(exp, warnings):
    s = Section("HP-FTL paper Fig. 2: IOPS against the DRAM given to the mapping table, fresh "
                "device (docs/ftls/hpftl.md)")
    s.text(commands(exp))
    runs, workloads = hp_runs(exp)
    for r in (r for run in exp["runs"] for r in run["reports"]):
        warnings += check(r, r["result"])
    refusal = next((run["error"] for run in exp["runs"] if run.get("error")), None)
    for w in workloads:
        ideal = runs[f"{w} ideal"]["reports"][0]
        ideal_iops = ideal["result"]["iops"]
        t = Table(["DRAM (share of BTS)", "ideal IOPS", "DFTL IOPS", "HP-FTL IOPS",
                   "HP-FTL ÷ DFTL", "HP-FTL ÷ ideal", "DFTL ÷ ideal", "DFTL write misses",
                   "DFTL write-backs / write", "DFTL flash µs/write", "DFTL LUN busy",
                   "HP-FTL LUN busy", "HP-FTL to secondary", "paper"])
        ratios = [label.split("=")[1] for label in runs
                  if label.startswith(f"{w} dftl ratio=")]
        for ratio in ratios:
            d = runs[f"{w} dftl ratio={ratio}"]["reports"][0]
            hp = runs[f"{w} hpftl ratio={ratio}"]["reports"]
            dm, hm = d["result"], hp[0]["result"] if hp else None
            writes = dm["page_writes"] or 1
            misses = counter(dm, "translation", "write_misses") / writes
            t.add(pct(float(ratio)), num(ideal_iops), num(dm["iops"]),
                  num(hm["iops"]) if hm else "–", times(hm and hm["iops"], dm["iops"]),
                  pct(hm["iops"] / ideal_iops) if hm else "–", pct(dm["iops"] / ideal_iops),
                  pct(misses), pct(dm["flash"]["programs"]["translation_writeback"] / writes),
                  num(flash_ns(d, dm) / writes / 1e3), pct(busy(d, dm)),
                  pct(busy(hp[0], hm)) if hm else "–", pct(secondary_share(hm)) if hm else "–",
                  PAPER_HP_FIG2.get((w, float(ratio)), ""))
        s.text(f"**{w}** — {PAPER_HP_FIG2_TEXT.get(w, '')} Ideal: LUN busy "
               f"{pct(busy(ideal, ideal['result']))}. DFTL write misses include first touches "
               "(loads of never-written TPs, no flash read).")
        s.table(t)
        t = Table(["4 requests in flight per job, DRAM 40 %", "IOPS", "÷ ideal at this depth",
                   "LUN busy", "write mean µs"])
        deep_ideal = runs.get(f"{w} ideal iodepth=4")
        for ftl in ("ideal", "dftl", "hpftl"):
            run = runs.get(f"{w} {ftl} iodepth=4")
            if not run or not deep_ideal:
                continue
            r = run["reports"][0]
            m = r["result"]
            t.add(ftl, num(m["iops"]),
                  pct(m["iops"] / deep_ideal["reports"][0]["result"]["iops"]), pct(busy(r, m)),
                  num(m["latency_us"]["write"]["mean"]))
        if t.rows:
            s.table(t)
    if refusal:
        s.text(f"\"–\": HP-FTL refuses a budget below its primary table: `{refusal}`")
    s.text(hp_gc_note(exp))
    return s


def hpftl_secondary_section(exp, warnings):
    s = Section("HP-FTL paper Figs. 4-7: secondary table peak and IOPS for h and m, fresh device "
                "(docs/ftls/hpftl.md)")
    s.text(commands(exp))
    runs, workloads = hp_runs(exp)
    for w in workloads:
        ideal_iops = runs[f"{w} ideal"]["reports"][0]["result"]["iops"]
        hp = [run["reports"][0] for label, run in runs.items()
              if label.startswith(f"{w} hpftl")]
        for sweep, rows, paper in (
                ("h (m = p)", [r for r in hp if r["config"]["ftl"]["m"] == r["config"]["ftl"]["p"]],
                 lambda f: PAPER_HP_H.get((w, f["h"]), "")),
                ("m (h = 3)", [r for r in hp if r["config"]["ftl"]["h"] == 3],
                 lambda f: PAPER_HP_M.get((w, f["p"] - f["m"]), ""))):
            key = sweep[0]
            rows.sort(key=lambda r: r["config"]["ftl"][key])
            t = Table([sweep, "secondary peak bytes", "% of BTS", "host pages to primary",
                       "IOPS", "÷ ideal", "LUN programs max ÷ mean", "paper"])
            for r in rows:
                m, f = r["result"], r["config"]["ftl"]
                warnings += check(r, m)
                bts = 8 * r["config"]["device"]["geometry"]["logical_pages"]
                peak = counter(m, "secondary_peak_bytes")
                t.add(f"{key} = {f[key]}" + (" (= p)" if key == "m" and f["m"] == f["p"] else ""),
                      num(peak), pct(peak / bts, 2), pct(1 - secondary_share(m), 2), num(m["iops"]),
                      pct(m["iops"] / ideal_iops), num(counter(m, "lun_programs_max_over_mean"), 3),
                      paper(f))
            s.text(f"**{w}**, {sweep} (ideal: {num(ideal_iops)} IOPS):")
            s.table(t)
    s.text("% of BTS = peak entries per logical page (8 B entries against an 8 B/LPN table). "
           "The paper's BTS counts 4 B per entry, so its shares are twice its entries per "
           "logical page; the paper column gives both. Paper Figs. 6-7: IOPS ≈ 93 % of PFTL and "
           "insensitive to h and m.")
    s.text(hp_gc_note(exp))
    return s


def fast_merges_section(exp, warnings):
    """The deck's FAST merge counts by kind, one row per workload."""
    s = Section("FAST merges by kind (lecture deck)")
    s.text(commands(exp))
    t = Table(["workload", "page writes", "switch", "partial", "full", "data blocks / full",
               "copies / page write", "erases", "padding", "WAF", "write IOPS"])
    for run in exp["runs"]:
        for r in run["reports"]:
            m = r["result"]
            warnings += check(r, m)
            c = lambda k: counter(m, k) or 0  # noqa: E731
            full = c("full_merges")
            copies = c("partial_copies") + c("full_copies")
            t.add(run["label"], num(m["page_writes"]), num(c("switch_merges")),
                  num(c("partial_merges")), num(full),
                  num(c("full_merge_data_blocks") / full, 1) if full else "–",
                  num(copies / m["page_writes"], 2) if m["page_writes"] else "–",
                  num(c("switch_erases") + c("partial_erases") + c("full_erases")),
                  num(c("pad_pages")), num(m["waf"], 2), num(m["iops"]))
    s.table(t)
    s.text("Counted over the measured phase (after a sequential fill, which is switch merges "
           "only). Full = random log blocks reclaimed; data blocks / full = logical blocks each "
           "rebuilt (the deck: 20-60 % of FAST's full merges involve more than 20).")
    return s


def extra_ops(m):
    """Flash reads and programs per request beyond the host's own pages (translation, GC)."""
    reads, progs = m["flash"]["reads"], m["flash"]["programs"]
    req = sum(m["requests"].values()) or 1
    return ((reads["total"] - reads["user"] - reads["gc_data"]) / req,
            (progs["translation_writeback"] + progs["gc_translation"]) / req)


def mu_translation_section(exp, warnings):
    """μ-FTL's address-translation overhead against DFTL's at the same DRAM."""
    s = Section("μ-FTL address-translation overhead against DFTL (lecture deck)")
    s.text(commands(exp))
    t = Table(["workload", "FTL", "IOPS", "extra reads / request", "extra programs / request",
               "single/double/triple", "node reads / lookup", "tree height", "extents",
               "DRAM KiB", "WAF"])
    for run in exp["runs"]:
        for r in by_ftl(run["reports"]):
            m = r["result"]
            warnings += check(r, m)
            rd, pg = extra_ops(m)
            mu = r["ftl"] == "mu-ftl"
            t.add(run["label"], r["ftl"], num(m["iops"]), num(rd, 3), num(pg, 3),
                  lookup_split(m) if m["page_reads"] else "–",
                  num(counter(m, "node_reads_per_lookup"), 3) if mu else "",
                  num(counter(m, "tree_height")) if mu else "",
                  num(counter(m, "extents")) if mu else "",
                  num(m["dram_bytes"]["total"] / 1024, 1), num(m["waf"], 2) if m["page_writes"]
                  else "–")
    s.table(t)
    s.text("Extra reads = all flash reads but the host's and GC's data reads (translation "
           "and bitmap pages, tree nodes, including those GC needs); extra programs = "
           "translation, tree-node and bitmap pages programmed; both per request of the "
           "measured phase.")
    return s


def dram_section(exp, warnings):
    """The deck's RAM-usage table: mapping DRAM by part for every FTL."""
    s = Section("Mapping DRAM of every FTL (lecture deck's RAM-usage table)")
    s.text(commands(exp))
    t = Table(["FTL", "DRAM KiB", "peak KiB", "budget KiB", "parts (KiB)"])
    for r in by_ftl(exp["runs"][0]["reports"]):
        m = r["result"]
        warnings += check(r, m)
        d = dict(m["dram_bytes"])
        total, peak, budget = d.pop("total"), d.pop("peak", None), d.pop("budget", None)
        parts = ", ".join(f"{k} {v / 1024:,.1f}" for k, v in d.items())
        t.add(r["ftl"], num(total / 1024, 1), num(peak / 1024, 1) if peak else "–",
              num(budget / 1024, 1) if budget else "–", parts)
    s.table(t)
    return s


def links_section():
    s = Section("Covered by the FTLs' own pages")
    hp = "docs/ftls/hpftl.md"
    s.text("* HP-FTL's paper (Figs. 2, 4-7: throughput against DRAM table size, secondary table "
           "size for h and m): the `hpftl-fig2` and `hpftl-secondary` sections above; setup and "
           f"causes of the differences in [{hp}](../../{hp}#paper-experiments).\n"
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
                     ("traces", traces_section), ("hpftl-fig2", hpftl_fig2_section),
                     ("hpftl-secondary", hpftl_secondary_section),
                     ("fast-merges", fast_merges_section),
                     ("mu-translation", mu_translation_section), ("dram", dram_section)):
        exp = load(results, name)
        if exp:
            sections.append(fn(exp, warnings))
    sections.append(links_section())
    if not sections[:-1]:
        sys.exit(f"no results in {results} (run scripts/reproduce.sh first)")

    # The setup, from the first report's effective configuration.
    first = next(load(results, n) for n in ("randread", "seqread", "seqread-shared", "randwrite",
                                            "seqwrite", "tpftl-threads", "cmt-sweep", "traces",
                                            "hpftl-fig2", "hpftl-secondary", "fast-merges",
                                            "mu-translation", "dram") if load(results, n))
    # FAST has no line GC rule: take the setup from a report of an FTL that has one.
    cfgs = [r["config"] for run in first["runs"] for r in run["reports"]]
    cfg = next((c for c in cfgs if "gc" in c["ftl"]), cfgs[0])
    settle_cfg = cfg.get("settle", "off")
    if isinstance(settle_cfg, dict):
        settle_cfg = f"{settle_cfg['for'] / 1e6:g} ms"
    gc_rule = cfg["ftl"]["gc"]["rule"] if "gc" in cfg["ftl"] else "none (FAST merges)"
    setup = (f"timing={cfg['device']['timing']['mode']}, gc={gc_rule}, "
             f"settle {settle_cfg}")
    head = (f"# Reproduction summary ({first['preset']} preset; {setup})\n\n"
            f"Generated by scripts/summarise.py from "
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
    """Bundle the runs of one experiment (NNN.meta + NNN.json from reproduce.sh). A run the CLI
    refused has a fourth meta line, its error, and no JSON: it is kept with `error` and no
    reports."""
    runs = []
    for name in sorted(os.listdir(runs_dir)):
        if not name.endswith(".meta"):
            continue
        base = os.path.join(runs_dir, name[:-5])
        with open(base + ".meta") as f:
            label, command, ms, *rest = f.read().splitlines()
        run = {"label": label, "command": command, "wall_seconds": int(ms) / 1000}
        if rest and rest[0]:
            run.update(error=rest[0], reports=[])
        else:
            with open(base + ".json") as f:
                reports = json.load(f)
            run["reports"] = reports if isinstance(reports, list) else [reports]
        runs.append(run)
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
