//! Latency samples, percentiles and the clock that stamps messages.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Microseconds since the Unix epoch.
///
/// Publisher and receivers run in the same process on the same machine, so a wall-clock stamp carried in the
/// message is comparable on arrival and needs no clock synchronisation.
pub(crate) fn unix_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// A bag of latency samples in microseconds.
///
/// Samples are kept exactly (4 bytes each) rather than in a histogram: a million deliveries cost 4 MB, and exact
/// percentiles avoid any argument about bucket error.
#[derive(Debug, Default)]
pub(crate) struct Samples {
    micros: Vec<u32>,
}

impl Samples {
    /// Records one latency; negative values (clock steps) are clamped to zero.
    pub(crate) fn push(&mut self, micros: i64) {
        self.micros.push(micros.clamp(0, u32::MAX as i64) as u32);
    }

    /// Moves all samples of `other` into this bag.
    pub(crate) fn append(&mut self, other: &mut Samples) {
        self.micros.append(&mut other.micros);
    }

    /// Sorts the samples and summarises them.
    pub(crate) fn summary(&mut self) -> Summary {
        self.micros.sort_unstable();
        let n = self.micros.len();
        let sum: u64 = self.micros.iter().map(|&v| v as u64).sum();
        Summary {
            count: n as u64,
            mean_ms: if n == 0 { 0.0 } else { sum as f64 / n as f64 / 1000.0 },
            p50_ms: self.quantile_ms(0.50),
            p90_ms: self.quantile_ms(0.90),
            p99_ms: self.quantile_ms(0.99),
            p999_ms: self.quantile_ms(0.999),
            max_ms: self.micros.last().map_or(0.0, |&v| v as f64 / 1000.0),
        }
    }

    /// Nearest-rank quantile of the sorted samples, in milliseconds.
    fn quantile_ms(&self, q: f64) -> f64 {
        if self.micros.is_empty() {
            return 0.0;
        }
        let rank = (q * self.micros.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.micros.len()) - 1;
        self.micros[index] as f64 / 1000.0
    }
}

/// Percentiles of one set of samples.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Summary {
    pub(crate) count: u64,
    pub(crate) mean_ms: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p90_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) p999_ms: f64,
    pub(crate) max_ms: f64,
}

impl Summary {
    /// One human-readable line.
    pub(crate) fn line(&self) -> String {
        format!(
            "n={} mean={:.3} p50={:.3} p90={:.3} p99={:.3} p99.9={:.3} max={:.3} (ms)",
            self.count, self.mean_ms, self.p50_ms, self.p90_ms, self.p99_ms, self.p999_ms, self.max_ms
        )
    }

    /// Adds the percentiles to a JSON object under `prefix` (for example `p50_ms` or `ack_p50_ms`).
    pub(crate) fn put(&self, out: &mut JsonLine, prefix: &str) {
        let fields = [
            ("mean_ms", self.mean_ms),
            ("p50_ms", self.p50_ms),
            ("p90_ms", self.p90_ms),
            ("p99_ms", self.p99_ms),
            ("p999_ms", self.p999_ms),
            ("max_ms", self.max_ms),
        ];
        for (name, value) in fields {
            out.set(format!("{prefix}{name}"), round3(value));
        }
    }
}

/// One JSON object whose keys keep their insertion order, so that `bench` leads the pasted line.
///
/// serde_json sorts object keys unless its `preserve_order` feature is on, and turning that on for the
/// workspace would change the key order every other crate emits.
#[derive(Debug, Default)]
pub(crate) struct JsonLine {
    fields: Vec<(String, Value)>,
}

impl JsonLine {
    /// A line that starts with `"bench": name`.
    pub(crate) fn new(bench: &str) -> JsonLine {
        let mut line = JsonLine::default();
        line.set("bench", bench);
        line
    }

    /// Sets a field, replacing an earlier value of the same key in place.
    pub(crate) fn set(&mut self, key: impl Into<String>, value: impl Into<Value>) -> &mut JsonLine {
        let (key, value) = (key.into(), value.into());
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some(field) => field.1 = value,
            None => self.fields.push((key, value)),
        }
        self
    }
}

impl std::fmt::Display for JsonLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        for (i, (key, value)) in self.fields.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}:{value}", Value::from(key.as_str()))?;
        }
        f.write_str("}")
    }
}

/// Rounds to three decimals so the JSON line stays readable.
pub(crate) fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Keeps the first few anomalies (unexpected frames, errors) verbatim, so a report can quote exact frames.
#[derive(Debug, Default)]
pub(crate) struct Anomalies {
    pub(crate) count: u64,
    pub(crate) first: Vec<String>,
}

impl Anomalies {
    /// How many anomalies are quoted verbatim.
    const KEEP: usize = 5;

    /// Records one anomaly, quoting at most 400 characters of it.
    pub(crate) fn note(&mut self, what: impl Into<String>) {
        self.count += 1;
        if self.first.len() < Self::KEEP {
            let mut text: String = what.into();
            if text.len() > 400 {
                let mut cut = 400;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push('…');
            }
            self.first.push(text);
        }
    }

    /// Merges another collection into this one.
    pub(crate) fn merge(&mut self, other: Anomalies) {
        self.count += other.count - other.first.len() as u64;
        for text in other.first {
            self.note(text);
        }
    }

    /// Prints the count and the quoted examples under a heading.
    pub(crate) fn print(&self, heading: &str) {
        if self.count == 0 {
            return;
        }
        println!("PROBLEM: {} {heading}; first ones:", self.count);
        for text in &self.first {
            println!("  {text}");
        }
    }
}

/// What the seqs acknowledged on one topic say about the allocator: each should appear once, from 1 up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeqCheck {
    /// Acknowledgements that named a seq already given to another message of the topic.
    pub(crate) duplicates: u64,
    /// Seqs between 1 and the highest acknowledged one that no acknowledgement named.
    pub(crate) missing: u64,
}

/// Sorts `seqs` and counts duplicates and gaps; the first message of a fresh topic gets seq 1.
pub(crate) fn check_seqs(seqs: &mut [i64]) -> SeqCheck {
    seqs.sort_unstable();
    let mut check = SeqCheck::default();
    let mut expected = 1;
    for &seq in seqs.iter() {
        if seq < expected {
            check.duplicates += 1;
        } else {
            check.missing += (seq - expected) as u64;
            expected = seq + 1;
        }
    }
    check
}

/// Min, median and max of the full seconds, then every second; the first and last are partial.
pub(crate) fn per_second_line(per_sec: &[u64]) -> String {
    let full = if per_sec.len() > 2 { &per_sec[1..per_sec.len() - 1] } else { per_sec };
    let mut sorted = full.to_vec();
    sorted.sort_unstable();
    let (min, median, max) = match sorted.as_slice() {
        [] => (0, 0, 0),
        s => (s[0], s[s.len() / 2], s[s.len() - 1]),
    };
    let all: Vec<String> = per_sec.iter().map(u64::to_string).collect();
    format!("min {min} median {median} max {max} over full seconds; each second: [{}]", all.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_line_skips_the_partial_ends() {
        let line = per_second_line(&[5, 100, 300, 200, 7]);
        assert!(line.starts_with("min 100 median 200 max 300"), "{line}");
        assert!(line.ends_with("[5 100 300 200 7]"), "{line}");
        assert!(per_second_line(&[]).starts_with("min 0 median 0 max 0"));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples = Samples::default();
        for v in 1..=100 {
            samples.push(v * 1000);
        }
        let s = samples.summary();
        assert_eq!(s.count, 100);
        assert_eq!(s.p50_ms, 50.0);
        assert_eq!(s.p99_ms, 99.0);
        assert_eq!(s.max_ms, 100.0);
    }

    #[test]
    fn json_line_keeps_order() {
        let mut line = JsonLine::new("x");
        line.set("b", 2).set("a", 1.5).set("b", 3);
        assert_eq!(line.to_string(), r#"{"bench":"x","b":3,"a":1.5}"#);
    }

    #[test]
    fn seq_check_counts_duplicates_and_gaps() {
        assert_eq!(check_seqs(&mut [3, 1, 2]), SeqCheck::default());
        assert_eq!(check_seqs(&mut [2, 2, 5, 1]), SeqCheck { duplicates: 1, missing: 2 });
        assert_eq!(check_seqs(&mut [2]), SeqCheck { duplicates: 0, missing: 1 });
    }

    #[test]
    fn anomalies_keep_first_and_count_all() {
        let mut a = Anomalies::default();
        for i in 0..8 {
            a.note(format!("x{i}"));
        }
        let mut b = Anomalies::default();
        b.note("y");
        a.merge(b);
        assert_eq!(a.count, 9);
        assert_eq!(a.first.len(), Anomalies::KEEP);
    }
}
