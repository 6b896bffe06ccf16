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

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if packed_relocations_supported() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
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
