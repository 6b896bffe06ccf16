//! Archive embeddings in memory for semantic search: one contiguous `Vec<f32>` of unit vectors,
//! scanned with a dot product the compiler vectorizes. Brute force over 100,000 vectors of 384
//! dimensions takes a few milliseconds, so no approximate index is needed at this scale.

use std::collections::HashMap;

/// Independent accumulators: enough for the compiler to keep several SIMD registers busy
/// without reassociating floating-point additions itself.
const LANES: usize = 16;

/// Embeddings of one dimension, addressed by archive id.
#[derive(Debug, Default)]
pub struct VectorCache {
    dim: usize,
    ids: Vec<i64>,
    data: Vec<f32>,
    slots: HashMap<i64, usize>,
}

impl VectorCache {
    pub fn new(dim: usize) -> Self {
        VectorCache {
            dim,
            ..VectorCache::default()
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Adds or replaces the vector of `id`. A vector of another dimension (written by another
    /// embedding model) replaces nothing and is left out.
    pub fn upsert(&mut self, id: i64, vector: &[f32]) {
        if vector.len() != self.dim {
            self.remove(id);
            return;
        }
        match self.slots.get(&id) {
            Some(&slot) => {
                let start = slot * self.dim;
                self.data[start..start + self.dim].copy_from_slice(vector);
            }
            None => {
                self.slots.insert(id, self.ids.len());
                self.ids.push(id);
                self.data.extend_from_slice(vector);
            }
        }
    }

    pub fn remove(&mut self, id: i64) {
        let Some(slot) = self.slots.remove(&id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if slot != last {
            let moved = self.ids[last];
            self.ids[slot] = moved;
            self.slots.insert(moved, slot);
            self.data
                .copy_within(last * self.dim..(last + 1) * self.dim, slot * self.dim);
        }
        self.ids.truncate(last);
        self.data.truncate(last * self.dim);
    }

    /// The cosine between the vector of `id` and the unit vector `query`, if `id` has one.
    pub fn similarity(&self, id: i64, query: &[f32]) -> Option<f32> {
        if query.len() != self.dim {
            return None;
        }
        let start = self.slots.get(&id)? * self.dim;
        Some(dot(&self.data[start..start + self.dim], query))
    }

    /// The `k` ids most similar to the unit vector `query`, best first, with their cosine.
    pub fn top(&self, query: &[f32], k: usize) -> Vec<(i64, f32)> {
        if query.len() != self.dim || k == 0 || self.dim == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(f32, usize)> = self
            .data
            .chunks_exact(self.dim)
            .map(|vector| dot(vector, query))
            .enumerate()
            .map(|(slot, score)| (score, slot))
            .collect();
        let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, by_score);
            scored.truncate(k);
        }
        scored.sort_unstable_by(by_score);
        scored
            .into_iter()
            .map(|(score, slot)| (self.ids[slot], score))
            .collect()
    }
}

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_chunks, a_rest) = a.as_chunks::<LANES>();
    let (b_chunks, b_rest) = b.as_chunks::<LANES>();
    let mut acc = [0f32; LANES];
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for ((sum, x), y) in acc.iter_mut().zip(x).zip(y) {
            *sum += x * y;
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Scales `vector` to unit length; a zero vector stays zero.
pub fn normalize(vector: &mut [f32]) {
    let norm = dot(vector, vector).sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}

/// Little-endian f32s, the BLOB format of `archive.embedding`.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_blob(blob: &[u8]) -> Vec<f32> {
    let (chunks, _) = blob.as_chunks::<4>();
    chunks
        .iter()
        .map(|bytes| f32::from_le_bytes(*bytes))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_a_plain_sum_for_odd_lengths() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..37).map(|i| 1.0 - i as f32 * 0.01).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-3);
    }

    #[test]
    fn normalize_gives_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
    }

    #[test]
    fn blobs_round_trip() {
        let v = vec![0.25, -1.5, 3.0e-7];
        assert_eq!(from_blob(&to_blob(&v)), v);
    }

    #[test]
    fn top_returns_the_closest_first_and_follows_updates_and_removals() {
        let mut cache = VectorCache::new(2);
        cache.upsert(1, &[1.0, 0.0]);
        cache.upsert(2, &[0.0, 1.0]);
        cache.upsert(3, &[0.6, 0.8]);
        cache.upsert(4, &[1.0, 0.0, 0.0]);
        assert_eq!(cache.len(), 3);
        let ids = |hits: Vec<(i64, f32)>| hits.into_iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(ids(cache.top(&[1.0, 0.0], 2)), vec![1, 3]);
        cache.remove(1);
        assert_eq!(ids(cache.top(&[1.0, 0.0], 5)), vec![3, 2]);
        cache.upsert(2, &[1.0, 0.0]);
        assert_eq!(ids(cache.top(&[1.0, 0.0], 1)), vec![2]);
        cache.upsert(2, &[1.0]);
        assert_eq!(ids(cache.top(&[1.0, 0.0], 5)), vec![3]);
        assert!(cache.top(&[1.0], 5).is_empty());
        assert_eq!(cache.similarity(3, &[1.0, 0.0]), Some(0.6));
        assert_eq!(cache.similarity(1, &[1.0, 0.0]), None);
    }
}
