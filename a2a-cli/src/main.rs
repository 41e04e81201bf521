//! The `a2a` command line (being built).
fn main() {}
