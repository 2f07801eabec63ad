#!/usr/bin/env python3
"""Random-read IOPS against mapping DRAM: a sweep of cmt_ratio x FTL on the tiny preset.

Every point preconditions the device with random 512 KiB writes of twice its capacity, then
measures 4 KiB random reads with 16 jobs. Writes the table as CSV and, if matplotlib is
installed, a plot of IOPS against the DRAM each FTL reports for its mapping (SVG).

    python examples/sweep_cmt.py [--backend ray|local] [--out-dir docs]
"""

import argparse
import importlib.util
import pathlib

import learnedftl

FTLS = ["dftl", "tpftl", "sftl", "leaftl", "learnedftl"]
CMT_RATIOS = [0.01, 0.02, 0.05, 0.1, 0.2]
BASE = dict(preset="tiny", precondition="randwrite:512k:2", rw="randread", bs="4k",
            numjobs=16, number_ios=1000, seed=1)
# The columns worth keeping in the docs (the sweep has every scalar of the result).
COLUMNS = ["ftl", "cmt_ratio", "dram_bytes.total", "iops", "latency_us.read.mean",
           "latency_us.read.p99", "cmt_hit_ratio", "model_hit_ratio", "page_reads", "error"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    have_ray = importlib.util.find_spec("ray") is not None
    ap.add_argument("--backend", choices=["ray", "local"], default="ray" if have_ray else "local")
    ap.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("."))
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)

    df = learnedftl.sweep({"ftl": FTLS, "cmt_ratio": CMT_RATIOS}, BASE, backend=args.backend)
    failed = df[df["error"].notna()]
    if len(failed):
        print("failed points:\n" + failed[["ftl", "cmt_ratio", "error"]].to_string())
    df = df[COLUMNS]
    csv = args.out_dir / "sweep_cmt.csv"
    df.to_csv(csv, index=False)
    print(f"wrote {csv}")
    print(df.drop(columns="error").to_string(index=False))

    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: CSV only")
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # A fixed hash salt keeps the SVG identical from run to run.
    plt.rcParams["svg.hashsalt"] = "learnedftl"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for ftl, g in df[df["error"].isna()].groupby("ftl", sort=False):
        ax.plot(g["dram_bytes.total"] / 1024, g["iops"] / 1000, marker="o", label=ftl)
    ax.set_xscale("log")
    ax.set_xlabel("mapping DRAM (KiB, log scale)")
    ax.set_ylabel("4 KiB random-read IOPS (thousands)")
    ax.set_title(f"cmt_ratio {CMT_RATIOS[0]}..{CMT_RATIOS[-1]}, preset {BASE['preset']}, "
                 f"{BASE['numjobs']} jobs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    svg = args.out_dir / "sweep_cmt.svg"
    fig.savefig(svg, metadata={"Date": None})
    print(f"wrote {svg}")


if __name__ == "__main__":
    main()
