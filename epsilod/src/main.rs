fn main() {
    std::process::exit(epsilod::cli::main());
}
