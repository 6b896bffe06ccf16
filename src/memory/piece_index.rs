//! The embedded pieces of what is remembered, in memory for search by meaning: one byte per
//! dimension (int8 with a scale per vector), a quarter of f32, so 100,000 pieces of 384
//! dimensions take about 40 MB. A scan scores every piece with integer dot products, keeps
//! each entry's best piece, and the best entries are scored again exactly from the stored
//! f32 vectors (`recall.rs`).

use std::collections::HashMap;

/// What a piece embeds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Archive,
    Experience,
    /// A working message of a session, until compaction archives it.
    Message,
    /// A paragraph of the current dream notes (`MEMORY.md`, `USER.md`).
    Dream,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Archive => "archive",
            Source::Experience => "experience",
            Source::Message => "message",
            Source::Dream => "dream",
        }
    }

    /// Its byte in a piece record.
    fn code(self) -> u8 {
        match self {
            Source::Archive => 1,
            Source::Experience => 2,
            Source::Message => 3,
            Source::Dream => 4,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Source::Archive),
            2 => Some(Source::Experience),
            3 => Some(Source::Message),
            4 => Some(Source::Dream),
            _ => None,
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "archive" => Some(Source::Archive),
            "experience" => Some(Source::Experience),
            "message" => Some(Source::Message),
            "dream" => Some(Source::Dream),
            _ => None,
        }
    }
}

/// An archive entry, an experience, a working message or a dream-note paragraph, by its row id.
pub type Key = (Source, i64);

/// Bytes of a record before its codes: piece row (i64), source id (i64), scale (f32), source
/// (u8) and padding, little-endian. Records are kept in memory exactly as the piece file
/// (`piece_file.rs`) stores them, so loading it is one read.
pub(super) const RECORD_HEAD: usize = 24;

/// The pieces in records of `RECORD_HEAD + dim` bytes, in increasing row order.
#[derive(Debug, Default)]
pub struct PieceIndex {
    model: String,
    dim: usize,
    /// The highest piece row loaded: later rows are read on the next search.
    pub last_row: i64,
    records: Vec<u8>,
}

impl PieceIndex {
    pub fn new(model: &str, dim: usize) -> Self {
        Self {
            model: model.to_string(),
            dim,
            ..Self::default()
        }
    }

    /// An index over `records` as stored by `records()`; `None` when they are not whole
    /// records in increasing row order of known sources.
    pub(super) fn from_records(model: &str, dim: usize, records: Vec<u8>) -> Option<Self> {
        let mut index = Self::new(model, dim);
        if !records.len().is_multiple_of(index.record_len()) {
            return None;
        }
        index.records = records;
        let mut last = i64::MIN;
        for record in index.records.chunks_exact(index.record_len()) {
            let row = read_i64(record, 0);
            if row <= last || Source::from_code(record[20]).is_none() {
                return None;
            }
            last = row;
        }
        index.last_row = last.max(0);
        Some(index)
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.records.len() / self.record_len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Bytes the vectors take.
    pub fn memory_bytes(&self) -> usize {
        self.records.capacity()
    }

    pub(super) fn record_len(&self) -> usize {
        RECORD_HEAD + self.dim
    }

    /// The records from the `from`-th on, as stored.
    pub(super) fn records(&self, from: usize) -> &[u8] {
        self.records
            .get(from * self.record_len()..)
            .unwrap_or_default()
    }

    /// The piece row of the `at`-th record.
    pub(super) fn row_at(&self, at: usize) -> i64 {
        read_i64(&self.records[at * self.record_len()..], 0)
    }

    /// Adds piece row `row` (rows count from 1) of `key`; a row not after the last one, or a
    /// vector of another dimension, is left out.
    pub fn push(&mut self, row: i64, key: Key, vector: &[f32]) {
        if row <= self.last_row {
            return;
        }
        self.last_row = row;
        if vector.len() != self.dim {
            return;
        }
        let (scale, quantized) = quantize(vector);
        let (source, id) = key;
        self.records.extend_from_slice(&row.to_le_bytes());
        self.records.extend_from_slice(&id.to_le_bytes());
        self.records.extend_from_slice(&scale.to_le_bytes());
        self.records.extend_from_slice(&[source.code(), 0, 0, 0]);
        self.records
            .extend(quantized.iter().map(|q| q.to_le_bytes()[0]));
    }

    /// The `pool` entries whose best piece is closest to the unit vector `query`, with that
    /// piece's approximate cosine, best first.
    pub fn best(&self, query: &[f32], pool: usize) -> Vec<(Key, f32)> {
        if query.len() != self.dim || self.is_empty() || pool == 0 {
            return Vec::new();
        }
        let (query_scale, query) = quantize(query);
        let dot = dot_kernel();
        let mut scored: Vec<(f32, usize)> = self
            .records
            .chunks_exact(self.record_len())
            .enumerate()
            .map(|(at, record)| {
                let (head, codes) = record.split_at(RECORD_HEAD);
                let scale = f32::from_le_bytes([head[16], head[17], head[18], head[19]]);
                (dot(codes, &query) as f32 * scale * query_scale, at)
            })
            .collect();
        // The entries of the best pieces are the best entries once there are `pool` of them:
        // any other entry's pieces all score below these. Entries have a few pieces each, so
        // a few times `pool` pieces nearly always hold enough.
        let mut take = pool.saturating_mul(4);
        loop {
            let cut = take.min(scored.len());
            if cut < scored.len() {
                scored.select_nth_unstable_by(cut, |a, b| b.0.total_cmp(&a.0));
            }
            let mut best: HashMap<Key, f32> = HashMap::with_capacity(cut);
            for &(cosine, at) in &scored[..cut] {
                let Some(key) = self.key_at(at) else {
                    continue;
                };
                let entry = best.entry(key).or_insert(f32::MIN);
                *entry = entry.max(cosine);
            }
            if best.len() >= pool || cut == scored.len() {
                let mut ranked: Vec<(Key, f32)> = best.into_iter().collect();
                ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                ranked.truncate(pool);
                return ranked;
            }
            take = take.saturating_mul(4);
        }
    }

    /// What the `at`-th record embeds.
    fn key_at(&self, at: usize) -> Option<Key> {
        let head = &self.records[at * self.record_len()..];
        Some((Source::from_code(head[20])?, read_i64(head, 8)))
    }
}

fn read_i64(bytes: &[u8], at: usize) -> i64 {
    let mut le = [0; 8];
    le.copy_from_slice(&bytes[at..at + 8]);
    i64::from_le_bytes(le)
}

/// `vector` as int8 with the scale that maps it back (`value ≈ q * scale`).
fn quantize(vector: &[f32]) -> (f32, Vec<i8>) {
    let max = vector.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (0.0, vec![0; vector.len()]);
    }
    let scale = max / 127.0;
    let quantized = vector
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale, quantized)
}

/// Dot products of stored codes (int8 as two's-complement bytes) with a quantized query: with
/// AVX2 where the CPU has it (mnemo is built for baseline x86-64, whose SSE2 has no widening
/// multiply that suits this, so the loop measured 2-5 times slower without).
fn dot_kernel() -> fn(&[u8], &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return |a, b| {
            // SAFETY: the CPU has AVX2, checked above.
            unsafe { dot_i8_avx2(a, b) }
        };
    }
    dot_i8
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_i8_avx2(a: &[u8], b: &[i8]) -> i32 {
    dot_i8(a, b)
}

#[inline(always)]
fn dot_i8(a: &[u8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x as i8) * i32::from(*y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::vectors::normalize;

    fn unit(values: &[f32]) -> Vec<f32> {
        let mut v = values.to_vec();
        normalize(&mut v);
        v
    }

    #[test]
    fn an_entry_scores_by_its_best_piece_close_to_the_float_cosine() {
        let mut index = PieceIndex::new("m", 4);
        index.push(1, (Source::Archive, 10), &unit(&[1.0, 0.0, 0.0, 0.0]));
        index.push(2, (Source::Archive, 10), &unit(&[0.0, 1.0, 0.0, 0.0]));
        index.push(3, (Source::Archive, 11), &unit(&[0.7, 0.7, 0.1, 0.0]));
        index.push(4, (Source::Experience, 5), &unit(&[0.0, 0.0, 1.0, 0.0]));
        index.push(5, (Source::Archive, 12), &[1.0, 2.0]);
        assert_eq!(index.len(), 4, "a vector of another dimension is left out");
        assert_eq!(index.last_row, 5);
        let query = unit(&[0.0, 1.0, 0.05, 0.0]);
        let best = index.best(&query, 2);
        assert_eq!(best.len(), 2);
        assert_eq!(best[0].0, (Source::Archive, 10), "its second piece matches");
        let exact: f32 = unit(&[0.0, 1.0, 0.0, 0.0])
            .iter()
            .zip(&query)
            .map(|(a, b)| a * b)
            .sum();
        assert!((best[0].1 - exact).abs() < 0.02, "{} vs {exact}", best[0].1);
        assert_eq!(best[1].0, (Source::Archive, 11));
    }

    #[test]
    fn an_entry_with_many_close_pieces_does_not_crowd_out_the_next_best() {
        let mut index = PieceIndex::new("m", 3);
        let mut row = 0;
        let mut add = |index: &mut PieceIndex, key: Key, v: &[f32]| {
            row += 1;
            index.push(row, key, &unit(v));
        };
        for _ in 0..200 {
            add(&mut index, (Source::Archive, 1), &[1.0, 0.0, 0.0]);
        }
        add(&mut index, (Source::Archive, 4), &[0.6, 0.8, 0.0]);
        add(&mut index, (Source::Archive, 2), &[0.9, 0.3, 0.0]);
        add(&mut index, (Source::Experience, 3), &[0.8, 0.5, 0.0]);
        add(&mut index, (Source::Archive, 5), &[0.0, 0.0, 1.0]);
        let best: Vec<Key> = index
            .best(&unit(&[1.0, 0.0, 0.0]), 3)
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        assert_eq!(
            best,
            vec![
                (Source::Archive, 1),
                (Source::Archive, 2),
                (Source::Experience, 3)
            ]
        );
    }

    #[test]
    fn the_cpu_specific_dot_product_agrees_with_the_plain_one() {
        let a: Vec<u8> = (0..397)
            .map(|i| ((i * 37 % 255) as i8).to_le_bytes()[0])
            .collect();
        let b: Vec<i8> = (0..397).map(|i| (i * 91 % 254 - 127) as i8).collect();
        let expected: i32 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| i32::from(*x as i8) * i32::from(*y))
            .sum();
        assert_eq!(dot_kernel()(&a, &b), expected);
        assert_eq!(dot_i8(&a, &b), expected);
        assert_eq!(
            dot_kernel()(&[0x81, 0x7f], &[127, -127]),
            -127 * 127 - 127 * 127
        );
    }

    #[test]
    fn vectors_take_one_byte_per_dimension() {
        let mut index = PieceIndex::new("m", 384);
        let vector = unit(&vec![0.5; 384]);
        for row in 1..=1000 {
            index.push(row, (Source::Archive, row), &vector);
        }
        assert_eq!(index.len(), 1000);
        assert!(
            index.memory_bytes() < 1000 * (384 + 64),
            "{}",
            index.memory_bytes()
        );
    }
}
