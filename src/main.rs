// mimalloc: a reconcile's many small, short-lived allocations cost much less than with glibc's
// allocator (a 30-dogu reconcile: 47 µs instead of 77 µs); the memory it keeps differs both ways (see
// the README's "Performance" section).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    blueprint_operator::cli::main()
}
