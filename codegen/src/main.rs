//! Regenerates `a2a-grpc/src/generated/` from `proto/` with protox (no system
//! `protoc`): `a2a.proto` (1.0, `lf.a2a.v1`) and `a2a_v03.proto` (0.3,
//! `a2a.v1`). Run `cargo run -p codegen` after editing a `.proto` file; CI runs
//! it too and fails when the committed code differs.

use std::path::PathBuf;

use anyhow::Context as _;

fn main() -> anyhow::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("codegen crate has no parent directory")?
        .to_path_buf();
    let proto_dir = root.join("proto");
    let out_dir = root.join("a2a-grpc/src/generated");

    let descriptors = protox::compile(
        [proto_dir.join("a2a.proto"), proto_dir.join("a2a_v03.proto")],
        [&proto_dir],
    )
    .context("compiling proto/a2a.proto and proto/a2a_v03.proto")?;
    std::fs::create_dir_all(&out_dir)?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .btree_map(".")
        .out_dir(&out_dir)
        .compile_fds(descriptors)
        .context("generating Rust code")?;
    // The google.api annotations are needed to compile the protos, but no message
    // the service uses comes from them: keep only the A2A package's code.
    std::fs::remove_file(out_dir.join("google.api.rs")).context("removing google.api.rs")?;
    println!("wrote {}", out_dir.display());
    Ok(())
}
