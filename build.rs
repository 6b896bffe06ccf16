//! Link options for the `mnemo` binary.
//!
//! Packed relative relocations (`-z pack-relative-relocs`, DT_RELR): a position-independent
//! mnemo has some 85,000 relative relocations, 2 MB as classic RELA entries that the loader
//! reads at every start, and those pages stay resident in every mnemo process (a third of
//! the idle `mnemo serve`'s memory beyond what it must hold). Packed, the table is a few
//! tens of KB. Address randomisation is unchanged.
//!
//! The loader must know DT_RELR: glibc 2.36 or later (the linker then makes the binary
//! require it, so an older glibc refuses to start it with a clear message rather than crash).
//! The option is passed only when the build machine is the target and its glibc is recent
//! enough; lld (rustc's default linker on x86_64 Linux) and GNU ld 2.38+ understand it.
//!
//! Start-up order (`--symbol-ordering-file=assets/startup-order.txt`): the functions a start
//! runs are spread over the 22 MB of code, and the kernel maps 64 KB around each page a start
//! touches, so a one-shot run held 14 MiB of code in memory to run some 3 MiB of functions.
//! Placed together, they are faulted in once. Names the build does not have (another rustc,
//! changed dependencies) are skipped; the list is rewritten by `benches/startup_order.rs`. Only
//! rust-lld, the default linker of rustc 1.90 and later for x86_64-unknown-linux-gnu, is given
//! the option: a build with its own linker does without it.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if packed_relocations_supported() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let order = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(ORDER);
    // The linker reads the list itself: watching it would rebuild the whole crate on each
    // rewrite, where relinking the binary (touch src/main.rs) is enough.
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if order.is_file() && default_lld() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

const ORDER: &str = "assets/startup-order.txt";

/// Whether the binary is linked by rust-lld, rustc's own choice for this target since 1.90,
/// with no linker or linker flags of the builder's.
fn default_lld() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("PROFILE") == "release"
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("linker")
        && !flags.contains("fuse-ld")
        && rustc_minor() >= 90
}

/// The minor version of the compiler building mnemo (`rustc 1.95.0 (...)` gives 95).
fn rustc_minor() -> u32 {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let version = text.split_whitespace().nth(1)?.to_string();
            let mut parts = version.split('.');
            (parts.next()? == "1").then_some(())?;
            parts.next()?.parse().ok()
        })
        .unwrap_or(0)
}

fn packed_relocations_supported() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    native && var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" && {
        glibc_version() >= (2, 36)
    }
}

/// The running glibc's version (the build script runs on the target here).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> (u32, u32) {
    // SAFETY: gnu_get_libc_version returns a static, NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let mut parts = version
        .to_str()
        .unwrap_or_default()
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version() -> (u32, u32) {
    (0, 0)
}
