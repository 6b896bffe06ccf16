//! The embedded pieces of what is remembered, in memory for search by meaning: one byte per
//! dimension (int8 with a scale per vector), a quarter of f32, so 100,000 pieces of 384
//! dimensions take about 40 MB. A scan scores every piece with integer dot products, keeps
//! each entry's best piece, and the best entries are scored again exactly from the stored
//! f32 vectors (`recall.rs`).

use std::collections::HashMap;

/// What a piece embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
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

/// Independent accumulators, so the compiler keeps several SIMD registers busy.
const LANES: usize = 32;

#[derive(Debug, Default)]
pub struct PieceIndex {
    model: String,
    dim: usize,
    /// The highest piece row loaded: later rows are read on the next search.
    pub last_row: i64,
    keys: Vec<Key>,
    scales: Vec<f32>,
    data: Vec<i8>,
}

impl PieceIndex {
    pub fn new(model: &str, dim: usize) -> Self {
        Self {
            model: model.to_string(),
            dim,
            ..Self::default()
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Bytes the vectors take.
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity()
            + self.scales.capacity() * 4
            + self.keys.capacity() * std::mem::size_of::<Key>()
    }

    /// Adds piece row `row` of `key`; a vector of another dimension is left out.
    pub fn push(&mut self, row: i64, key: Key, vector: &[f32]) {
        self.last_row = self.last_row.max(row);
        if vector.len() != self.dim {
            return;
        }
        let (scale, quantized) = quantize(vector);
        self.keys.push(key);
        self.scales.push(scale);
        self.data.extend(quantized);
    }

    /// The `pool` entries whose best piece is closest to the unit vector `query`, with that
    /// piece's approximate cosine, best first.
    pub fn best(&self, query: &[f32], pool: usize) -> Vec<(Key, f32)> {
        if query.len() != self.dim || self.is_empty() || pool == 0 {
            return Vec::new();
        }
        let (query_scale, query) = quantize(query);
        let mut best: HashMap<Key, f32> = HashMap::new();
        for (index, chunk) in self.data.chunks_exact(self.dim).enumerate() {
            let cosine = dot_i8(chunk, &query) as f32 * self.scales[index] * query_scale;
            let entry = best.entry(self.keys[index]).or_insert(f32::MIN);
            if cosine > *entry {
                *entry = cosine;
            }
        }
        let mut ranked: Vec<(Key, f32)> = best.into_iter().collect();
        let cut = pool.min(ranked.len());
        if cut < ranked.len() {
            ranked.select_nth_unstable_by(cut, |a, b| b.1.total_cmp(&a.1));
            ranked.truncate(cut);
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
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

fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut sums = [0_i32; LANES];
    let (a_chunks, a_rest) = a.as_chunks::<LANES>();
    let (b_chunks, b_rest) = b.as_chunks::<LANES>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for lane in 0..LANES {
            sums[lane] += i32::from(x[lane]) * i32::from(y[lane]);
        }
    }
    let rest: i32 = a_rest
        .iter()
        .zip(b_rest)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    sums.iter().sum::<i32>() + rest
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
    fn vectors_take_one_byte_per_dimension() {
        let mut index = PieceIndex::new("m", 384);
        let vector = unit(&vec![0.5; 384]);
        for row in 0..1000 {
            index.push(row, (Source::Archive, row), &vector);
        }
        assert!(
            index.memory_bytes() < 1000 * (384 + 64),
            "{}",
            index.memory_bytes()
        );
    }
}
