//! `jsonrpc_envelope`: see [`a2a_fuzz::jsonrpc_envelope`], shared with the corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| a2a_fuzz::jsonrpc_envelope(data));
