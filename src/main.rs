// mimalloc returns freed memory to the system and fragments less than glibc's allocator under the
// operator's pattern (large short-lived observations and status documents next to long-lived caches);
// see the README's "Performance" section for what it changed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    blueprint_operator::cli::main()
}
