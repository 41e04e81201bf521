//! The README's first agent is `hello_world.rs`, word for word: the code a
//! reader copies is the code the smoke test runs.

#[test]
fn the_readme_s_first_agent_is_the_hello_world_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let example =
        std::fs::read_to_string(root.join("examples/src/bin/hello_world.rs")).expect("example");
    // The book includes parts of the file between mdBook's anchor lines,
    // which the README leaves out.
    let is_anchor = |line: &str| {
        let line = line.trim_start();
        line.starts_with("// ANCHOR:") || line.starts_with("// ANCHOR_END:")
    };
    let code: Vec<&str> = example
        .lines()
        .skip_while(|line| line.starts_with("//!") || line.is_empty())
        .filter(|line| !is_anchor(line))
        .collect();
    let section = &readme[readme.find("## A first agent").expect("the section")..];
    let block = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section's Rust block");
    let shown: Vec<&str> = block.lines().collect();
    assert_eq!(
        shown, code,
        "README.md's first agent differs from examples/src/bin/hello_world.rs"
    );
}
