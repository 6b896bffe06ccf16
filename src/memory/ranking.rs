//! How archive search combines its signals. Kept apart from the SQL so the weights and the
//! normalization can be read, and tested, on their own.

use std::cmp::Ordering;

use super::types::SearchHit;

/// Weights with an embedding provider: semantic, keyword, importance.
pub const HYBRID_WEIGHTS: (f64, f64, f64) = (0.5, 0.3, 0.2);
/// Weights without one: keyword, importance.
pub const KEYWORD_WEIGHTS: (f64, f64) = (0.8, 0.2);

/// Maps FTS5 bm25 values (negative, lower is better) of one query's hits to [0, 1], the best
/// hit getting 1 and the others their fraction of its relevance.
pub fn normalize_bm25(hits: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let best = hits.iter().map(|&(_, bm25)| bm25).fold(0.0_f64, f64::min);
    hits.iter()
        .map(|&(id, bm25)| {
            let score = if best < 0.0 {
                (bm25 / best).clamp(0.0, 1.0)
            } else {
                1.0
            };
            (id, score)
        })
        .collect()
}

/// Whether the query came with an embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    Keyword,
    Hybrid,
}

/// The combined score. In hybrid mode an entry without an embedding (`semantic` = `None`)
/// and a negative cosine both count as 0.
pub fn combined_score(
    mode: SearchMode,
    keyword: f64,
    semantic: Option<f64>,
    importance: f64,
) -> f64 {
    let importance = importance.clamp(0.0, 1.0);
    match mode {
        SearchMode::Hybrid => {
            let (w_semantic, w_keyword, w_importance) = HYBRID_WEIGHTS;
            let semantic = semantic.unwrap_or(0.0).clamp(0.0, 1.0);
            w_semantic * semantic + w_keyword * keyword + w_importance * importance
        }
        SearchMode::Keyword => {
            let (w_keyword, w_importance) = KEYWORD_WEIGHTS;
            w_keyword * keyword + w_importance * importance
        }
    }
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

    fn hit(id: i64, created_at: i64, score: f64) -> SearchHit {
        SearchHit {
            id,
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

    #[test]
    fn the_best_bm25_becomes_one_and_others_a_fraction() {
        let scores = normalize_bm25(&[(1, -4.0), (2, -2.0), (3, -1.0)]);
        assert_eq!(scores, vec![(1, 1.0), (2, 0.5), (3, 0.25)]);
        assert!(normalize_bm25(&[]).is_empty());
    }

    #[test]
    fn weights_follow_the_design() {
        let hybrid = combined_score(SearchMode::Hybrid, 1.0, Some(1.0), 1.0);
        assert!((hybrid - 1.0).abs() < 1e-12);
        let semantic_only = combined_score(SearchMode::Hybrid, 0.0, Some(0.8), 0.5);
        assert!((semantic_only - (0.4 + 0.1)).abs() < 1e-12);
        let negative = combined_score(SearchMode::Hybrid, 0.0, Some(-0.9), 0.0);
        assert_eq!(negative, 0.0);
        let keyword_only = combined_score(SearchMode::Keyword, 0.5, None, 0.5);
        assert!((keyword_only - 0.5).abs() < 1e-12);
    }

    #[test]
    fn ties_put_the_newer_entry_first() {
        let mut hits = vec![hit(1, 10, 0.5), hit(2, 30, 0.5), hit(3, 20, 0.9)];
        sort_hits(&mut hits);
        let ids: Vec<i64> = hits.iter().map(|h| h.id).collect();
        assert_eq!(ids, vec![3, 2, 1]);
    }
}
