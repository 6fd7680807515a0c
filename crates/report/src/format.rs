//! How figures are written: four decimals, exact values, intervals, p-values, escaping for
//! Markdown and for JSON inside a script tag. A leaf module: every other module may use it.

/// Shortest text that reads back as the same f64 (for `data-*` attributes).
pub fn exact(v: f64) -> String {
    format!("{v}")
}

/// Four decimals, without a minus sign on a value that rounds to zero.
pub fn fmt4(v: f64) -> String {
    let s = format!("{v:.4}");
    if s == "-0.0000" { "0.0000".into() } else { s }
}

/// `[lo, hi]` with four decimals, or `n/a` when the interval is not available.
pub fn fmt_ci(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", fmt4(lo), fmt4(hi)),
        _ => "n/a".into(),
    }
}

/// What the `detectable` column of a table of differences means, in every format.
pub const DETECTABLE_NOTE: &str = "detectable: the smallest difference these items can show (two-sided 5%, power 0.8) at \
the observed spread of the differences: (1.96 + 0.84) · sd / √n over n shared items, and between two \
tag groups (1.96 + 0.84) · √(sd_a²/n_a + sd_b²/n_b); a smaller difference, significant or not, is below \
what the suite resolves; n/a under two items.";

/// A minimal detectable difference with four decimals, or `n/a` (under two items).
pub fn fmt_detectable(d: Option<f64>) -> String {
    d.map_or_else(|| "n/a".into(), fmt4)
}

/// A rank interval `lo–hi`, or `n/a` when the run's mean has no interval.
pub fn fmt_rank(lo: Option<usize>, hi: Option<usize>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
        _ => "n/a".into(),
    }
}

/// A p-value with four decimals, or `n/a`.
pub fn fmt_p(p: Option<f64>) -> String {
    p.map_or_else(|| "n/a".into(), |p| format!("{p:.4}"))
}

/// JSON text made safe inside an HTML `<script>` element: `<`, `>` and `&` (which JSON allows only
/// inside strings) become `\u003c`, `\u003e`, `\u0026`, so no `</script>` or `<!--` can appear, and
/// U+2028/U+2029 are escaped too. `JSON.parse` reads back the same value.
pub fn escape_script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

pub fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// An exact value as HTML carries it (`data-value`), empty when not available.
pub fn exact_or_empty(v: Option<f64>) -> String {
    v.map(exact).unwrap_or_default()
}

pub fn opt4(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), fmt4)
}

pub fn interval_text(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", fmt4(lo), fmt4(hi)),
        _ => "[n/a]".into(),
    }
}

pub fn opt_exact(v: Option<f64>) -> String {
    v.map(exact).unwrap_or_default()
}

/// `pct` of a confidence level as reports print it (`95`).
pub fn pct(confidence: f64) -> String {
    format!("{}", (confidence * 1000.0).round() / 10.0)
}
