//! Aligned plain-text tables: text columns left-aligned, numbers right-aligned.

/// A table of strings.
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Every column left-aligned, numbers too (for columns that mix numbers and words).
    left: bool,
}

/// Whether a cell is a number, or the dash of a figure that does not apply, which stands in a
/// column of numbers.
fn numeric(s: &str) -> bool {
    let s = s.trim_end_matches('%');
    s == super::columns::NOT_APPLICABLE || (!s.is_empty() && s.parse::<f64>().is_ok())
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            left: false,
        }
    }

    /// Aligns every column left, numbers too.
    pub fn left_aligned(mut self) -> Table {
        self.left = true;
        self
    }

    /// Adds a row (missing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, columns separated by two spaces.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let width = |c: usize| -> usize {
            self.rows
                .iter()
                .filter_map(|r| r.get(c))
                .chain(std::iter::once(&self.headers[c]))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..n).map(width).collect();
        let mut out = String::new();
        let mut line = |cells: &[String], header: bool| {
            let mut l = String::new();
            for (c, w) in widths.iter().enumerate() {
                let cell = cells.get(c).map(String::as_str).unwrap_or("");
                let pad = w - cell.chars().count();
                if c > 0 {
                    l.push_str("  ");
                }
                if c > 0 && !self.left && (header || numeric(cell)) {
                    l.extend(std::iter::repeat_n(' ', pad));
                    l.push_str(cell);
                } else {
                    l.push_str(cell);
                    l.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(&self.headers, true);
        for r in &self.rows {
            line(r, false);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&["ftl", "IOPS"]);
        t.row(vec!["ideal".into(), "123456".into()]);
        t.row(vec!["dftl".into(), "99".into()]);
        assert_eq!(t.render(), "ftl      IOPS\nideal  123456\ndftl       99\n");
    }
}
