//! The echo agent of a2a-bench's `sdk` mode on the official A2A Rust SDK
//! (a2aproject/a2a-rs: crates `a2a-lf`, `a2a-server-lf`, `a2a-grpc`), for
//! `scripts/peers-bench.sh`.
//!
//! `peer-official --port PORT --binding jsonrpc|grpc` serves one binding:
//! JSON-RPC on the SDK's axum router at `/`, or gRPC on tonic. Both bindings
//! drive the SDK's `DefaultRequestHandler` with its in-memory task store,
//! and the agent does what a2a-bench's does: completes the task in one
//! status update whose agent message echoes the user's text.

use std::sync::Arc;

use a2a::{
    A2AError, Message, Part, PartContent, Role, StreamResponse, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use futures::stream::{self, BoxStream};
use peer_common::{Args, Binding};

/// Answers every message by completing its task with the message's text.
struct Echo;

impl AgentExecutor for Echo {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        // The text parts joined by newlines, as a2a-core's `Message::text`.
        let text = ctx
            .message
            .as_ref()
            .map(|message| {
                message
                    .parts
                    .iter()
                    .filter_map(|part| match &part.content {
                        PartContent::Text(text) => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        let mut reply = Message::new(Role::Agent, vec![Part::text(text)]);
        reply.task_id = Some(ctx.task_id.clone());
        reply.context_id = Some(ctx.context_id.clone());
        let done = status(&ctx, TaskState::Completed, Some(reply));
        Box::pin(stream::iter([Ok(done)]))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        Box::pin(stream::iter([Ok(status(&ctx, TaskState::Canceled, None))]))
    }
}

fn status(ctx: &ExecutorContext, state: TaskState, message: Option<Message>) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(chrono::Utc::now()),
        },
        metadata: None,
    })
}

async fn serve(args: Args) -> std::io::Result<()> {
    let handler = Arc::new(DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()));
    match args.binding {
        Binding::JsonRpc => {
            use axum::serve::ListenerExt as _;
            // TCP_NODELAY as a2a-bench's servers set it: the answer leaves
            // at once instead of waiting on the client's delayed ACK.
            let listener = tokio::net::TcpListener::bind(args.addr())
                .await?
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            axum::serve(listener, a2a_server::jsonrpc::jsonrpc_router(handler)).await
        }
        Binding::Grpc => {
            let service = a2a_pb::proto::a2a_service_server::A2aServiceServer::new(
                a2a_grpc::GrpcHandler::new(handler),
            );
            // tonic's `serve` binds with TCP_NODELAY on.
            tonic::transport::Server::builder()
                .add_service(service)
                .serve(args.addr())
                .await
                .map_err(std::io::Error::other)
        }
    }
}

fn main() -> std::io::Result<()> {
    peer_common::run(serve(Args::parse()))
}
