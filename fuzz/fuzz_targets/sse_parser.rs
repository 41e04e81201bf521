//! `sse_parser`: see [`a2a_fuzz::sse_parser`], shared with the corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| a2a_fuzz::sse_parser(data));
