//! The echo agent of a2a-bench's `sdk` mode on a2a-protocol-sdk
//! (tomtom215/a2a-rust, its `a2a-protocol-server` and `a2a-protocol-types`
//! crates), for `scripts/peers-bench.sh`.
//!
//! `peer-protocol-sdk --port PORT --binding jsonrpc|grpc` serves one binding:
//! JSON-RPC on the SDK's own hyper listener (`Server` with its default
//! `ServeConfig`, the deployment path its README names) or gRPC on the SDK's
//! tonic service. Both drive the SDK's `RequestHandler` with its default
//! in-memory task store, and the agent does what a2a-bench's does: completes
//! the task in one status update whose agent message echoes the user's text.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2a_protocol_server::dispatch::grpc::{GrpcConfig, GrpcDispatcher};
use a2a_protocol_server::{
    AgentExecutor, EventQueueWriter, JsonRpcDispatcher, RequestContext, RequestHandlerBuilder,
    ServeConfig, Server,
};
use a2a_protocol_types::agent_card::{AgentCard, AgentInterface, AgentSkill};
use a2a_protocol_types::error::A2aResult;
use a2a_protocol_types::events::{StreamResponse, TaskStatusUpdateEvent};
use a2a_protocol_types::message::Message;
use a2a_protocol_types::task::{ContextId, TaskState, TaskStatus};
use peer_common::{Args, Binding};

/// Answers every message by completing its task with the message's text.
struct Echo;

impl AgentExecutor for Echo {
    fn execute<'a>(
        &'a self,
        ctx: &'a RequestContext,
        queue: &'a dyn EventQueueWriter,
    ) -> Pin<Box<dyn Future<Output = A2aResult<()>> + Send + 'a>> {
        Box::pin(async move {
            // The text parts joined by newlines, as a2a-core's `Message::text`.
            let text = ctx.message.texts().collect::<Vec<_>>().join("\n");
            let context_id = ContextId::new(ctx.context_id.clone());
            let reply = Message::agent_text(uuid::Uuid::new_v4().to_string(), text)
                .with_task_id(ctx.task_id.clone())
                .with_context_id(context_id.clone());
            let mut status = TaskStatus::with_timestamp(TaskState::Completed);
            status.message = Some(reply);
            queue
                .write(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: ctx.task_id.clone(),
                    context_id,
                    status,
                    metadata: None,
                }))
                .await
        })
    }
}

/// The card the handler serves: this SDK's builder checks one is set and
/// warns when the binding served is not declared in it.
fn card(args: &Args) -> AgentCard {
    let url = format!("http://{}", args.addr());
    let interface = match args.binding {
        Binding::JsonRpc => AgentInterface::jsonrpc(url),
        Binding::Grpc => AgentInterface::grpc(url),
    };
    AgentCard::new("bench", "1.0.0", interface)
        .with_description("echo")
        .with_skill(AgentSkill::new("echo", "Echo", "Echoes text").with_tags(["echo"]))
}

async fn serve(args: Args) -> std::io::Result<()> {
    let handler = Arc::new(
        RequestHandlerBuilder::new(Echo)
            .with_agent_card(card(&args))
            .build()
            .map_err(|error| std::io::Error::other(error.to_string()))?,
    );
    match args.binding {
        Binding::JsonRpc => {
            // The SDK's listener sets TCP_NODELAY on every connection.
            Server::bind(args.addr())
                .await?
                .with_config(ServeConfig::default())
                .serve_with_shutdown(JsonRpcDispatcher::new(handler), std::future::pending())
                .await;
            Ok(())
        }
        Binding::Grpc => {
            // The SDK's service with the per-connection concurrency limit its
            // `GrpcDispatcher::serve` sets, on tonic's own listener: the
            // SDK's listener leaves TCP_NODELAY off, and the benchmark is of
            // the SDK, not of Nagle's algorithm (tonic's is on by default).
            let config = GrpcConfig::default();
            let limit = config.concurrency_limit;
            let service = GrpcDispatcher::new(handler, config).into_service();
            tonic::transport::Server::builder()
                .concurrency_limit_per_connection(limit)
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
