//! How recall combines its signals: each list (keyword rank by bm25 without function words,
//! meaning rank by best-piece cosine) gives a reciprocal-rank share, the meaning share scaled
//! by how close the cosine is; the stronger share counts whole and the other half, so either
//! signal wins when it is strong, a candidate in both lists gains, and two weak places do not
//! beat one strong one. A keyword share is scaled by how many of the query's words matched.
//! Importance only breaks ties. Capability search ranks the same way.
//! Kept apart from the SQL so the fusion can be read, tested and tuned on its own.

use std::cmp::Ordering;

use super::types::SearchHit;

/// The rank constant: smaller lets the first places of each list stand out.
pub const RRF_K: f64 = 5.0;
/// The cosine at which a meaning share counts whole (small models put paraphrases around 0.5
/// to 0.8 and unrelated texts around 0 to 0.2); closer counts up to `MAX_COSINE_GAIN` times.
pub const FULL_COSINE: f64 = 0.4;
pub const MAX_COSINE_GAIN: f64 = 1.2;
/// Below this cosine a candidate found only by meaning is not related to the query: a query
/// of nonsense words finds nothing rather than the nearest of everything.
pub const MEANING_FLOOR: f64 = 0.25;
/// The share of a query's words a candidate found by keywords alone must match to count as
/// related where what is found costs tokens (capabilities enter the tool list).
pub const KEYWORD_FLOOR: f64 = 0.5;
/// Weight of importance (0 to 1): enough to order otherwise equal hits.
pub const IMPORTANCE_WEIGHT: f64 = 0.01;

/// Where one candidate placed in each list (0 = first).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    pub keyword: Option<usize>,
    /// The share of the query's words the candidate matched (0 to 1).
    pub coverage: f64,
    pub semantic: Option<usize>,
    pub cosine: Option<f64>,
}

/// Whether a candidate is related to the query at all: half its words matched, or a close
/// meaning. What is not is left out (a match on a minority of a question's words is
/// incidental).
pub fn related(signal: &Signals) -> bool {
    let by_words = signal.keyword.is_some() && signal.coverage >= KEYWORD_FLOOR;
    let by_meaning = signal.cosine.is_some_and(|c| c >= MEANING_FLOOR);
    by_words || by_meaning
}

/// The fused score of a candidate.
pub fn fused(signals: &Signals, importance: f64) -> f64 {
    let share = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (RRF_K + 1.0 + r as f64));
    let closeness = (signals.cosine.unwrap_or(0.0) / FULL_COSINE).clamp(0.0, MAX_COSINE_GAIN);
    // Half of the query's words matched counts whole; one word of six, a third.
    let keyword = share(signals.keyword) * (2.0 * signals.coverage).clamp(0.0, 1.0);
    let meaning = share(signals.semantic) * closeness;
    keyword.max(meaning)
        + 0.5 * keyword.min(meaning)
        + IMPORTANCE_WEIGHT * importance.clamp(0.0, 1.0)
}

/// Best score first; equal scores put the newer entry first.
pub fn sort_hits(hits: &mut [SearchHit]) {
    hits.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(Ordering::Equal)
            .then(b.created_at.cmp(&a.created_at))
            .then(b.id.cmp(&a.id))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::piece_index::Source;

    fn hit(id: i64, created_at: i64, score: f64) -> SearchHit {
        SearchHit {
            id,
            source: Source::Archive,
            session_id: None,
            created_at,
            topic: String::new(),
            summary: String::new(),
            importance: 0.5,
            keyword: 0.0,
            semantic: None,
            score,
        }
    }

    fn signals(keyword: Option<usize>, semantic: Option<usize>, cosine: f64) -> Signals {
        Signals {
            keyword,
            coverage: 1.0,
            semantic,
            cosine: semantic.map(|_| cosine),
        }
    }

    #[test]
    fn a_strong_signal_alone_beats_weak_places_in_both_lists() {
        let meaning_only = fused(&signals(None, Some(0), 0.7), 0.5);
        let weak_both = fused(&signals(Some(4), Some(6), 0.3), 0.5);
        assert!(meaning_only > weak_both, "{meaning_only} vs {weak_both}");
        let keyword_only = fused(&signals(Some(0), None, 0.0), 0.5);
        assert!(keyword_only > weak_both);
        // Both first is best of all.
        assert!(fused(&signals(Some(0), Some(0), 0.7), 0.5) > meaning_only);
    }

    #[test]
    fn a_weak_cosine_counts_less_and_importance_only_breaks_ties() {
        let weak = fused(&signals(None, Some(0), 0.1), 0.5);
        let strong = fused(&signals(None, Some(0), 0.6), 0.5);
        assert!(weak < strong);
        let important = fused(&signals(Some(2), None, 0.0), 1.0);
        let plain = fused(&signals(Some(2), None, 0.0), 0.0);
        assert!(important > plain);
        assert!(important < fused(&signals(Some(1), None, 0.0), 0.0));
    }

    #[test]
    fn ties_put_the_newer_entry_first() {
        let mut hits = vec![hit(1, 10, 0.5), hit(2, 30, 0.5), hit(3, 20, 0.9)];
        sort_hits(&mut hits);
        let ids: Vec<i64> = hits.iter().map(|h| h.id).collect();
        assert_eq!(ids, vec![3, 2, 1]);
    }
}
