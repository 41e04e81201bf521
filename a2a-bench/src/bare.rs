//! `bare`, `bare-grpc` and `bare-h2`: the reference handlers, the same work
//! as the SDK's echo agent (parse, build the task, answer) with none of the
//! SDK behind them.

use std::net::SocketAddr;

use a2a_core::{
    JsonRpcRequest, JsonRpcResponse, Message, Part, Role, SendMessageRequest, SendMessageResponse,
    Task, TaskState, TaskStatus,
};
use a2a_server::http::{DEFAULT_BACKLOG, bind};
use axum::response::IntoResponse as _;
use bytes::Bytes;

/// The completed task an echo agent would produce for `user`: the bare
/// references' whole "agent".
fn echo_task(mut user: Message) -> Task {
    let (task_id, context_id) = (a2a_core::new_id(), a2a_core::new_id());
    user.task_id.clone_from(&task_id);
    user.context_id.clone_from(&context_id);
    let reply = Message::new(Role::Agent, vec![Part::text(user.text())])
        .with_task_id(task_id.clone())
        .with_context_id(context_id.clone());
    Task {
        id: task_id,
        context_id,
        status: TaskStatus::new(TaskState::Completed).with_message(reply),
        history: vec![user.into()],
        ..Task::default()
    }
}

/// The reference: parse the request, answer the completed task an echo agent
/// would produce, with none of the SDK's machinery.
async fn bare_handler(body: Bytes) -> axum::response::Response {
    let request: JsonRpcRequest<SendMessageRequest> = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(_) => return axum::http::StatusCode::BAD_REQUEST.into_response(),
    };
    let Some(params) = request.params else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let streaming = request.method == a2a_core::Method::SendStreamingMessage.name();
    let task = echo_task(params.message);
    let response = JsonRpcResponse::success(request.id, SendMessageResponse::Task(task));
    // Sized up front, as the SDK does, so the comparison measures the SDK's
    // machinery rather than buffer growth.
    let mut json = Vec::with_capacity(1024);
    // A streaming call (the `streams` reference) gets its task as the one
    // event of an SSE body, written with the headers as the SDK writes its
    // first events.
    if streaming {
        json.extend_from_slice(b"data: ");
    }
    if serde_json::to_writer(&mut json, &response).is_err() {
        return axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let content_type = if streaming {
        json.extend_from_slice(b"\n\n");
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut http = axum::response::Response::new(axum::body::Body::from(json));
    http.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    http
}

/// The bare handler's work on one gRPC SendMessage: the length-prefixed
/// message decoded, the task built as `bare_handler` builds it, the answer
/// encoded and framed, then `grpc-status: 0` in the trailers.
async fn bare_grpc_handler(body: Bytes) -> axum::response::Response {
    let Some(framed) = bare_grpc_answer(&body) else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let frames = futures::stream::iter([
        Ok::<_, std::convert::Infallible>(http_body::Frame::data(framed)),
        Ok(http_body::Frame::trailers(grpc_ok_trailers())),
    ]);
    let mut http = axum::response::Response::new(axum::body::Body::new(
        http_body_util::StreamBody::new(frames),
    ));
    http.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/grpc"),
    );
    http
}

fn grpc_ok_trailers() -> axum::http::HeaderMap {
    let mut trailers = axum::http::HeaderMap::new();
    trailers.insert("grpc-status", axum::http::HeaderValue::from_static("0"));
    trailers
}

/// The framed answer of the bare gRPC handlers to one framed
/// SendMessageRequest; `None` when the request does not decode.
fn bare_grpc_answer(body: &[u8]) -> Option<Bytes> {
    use a2a_grpc::convert::{FromProto as _, ToProto as _};
    use prost::Message as _;
    let proto = a2a_grpc::pb::SendMessageRequest::decode(body.get(5..)?).ok()?;
    let params = SendMessageRequest::from_proto(proto).ok()?;
    let task = echo_task(params.message);
    let answer = a2a_core::SendMessageResponse::Task(task).to_proto();
    let length = answer.encoded_len();
    let mut framed = Vec::with_capacity(5 + length);
    framed.push(0);
    framed.extend_from_slice(&u32::try_from(length).ok()?.to_be_bytes());
    answer.encode(&mut framed).ok()?;
    Some(Bytes::from(framed))
}

/// The bare gRPC handler on the h2 crate alone: each connection's streams
/// accepted in one task, each stream answered in its own (the way hyper
/// runs them, so that a slow body does not hold up the connection).
pub(crate) async fn serve_bare_h2(port: u16) -> anyhow::Result<()> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)?;
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        tokio::spawn(async move {
            // The SDK's own connection (one write per answer; see
            // `Unvectored`): the floor is what h2 can do at its best.
            let socket = a2a_server::http::Unvectored::new(socket);
            let mut connection = h2::server::handshake(socket).await?;
            while let Some(stream) = connection.accept().await {
                let (request, respond) = stream?;
                tokio::spawn(bare_h2_stream(request, respond));
            }
            anyhow::Ok(())
        });
    }
}

async fn bare_h2_stream(
    request: axum::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) -> anyhow::Result<()> {
    let mut body = request.into_body();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
        data.extend_from_slice(&chunk);
    }
    let Some(answer) = bare_grpc_answer(&data) else {
        // As the hyper bare handler answers it.
        let refusal = axum::http::Response::builder()
            .status(axum::http::StatusCode::BAD_REQUEST)
            .body(())?;
        respond.send_response(refusal, true)?;
        return Ok(());
    };
    let response = axum::http::Response::builder()
        .header("content-type", "application/grpc")
        .body(())?;
    let mut send = respond.send_response(response, false)?;
    send.send_data(answer, false)?;
    send.send_trailers(grpc_ok_trailers())?;
    Ok(())
}

pub(crate) async fn serve_bare_grpc(port: u16) -> anyhow::Result<()> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)?;
    let path = a2a_grpc::method_path(a2a_core::Method::SendMessage);
    let app = axum::Router::new().route(&path, axum::routing::post(bare_grpc_handler));
    // Plain axum on purpose: the bare handler is the floor the SDK is
    // measured against, so it carries none of the SDK's serving.
    axum::serve(listener, app).await?;
    Ok(())
}

pub(crate) async fn serve_bare(listener: tokio::net::TcpListener) -> anyhow::Result<()> {
    let app = axum::Router::new().route("/", axum::routing::post(bare_handler));
    // Plain axum on purpose, as above.
    axum::serve(listener, app).await?;
    Ok(())
}
