//! `proto_conversion`: see [`a2a_fuzz::proto_conversion`], shared with the corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| a2a_fuzz::proto_conversion(data));
