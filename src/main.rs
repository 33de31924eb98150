fn main() -> std::process::ExitCode {
    blueprint_operator::cli::main()
}
