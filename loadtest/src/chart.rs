//! Charts (SVG, so no fonts or system libraries are needed): latency by percentile for
//! every run and endpoint of a report, on the usual "nines" axis (50%, 90%, 99%,
//! 99.9%, …) and a logarithmic latency axis, so runs can be laid side by side; and p99
//! second by second. recruitd's lines are solid and any other system's (the PostgreSQL
//! baseline) dashed, so they stay apart in grey scale and for readers who cannot tell
//! the hues apart.

use crate::report::{decode_histogram, RunReport};
use anyhow::anyhow;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// The most lines on one chart (the busiest endpoints of each run are drawn).
const MAX_LINES: usize = 12;

/// One line of a chart.
struct Line {
    name: String,
    /// Drawn dashed: a run of another system than recruitd (the baseline).
    dashed: bool,
    points: Vec<(f64, f64)>,
}

impl Line {
    fn new(system: &str, name: String, points: Vec<(f64, f64)>) -> Line {
        Line {
            name,
            dashed: system != "recruitd",
            points,
        }
    }
}

fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-6).log10()
}

fn nines_label(x: &f64) -> String {
    match x.round() as i64 {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        3 => "99.9%".into(),
        4 => "99.99%".into(),
        5 => "99.999%".into(),
        6 => "99.9999%".into(),
        _ => String::new(),
    }
}

/// Writes `<out>/<name>.svg` (percentiles) and, when a run has a timeline of at least
/// two seconds, `<out>/<name>-timeline.svg`; returns the paths written.
pub fn write(name: &str, runs: &[RunReport], out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut series: Vec<Line> = Vec::new();
    // The percentile axis goes as far as the samples resolve (1,000 samples: 99.9%).
    let most = runs
        .iter()
        .flat_map(|r| r.endpoints.iter().map(|e| e.ok + e.mismatches))
        .max()
        .unwrap_or(1);
    let xmax = (most.max(100) as f64).log10().ceil().min(6.0);
    for r in runs {
        let mut eps: Vec<_> = r
            .endpoints
            .iter()
            .filter(|e| e.ok + e.mismatches > 0)
            .collect();
        eps.sort_by_key(|e| std::cmp::Reverse(e.requests));
        let per_run = (MAX_LINES / runs.len().max(1)).max(1);
        for e in eps.into_iter().take(per_run) {
            let h = decode_histogram(&e.histogram)?;
            if h.is_empty() {
                continue;
            }
            let mut pts: Vec<(f64, f64)> = h
                .iter_quantiles(2)
                .map(|v| {
                    (
                        nines(v.quantile_iterated_to()),
                        v.value_iterated_to() as f64 / 1e3,
                    )
                })
                .filter(|(x, _)| x.is_finite())
                .map(|(x, y)| (x.min(xmax), y))
                .collect();
            pts.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-4);
            let name = format!("{} {}: {}", r.system, r.workload, e.name);
            series.push(Line::new(&r.system, name, pts));
        }
    }
    let mut written = Vec::new();
    if series.is_empty() {
        return Ok(written);
    }
    std::fs::create_dir_all(out)?;
    let path = out.join(format!("{name}.svg"));
    {
        let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        // The scale starts at the lowest first-percentile value: a few instant answers
        // (the baseline answers too-short numbers without a query) must not squash it.
        let ymin = series
            .iter()
            .filter_map(|s| s.points.iter().find(|p| p.0 >= nines(0.01)).map(|p| p.1))
            .fold(f64::INFINITY, f64::min)
            .max(0.001)
            * 0.8;
        let ymax = ys.fold(0.0, f64::max).max(ymin * 10.0) * 1.25;
        draw_lines(
            &path,
            &Axes {
                caption: format!("{name}: latency by percentile"),
                size: (1100, 650),
                x: 0f64..xmax,
                y: ymin..ymax,
                x_desc: "percentile",
                y_desc: "latency (ms)",
                x_labels: Some((xmax as usize + 1, nines_label)),
                legend: SeriesLabelPosition::UpperLeft,
            },
            &series,
        )?;
    }
    written.push(path);
    // Two seconds make a line; a short run gets its chart too.
    let timelines: Vec<_> = runs.iter().filter(|r| r.timeline.len() >= 2).collect();
    if !timelines.is_empty() {
        let path = out.join(format!("{name}-timeline.svg"));
        let tmax = timelines
            .iter()
            .flat_map(|r| r.timeline.iter().map(|t| t.t))
            .fold(1.0, f64::max);
        // Logarithmic, so a flat sub-millisecond line stays readable next to spikes.
        let p99s = timelines
            .iter()
            .flat_map(|r| r.timeline.iter().map(|t| t.p99_us as f64 / 1e3));
        let ymax = p99s.clone().fold(0.01, f64::max) * 1.5;
        let ymin = p99s
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min)
            .min(ymax / 10.0)
            * 0.8;
        let lines: Vec<Line> = timelines
            .iter()
            .map(|r| {
                let pts = r.timeline.iter().map(|t| (t.t, t.p99_us as f64 / 1e3));
                let name = format!("{} {}", r.system, r.workload);
                Line::new(&r.system, name, pts.collect())
            })
            .collect();
        draw_lines(
            &path,
            &Axes {
                caption: format!("{name}: p99 latency, second by second"),
                size: (1100, 500),
                x: 0f64..tmax,
                y: ymin..ymax,
                x_desc: "seconds into the measured window",
                y_desc: "p99 (ms)",
                x_labels: None,
                legend: SeriesLabelPosition::UpperRight,
            },
            &lines,
        )?;
        written.push(path.clone());
    }
    Ok(written)
}

/// Writes an axis value as a label.
type LabelFormatter = fn(&f64) -> String;

/// The frame of one chart: a linear x axis and a logarithmic latency axis.
struct Axes<'a> {
    caption: String,
    size: (u32, u32),
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_desc: &'a str,
    y_desc: &'a str,
    /// How many x labels, and how to write them (the default numbers otherwise).
    x_labels: Option<(usize, LabelFormatter)>,
    legend: SeriesLabelPosition,
}

/// Writes `series` as lines with a legend to the SVG file `path`; values below the axis
/// are drawn on it.
fn draw_lines(path: &Path, axes: &Axes, series: &[Line]) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, axes.size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    // The right margin leaves room for the last x label, centred on the axis's end
    // ("99.999%" would be cut off by a narrow one).
    let mut chart = ChartBuilder::on(&root)
        .caption(&axes.caption, ("sans-serif", 20))
        .margin(15)
        .margin_right(45)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(axes.x.clone(), axes.y.clone().log_scale())
        .map_err(|e| anyhow!("{e}"))?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .y_label_formatter(&|y| format!("{y}"));
    if let Some((n, label)) = &axes.x_labels {
        mesh.x_labels(*n).x_label_formatter(label);
    }
    mesh.draw().map_err(|e| anyhow!("{e}"))?;
    let floor = axes.y.start;
    for (i, line) in series.iter().enumerate() {
        let style = Palette99::pick(i).to_rgba().stroke_width(2);
        let points = line.points.iter().map(move |&(x, y)| (x, y.max(floor)));
        let drawn = if line.dashed {
            chart.draw_series(DashedLineSeries::new(points, 8, 5, style))
        } else {
            chart.draw_series(LineSeries::new(points, style))
        };
        let dashed = line.dashed;
        drawn.map_err(|e| anyhow!("{e}"))?.label(&line.name).legend(
            move |(x, y)| -> DynElement<'static, SVGBackend, (i32, i32)> {
                let ends = vec![(x, y), (x + 20, y)];
                match dashed {
                    true => plotters::element::DashedPathElement::new(ends, 5, 3, style).into_dyn(),
                    false => PathElement::new(ends, style).into_dyn(),
                }
            },
        );
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(axes.legend.clone())
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `system` with `samples` latencies (µs) and a timeline of `seconds`.
    fn run(system: &str, samples: u64, seconds: usize) -> RunReport {
        let mut h = crate::stats::histogram();
        for i in 0..samples {
            h.record(100 + i % 1_000).unwrap();
        }
        let endpoint = serde_json::json!({
            "name": "GET /v1/search/phone", "requests": samples, "ok": samples, "errors": 0,
            "errors_by_kind": {}, "error_examples": [], "mismatches": 0,
            "mismatch_examples": [], "rate": 1.0,
            "latency_us": {"p50": 1, "p90": 1, "p99": 1, "p999": 1, "max": 1, "mean": 1.0},
            "records": 0, "records_per_s": 0.0,
            "histogram": crate::report::encode_histogram(&h),
        });
        let ticks: Vec<_> = (0..seconds)
            .map(|t| {
                serde_json::json!({"t": t as f64 + 1.0, "requests": 10, "errors": 0,
                    "p50_us": 100, "p99_us": 200 + t as u64, "max_us": 300})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "system": system, "workload": "lookup", "load": null, "duration_s": 10.0,
            "warmup_s": 0.0, "target_rate": null, "achieved_rate": 1.0,
            "total": endpoint, "endpoints": [endpoint], "sync": null, "rounds": [],
            "timeline": ticks, "schedule_lag_us": null, "abandoned": 0,
        }))
        .unwrap()
    }

    fn svg(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    /// Each text element: its x position, font size (px) and text.
    fn texts(svg: &str) -> Vec<(f64, f64, String)> {
        let attr = |t: &str, name: &str| -> Option<f64> {
            t.split(&format!(" {name}=\""))
                .nth(1)?
                .split('"')
                .next()?
                .parse()
                .ok()
        };
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let text = t.split('>').nth(1)?.split('<').next()?.trim().to_string();
                Some((attr(t, "x")?, attr(t, "font-size")?, text))
            })
            .collect()
    }

    #[test]
    fn short_runs_get_a_timeline() {
        let dir = tempfile::tempdir().unwrap();
        let written = write("short", &[run("recruitd", 1_000, 3)], dir.path()).unwrap();
        assert_eq!(written.len(), 2, "{written:?}");
        assert!(svg(&written[1]).contains("second by second"));
    }

    #[test]
    fn the_baseline_is_dashed_and_recruitd_solid() {
        let dir = tempfile::tempdir().unwrap();
        let alone = write("alone", &[run("recruitd", 1_000, 3)], dir.path()).unwrap();
        let both = write(
            "both",
            &[run("recruitd", 1_000, 3), run("postgresql", 1_000, 3)],
            dir.path(),
        )
        .unwrap();
        for (a, b) in alone.iter().zip(&both) {
            let (a, b) = (svg(a), svg(b));
            let lines = |s: &str| s.matches("<polyline").count() + s.matches("<line").count();
            // Solid: one polyline and one legend mark more at most; dashed: many pieces.
            assert!(
                lines(&b) > lines(&a) + 10,
                "the baseline is drawn dashed: {} against {}",
                lines(&b),
                lines(&a)
            );
        }
    }

    #[test]
    fn the_last_percentile_label_fits() {
        let dir = tempfile::tempdir().unwrap();
        let written = write("nines", &[run("recruitd", 200_000, 3)], dir.path()).unwrap();
        let text = svg(&written[0]);
        let width: f64 = text
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        let (x, font_px, label) = texts(&text)
            .into_iter()
            .filter(|(_, _, t)| t.starts_with("99.99"))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap_or_else(|| panic!("the last percentile label: {:?}", texts(&text)));
        // Centred on its tick: half of its width to the right, at 0.6 em a character
        // (digits are 0.56 em in common sans-serif faces, "%" wider, "." narrower).
        let half = label.len() as f64 * 0.6 * font_px / 2.0;
        assert!(x + half <= width, "{label} at x={x} in a {width} px chart");
    }
}
