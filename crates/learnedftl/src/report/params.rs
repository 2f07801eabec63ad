//! The `--set` keys of the device and the FTLs as a table for people (`learnedftl params`).

use super::Table;
use crate::ftl::keys::Listing;
use crate::ftl::FTLS;

/// The listing for people: a title, then per group a line saying what it is (and which FTLs
/// take it, when listing every FTL) and a table of key, default, unit and meaning.
pub fn params_table(l: &Listing) -> String {
    let whose = match &l.ftl {
        Some(f) => format!("of {f}"),
        None => "of every FTL".to_string(),
    };
    let mut out = format!(
        "--set KEY=VALUE keys {whose} and the device, with their defaults on the {} preset \
         (--preset to change)\n",
        l.preset
    );
    for g in &l.groups {
        out += &format!("\n{}: {}", g.group, g.about);
        if l.ftl.is_none() {
            let all = g.ftls.len() == FTLS.len();
            out += &if all {
                " (every FTL)".to_string()
            } else {
                format!(" ({})", g.ftls.join(", "))
            };
        }
        out += "\n";
        let mut t = Table::new(&["  key", "default", "unit", "meaning"]).left_aligned();
        for k in &g.keys {
            let mut default = k.default.clone().unwrap_or_else(|| "–".to_string());
            if !k.default_for.is_empty() {
                let others: Vec<String> = k
                    .default_for
                    .iter()
                    .map(|(f, d)| format!("{f} {}", d.as_deref().unwrap_or("–")))
                    .collect();
                default += &format!(" ({})", others.join(", "));
            }
            let meaning = match k.only_with {
                Some(s) => format!("{} (only with {s})", k.meaning),
                None => k.meaning.to_string(),
            };
            t.row(vec![
                format!("  {}", k.key),
                default,
                k.unit.to_string(),
                meaning,
            ]);
        }
        out += &t.render();
    }
    out
}
