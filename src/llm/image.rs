//! Images sent to the model: sniffed by their magic bytes, decoded under a pixel cap (a
//! decompression bomb is refused before it is decoded), downscaled to what every provider
//! accepts, and re-encoded. Models that do not read images get a one-line description.

use std::io::Cursor;

use base64::Engine;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use serde::{Deserialize, Serialize};

use super::types::{ContentBlock, Message, ModelRequest};

/// Bytes read from a file before it is decoded.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// Pixels decoded at most (a 8000×8000 image is 64 M): anything larger is refused.
const MAX_PIXELS: u64 = 64_000_000;
/// Anthropic recommends at most 1568 px on the long edge (larger is scaled down by the API).
const LONG_EDGE: u32 = 1568;
/// Anthropic's limit per image (OpenAI's is 20 MB), on the encoded bytes.
const MAX_ENCODED_BYTES: usize = 5 * 1024 * 1024;

/// One image as it travels in the conversation: already within the providers' limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageBlock {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The encoded image, base64.
    pub data: String,
    /// Where it came from, for descriptions and the transcript (a file name).
    pub name: String,
    pub width: u32,
    pub height: u32,
    /// Set when a tool call returned the image: the wires attach it to that call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{0} is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage(String),
    #[error("{name} is too large to read as an image ({bytes} bytes; the limit is {limit})")]
    TooLarge {
        name: String,
        bytes: u64,
        limit: u64,
    },
    #[error("{name} could not be decoded as an image: {reason}")]
    Decode { name: String, reason: String },
}

/// The media type of an image by its first bytes, for the formats models read.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

impl ImageBlock {
    /// Decodes `bytes`, downscales them when larger than the providers accept, and keeps the
    /// original encoding when it already fits.
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<Self, ImageError> {
        let media_type = sniff(bytes).ok_or_else(|| ImageError::NotAnImage(name.to_string()))?;
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if len > MAX_FILE_BYTES {
            return Err(ImageError::TooLarge {
                name: name.to_string(),
                bytes: len,
                limit: MAX_FILE_BYTES,
            });
        }
        let decode_error = |reason: String| ImageError::Decode {
            name: name.to_string(),
            reason,
        };
        let mut reader = ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| decode_error(e.to_string()))?;
        let (width, height) = reader
            .into_dimensions()
            .map_err(|e| decode_error(e.to_string()))?;
        if u64::from(width) * u64::from(height) > MAX_PIXELS {
            return Err(decode_error(format!(
                "{width}×{height} pixels is more than the {MAX_PIXELS} mnemo decodes"
            )));
        }
        let fits = width.max(height) <= LONG_EDGE && bytes.len() <= MAX_ENCODED_BYTES;
        if fits {
            return Ok(Self::encoded(name, media_type, bytes, width, height));
        }
        reader = ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| decode_error(e.to_string()))?;
        let mut limits = Limits::default();
        limits.max_image_width = Some(width);
        limits.max_image_height = Some(height);
        limits.max_alloc = Some(MAX_PIXELS * 4);
        reader.limits(limits);
        let decoded = reader.decode().map_err(|e| decode_error(e.to_string()))?;
        let scaled = decoded.resize(LONG_EDGE, LONG_EDGE, image::imageops::FilterType::Triangle);
        let (out, media_type) = reencode(&scaled).map_err(decode_error)?;
        Ok(Self::encoded(
            name,
            media_type,
            &out,
            scaled.width(),
            scaled.height(),
        ))
    }

    fn encoded(name: &str, media_type: &str, bytes: &[u8], width: u32, height: u32) -> Self {
        Self {
            media_type: media_type.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            name: name.to_string(),
            width,
            height,
            tool_use_id: None,
        }
    }

    /// The size of the encoded image.
    pub fn bytes(&self) -> usize {
        self.data.trim_end_matches('=').len() * 3 / 4
    }

    /// Tokens the image costs a model that reads it: Anthropic's width·height/750.
    pub fn tokens(&self) -> u32 {
        let tokens = u64::from(self.width) * u64::from(self.height) / 750;
        u32::try_from(tokens.max(1)).unwrap_or(u32::MAX)
    }

    /// What a model that does not read images is told instead.
    pub fn describe(&self) -> String {
        format!(
            "[image: {}, {}, {}×{}, {} KB: this model does not read images]",
            self.name,
            self.media_type,
            self.width,
            self.height,
            self.bytes().div_ceil(1024)
        )
    }

    /// A short label for the transcript and tool output.
    pub fn label(&self) -> String {
        format!("{} {}×{}", self.name, self.width, self.height)
    }
}

/// `request` with every image replaced by its description, for a model that does not read
/// images (a fallback model may not, where the first one did).
pub fn described(mut request: ModelRequest) -> ModelRequest {
    for message in &mut request.messages {
        if !message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image(_)))
        {
            continue;
        }
        let content = message
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Image(image) => ContentBlock::Text {
                    text: match &image.tool_use_id {
                        Some(id) => format!("{} (returned by tool call {id})", image.describe()),
                        None => image.describe(),
                    },
                },
                other => other.clone(),
            })
            .collect();
        *message = std::sync::Arc::new(Message {
            role: message.role,
            content,
        });
    }
    request
}

/// PNG when the image has transparency, JPEG otherwise (photos shrink far more).
fn reencode(image: &DynamicImage) -> Result<(Vec<u8>, &'static str), String> {
    let mut out = Cursor::new(Vec::new());
    if image.color().has_alpha() {
        image
            .write_to(&mut out, ImageFormat::Png)
            .map_err(|e| e.to_string())?;
        return Ok((out.into_inner(), "image/png"));
    }
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    let mut quality = 85;
    loop {
        out.get_mut().clear();
        out.set_position(0);
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
        rgb.write_with_encoder(encoder).map_err(|e| e.to_string())?;
        if out.get_ref().len() <= MAX_ENCODED_BYTES || quality <= 40 {
            return Ok((out.into_inner(), "image/jpeg"));
        }
        quality -= 15;
    }
}

/// Whether the model `model` reads images, unless the config says: the families known to.
pub fn model_reads_images(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model);
    [
        "claude-",
        "gpt-4o",
        "gpt-4.1",
        "gpt-5",
        "o3",
        "o4",
        "gemini",
        "llava",
        "qwen-vl",
        "qwen2.5-vl",
        "pixtral",
        "grok-4",
    ]
    .iter()
    .any(|prefix| model.starts_with(prefix))
        || model.contains("vision")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = DynamicImage::ImageRgb8(image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x ^ y) % 256) as u8])
        }));
        let mut out = Cursor::new(Vec::new());
        image
            .write_to(&mut out, ImageFormat::Png)
            .unwrap_or_else(|e| panic!("{e}"));
        out.into_inner()
    }

    #[test]
    fn a_small_png_is_kept_as_it_is() {
        let bytes = png(40, 20);
        let image = ImageBlock::from_bytes("shot.png", &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((image.width, image.height), (40, 20));
        assert_eq!(image.media_type, "image/png");
        assert_eq!(image.bytes(), bytes.len());
        assert!(
            image
                .describe()
                .starts_with("[image: shot.png, image/png, 40×20, ")
        );
    }

    #[test]
    fn a_large_png_is_downscaled_keeping_its_aspect() {
        let image =
            ImageBlock::from_bytes("big.png", &png(3200, 1600)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((image.width, image.height), (1568, 784));
        assert_eq!(image.media_type, "image/jpeg");
        assert!(image.bytes() <= MAX_ENCODED_BYTES);
        assert_eq!(image.tokens(), 1568 * 784 / 750);
    }

    #[test]
    fn a_decompression_bomb_is_refused_before_decoding() {
        // A valid PNG header claiming 20000×20000 pixels, with almost no data behind it.
        let mut bytes = png(1, 1);
        bytes[16..20].copy_from_slice(&20_000u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&20_000u32.to_be_bytes());
        let crc = crc32(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        let err = ImageBlock::from_bytes("bomb.png", &bytes)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("20000×20000")),
            "{err:?}"
        );
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = u32::MAX;
        for byte in bytes {
            crc ^= u32::from(*byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn text_is_not_an_image() {
        assert!(matches!(
            ImageBlock::from_bytes("a.txt", b"hello"),
            Err(ImageError::NotAnImage(_))
        ));
    }

    #[test]
    fn known_families_read_images() {
        assert!(model_reads_images("claude-sonnet-4-5"));
        assert!(model_reads_images("gpt-4o-mini"));
        assert!(model_reads_images("openai/gpt-5"));
        assert!(!model_reads_images("deepseek-chat"));
        assert!(!model_reads_images("gpt-3.5-turbo"));
    }
}
