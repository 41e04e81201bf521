//! Entry points for the fuzz targets in the repository's `fuzz/` folder.
//!
//! The functions here are thin wrappers over private parsers, so that a
//! fuzzer reaches exactly the code a network peer reaches without those
//! parsers becoming public API. Only built with the `fuzzing` feature; no
//! stability promise.

use a2a_core::A2aError;
use serde_json::Value;

use crate::Request;
use crate::http::jsonrpc;

/// Reads a JSON-RPC request body exactly as the JSON-RPC endpoint does: the
/// request's id and call, or the id (if known) and the error the client gets.
pub fn read_jsonrpc_call(body: &[u8]) -> Result<(Value, Request), (Value, A2aError)> {
    jsonrpc::read_call(body)
}

/// [`read_jsonrpc_call`] without its one-pass shortcut (the envelope first,
/// then the params): whenever the shortcut accepts a body, this must read
/// the same id and call from it.
pub fn read_jsonrpc_call_in_two_passes(body: &[u8]) -> Result<(Value, Request), (Value, A2aError)> {
    jsonrpc::read_call_in_two_passes(body)
}

/// The one-pass shortcut of [`read_jsonrpc_call`] alone: `None` for any body
/// it leaves to the two-pass reader.
pub fn read_jsonrpc_call_in_one_pass(body: &[u8]) -> Option<(Value, Request)> {
    jsonrpc::read_call_in_one_pass(body)
}
