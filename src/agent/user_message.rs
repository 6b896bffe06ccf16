//! User messages as the session keeps them: the text, the images attached to it (checked again
//! here for kind, size and pixels whoever sent them, since the gateway and other front ends
//! reach the session too), the session's title from its first message, and the event front
//! ends show.

use base64::Engine;

use super::Session;
use crate::llm::image::ImageBlock;
use crate::llm::{ContentBlock, Message, Role};
use crate::memory::StoreError;
use crate::protocol::{Attachment, Event, UserMessageKind};
use crate::text::{clip, first_line};

/// A session's title: the first line of its first message, cut to this many characters.
const TITLE_CHARS: usize = 60;
/// Images one message may carry; more are refused with a note.
pub const MAX_IMAGES: usize = 8;

impl Session {
    pub(super) async fn add_user_text(
        &mut self,
        text: String,
        kind: UserMessageKind,
    ) -> Result<(), StoreError> {
        self.add_user_message(text, kind, Vec::new()).await
    }

    pub(super) async fn add_user_message(
        &mut self,
        text: String,
        kind: UserMessageKind,
        images: Vec<ImageBlock>,
    ) -> Result<(), StoreError> {
        let seq = self.next_seq;
        let labels = images.iter().map(ImageBlock::label).collect();
        self.commit_as(user_message(&text, images), kind).await?;
        if kind != UserMessageKind::Prompt {
            let id = self.id.clone();
            self.services
                .store
                .call(move |db| db.set_message_kind(&id, seq, kind))
                .await?;
        }
        let first = seq == 0;
        if first {
            let (id, title) = (self.id.clone(), clip(first_line(&text), TITLE_CHARS));
            self.services
                .store
                .call(move |db| db.rename_session(&id, &title))
                .await?;
        }
        self.emit(Event::UserMessage {
            text,
            kind,
            images: labels,
        })
        .await;
        Ok(())
    }

    /// The attachments as image blocks; one that is not a usable image is left out, and the
    /// front end hears why.
    pub(super) async fn take_attachments(&mut self, attached: Vec<Attachment>) -> Vec<ImageBlock> {
        let mut images = Vec::new();
        for (n, attachment) in attached.into_iter().enumerate() {
            if n >= MAX_IMAGES {
                let message = format!(
                    "{} was not attached: a message carries at most {MAX_IMAGES} images",
                    attachment.name
                );
                self.emit(Event::Error { message }).await;
                continue;
            }
            match image_of(&attachment) {
                Ok(image) => images.push(image),
                Err(why) => {
                    let message = format!("{} was not attached: {why}", attachment.name);
                    self.emit(Event::Error { message }).await;
                }
            }
        }
        images
    }
}

fn image_of(attachment: &Attachment) -> Result<ImageBlock, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(attachment.data.as_bytes())
        .map_err(|_| "its data is not base64".to_string())?;
    ImageBlock::from_bytes(&attachment.name, &bytes).map_err(|e| e.to_string())
}

/// The user message of `text` and the images attached to it.
pub(super) fn user_message(text: &str, images: Vec<ImageBlock>) -> Message {
    let mut content = vec![ContentBlock::Text { text: text.into() }];
    content.extend(images.into_iter().map(ContentBlock::Image));
    Message {
        role: Role::User,
        content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::new_rgb8(4, 3)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap_or_else(|e| panic!("{e}"));
        out.into_inner()
    }

    fn attachment(name: &str, bytes: &[u8]) -> Attachment {
        Attachment {
            name: name.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    #[test]
    fn an_attachment_is_checked_again_before_it_becomes_an_image() {
        let image = image_of(&attachment("shot.png", &png())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((image.width, image.height), (4, 3));
        assert_eq!(image.media_type, "image/png");
        let not = image_of(&attachment("notes.png", b"plain text")).err();
        assert!(not.is_some_and(|why| why.contains("is not a PNG")));
        let broken = Attachment {
            name: "x.png".into(),
            data: "%%%".into(),
        };
        assert_eq!(
            image_of(&broken).err().as_deref(),
            Some("its data is not base64")
        );
    }

    #[test]
    fn the_message_keeps_the_text_and_each_image_is_named_with_its_size() {
        let image = image_of(&attachment("shot.png", &png())).unwrap_or_else(|e| panic!("{e}"));
        let message = user_message("what is this?", vec![image.clone()]);
        assert_eq!(message.text(), "what is this?");
        assert!(matches!(&message.content[1], ContentBlock::Image(i) if i.name == "shot.png"));
        assert_eq!(image.label(), "shot.png 4×3");
    }
}
