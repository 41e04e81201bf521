//! The bodies of the fuzz targets, and the seeds their corpora started from.
//!
//! Each `fuzz_targets/*.rs` is one line that calls a function here, and the
//! stable test `e2e/tests/fuzz_corpus.rs` includes this same file to replay
//! every committed corpus input through the same functions: what the fuzzer
//! checked is what CI checks, with no second copy to drift.
//!
//! Every body must return normally on any input; a panic is a finding.
//! Only crates that `e2e` also depends on may be used here, since the file is
//! compiled in both places.

use std::fmt::Debug;

use a2a_client::sse::SseParser;
use a2a_core as core;
use a2a_grpc::convert::{FromProto, ToProto};
use prost::Message as _;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The body of a fuzz target: takes one input, panics on a finding.
pub type Body = fn(&[u8]);

/// Every target: its name (the folder of its corpus) and its body.
pub const TARGETS: [(&str, Body); 4] = [
    ("jsonrpc_envelope", jsonrpc_envelope),
    ("protojson_requests", protojson_requests),
    ("sse_parser", sse_parser),
    ("proto_conversion", proto_conversion),
];

/// Names of the message types that [`protojson_requests`] and
/// [`proto_conversion`] choose from with their first input byte (modulo the
/// length of this list), in that order.
pub const MESSAGE_TYPES: [&str; 17] = [
    "SendMessageRequest",
    "GetTaskRequest",
    "ListTasksRequest",
    "CancelTaskRequest",
    "SubscribeToTaskRequest",
    "TaskPushNotificationConfig",
    "GetTaskPushNotificationConfigRequest",
    "ListTaskPushNotificationConfigsRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCardRequest",
    "AgentCard",
    "StreamResponse",
    "Task",
    "SendMessageResponse",
    "ListTasksResponse",
    "ListTaskPushNotificationConfigsResponse",
    "Message",
];

/// Calls the generic function `$f::<T>($input)` for the core type `T` at
/// position `$selector` (modulo 17) of [`MESSAGE_TYPES`]. A macro because
/// the list of types has to be spelled out once for each generic function.
macro_rules! with_message_type {
    ($selector:expr, $f:ident, $input:expr) => {
        match usize::from($selector) % MESSAGE_TYPES.len() {
            0 => $f::<core::SendMessageRequest>($input),
            1 => $f::<core::GetTaskRequest>($input),
            2 => $f::<core::ListTasksRequest>($input),
            3 => $f::<core::CancelTaskRequest>($input),
            4 => $f::<core::SubscribeToTaskRequest>($input),
            5 => $f::<core::TaskPushNotificationConfig>($input),
            6 => $f::<core::GetTaskPushNotificationConfigRequest>($input),
            7 => $f::<core::ListTaskPushNotificationConfigsRequest>($input),
            8 => $f::<core::DeleteTaskPushNotificationConfigRequest>($input),
            9 => $f::<core::GetExtendedAgentCardRequest>($input),
            10 => $f::<core::AgentCard>($input),
            11 => $f::<core::StreamResponse>($input),
            12 => $f::<core::Task>($input),
            13 => $f::<core::SendMessageResponse>($input),
            14 => $f::<core::ListTasksResponse>($input),
            15 => $f::<core::ListTaskPushNotificationConfigsResponse>($input),
            _ => $f::<core::Message>($input),
        }
    };
}

// ===== jsonrpc_envelope =====

/// The JSON-RPC endpoint's request reader on an arbitrary body.
///
/// Besides never panicking, the reader's one-pass shortcut must agree with
/// the two-pass reader it falls back to: a body the shortcut reads must give
/// the same id and call when read the slow way, or member order (or any
/// other detail the shortcut handles itself) would change what the server
/// does.
pub fn jsonrpc_envelope(body: &[u8]) {
    use a2a_server::fuzzing;

    let read = fuzzing::read_jsonrpc_call(body);
    let two_passes = fuzzing::read_jsonrpc_call_in_two_passes(body);
    match fuzzing::read_jsonrpc_call_in_one_pass(body) {
        Some(one_pass) => {
            let one_pass = format!("{one_pass:?}");
            assert_eq!(
                format!("{:?}", two_passes.as_ref().ok()),
                format!("Some({one_pass})"),
                "the one-pass shortcut and the two-pass reader disagree"
            );
            assert_eq!(format!("{read:?}"), format!("Ok({one_pass})"));
        }
        None => assert_eq!(format!("{read:?}"), format!("{two_passes:?}")),
    }
    match read {
        Ok((id, call)) => {
            assert!(id.is_string() || id.is_number() || id.is_null(), "id {id}");
            // The method a call reports is the one the server routes on.
            let _ = call.method();
        }
        Err((id, err)) => {
            // The error must make a response the server can send.
            let response = core::JsonRpcResponse::<()>::failure(id, err.to_jsonrpc());
            assert!(serde_json::to_vec(&response).is_ok(), "{response:?}");
        }
    }
}

// ===== protojson_requests =====

/// ProtoJSON decoding of a protocol message chosen by the first byte (see
/// [`MESSAGE_TYPES`]) from the rest.
///
/// Whatever parses must serialize, and parse back into an equal value that
/// serializes to the same text: a value the SDK accepts but cannot send on
/// unchanged is lost or altered by every proxy and store on the way. The
/// plain `serde_json` reader and the path-reporting one in
/// `a2a_core::protojson` (used by the bindings) must accept the same inputs.
pub fn protojson_requests(data: &[u8]) {
    let Some((&selector, json)) = data.split_first() else {
        return;
    };
    with_message_type!(selector, json_round_trip, json);
}

fn json_round_trip<T>(json: &[u8])
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    // JSON text is UTF-8 throughout, and the bindings' reader checks all of
    // it; plain serde_json checks only the strings it keeps, so it reads the
    // text only once that is known to be UTF-8.
    let plain = std::str::from_utf8(json)
        .map_err(|err| err.to_string())
        .and_then(|text| serde_json::from_str::<T>(text).map_err(|err| err.to_string()));
    let tracked = core::protojson::decode::<T>(json);
    let value = match (plain, tracked) {
        (Ok(plain), Ok(tracked)) => {
            assert_eq!(plain, tracked, "the two readers read different values");
            plain
        }
        (Err(_), Err(_)) => return,
        (plain, tracked) => panic!("the readers disagree: {plain:?} vs {tracked:?}"),
    };
    let text = match serde_json::to_vec(&value) {
        Ok(text) => text,
        Err(err) => panic!("{value:?} does not serialize: {err}"),
    };
    let again: T = match serde_json::from_slice(&text) {
        Ok(again) => again,
        Err(err) => panic!(
            "{value:?} serializes to {} which does not parse: {err}",
            String::from_utf8_lossy(&text)
        ),
    };
    assert_eq!(
        again,
        value,
        "changed by a round trip through {}",
        String::from_utf8_lossy(&text)
    );
    let text_again = serde_json::to_vec(&again).unwrap_or_default();
    assert_eq!(
        String::from_utf8_lossy(&text_again),
        String::from_utf8_lossy(&text)
    );
}

// ===== sse_parser =====

/// The client's SSE parser on one stream delivered three ways: whole, in
/// chunks whose sizes come from the input, and one byte at a time.
///
/// The first input byte picks the event size limit, the second seeds the
/// chunk sizes, the rest is the stream. How the network happens to split a
/// stream must not change which events come out, nor whether the size limit
/// is hit: the chunked and byte-wise runs must yield exactly the events of
/// the whole run, or, when the limit is hit, all fail, having yielded only
/// events that came before the point of failure.
pub fn sse_parser(data: &[u8]) {
    let [limit_selector, chunk_seed, stream @ ..] = data else {
        return;
    };
    // Half the inputs get a limit no input reaches, so that their events are
    // compared; the others a small one, so that the limit is exercised.
    let limit = if limit_selector & 0x80 == 0 {
        1 << 20
    } else {
        usize::from(limit_selector & 0x7f) * 4
    };

    let whole = feed(limit, [stream]);
    let mut rng = u32::from(*chunk_seed).wrapping_mul(0x9e37_79b9) | 1;
    let largest = 1 + usize::from(chunk_seed & 0x3f);
    let mut rest = stream;
    let chunks = std::iter::from_fn(|| {
        if rest.is_empty() {
            return None;
        }
        // xorshift32: cheap, and fixed by the input so a finding reproduces.
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        let size = (1 + rng as usize % largest).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        Some(chunk)
    });
    let chunked = feed(limit, chunks);
    let bytewise = feed(limit, stream.chunks(1));

    match (&whole.failed, &chunked.failed, &bytewise.failed) {
        (false, false, false) => {
            assert_eq!(chunked.events, whole.events, "chunked");
            assert_eq!(bytewise.events, whole.events, "byte-wise");
            assert_eq!(chunked.partial, whole.partial, "chunked");
            assert_eq!(bytewise.partial, whole.partial, "byte-wise");
        }
        (true, true, true) => assert!(
            bytewise.events.starts_with(&chunked.events),
            "chunked {:?} before failing, byte-wise {:?}",
            chunked.events,
            bytewise.events
        ),
        (whole, chunked, bytewise) => {
            panic!("limit {limit} hit: whole {whole}, chunked {chunked}, byte-wise {bytewise}")
        }
    }
}

/// What a parser gave for one way of delivering a stream.
struct Fed {
    /// The events yielded before the end or the first error.
    events: Vec<String>,
    /// Whether a push failed (the limit was hit).
    failed: bool,
    /// Whether an event was left incomplete at the end.
    partial: bool,
}

fn feed<'a>(limit: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Fed {
    let mut parser = SseParser::new(limit);
    let mut events = Vec::new();
    for chunk in chunks {
        match parser.push(chunk) {
            Ok(more) => events.extend(more),
            Err(err) => {
                assert_eq!(err.limit, limit);
                return Fed {
                    events,
                    failed: true,
                    partial: true,
                };
            }
        }
    }
    Fed {
        events,
        failed: false,
        partial: parser.has_partial_event(),
    }
}

// ===== proto_conversion =====

/// The gRPC binding's conversion of a protobuf message chosen by the first
/// byte (see [`MESSAGE_TYPES`]) and decoded from the rest.
///
/// A core value converted from protobuf must survive core -> proto -> core
/// unchanged: the server answers with what it converted, and the client
/// hands on what it received.
pub fn proto_conversion(data: &[u8]) {
    let Some((&selector, wire)) = data.split_first() else {
        return;
    };
    with_message_type!(selector, proto_round_trip, wire);
}

fn proto_round_trip<T>(wire: &[u8])
where
    T: FromProto + ToProto<Proto = <T as FromProto>::Proto> + Clone + PartialEq + Debug,
    <T as FromProto>::Proto: prost::Message + Default + Clone + Debug,
{
    let Ok(proto) = <T as FromProto>::Proto::decode(wire) else {
        return;
    };
    let Ok(value) = T::from_proto(proto) else {
        return;
    };
    let proto = value.clone().to_proto();
    match T::from_proto(proto.clone()) {
        Ok(again) => assert_eq!(again, value, "changed by a round trip through {proto:?}"),
        Err(err) => panic!("{value:?} converts to {proto:?}, which does not convert back: {err}"),
    }
}

// ===== seeds =====

/// The inputs each target's corpus was started from: the JSON examples of
/// the protocol that `a2a-core`'s own tests use, in the framing each target
/// expects. Replayed with the corpus, so they stay valid inputs.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "jsonrpc_envelope" => jsonrpc_seeds(),
        "protojson_requests" => examples()
            .into_iter()
            .map(|(selector, json)| [&[selector][..], json.as_bytes()].concat())
            .collect(),
        "sse_parser" => sse_seeds(),
        "proto_conversion" => examples()
            .into_iter()
            .filter_map(|(selector, json)| {
                let wire = with_message_type!(selector, proto_from_json, json)?;
                Some([&[selector][..], &wire].concat())
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// One example per type of [`MESSAGE_TYPES`] or more, with its position there.
fn examples() -> Vec<(u8, &'static str)> {
    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!("../../a2a-core/tests/fixtures/", $name, ".json"))
        };
    }
    vec![
        (0, fixture!("send_message_request")),
        (0, fixture!("send_message_request_file")),
        (1, fixture!("get_task_request")),
        (2, fixture!("list_tasks_request")),
        (3, fixture!("cancel_task_request")),
        (4, r#"{"tenant":"acme","id":"t-1"}"#),
        (5, fixture!("push_config")),
        (6, r#"{"tenant":"acme","taskId":"t-1","id":"cfg-1"}"#),
        (
            7,
            r#"{"tenant":"acme","taskId":"t-1","pageSize":5,"pageToken":"p"}"#,
        ),
        (8, r#"{"tenant":"acme","taskId":"t-1","id":"cfg-1"}"#),
        (9, r#"{"tenant":"acme"}"#),
        (10, fixture!("agent_card")),
        (10, fixture!("minimal_agent_card")),
        (11, fixture!("stream_task")),
        (11, fixture!("stream_status_update")),
        (11, fixture!("stream_artifact_update")),
        (12, fixture!("task_input_required")),
        (13, fixture!("send_message_response_message")),
        (13, fixture!("send_message_response_task")),
        (14, fixture!("list_tasks_response")),
        (15, fixture!("list_push_configs_response")),
        (
            16,
            r#"{"role":"ROLE_AGENT","parts":[{"data":{"k":[1,2.5,null]}},{"url":"https://x.example/f","mediaType":"text/plain"}],"messageId":"m-1","contextId":"c-1","taskId":"t-1","referenceTaskIds":["t-0"],"extensions":["urn:x"],"metadata":{"a":true}}"#,
        ),
    ]
}

fn proto_from_json<T>(json: &str) -> Option<Vec<u8>>
where
    T: ToProto + DeserializeOwned,
    T::Proto: prost::Message,
{
    let value: T = serde_json::from_str(json).ok()?;
    Some(value.to_proto().encode_to_vec())
}

fn jsonrpc_seeds() -> Vec<Vec<u8>> {
    let params_of = |selector: u8| {
        examples()
            .into_iter()
            .find(|(at, _)| *at == selector)
            .map_or("{}", |(_, json)| json)
    };
    let mut seeds = Vec::new();
    for (n, method) in core::Method::ALL.into_iter().enumerate() {
        let params = params_of(match method {
            core::Method::SendMessage | core::Method::SendStreamingMessage => 0,
            core::Method::GetTask => 1,
            core::Method::ListTasks => 2,
            core::Method::CancelTask => 3,
            core::Method::SubscribeToTask => 4,
            core::Method::CreateTaskPushNotificationConfig => 5,
            core::Method::GetTaskPushNotificationConfig => 6,
            core::Method::ListTaskPushNotificationConfigs => 7,
            core::Method::DeleteTaskPushNotificationConfig => 8,
            core::Method::GetExtendedAgentCard => 9,
        });
        let name = method.name();
        // The order every client writes, then the order that takes the
        // two-pass path, with the kinds of id the protocol allows.
        seeds.push(format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"{name}","params":{params}}}"#
        ));
        seeds.push(format!(
            r#"{{"params":{params},"method":"{name}","id":"r-{n}","jsonrpc":"2.0"}}"#
        ));
    }
    seeds.extend(
        [
            r#"{"jsonrpc":"2.0","id":null,"method":"GetExtendedAgentCard"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}]"#,
        ]
        .map(str::to_owned),
    );
    seeds.into_iter().map(String::into_bytes).collect()
}

fn sse_seeds() -> Vec<Vec<u8>> {
    let streams: [&[u8]; 4] = [
        b"data: {\"a\":1}\n\n: keep-alive\n\ndata: x\r\ndata: y\r\n\r\nid: 7\nevent: m\ndata:z\n\n",
        b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\"}}}\r\n\r\n",
        b"retry: 10\rdata\rdata:\r\rgarbage\n: comment\n\ndata: half",
        b"data: 0123456789abcdef0123456789abcdef\n\n:0123456789abcdef0123456789abcdef\n\n",
    ];
    let mut seeds = Vec::new();
    for stream in streams {
        for (limit, chunks) in [(0x00, 0x07), (0x83, 0x01), (0x88, 0x3f)] {
            seeds.push([&[limit, chunks][..], stream].concat());
        }
    }
    seeds
}
