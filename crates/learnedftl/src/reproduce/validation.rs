//! Real-drive measurements the drive presets are validated against (issue 49;
//! docs/reproduction.md "Validation against a real drive"): 4 KiB random reads on a Samsung
//! 980 PRO 1 TB through SPDK and io_uring at queue depths 1–256 and 1–8 jobs, from the ICPE'24
//! storage-scheduler study's artifact (`crates/learnedftl/data/real-drives/README.md` gives the
//! source, licence and conditions), and the drive's datasheet points.

/// The measurements as shipped (CSV: `path,numjobs,iodepth,bs,iops,mean_us,p99_us`).
pub const SAMSUNG_980PRO_RANDREAD: &str =
    include_str!("../../data/real-drives/samsung-980pro-1tb-randread-4k.csv");

/// The validation's drive: the 980 PRO preset at this logical capacity (its random reads do
/// not depend on the size: docs/reproduction.md "Validation against a real drive").
pub const VALIDATION_CAPACITY: &str = "8GiB";

/// The run label of a measured point (the section finds its run by it).
pub fn validation_label(p: &Point) -> String {
    format!("{}, {} jobs, QD{}", p.path, p.numjobs, p.iodepth)
}

/// One measured point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Host path: `spdk` or `io_uring` (the `host_path` that models it).
    pub path: String,
    /// fio jobs.
    pub numjobs: u32,
    /// Requests in flight per job.
    pub iodepth: u32,
    /// Requests per second, summed over the jobs.
    pub iops: f64,
    /// fio's mean completion latency, µs.
    pub mean_us: f64,
    /// fio's 99th-percentile completion latency, µs.
    pub p99_us: f64,
}

/// The points of a measurement CSV; a malformed line is an error naming it.
pub fn points(csv: &str) -> Result<Vec<Point>, String> {
    let mut out = Vec::new();
    for (i, line) in csv.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != 7 {
            return Err(bad("expected 7 fields"));
        }
        let int = |s: &str| s.parse::<u32>().map_err(|_| bad("not a whole number"));
        let num = |s: &str| s.parse::<f64>().map_err(|_| bad("not a number"));
        if f[3] != "4k" {
            return Err(bad("only 4k reads are modelled"));
        }
        out.push(Point {
            path: f[0].to_string(),
            numjobs: int(f[1])?,
            iodepth: int(f[2])?,
            iops: num(f[4])?,
            mean_us: num(f[5])?,
            p99_us: num(f[6])?,
        });
    }
    Ok(out)
}

/// The shipped 980 PRO points.
pub fn samsung_980pro() -> Vec<Point> {
    points(SAMSUNG_980PRO_RANDREAD).expect("the shipped measurements parse")
}

/// A datasheet point: what Samsung publishes for the 980 PRO 1 TB, and the job that measures
/// it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DatasheetPoint {
    /// What it is.
    pub name: &'static str,
    /// fio `rw`.
    pub rw: &'static str,
    /// Block size.
    pub bs: &'static str,
    /// Jobs.
    pub numjobs: u32,
    /// Queue depth per job.
    pub iodepth: u32,
    /// The published value.
    pub value: f64,
    /// Its unit: `MB/s` (10⁶ B/s) or `IOPS`.
    pub unit: &'static str,
    /// Where it was published.
    pub source: &'static str,
}

/// The 980 PRO 1 TB datasheet's performance points (Samsung, "980 PRO NVMe SSD data sheet",
/// rev. 1.0, 2020; sequential writes and random writes are into Intelligent TurboWrite).
pub const DATASHEET_980PRO: [DatasheetPoint; 5] = [
    DatasheetPoint {
        name: "sequential read, 128 KiB, QD32",
        rw: "read",
        bs: "128k",
        numjobs: 1,
        iodepth: 32,
        value: 7000.0,
        unit: "MB/s",
        source: "Samsung 980 PRO data sheet (up to 7,000 MB/s)",
    },
    DatasheetPoint {
        name: "sequential write, 128 KiB, QD32",
        rw: "write",
        bs: "128k",
        numjobs: 1,
        iodepth: 32,
        value: 5000.0,
        unit: "MB/s",
        source: "Samsung 980 PRO data sheet (up to 5,000 MB/s, TurboWrite)",
    },
    DatasheetPoint {
        name: "random read, 4 KiB, QD32 × 16 jobs",
        rw: "randread",
        bs: "4k",
        numjobs: 16,
        iodepth: 32,
        value: 1_000_000.0,
        unit: "IOPS",
        source: "Samsung 980 PRO data sheet (up to 1,000 K IOPS)",
    },
    DatasheetPoint {
        name: "random write, 4 KiB, QD32 × 16 jobs",
        rw: "randwrite",
        bs: "4k",
        numjobs: 16,
        iodepth: 32,
        value: 1_000_000.0,
        unit: "IOPS",
        source: "Samsung 980 PRO data sheet (up to 1,000 K IOPS, TurboWrite)",
    },
    DatasheetPoint {
        name: "random read, 4 KiB, QD1",
        rw: "randread",
        bs: "4k",
        numjobs: 1,
        iodepth: 1,
        value: 22_000.0,
        unit: "IOPS",
        source: "Samsung 980 PRO data sheet (QD1 random read 22 K IOPS)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_measurements_parse() {
        let p = samsung_980pro();
        assert_eq!(p.len(), 54);
        assert_eq!(p.iter().filter(|p| p.path == "spdk").count(), 18);
        let first = &p[0];
        assert_eq!((first.numjobs, first.iodepth, first.iops), (1, 1, 14483.0));
    }

    #[test]
    fn a_malformed_line_is_named() {
        let e = points("h\nspdk,1,x,4k,1,2,3\n").unwrap_err();
        assert!(e.starts_with("line 2: not a whole number"), "{e}");
        let e = points("h\nspdk,1,1,8k,1,2,3\n").unwrap_err();
        assert!(e.contains("only 4k"), "{e}");
    }
}
