//! What the daemon hands back to the system once its work is done. Between deadlines it only
//! sleeps, yet it kept what start-up, a run or a search had touched: memory the allocator
//! holds free, and the program's code pages. The kernel maps code in 64 KiB windows around
//! each page that runs (fault-around), so start-up alone left about 10 MiB of the binary
//! resident, most of it code an idle daemon never runs again.

use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Quiet time after the last piece of work before handing back; work often comes in bursts
/// (a run, then its delivery, then the next job due).
const SETTLE: Duration = Duration::from_secs(5);

static WORK_DONE: Notify = Notify::const_new();

/// Says that a piece of work (start-up, a run, a search, a dream) ended; the daemon hands
/// back what it no longer needs once nothing else ends for a while.
pub fn work_done() {
    WORK_DONE.notify_one();
}

/// Hands back memory `SETTLE` after the last `work_done`, until `cancel`. Sleeps otherwise.
pub async fn run(cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = WORK_DONE.notified() => {}
            () = cancel.cancelled() => return,
        }
        loop {
            tokio::select! {
                () = tokio::time::sleep(SETTLE) => break,
                () = WORK_DONE.notified() => {}
                () = cancel.cancelled() => return,
            }
        }
        return_freed_memory();
        // Best effort: a system without /proc keeps its pages mapped. Reading smaps is file IO,
        // kept off the runtime's threads.
        let _ = tokio::task::spawn_blocking(release_code_pages).await;
    }
}

/// Hands the memory a dropped model freed back to the system. glibc keeps freed blocks for
/// reuse (the built-in model raises its trim threshold to keep its buffers between calls), so
/// without this a daemon that let the model go stayed about 75 MiB larger.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Stops mapping the pages of mnemo's own code and read-only data that no write ever touched;
/// returns how many bytes that covered. The page cache keeps them, so code that runs again
/// maps its page back with a minor fault, as it would after the kernel reclaimed it.
#[cfg(target_os = "linux")]
pub fn release_code_pages() -> std::io::Result<u64> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut released = 0;
    for mapping in clean_mappings_of(&smaps, &exe.to_string_lossy()) {
        let len = mapping.end - mapping.start;
        // SAFETY: the range is a private, read-only mapping of the running executable (never
        // unmapped while the process lives) without a single copied-on-write page, so every
        // page it drops reads back from the file exactly as it was.
        let done =
            unsafe { libc::madvise(mapping.start as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        if done == 0 {
            released += len as u64;
        }
    }
    Ok(released)
}

#[cfg(not(target_os = "linux"))]
pub fn release_code_pages() -> std::io::Result<u64> {
    Ok(0)
}

#[cfg(any(target_os = "linux", test))]
#[derive(Debug, PartialEq)]
struct Mapping {
    start: usize,
    end: usize,
}

/// The mappings of `path` in `/proc/self/smaps` text that are private, not writable and hold
/// no anonymous (copied-on-write) page: code and read-only data as the file has them. The
/// relocated parts (RELRO) hold anonymous pages and are left alone.
#[cfg(any(target_os = "linux", test))]
fn clean_mappings_of(smaps: &str, path: &str) -> Vec<Mapping> {
    let mut found = Vec::new();
    let mut current: Option<Mapping> = None;
    for line in smaps.lines() {
        if let Some(mapping) = header(line, path) {
            current = mapping;
        } else if let Some(kib) = line.strip_prefix("Anonymous:") {
            let clean = kib.trim().trim_end_matches("kB").trim() == "0";
            if let (Some(mapping), true) = (current.take(), clean) {
                found.push(mapping);
            }
        }
    }
    found
}

/// For a mapping's header line, `Some` holding the mapping when it is a private, read-only
/// mapping of `path`; `None` for other lines.
#[cfg(any(target_os = "linux", test))]
fn header(line: &str, path: &str) -> Option<Option<Mapping>> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    let name = fields.nth(3).unwrap_or("").trim_start();
    let read_only_private = perms.len() == 4 && !perms.contains('w') && perms.ends_with('p');
    Some((read_only_private && name == path).then_some(Mapping { start, end }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0a0000000-55d0a0100000 r--p 00000000 fe:00 42                         /opt/mnemo
Rss:                 400 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
55d0a0100000-55d0a0900000 r-xp 00100000 fe:00 42                         /opt/mnemo
Rss:                8000 kB
Anonymous:             0 kB
55d0a0900000-55d0a0a00000 r--p 00900000 fe:00 42                         /opt/mnemo
Anonymous:          1024 kB
55d0a0a00000-55d0a0a10000 rw-p 00a00000 fe:00 42                         /opt/mnemo
Anonymous:            64 kB
7f0000000000-7f0000100000 r-xp 00026000 fe:00 77                         /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 r--s 00000000 fe:00 78                         /opt/mnemo
Anonymous:             0 kB
7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
";

    #[test]
    fn only_untouched_read_only_private_mappings_of_the_program_are_released() {
        let found = clean_mappings_of(SMAPS, "/opt/mnemo");
        assert_eq!(
            found,
            vec![
                Mapping {
                    start: 0x55d0a0000000,
                    end: 0x55d0a0100000
                },
                Mapping {
                    start: 0x55d0a0100000,
                    end: 0x55d0a0900000
                },
            ],
            "the relocated data, writable data, shared mappings, other files and the vdso stay"
        );
    }

    #[cfg(target_os = "linux")]
    fn resident_file_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("RssFile:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn released_code_pages_leave_resident_memory_and_the_code_still_runs() {
        let before = resident_file_kib();
        let released = release_code_pages().unwrap_or(0);
        let after = resident_file_kib();
        assert!(released > 0, "the test binary's code is mapped privately");
        assert!(
            after < before,
            "resident file pages {before} -> {after} KiB"
        );
        // Code and constant data come back from the page cache when they run again.
        let text = serde_json::json!({"still": ["runs", 1]}).to_string();
        assert_eq!(text, r#"{"still":["runs",1]}"#);
        assert!(resident_file_kib() > 0);
    }
}
