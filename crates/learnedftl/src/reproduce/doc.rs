//! The report as a document: sections of text, tables and charts, rendered as Markdown (charts
//! as linked SVG files) and as one self-contained HTML page (charts inline, the plot font
//! embedded as an `@font-face` data URI; nothing is fetched).

use crate::report::plot::{escape, Chart, PlotError, FONT_FAMILY, FONT_TTF};
use base64::Engine;

/// A table of text cells.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Column headers.
    pub head: Vec<String>,
    /// Rows, as many cells as headers.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers.
    pub fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|h| h.to_string()).collect(),
            rows: vec![],
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn markdown(&self) -> String {
        let line = |cells: &[String]| {
            format!(
                "| {} |",
                cells
                    .iter()
                    .map(|c| c.replace('|', "\\|"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            )
        };
        let mut out = vec![
            line(&self.head),
            format!("|{}", "---|".repeat(self.head.len())),
        ];
        out.extend(self.rows.iter().map(|r| line(r)));
        out.join("\n")
    }

    fn html(&self) -> String {
        let cells = |tag: &str, cells: &[String]| {
            cells
                .iter()
                .map(|c| {
                    // A number (with its unit or ratio sign) is never broken over lines.
                    let numeric = c.chars().any(|ch| ch.is_ascii_digit())
                        && c.chars()
                            .all(|ch| ch.is_ascii_digit() || " .,%×/+-–".contains(ch));
                    let class = if numeric { " class=\"n\"" } else { "" };
                    format!("<{tag}{class}>{}</{tag}>", inline(c))
                })
                .collect::<String>()
        };
        let mut s = format!(
            "<table><thead><tr>{}</tr></thead><tbody>",
            cells("th", &self.head)
        );
        for r in &self.rows {
            s += &format!("<tr>{}</tr>", cells("td", r));
        }
        s + "</tbody></table>"
    }
}

/// A piece of a section.
#[derive(Clone, Debug)]
pub enum Block {
    /// A paragraph (Markdown inline syntax: `code`, **bold**; lines starting "* " are a list).
    Text(String),
    /// Preformatted lines (commands).
    Code(String),
    /// A table.
    Table(Table),
    /// A chart.
    Chart(Chart),
}

/// One experiment's part of the report.
#[derive(Clone, Debug)]
pub struct Section {
    /// Anchor and file-name stem (the experiment's name).
    pub id: String,
    /// Heading.
    pub title: String,
    /// Contents in order.
    pub blocks: Vec<Block>,
}

impl Section {
    /// An empty section.
    pub fn new(id: &str, title: &str) -> Section {
        Section {
            id: id.to_string(),
            title: title.to_string(),
            blocks: vec![],
        }
    }

    /// Adds a paragraph.
    pub fn text(&mut self, s: impl Into<String>) {
        self.blocks.push(Block::Text(s.into()));
    }

    /// Adds a table.
    pub fn table(&mut self, t: Table) {
        self.blocks.push(Block::Table(t));
    }

    /// Adds a chart.
    pub fn chart(&mut self, c: Chart) {
        self.blocks.push(Block::Chart(c));
    }

    /// Adds preformatted lines.
    pub fn code(&mut self, s: impl Into<String>) {
        self.blocks.push(Block::Code(s.into()));
    }
}

/// The whole report.
#[derive(Clone, Debug)]
pub struct Document {
    /// Heading.
    pub title: String,
    /// Paragraphs under the heading.
    pub intro: Vec<String>,
    /// The sections.
    pub sections: Vec<Section>,
}

impl Document {
    /// Every chart with its file name (`<section>-<n>.svg`), in document order.
    pub fn charts(&self) -> Vec<(String, &Chart)> {
        let mut out = vec![];
        for s in &self.sections {
            let mut n = 0;
            for b in &s.blocks {
                if let Block::Chart(c) = b {
                    n += 1;
                    out.push((format!("{}-{n}.svg", s.id), c));
                }
            }
        }
        out
    }

    /// Markdown; charts are images at `plots/<file>`.
    pub fn markdown(&self) -> String {
        let mut out = format!("# {}\n\n", self.title);
        for p in &self.intro {
            out += &format!("{p}\n\n");
        }
        let names = self.charts();
        let mut chart = names.iter();
        for s in &self.sections {
            out += &format!("## {}\n\n", s.title);
            for b in &s.blocks {
                match b {
                    Block::Text(t) => out += &format!("{t}\n\n"),
                    Block::Code(c) => out += &format!("```\n{c}\n```\n\n"),
                    Block::Table(t) => out += &format!("{}\n\n", t.markdown()),
                    Block::Chart(c) => {
                        let (file, _) = chart.next().expect("one name per chart");
                        out += &format!("![{}](plots/{file})\n\n", c.title);
                    }
                }
            }
        }
        out
    }

    /// One HTML page with every chart inline and the font embedded.
    pub fn html(&self) -> Result<String, PlotError> {
        let font = base64::engine::general_purpose::STANDARD.encode(FONT_TTF);
        let charts = self.charts();
        let mut body = format!("<h1>{}</h1>\n", escape(&self.title));
        for p in &self.intro {
            body += &paragraph(p);
        }
        body += "<nav><ul>";
        for s in &self.sections {
            body += &format!("<li><a href=\"#{}\">{}</a></li>", s.id, inline(&s.title));
        }
        body += "</ul></nav>\n";
        let mut chart = charts.iter();
        for s in &self.sections {
            body += &format!("<section id=\"{}\"><h2>{}</h2>\n", s.id, inline(&s.title));
            for b in &s.blocks {
                match b {
                    Block::Text(t) => body += &paragraph(t),
                    Block::Code(c) => body += &format!("<pre>{}</pre>\n", escape(c)),
                    Block::Table(t) => body += &format!("<div class=\"t\">{}</div>\n", t.html()),
                    Block::Chart(c) => {
                        let (file, _) = chart.next().expect("one name per chart");
                        body += &format!(
                            "<figure class=\"plot\" id=\"{}\">{}<figcaption>{}</figcaption></figure>\n",
                            file.trim_end_matches(".svg"),
                            c.svg()?,
                            escape(&c.title)
                        );
                    }
                }
            }
            body += "</section>\n";
        }
        Ok(format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>{title}</title>\n<style>\
             @font-face {{ font-family: \"{FONT_FAMILY}\"; src: url(data:font/ttf;base64,{font}) format(\"truetype\"); }}\n\
             body {{ font-family: \"{FONT_FAMILY}\", sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }}\n\
             table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }}\n\
             th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; }}\n\
             th:first-child, td:first-child {{ text-align: left; }} td.n {{ white-space: nowrap; }}\n\
             .t {{ overflow-x: auto; }} pre {{ background: #f6f6f6; padding: 0.5em; overflow-x: auto; font-size: 0.8em; }}\n\
             figure.plot {{ margin: 1em 0; overflow-x: auto; }} figcaption {{ font-size: 0.85em; color: #555; }}\n\
             </style></head>\n<body data-plots=\"{n}\">\n{body}</body></html>\n",
            title = escape(&self.title),
            n = charts.len(),
        ))
    }
}

/// Markdown inline `code` and **bold** as HTML, the rest escaped.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            out += &format!("<code>{}</code>", escape(part));
            continue;
        }
        for (j, p) in escape(part).split("**").enumerate() {
            if j % 2 == 1 {
                out += &format!("<b>{p}</b>");
            } else {
                out += p;
            }
        }
    }
    out
}

/// A paragraph, or a list where its lines start with "* ".
fn paragraph(p: &str) -> String {
    if p.starts_with("* ") {
        let items: Vec<String> = p
            .split("\n* ")
            .map(|i| format!("<li>{}</li>", inline(i.trim_start_matches("* "))))
            .collect();
        format!("<ul>{}</ul>\n", items.concat())
    } else {
        format!("<p>{}</p>\n", inline(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::{Kind, Series};

    fn doc() -> Document {
        let mut s = Section::new("randread", "Random <reads>");
        s.text("ours **1.9×** the `paper` value");
        s.text("* one\n* two");
        let mut t = Table::new(&["FTL", "IOPS"]);
        t.row(vec!["a|b".into(), "100.0 %".into()]);
        s.table(t);
        s.chart(Chart {
            title: "IOPS".into(),
            y_label: "IOPS".into(),
            categories: vec!["dftl".into()],
            series: vec![Series {
                name: "ours".into(),
                values: vec![Some(1.0)],
            }],
            kind: Kind::Bars,
        });
        Document {
            title: "R".into(),
            intro: vec!["intro".into()],
            sections: vec![s],
        }
    }

    #[test]
    fn markdown_and_html_have_the_same_content() {
        let d = doc();
        let md = d.markdown();
        assert!(
            md.contains("## Random <reads>") && md.contains("| a\\|b | 100.0 % |"),
            "{md}"
        );
        assert!(md.contains("![IOPS](plots/randread-1.svg)"), "{md}");
        let html = d.html().unwrap();
        assert!(html.contains("Random &lt;reads&gt;"));
        assert!(html.contains("<b>1.9×</b> the <code>paper</code>"));
        assert!(html.contains("<ul><li>one</li><li>two</li></ul>"), "{html}");
        // A number keeps to one line; text may wrap.
        assert!(
            html.contains("<td>a|b</td><td class=\"n\">100.0 %</td>"),
            "{html}"
        );
        assert!(html.contains("<figure class=\"plot\" id=\"randread-1\"><svg"));
        assert!(html.contains("data-plots=\"1\"") && html.contains("@font-face"));
        // Nothing is fetched from elsewhere.
        assert!(!html.contains("src=\"http") && !html.contains("url(http"));
    }
}
