//! What `driver --results DIR` writes: a section of `DIR/RESULTS.md` (machine, load, commit and
//! the run's tables, newest first) and two SVG charts it draws itself (requests per second and
//! p99 latency per cell: ours, rmcp and, with `--floor true`, the floor and the runtime floor) in
//! `DIR/charts/`.

use std::fmt::Write as _;
use std::path::Path;

/// One bar group of the charts: a cell and each server's figure.
pub struct ChartRow {
    pub label: String,
    /// `(server, requests per second, p99 µs)`, in the order drawn.
    pub bars: Vec<(&'static str, f64, f64)>,
}

const COLOURS: [(&str, &str); 8] = [
    ("ours", "#2b6cb0"),
    ("rmcp", "#c05621"),
    ("floor", "#718096"),
    ("runtime floor", "#b7c3d0"),
    // The gateway cell: `ours` called directly, and through each front.
    ("direct", "#2b6cb0"),
    ("mcp-gateway", "#2f855a"),
    ("mcp-proxy", "#c05621"),
    ("proxy floor", "#718096"),
];

/// A horizontal bar chart of `value(bar)` for every row, one colour per server, each row scaled
/// to its own largest figure (the figures are written beside the bars).
pub fn bar_chart(title: &str, rows: &[ChartRow], value: impl Fn(&(&'static str, f64, f64)) -> f64) -> String {
    let (left, bar_width, bar_height, gap, top) = (190.0, 460.0, 14.0, 12.0, 56.0);
    let group = |bars: usize| bars as f64 * bar_height + gap;
    let height = top + rows.iter().map(|r| group(r.bars.len())).sum::<f64>() + 10.0;
    let width = left + bar_width + 110.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(svg, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = write!(svg, r#"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"#, escape(title));
    let mut x = 10.0;
    for (name, colour) in COLOURS {
        if rows.iter().any(|r| r.bars.iter().any(|b| b.0 == name)) {
            let _ = write!(svg, r#"<rect x="{x}" y="32" width="12" height="12" fill="{colour}"/>"#);
            let _ = write!(svg, r#"<text x="{}" y="42">{name}</text>"#, x + 16.0);
            x += 30.0 + 7.0 * name.len() as f64;
        }
    }
    let mut y = top;
    for row in rows {
        // Each cell on its own scale: its bars compare the servers, and cells differ by orders of
        // magnitude (one client against fifty).
        let max = row.bars.iter().map(&value).filter(|v| v.is_finite()).fold(0.0_f64, f64::max);
        let scale = if max > 0.0 { bar_width / max } else { 0.0 };
        let middle = y + row.bars.len() as f64 * bar_height / 2.0 + 4.0;
        let _ = write!(svg, r#"<text x="{}" y="{middle}" text-anchor="end">{}</text>"#, left - 8.0, escape(&row.label));
        for (i, bar) in row.bars.iter().enumerate() {
            let colour = COLOURS.iter().find(|(name, _)| *name == bar.0).map_or("#000000", |(_, c)| c);
            let figure = value(bar);
            let length = if figure.is_finite() { figure * scale } else { 0.0 };
            let bar_y = y + i as f64 * bar_height;
            let _ = write!(
                svg,
                r#"<rect x="{left}" y="{bar_y}" width="{length:.1}" height="{}" fill="{colour}"/>"#,
                bar_height - 2.0
            );
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="11">{:.0}</text>"#,
                left + length + 4.0,
                bar_y + bar_height - 4.0,
                figure
            );
        }
        y += group(row.bars.len());
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The machine, as `/proc` describes it: CPU model, CPUs the driver may use, memory, kernel.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|rest| rest.split(':').nth(1)))
        .map_or("unknown CPU".to_owned(), |m| m.trim().to_owned());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next().and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or("?".to_owned(), |kib| format!("{:.0} GiB", kib as f64 / 1024.0 / 1024.0));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{model}, {cpus} CPUs, {memory} memory, Linux {}", kernel.trim())
}

/// The checkout's commit (`git rev-parse --short HEAD`), marked `-dirty` when the tree has changes.
pub fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty { format!("{head}-dirty") } else { head }
}

/// Writes the charts of `rows` and inserts a section (`heading`, `body`, links to the charts)
/// into `dir/RESULTS.md`, before the newest section already there.
pub fn write(dir: &Path, heading: &str, body: &str, rows: &[ChartRow], stem: &str) -> std::io::Result<()> {
    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts)?;
    let mut links = String::new();
    if !rows.is_empty() {
        let rps = format!("{stem}-rps.svg");
        let p99 = format!("{stem}-p99.svg");
        let rps_title = "Requests per second (higher is better; each cell on its own scale)";
        let p99_title = "p99 latency, µs (lower is better; each cell on its own scale)";
        std::fs::write(charts.join(&rps), bar_chart(rps_title, rows, |b| b.1))?;
        std::fs::write(charts.join(&p99), bar_chart(p99_title, rows, |b| b.2))?;
        links = format!("![requests per second](charts/{rps})\n![p99 latency](charts/{p99})\n\n");
    }
    let section = format!("## {heading}\n\n{links}{body}\n");
    let path = dir.join("RESULTS.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_else(|_| "# Peer benchmark results\n\n".to_owned());
    let at = existing.find("\n## ").map_or(existing.len(), |i| i + 1);
    std::fs::write(&path, format!("{}{section}\n{}", &existing[..at], &existing[at..]))
}
