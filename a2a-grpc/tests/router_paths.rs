//! The router of every binding sends each gRPC path to its rpc: the eleven
//! 1.0 methods, an unknown method (UNIMPLEMENTED, not an HTTP 404) and the
//! 0.3 service.
#![cfg(feature = "server")]

use a2a_core::{A2aError, AgentCard, binding};
use a2a_server::http::HttpConfig;
use a2a_server::{A2aService, DefaultRequestHandler};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

struct Done;

#[tonic::async_trait]
impl AgentExecutor for Done {
    async fn execute(&self, _: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text("done").await
    }
}

/// Posts one empty protobuf message to `path`; returns the HTTP status and
/// the `grpc-status`, from the headers or else the trailers.
async fn call(router: &axum::Router, path: &str) -> (u16, String) {
    let frame = bytes::Bytes::from_static(&[0, 0, 0, 0, 0]);
    let request = http::Request::post(path)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0")
        .body(axum::body::Body::from(frame))
        .expect("valid request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status().as_u16();
    let in_headers = response.headers().get("grpc-status").cloned();
    let grpc_status = match in_headers {
        Some(value) => value,
        None => {
            let body = response.into_body().collect().await.expect("body");
            body.trailers()
                .and_then(|trailers| trailers.get("grpc-status").cloned())
                .expect("a grpc-status")
        }
    };
    (status, grpc_status.to_str().expect("ASCII").to_owned())
}

#[tokio::test]
async fn every_grpc_path_reaches_its_rpc() {
    let card = AgentCard::new("paths", "routing").with_interface("127.0.0.1:1", binding::GRPC);
    let service = A2aService::new(DefaultRequestHandler::builder(Done, card).build());
    let router = a2a_grpc::router(service, HttpConfig::default());
    for method in a2a_core::Method::ALL {
        let path = a2a_grpc::method_path(method);
        let (http, grpc) = call(&router, &path).await;
        assert_eq!(http, 200, "{path}");
        // Each rpc judges the empty request itself (its own error or an
        // answer); none is missing.
        assert_ne!(grpc, "12", "{path} is not routed to its rpc");
    }
    for path in [
        "/lf.a2a.v1.A2AService/NoSuchMethod",
        "/lf.a2a.v1.A2AService/TaskSubscription",
    ] {
        assert_eq!(call(&router, path).await, (200, "12".to_owned()), "{path}");
    }
    // The 0.3 service's paths are its own.
    let (http, grpc) = call(&router, "/a2a.v1.A2AService/GetTask").await;
    assert_eq!(http, 200);
    assert_ne!(grpc, "12");
    // Without 0.3 they answer that the version is not served
    // (FAILED_PRECONDITION), not that the service is unknown.
    #[cfg(not(feature = "v03"))]
    assert_eq!(grpc, "9");
}
