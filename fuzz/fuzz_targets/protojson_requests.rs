//! `protojson_requests`: see [`a2a_fuzz::protojson_requests`], shared with the corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| a2a_fuzz::protojson_requests(data));
