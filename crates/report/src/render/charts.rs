//! Chart geometry for the HTML report, computed here so that the template only places shapes.
//! Every shape carries the exact numbers it shows (`data-*`), the same as the JSON leaderboard's.

use serde::Serialize;

use crate::compute::leaderboard::Leaderboard;
use crate::compute::stat::MetricStat;
use crate::format::{exact, fmt4};

/// A run's short key (`R1`, `R2`, ... in ranking order) and label.
#[derive(Clone, Debug, Serialize)]
pub struct RunKey {
    pub key: String,
    pub id: String,
    pub label: String,
}

/// The report order of runs: ranked runs by rank, then the others as listed.
pub fn run_order(lb: &Leaderboard) -> Vec<usize> {
    let mut order: Vec<usize> =
        lb.ranking.iter().map(|e| lb.runs.iter().position(|r| r.id == e.run).expect("ranked run")).collect();
    let rest: Vec<usize> = (0..lb.runs.len()).filter(|i| !order.contains(i)).collect();
    order.extend(rest);
    order
}

pub fn run_keys(lb: &Leaderboard) -> Vec<RunKey> {
    run_order(lb)
        .into_iter()
        .enumerate()
        .map(|(k, i)| RunKey { key: format!("R{}", k + 1), id: lb.runs[i].id.clone(), label: lb.runs[i].label.clone() })
        .collect()
}

#[derive(Serialize)]
pub struct Bar {
    pub key: String,
    pub run: String,
    pub label: String,
    pub y: f64,
    pub w: f64,
    pub x_lo: f64,
    pub x_hi: f64,
    pub mean: String,
    pub lo: String,
    pub hi: String,
    pub text: String,
    pub n: usize,
}

#[derive(Serialize)]
pub struct Tick {
    pub x: f64,
    pub label: String,
}

#[derive(Serialize)]
pub struct BarChart {
    pub group: String,
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub plot_width: f64,
    pub ticks: Vec<Tick>,
    pub bars: Vec<Bar>,
    /// Runs without a value in this group.
    pub missing: Vec<String>,
}

pub(crate) const BAR_H: f64 = 18.0;

pub(crate) const BAR_GAP: f64 = 6.0;

pub(crate) fn nice_max(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let step = 10f64.powf((max / 5.0).log10().floor());
    let mut top = step;
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        top = step * m * 5.0;
        if top >= max {
            break;
        }
    }
    top
}

/// One horizontal bar chart per non-task group (families, overall, sets) for `metric`: a bar per
/// run with its interval as a whisker.
pub fn family_bars(lb: &Leaderboard, metric: &str) -> Vec<BarChart> {
    let keys = run_keys(lb);
    let order = run_order(lb);
    let mut groups: Vec<String> = Vec::new();
    for r in &lb.runs {
        for g in r.groups.iter().filter(|g| g.kind != crate::compute::stat::GroupKind::Task) {
            if !groups.contains(&g.group) {
                groups.push(g.group.clone());
            }
        }
    }
    let rank = |g: &str| match g {
        "dialogue" => 0,
        "recollection" => 1,
        "itinerary" => 2,
        "overall" => 3,
        _ => 4,
    };
    groups.sort_by_key(|g| rank(g));
    let (left, plot_width) = (70.0, 560.0);
    groups
        .into_iter()
        .map(|group| {
            let stats: Vec<(usize, Option<MetricStat>)> = order
                .iter()
                .enumerate()
                .map(|(k, i)| (k, lb.runs[*i].group(&group).and_then(|g| g.metrics.get(metric)).copied()))
                .collect();
            let top = nice_max(
                stats.iter().filter_map(|(_, s)| s.map(|s| s.hi.unwrap_or(s.mean).max(s.mean))).fold(0.0, f64::max),
            );
            let x = |v: f64| left + plot_width * (v / top).clamp(0.0, 1.0);
            let mut bars = Vec::new();
            let mut missing = Vec::new();
            for (k, s) in stats {
                let key = &keys[k];
                match s {
                    Some(s) => {
                        let y = 10.0 + bars.len() as f64 * (BAR_H + BAR_GAP);
                        bars.push(Bar {
                            key: key.key.clone(),
                            run: key.id.clone(),
                            label: key.label.clone(),
                            y,
                            w: x(s.mean) - left,
                            // No interval (fewer than two items): no whisker, and "n/a" in the text.
                            x_lo: x(s.lo.unwrap_or(s.mean)),
                            x_hi: x(s.hi.unwrap_or(s.mean)),
                            mean: exact(s.mean),
                            lo: s.lo.map(exact).unwrap_or_default(),
                            hi: s.hi.map(exact).unwrap_or_default(),
                            text: format!("{} n={}", s.text(), s.n),
                            n: s.n,
                        })
                    }
                    None => missing.push(key.key.clone()),
                }
            }
            let plot_h = 10.0 + bars.len() as f64 * (BAR_H + BAR_GAP);
            let ticks = (0..=5)
                .map(|t| {
                    let v = top * t as f64 / 5.0;
                    Tick { x: x(v), label: format!("{}", (v * 1000.0).round() / 1000.0) }
                })
                .collect();
            BarChart {
                group,
                width: left + plot_width + 250.0,
                height: plot_h + 24.0,
                left,
                plot_width,
                ticks,
                bars,
                missing,
            }
        })
        .collect()
}

#[derive(Serialize)]
pub struct HeatCell {
    pub key: String,
    pub run: String,
    pub mean: Option<String>,
    pub text: String,
    pub title: String,
    pub color: String,
    pub dark: bool,
}

#[derive(Serialize)]
pub struct HeatRow {
    pub group: String,
    pub kind: String,
    pub cells: Vec<HeatCell>,
}

/// Rows of sub-tasks (then families, overall and sets) × columns of runs, coloured by `metric`
/// on a scale from the smallest to the largest value shown.
pub fn heat_map(lb: &Leaderboard, metric: &str) -> Vec<HeatRow> {
    let keys = run_keys(lb);
    let order = run_order(lb);
    let mut groups: Vec<(String, String)> = lb.tasks.iter().map(|(t, _)| (t.clone(), "task".to_string())).collect();
    for i in &order {
        for g in lb.runs[*i].groups.iter().filter(|g| g.kind != crate::compute::stat::GroupKind::Task) {
            if !groups.iter().any(|(n, _)| *n == g.group) {
                groups.push((g.group.clone(), serde_json::to_value(g.kind).unwrap().as_str().unwrap().to_string()));
            }
        }
    }
    let values: Vec<f64> =
        lb.runs.iter().flat_map(|r| r.groups.iter().filter_map(|g| g.metrics.get(metric).map(|s| s.mean))).collect();
    let (min, max) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    groups
        .into_iter()
        .map(|(group, kind)| {
            let cells = order
                .iter()
                .enumerate()
                .map(|(k, i)| {
                    let run = &lb.runs[*i];
                    match run.group(&group).and_then(|g| g.metrics.get(metric).map(|s| (g, s))) {
                        Some((g, s)) => {
                            let t = if max > min { (s.mean - min) / (max - min) } else { 0.5 };
                            // From a pale yellow to a deep blue.
                            let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
                            let color =
                                format!("rgb({},{},{})", lerp(255.0, 8.0), lerp(247.0, 64.0), lerp(188.0, 129.0));
                            HeatCell {
                                key: keys[k].key.clone(),
                                run: run.id.clone(),
                                mean: Some(exact(s.mean)),
                                text: fmt4(s.mean),
                                title: format!(
                                    "{} · {group}: {}, n={} of {} items ({} failed, {} dropped)",
                                    keys[k].label,
                                    s.text(),
                                    s.n,
                                    g.coverage.items,
                                    g.coverage.failed,
                                    g.coverage.dropped
                                ),
                                color,
                                dark: t > 0.55,
                            }
                        }
                        None => HeatCell {
                            key: keys[k].key.clone(),
                            run: run.id.clone(),
                            mean: None,
                            text: "–".into(),
                            title: format!("{} · {group}: no value", keys[k].label),
                            color: "transparent".into(),
                            dark: false,
                        },
                    }
                })
                .collect();
            HeatRow { group, kind, cells }
        })
        .collect()
}

#[derive(Serialize)]
pub struct RadarAxis {
    pub label: String,
    pub x: f64,
    pub y: f64,
    pub lx: f64,
    pub ly: f64,
    pub anchor: &'static str,
}

#[derive(Serialize)]
pub struct RadarPoint {
    pub task: String,
    pub x: f64,
    pub y: f64,
    pub mean: String,
}

#[derive(Serialize)]
pub struct Radar {
    pub key: String,
    pub run: String,
    pub label: String,
    pub points: String,
    pub dots: Vec<RadarPoint>,
    /// Sub-tasks without a value (drawn at the centre and named under the radar).
    pub missing: Vec<String>,
}

#[derive(Serialize)]
pub struct Radars {
    pub size: f64,
    pub center: f64,
    pub radius: f64,
    pub scale_max: String,
    pub rings: Vec<String>,
    pub axes: Vec<RadarAxis>,
    pub runs: Vec<Radar>,
}

/// One radar per run over the sub-tasks for `metric`, all on one scale (0 to the largest value).
pub fn radars(lb: &Leaderboard, metric: &str) -> Option<Radars> {
    let tasks: Vec<&String> = lb.tasks.iter().map(|(t, _)| t).collect();
    if tasks.len() < 3 {
        return None;
    }
    let (size, radius) = (280.0, 110.0);
    let c = size / 2.0;
    let max = lb
        .runs
        .iter()
        .flat_map(|r| tasks.iter().filter_map(|t| r.group(t).and_then(|g| g.metrics.get(metric)).map(|s| s.mean)))
        .fold(0.0, f64::max);
    let top = nice_max(max);
    let angle = |k: usize| -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * k as f64 / tasks.len() as f64;
    let at = |k: usize, r: f64| (c + r * angle(k).cos(), c + r * angle(k).sin());
    let axes = tasks
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let (x, y) = at(k, radius);
            let (lx, ly) = at(k, radius + 14.0);
            let anchor = if (lx - c).abs() < 5.0 {
                "middle"
            } else if lx > c {
                "start"
            } else {
                "end"
            };
            RadarAxis { label: t.to_string(), x, y, lx, ly, anchor }
        })
        .collect();
    let rings = [0.25, 0.5, 0.75, 1.0]
        .iter()
        .map(|f| {
            (0..tasks.len())
                .map(|k| at(k, radius * f))
                .map(|(x, y)| format!("{x:.1},{y:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let keys = run_keys(lb);
    let runs = run_order(lb)
        .into_iter()
        .enumerate()
        .map(|(k, i)| {
            let run = &lb.runs[i];
            let mut dots = Vec::new();
            let mut pts = Vec::new();
            let mut missing = Vec::new();
            for (j, t) in tasks.iter().enumerate() {
                let v = run.group(t).and_then(|g| g.metrics.get(metric)).map(|s| s.mean);
                let (x, y) = at(j, radius * v.unwrap_or(0.0) / top);
                pts.push(format!("{x:.2},{y:.2}"));
                match v {
                    Some(v) => dots.push(RadarPoint { task: t.to_string(), x, y, mean: exact(v) }),
                    None => missing.push(t.to_string()),
                }
            }
            Radar {
                key: keys[k].key.clone(),
                run: run.id.clone(),
                label: run.label.clone(),
                points: pts.join(" "),
                dots,
                missing,
            }
        })
        .collect();
    Some(Radars { size, center: c, radius, scale_max: format!("{top}"), rings, axes, runs })
}
