//! Links the release binary with the functions it runs next to each other and its relocations packed.
//!
//! The kernel maps a program's code 64 KiB at a time around each page it touches, so a function the
//! operator runs keeps its cold neighbours resident: with the linker's own order, 12–13 MB of the 16 MB
//! of code were resident while the operator ran 4 MB of it. `tools/link-order/hot-functions.txt` lists
//! the functions a recorded run executed (`make link-order`), and lld places them first. A name the
//! build does not have (the code changed since the recording, another toolchain) is skipped; such a
//! build is correct and only less compact. docs/performance.md has the numbers.
//!
//! The release binary's relative relocations are packed (`-z pack-relative-relocs`, glibc's DT_RELR):
//! the loader reads every one of them at start, and as a table of 24-byte entries they were 450 KB of
//! the binary resident from its first instruction on; packed they are a few KB. The binary stays
//! position-independent. It needs glibc 2.36 (Debian 12, the image's base); an older one refuses to
//! load it and names the missing `GLIBC_ABI_DT_RELR` version.

const ORDER: &str = "tools/link-order/hot-functions.txt";

fn main() {
    println!("cargo::rerun-if-changed={ORDER}");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    // Release builds only, linked by lld (rustc's linker on this target unless told to use another): the
    // symbol order is lld's option; with a linker of one's own choice both are left to it.
    let release = env("PROFILE") == "release";
    let lld_by_default = env("TARGET") == "x86_64-unknown-linux-gnu";
    let own_linker = env("CARGO_ENCODED_RUSTFLAGS").contains("link");
    if !release || !lld_by_default || own_linker {
        return;
    }
    let order = std::path::Path::new(&env("CARGO_MANIFEST_DIR")).join(ORDER);
    println!("cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
    println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}
