//! Replays every committed fuzz input (`fuzz/corpus/<target>/`, and the
//! seeds the corpora started from) through the bodies of the cargo-fuzz
//! targets, on the stable toolchain: a change that breaks an input the
//! fuzzer once found interesting fails here, without nightly or a fuzzer.

#[path = "../../fuzz/src/lib.rs"]
#[allow(unreachable_pub, dead_code)]
mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn corpus_files(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_committed_fuzz_input_replays() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for (target, body) in targets::TARGETS {
        let seeds = targets::seeds(target);
        assert!(!seeds.is_empty(), "{target} has no seeds");
        let inputs = seeds
            .into_iter()
            .enumerate()
            .map(|(n, seed)| (format!("seed {n}"), seed))
            .chain(corpus_files(target).into_iter().map(|path| {
                let bytes = std::fs::read(&path).unwrap_or_default();
                (path.display().to_string(), bytes)
            }));
        for (name, input) in inputs {
            replayed += 1;
            // Run them all, so one failure shows every input that fails.
            if catch_unwind(AssertUnwindSafe(|| body(&input))).is_err() {
                failures.push(format!("{target}: {name}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
    println!("replayed {replayed} fuzz inputs");
}

/// Writes the seeds into `fuzz/corpus/<target>/` (named by content, as
/// libFuzzer names its finds), to start a corpus after the seeds changed:
/// `cargo test -p e2e --test fuzz_corpus -- --ignored`.
#[test]
#[ignore = "writes into fuzz/corpus"]
fn write_seeds_into_the_corpora() {
    for (target, _) in targets::TARGETS {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus")
            .join(target);
        std::fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("{dir:?}: {err}"));
        for seed in targets::seeds(target) {
            let path = dir.join(format!("seed-{:016x}", fnv1a(&seed)));
            std::fs::write(&path, &seed).unwrap_or_else(|err| panic!("{path:?}: {err}"));
        }
    }
}

/// FNV-1a: a stable content hash for file names, with no dependency.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
