//! Token estimates for messages, stored with each message so context budgets need no
//! re-counting, and a calibration that corrects them by the usage providers report.
//!
//! Counting is tiktoken-based (`o200k_base`) but far faster than calling tiktoken on whole
//! texts: the text is split into the pieces tiktoken's pre-tokenizer regex would produce, by a
//! hand-written scanner, and each piece's token count is memoised. Code and prose repeat pieces
//! so heavily that almost every lookup hits. Loading the BPE takes about half a second, so it
//! happens on a background thread; until it is ready a per-piece heuristic answers, and no
//! caller ever waits for the load.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::{LazyLock, Mutex, Once, OnceLock, PoisonError};

use tiktoken_rs::CoreBPE;

use super::{ContentBlock, Message};

/// Fixed cost of a message's framing (role markers, separators) in every provider's format.
const MESSAGE_OVERHEAD: u32 = 4;
/// Pieces longer than this (base64, minified blobs) are rare repeats: encode them directly.
const MAX_CACHED_PIECE: usize = 64;
/// The piece cache is cleared when it grows past this many entries.
const CACHE_CAPACITY: usize = 200_000;
/// Pieces counted per lock of the cache, so concurrent estimators take turns.
const PIECES_PER_LOCK: usize = 256;

/// The BPE once loaded; `None` when loading failed and the heuristic stays in charge.
static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
static WARM_UP: Once = Once::new();
static CACHE: LazyLock<Mutex<PieceCache>> =
    LazyLock::new(|| Mutex::new(PieceCache::new(CACHE_CAPACITY)));

/// Starts loading the tokenizer on a background thread; returns at once. Idempotent. Until
/// it is called (and the load finished), estimates use the heuristic.
pub fn warm_up() {
    WARM_UP.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("mnemo-tokenizer".into())
            .spawn(|| {
                let _ = BPE.set(tiktoken_rs::o200k_base().ok());
            });
        if spawned.is_err() {
            let _ = BPE.set(None);
        }
    });
}

/// Blocks until the tokenizer has loaded (starting the load if needed); true when tiktoken
/// counts are in use, false when loading failed and estimates stay heuristic.
pub fn wait_ready() -> bool {
    warm_up();
    BPE.wait().is_some()
}

/// Estimated tokens in `text`: once the tokenizer has loaded, tiktoken's `o200k_base` count
/// (exact but for the rare characters where the scanner and the regex disagree); before, a
/// per-piece heuristic.
pub fn estimate_text(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    // The tokenizer costs ~40 MB and half a second; it is loaded only once a session is large
    // enough for precision to matter (the agent calls `warm_up`).
    let tokens = match BPE.get() {
        Some(Some(bpe)) => count_with_bpe(text, bpe, &CACHE),
        Some(None) | None => count_heuristic(text),
    };
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// Estimated tokens of a whole message: its text, thinking, tool calls (name and JSON input)
/// and tool results, plus the framing every message carries.
pub fn estimate_message(message: &Message) -> u32 {
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => estimate_text(text),
            ContentBlock::Thinking { thinking, .. } => estimate_text(thinking),
            ContentBlock::ToolUse { name, input, .. } => {
                estimate_text(name).saturating_add(estimate_text(&input.to_string()))
            }
            ContentBlock::ToolResult { content, .. } => estimate_text(content),
            ContentBlock::Image(image) => image.tokens(),
            // Search results are billed by their (encrypted) content, which the raw form holds.
            ContentBlock::Server(server) => estimate_text(&server.raw.to_string()),
        })
        .fold(MESSAGE_OVERHEAD, u32::saturating_add)
}

/// Corrects estimates by the prompt tokens providers actually report: an exponentially
/// smoothed ratio of actual to estimated, clamped so one odd report cannot derail budgets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    ratio: f64,
    observed: bool,
}

impl Calibration {
    /// Weight of the newest observation in the smoothed ratio.
    const SMOOTHING: f64 = 0.3;
    const MIN_RATIO: f64 = 0.5;
    const MAX_RATIO: f64 = 2.0;

    /// No observations yet: estimates pass through unchanged.
    pub const fn new() -> Self {
        Self {
            ratio: 1.0,
            observed: false,
        }
    }

    /// Records one request: what we estimated its prompt at and what the provider reported.
    /// Requests with either figure zero carry no information and are ignored.
    pub fn observe(&mut self, estimated: u64, actual: u64) {
        if estimated == 0 || actual == 0 {
            return;
        }
        let sample = (actual as f64 / estimated as f64).clamp(Self::MIN_RATIO, Self::MAX_RATIO);
        self.ratio = if self.observed {
            self.ratio + Self::SMOOTHING * (sample - self.ratio)
        } else {
            sample
        };
        self.observed = true;
    }

    /// `estimate` corrected by what the provider has reported so far.
    pub fn apply(&self, estimate: u64) -> u64 {
        (estimate as f64 * self.ratio).round() as u64
    }

    /// Actual tokens per estimated token, 1.0 until the first observation.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }
}

impl Default for Calibration {
    fn default() -> Self {
        Self::new()
    }
}

/// Token counts of pieces already encoded, cleared whole when it passes its capacity.
///
/// Keyed by a seeded 64-bit hash of the piece rather than the piece itself: no allocation, no
/// string comparison; with at most a couple of hundred thousand entries, the odds that a
/// lookup finds another piece's hash (which would only skew that piece's count) are around
/// one in 10^14.
struct PieceCache {
    counts: HashMap<u64, u32, BuildHasherDefault<PreHashed>>,
    capacity: usize,
    seed: u64,
}

impl PieceCache {
    fn new(capacity: usize) -> Self {
        Self {
            counts: HashMap::default(),
            capacity,
            seed: RandomState::new().hash_one(0xC0FF_EE00_u64),
        }
    }

    fn count(&mut self, piece: &str, bpe: &CoreBPE) -> u64 {
        let key = piece_hash(piece.as_bytes(), self.seed);
        if let Some(&tokens) = self.counts.get(&key) {
            return u64::from(tokens);
        }
        let tokens = bpe.encode_ordinary(piece).len();
        if self.counts.len() >= self.capacity {
            self.counts.clear();
        }
        self.counts
            .insert(key, u32::try_from(tokens).unwrap_or(u32::MAX));
        tokens as u64
    }
}

/// A wyhash-style hash of a short byte string: words read whole (overlapping at the ends, as
/// the length is hashed too) and folded in with 64×64→128-bit multiplies.
fn piece_hash(bytes: &[u8], seed: u64) -> u64 {
    const P0: u64 = 0xa076_1d64_78bd_642f;
    const P1: u64 = 0xe703_7ed1_a0b4_28db;
    const P2: u64 = 0x8ebc_6af0_9c88_c6e3;
    let mix = |a: u64, b: u64| {
        let product = u128::from(a) * u128::from(b);
        (product as u64) ^ ((product >> 64) as u64)
    };
    let len = bytes.len();
    let mut hash = seed ^ (len as u64).wrapping_mul(P0);
    let (a, b) = match len {
        0 => (0, 0),
        1..=3 => {
            let byte = |at: usize| bytes.get(at).map_or(0, |&b| u64::from(b));
            (byte(0) << 16 | byte(len / 2) << 8 | byte(len - 1), 0)
        }
        4..=8 => (read_word::<4>(bytes, 0), read_word::<4>(bytes, len - 4)),
        _ => {
            let mut at = 0;
            while at + 16 < len {
                hash = mix(
                    read_word::<8>(bytes, at) ^ P1,
                    read_word::<8>(bytes, at + 8) ^ hash,
                );
                at += 16;
            }
            (read_word::<8>(bytes, at), read_word::<8>(bytes, len - 8))
        }
    };
    mix(mix(a ^ P1, b ^ hash) ^ P2, hash ^ P0)
}

/// The `N` bytes (at most eight) at `at` as a little-endian word; zero past the end.
#[inline(always)]
fn read_word<const N: usize>(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    if let (Some(to), Some(from)) = (word.get_mut(..N), bytes.get(at..at + N)) {
        to.copy_from_slice(from);
    }
    u64::from_le_bytes(word)
}

/// Passes through a key that is already a hash.
#[derive(Default)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = piece_hash(bytes, self.0);
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// Exact counts: every piece through the cache, long ones straight to the BPE.
fn count_with_bpe(text: &str, bpe: &CoreBPE, cache: &Mutex<PieceCache>) -> u64 {
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    let mut guard = lock();
    let mut total = 0u64;
    for (index, piece) in Pieces::new(text).enumerate() {
        if index % PIECES_PER_LOCK == PIECES_PER_LOCK - 1 {
            drop(guard);
            guard = lock();
        }
        total += if piece.len() > MAX_CACHED_PIECE {
            bpe.encode_ordinary(piece).len() as u64
        } else {
            guard.count(piece, bpe)
        };
    }
    total
}

/// Before the BPE is loaded: a token per piece, more for long ones, fitted to `o200k_base`
/// on code and English (a word of up to about eight letters is one token; runs of
/// punctuation grow faster than words). Outside ASCII, each byte of a two-byte letter (Greek,
/// Cyrillic, accented Latin) counts as an English letter, and CJK and emoji count a token per
/// four bytes. Within 15 % on English, code, JSON, Russian and Chinese; Greek, which
/// `o200k_base` splits finely, comes out about half.
fn count_heuristic(text: &str) -> u64 {
    /// Pieces are counted in 36ths of a token, so every slope stays a whole number.
    const UNIT: u64 = 36;
    let word = |letters: u64| UNIT + letters.saturating_sub(7) * 3;
    let units: u64 = Pieces::new(text)
        .map(|piece| match piece.as_bytes().last() {
            _ if !piece.is_ascii() => {
                let (mut narrow_bytes, mut wide_bytes) = (0, 0);
                for c in piece.chars() {
                    match c.len_utf8() {
                        len @ (1 | 2) => narrow_bytes += len as u64,
                        len => wide_bytes += len as u64,
                    }
                }
                let narrow_units = if narrow_bytes > 0 {
                    word(narrow_bytes)
                } else {
                    0
                };
                narrow_units + wide_bytes * UNIT / 4
            }
            Some(last) if last.is_ascii_alphabetic() => word(piece.len() as u64),
            Some(last) if last.is_ascii_punctuation() => {
                UNIT + (piece.len() as u64).saturating_sub(3) * 4
            }
            _ => UNIT,
        })
        .sum();
    units.div_ceil(UNIT)
}

mod pieces;

use pieces::Pieces;

#[cfg(test)]
mod tests;
