// mimalloc, tuned to give memory back (see `allocator`).
blueprint_operator::global_allocator!();

fn main() -> std::process::ExitCode {
    blueprint_operator::cli::main()
}
