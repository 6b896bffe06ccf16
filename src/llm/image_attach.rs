//! Images a person names in a message: `@shot.png`, or a path a terminal typed when a file was
//! dropped on it (absolute, `~/…` or `file://…`, quoted or with escaped spaces). The front end
//! reads them on the person's behalf, as they asked, and attaches them prepared for the model.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::image::{ImageBlock, MAX_FILE_BYTES};
use crate::protocol::Attachment;

/// Images one message attaches at most (the session refuses more).
pub const MAX_ATTACHED: usize = 8;

const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// The images `text` names, read relative to `cwd`, and a line for each one named that could
/// not be attached.
pub fn attachments_in(text: &str, cwd: &Path) -> (Vec<Attachment>, Vec<String>) {
    let mut attached: Vec<Attachment> = Vec::new();
    let mut problems = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for word in words(text) {
        let Some(path) = named_image(&word, cwd) else {
            continue;
        };
        if seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        if attached.len() == MAX_ATTACHED {
            problems.push(format!(
                "{}: not attached, a message carries at most {MAX_ATTACHED} images",
                path.display()
            ));
            continue;
        }
        match read_image(&path) {
            Ok(attachment) => attached.push(attachment),
            Err(why) => problems.push(format!("{}: not attached, {why}", path.display())),
        }
    }
    (attached, problems)
}

/// What `mnemo run` attaches: the images its prompt names, then those given with `--image`.
/// One that cannot be attached is an error: the person asked for it, and nothing is sent yet.
pub fn for_run(prompt: &str, paths: &[PathBuf], cwd: &Path) -> Result<Vec<Attachment>, String> {
    let (mut attached, problems) = attachments_in(prompt, cwd);
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem);
    }
    for path in paths {
        let path = cwd.join(path);
        if attached.len() == MAX_ATTACHED {
            return Err(format!(
                "{}: not attached, a message carries at most {MAX_ATTACHED} images",
                path.display()
            ));
        }
        let attachment =
            read_image(&path).map_err(|why| format!("{}: not attached, {why}", path.display()))?;
        attached.push(attachment);
    }
    Ok(attached)
}

/// The image file a word names, if it names one: `@` and a path, or a path a drop typed.
fn named_image(word: &str, cwd: &Path) -> Option<PathBuf> {
    // Punctuation of the sentence around the name (`@shot.png?`) is not part of it.
    let word = word.trim_end_matches(['?', '!', ',', '.', ';', ':', ')', ']']);
    let (explicit, word) = match word.strip_prefix('@') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let path = if let Some(rest) = word.strip_prefix("file://") {
        PathBuf::from(percent_decoded(rest))
    } else if let Some(rest) = word.strip_prefix("~/") {
        std::env::var_os("HOME").map(|home| Path::new(&home).join(rest))?
    } else if word.starts_with('/') {
        PathBuf::from(word)
    } else if explicit && !word.is_empty() {
        cwd.join(word)
    } else {
        return None;
    };
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    IMAGE_EXTENSIONS
        .contains(&extension.as_str())
        .then_some(path)
}

fn read_image(path: &Path) -> Result<Attachment, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "there is no such file".to_string(),
        _ => e.to_string(),
    })?;
    // A FIFO or device would block or never end.
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "it is {} MB, more than the {} MB read",
            meta.len() / 1_000_000,
            MAX_FILE_BYTES / 1_000_000
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let image = ImageBlock::from_bytes(&name, &bytes).map_err(|e| e.to_string())?;
    Ok(Attachment {
        name,
        data: image.data,
    })
}

/// Words as a shell would split them: quotes group, a backslash keeps the next character.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => word.extend(chars.next()),
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// `%20` and the like in a `file://` address.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        image::DynamicImage::new_rgb8(5, 4)
            .save_with_format(&path, image::ImageFormat::Png)
            .unwrap_or_else(|e| panic!("{e}"));
        path
    }

    #[test]
    fn named_and_dropped_images_are_attached_once_and_other_words_left_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        png(dir.path(), "shot.png");
        let dropped = png(dir.path(), "my screen shot.PNG");
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap_or_else(|e| panic!("{e}"));
        let text = format!(
            "compare @shot.png with '{}' and {} (also @shot.png, @notes.txt, shot.png)?",
            dropped.display(),
            dropped.display().to_string().replace(' ', "\\ ")
        );
        let (attached, problems) = attachments_in(&text, dir.path());
        let names: Vec<&str> = attached.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["shot.png", "my screen shot.PNG"]);
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn a_named_image_that_cannot_be_read_is_said_and_not_attached() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("fake.png"), "not an image")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(dir.path().join("dir.png")).unwrap_or_else(|e| panic!("{e}"));
        let (attached, problems) = attachments_in("@missing.png @fake.png @dir.png", dir.path());
        assert!(attached.is_empty());
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].ends_with("missing.png: not attached, there is no such file"));
        assert!(
            problems[1].contains("fake.png: not attached"),
            "{problems:?}"
        );
        assert!(problems[2].ends_with("dir.png: not attached, it is not a regular file"));
    }

    #[test]
    fn a_file_address_is_decoded_and_the_count_is_bounded() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let spaced = png(dir.path(), "a b.png");
        let address = format!(
            "file://{}",
            spaced.display().to_string().replace(' ', "%20")
        );
        let (attached, _) = attachments_in(&address, dir.path());
        assert_eq!(attached.len(), 1);
        let many: Vec<String> = (0..MAX_ATTACHED + 2)
            .map(|n| {
                png(dir.path(), &format!("{n}.png"));
                format!("@{n}.png")
            })
            .collect();
        let (attached, problems) = attachments_in(&many.join(" "), dir.path());
        assert_eq!(attached.len(), MAX_ATTACHED);
        assert_eq!(problems.len(), 2);
    }
}
