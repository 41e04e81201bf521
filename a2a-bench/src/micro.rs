//! `handler`, `router`, `jwt` and `memory`: in-process modes, no sockets.

use a2a_conversation::HandlerBuilderExt as _;
use std::net::SocketAddr;
use std::time::Instant;

use a2a_core::{Message, SendMessageRequest};
use a2a_server::http::HttpConfig;
use a2a_server::{CallContext, DefaultRequestHandler, RequestHandler};
use anyhow::Context as _;
use bytes::Bytes;

use crate::agent::{Echo, card, request_body};
use crate::jwt_keys;

pub(crate) async fn handler_only(
    count: usize,
    conversation_log: Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let card = card(SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut builder = DefaultRequestHandler::builder(Echo, card);
    let log = match conversation_log {
        Some(dir) => Some(a2a_conversation::ConversationLog::open(
            dir,
            Default::default(),
        )?),
        None => None,
    };
    if let Some(log) = &log {
        builder = builder.conversation_log(log.clone());
    }
    let handler = builder.build();
    let ctx = CallContext::new(
        a2a_core::Method::SendMessage,
        a2a_server::ServiceParams::new(),
    );
    let started = Instant::now();
    for _ in 0..count {
        handler
            .send_message(
                &ctx,
                SendMessageRequest::new(Message::user_text("hello benchmark")),
            )
            .await?;
    }
    if let Some(log) = &log {
        // The writer's work counts too.
        log.flush().await?;
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let per_call = elapsed.as_secs_f64() * 1e6 / count as f64;
    println!("calls={count} per_call={per_call:.2}µs");
    Ok(())
}

/// `count` blocking SendMessage calls through the full router (HTTP+JSON or
/// gRPC framing, routing, decoding, the handler, encoding), in process.
pub(crate) async fn router_only(binding: String, count: usize) -> anyhow::Result<()> {
    use a2a_grpc::convert::ToProto as _;
    use tower::ServiceExt as _;
    let card = card(SocketAddr::from(([127, 0, 0, 1], 1)));
    let service = a2a_server::A2aService::new(DefaultRequestHandler::builder(Echo, card).build());
    let app = a2a_grpc::router(service, HttpConfig::default());
    let request = SendMessageRequest::new(Message::user_text("hello benchmark"));
    let (path, content_type, body) = match binding.as_str() {
        "jsonrpc" => (
            "/",
            "application/json",
            request_body(a2a_core::Method::SendMessage),
        ),
        "http_json" => (
            "/message:send",
            "application/json",
            Bytes::from(serde_json::to_vec(&request)?),
        ),
        "grpc" => {
            let message = prost::Message::encode_to_vec(&request.to_proto());
            let mut framed = vec![0u8];
            framed.extend_from_slice(&u32::try_from(message.len())?.to_be_bytes());
            framed.extend_from_slice(&message);
            (
                "/lf.a2a.v1.A2AService/SendMessage",
                "application/grpc",
                Bytes::from(framed),
            )
        }
        other => anyhow::bail!("unknown binding {other:?} (jsonrpc, http_json or grpc)"),
    };
    let started = Instant::now();
    for _ in 0..count {
        let request = axum::http::Request::post(path)
            .header("content-type", content_type)
            .header("a2a-version", "1.0")
            .body(axum::body::Body::from(body.clone()))?;
        let response = app.clone().oneshot(request).await?;
        anyhow::ensure!(response.status().is_success(), "{}", response.status());
        let answer = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
        anyhow::ensure!(!answer.is_empty(), "empty answer");
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let per_call = elapsed.as_secs_f64() * 1e6 / count as f64;
    println!("calls={count} per_call={per_call:.2}µs");
    Ok(())
}

/// Times `JwtAuth::authenticate` on a valid token: the per-call cost of JWT
/// authentication (the key is fetched once, before the timing).
pub(crate) async fn jwt_only(count: usize, alg: &str, uncached: bool) -> anyhow::Result<()> {
    use a2a_server::auth::{Authenticate as _, JwtAuth};
    use base64::Engine as _;
    use jsonwebtoken::{Algorithm, EncodingKey};
    let standard = base64::engine::general_purpose::STANDARD;
    let secret = b"a benchmark secret of thirty-two bytes!";
    let (algorithm, key, jwk) = match alg {
        "hs256" => (
            Algorithm::HS256,
            EncodingKey::from_secret(secret),
            serde_json::json!({
                "kty": "oct", "kid": "k1", "alg": "HS256",
                "k": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
            }),
        ),
        "rs256" => (
            Algorithm::RS256,
            EncodingKey::from_rsa_der(&standard.decode(jwt_keys::RSA_PRIVATE_DER)?),
            serde_json::json!({
                "kty": "RSA", "kid": "k1", "alg": "RS256",
                "n": jwt_keys::RSA_MODULUS, "e": "AQAB",
            }),
        ),
        "es256" => (
            Algorithm::ES256,
            EncodingKey::from_ec_der(&standard.decode(jwt_keys::EC_PRIVATE_DER)?),
            serde_json::json!({
                "kty": "EC", "kid": "k1", "alg": "ES256", "crv": "P-256",
                "x": jwt_keys::EC_X, "y": jwt_keys::EC_Y,
            }),
        ),
        other => anyhow::bail!("unknown algorithm {other:?}: use hs256, rs256 or es256"),
    };
    let jwks = serde_json::json!({ "keys": [jwk] });
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let jwks = jwks.clone();
            async move { axum::Json(jwks) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/jwks.json", listener.local_addr()?);
    // The key server the JWT mode fetches from, not an A2A server.
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut auth = JwtAuth::new(url, "bench-agent", "https://issuer.example");
    if uncached {
        auth = auth.verified_ttl(std::time::Duration::ZERO);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let claims = serde_json::json!({
        "sub": "alice", "aud": "bench-agent", "iss": "https://issuer.example",
        "exp": now + 3600, "nbf": now - 10,
    });
    let mut header = jsonwebtoken::Header::new(algorithm);
    header.kid = Some("k1".into());
    let token = jsonwebtoken::encode(&header, &claims, &key)?;
    let mut params = a2a_server::ServiceParams::new();
    params
        .append("authorization", &format!("Bearer {token}"))
        .map_err(|_| anyhow::anyhow!("bad header"))?;
    let ctx = CallContext::new(a2a_core::Method::SendMessage, params);
    // The first call fetches the key set.
    auth.authenticate(&ctx)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let started = Instant::now();
    for _ in 0..count {
        std::hint::black_box(
            auth.authenticate(&ctx)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        );
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let per_call = elapsed.as_secs_f64() * 1e6 / count as f64;
    println!("jwt alg={alg} uncached={uncached} verifications={count} per_call={per_call:.2}µs");
    Ok(())
}

fn resident_bytes() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm.split_whitespace().nth(1).context("statm")?.parse()?;
    Ok(pages * 4096)
}

pub(crate) async fn memory(tasks: usize) -> anyhow::Result<()> {
    let card = card(SocketAddr::from(([127, 0, 0, 1], 1)));
    let handler = std::sync::Arc::new(DefaultRequestHandler::builder(Echo, card).build());
    let ctx = CallContext::new(
        a2a_core::Method::SendMessage,
        a2a_server::ServiceParams::new(),
    );
    // Warm up allocator pools before the baseline.
    for _ in 0..1000 {
        handler
            .send_message(
                &ctx,
                SendMessageRequest::new(Message::user_text("hello benchmark")),
            )
            .await?;
    }
    let before = resident_bytes()?;
    let mut joins = Vec::new();
    for chunk in 0..64 {
        let (handler, ctx) = (handler.clone(), ctx.clone());
        joins.push(tokio::spawn(async move {
            for _ in (chunk..tasks).step_by(64) {
                handler
                    .send_message(
                        &ctx,
                        SendMessageRequest::new(Message::user_text("hello benchmark")),
                    )
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    for join in joins {
        join.await??;
    }
    let after = resident_bytes()?;
    #[allow(clippy::cast_precision_loss)]
    let per_task = after.saturating_sub(before) as f64 / tasks as f64;
    println!(
        "tasks={tasks} resident_delta={}KiB per_task={per_task:.0}B",
        (after - before) / 1024
    );
    Ok(())
}
