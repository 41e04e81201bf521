//! TLS on the one listener: every binding over `https` with a private CA
//! made at test time, clients that do not trust it or speak plaintext,
//! handshakes that fail or stall, and unusable certificate files.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use a2a_client::{Client, ClientBuilder, ClientErrorKind, RetryPolicy, RootCertificates};
use a2a_core::{
    AgentCard, AgentSkill, CancelTaskRequest, GetTaskRequest, StreamResponse,
    SubscribeToTaskRequest, TaskState, binding,
};
use a2a_server::http::{HttpConfig, ServeConfig, TlsConfig};
use futures::StreamExt;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use support::{BINDINGS, Served, collect, immediate, request, send_task, status_text};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A CA and a server certificate it signed for `localhost` and 127.0.0.1.
struct Pki {
    ca: String,
    cert: String,
    key: String,
}

fn pki() -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "a2a test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let mut server =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    server
        .distinguished_name
        .push(DnType::CommonName, "a2a test server");
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = server.signed_by(&key, &ca).unwrap();
    Pki {
        ca: ca.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

impl Pki {
    fn roots(&self) -> RootCertificates {
        RootCertificates::system()
            .add_pem(self.ca.as_bytes())
            .unwrap()
    }
}

/// The card of a server on `addr` with URLs of `scheme` (gRPC's too).
fn card(addr: SocketAddr, scheme: &str) -> AgentCard {
    let grpc = if scheme == "https" {
        format!("https://{addr}")
    } else {
        addr.to_string()
    };
    AgentCard::new("scripted", "scripted test agent over TLS")
        .with_interface(format!("{scheme}://{addr}/"), binding::JSONRPC)
        .with_interface(format!("{scheme}://{addr}"), binding::HTTP_JSON)
        .with_interface(grpc, binding::GRPC)
        .with_skill(AgentSkill::new("s", "scripted", "runs commands").with_tags(["test"]))
        .with_streaming(true)
}

async fn serve_tls(pki: &Pki, config: ServeConfig) -> Served {
    let tls = TlsConfig::from_pem(pki.cert.as_bytes(), pki.key.as_bytes()).unwrap();
    let card = |addr| card(addr, "https");
    support::serve(card, config.with_tls(tls), HttpConfig::default()).await
}

fn quick_config() -> ServeConfig {
    let mut config = ServeConfig::default();
    config.grace = Duration::from_millis(100);
    config
}

/// A client on `binding` trusting the test CA, the card fetched over TLS.
async fn trusting_client(server: &Served, pki: &Pki, binding: &str) -> Client {
    let client = a2a_grpc::register(ClientBuilder::new())
        .root_certificates(pki.roots())
        .prefer([binding])
        .connect(&server.url("https"))
        .await
        .unwrap();
    assert_eq!(client.interface().protocol_binding, binding);
    assert!(client.interface().url.starts_with("https://"), "{binding}");
    client
}

/// Fails the test when `future` takes longer than 20 s: a failure must come
/// as an error, never as a hang.
async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_binding_sends_gets_and_streams_over_tls() {
    let pki = pki();
    let server = serve_tls(&pki, quick_config()).await;
    for binding in BINDINGS {
        let client = trusting_client(&server, &pki, binding).await;

        let task = send_task(&client, request("echo over tls")).await;
        assert_eq!(task.status.state, TaskState::Completed, "{binding}");
        assert_eq!(status_text(&task), "over tls", "{binding}");

        let got = client
            .get_task(
                GetTaskRequest {
                    id: task.id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(got.id, task.id, "{binding}");
        assert_eq!(got.status.state, TaskState::Completed, "{binding}");

        let events = client
            .send_streaming_message(request("stream 3"), None)
            .await
            .unwrap();
        let events = collect(events).await;
        let chunks = events
            .iter()
            .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
            .count();
        assert_eq!(chunks, 3, "{binding}: {events:?}");
        assert_eq!(
            events.last().and_then(StreamResponse::state),
            Some(TaskState::Completed),
            "{binding}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_given_before_registering_grpc_hold_for_grpc_too() {
    let pki = pki();
    let server = serve_tls(&pki, quick_config()).await;
    let client = a2a_grpc::register(ClientBuilder::new().root_certificates(pki.roots()))
        .prefer([binding::GRPC])
        .connect(&server.url("https"))
        .await
        .unwrap();
    let task = send_task(&client, request("echo early roots")).await;
    assert_eq!(status_text(&task), "early roots");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_ca_fails_with_a_connection_error() {
    let pki = pki();
    let server = serve_tls(&pki, quick_config()).await;

    // The card fetch is refused as well: the system's roots do not have the CA.
    let err = bounded(
        "the card fetch",
        ClientBuilder::new()
            .resolver()
            .resolve(&server.url("https")),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Connection, "{err}");

    // Trusting only another CA is no better than trusting the system's.
    let stranger = pki_roots_of_another_ca();
    for (who, roots) in [
        ("system roots", RootCertificates::system()),
        ("another CA", stranger),
    ] {
        for binding in BINDINGS {
            let client = a2a_grpc::register(ClientBuilder::new().root_certificates(roots.clone()))
                .retry(RetryPolicy::none())
                .prefer([binding])
                .build(card(server.addr, "https"))
                .unwrap();
            let err = bounded(binding, client.send_message(request("echo no"), None))
                .await
                .unwrap_err();
            assert_eq!(
                err.kind(),
                ClientErrorKind::Connection,
                "{who}, {binding}: {err}"
            );
            // The reason reaches the caller, not only "cannot connect".
            assert!(
                err.to_string().contains("certificate"),
                "{who}, {binding}: {err}"
            );
        }
    }
    server.stop().await;
}

fn pki_roots_of_another_ca() -> RootCertificates {
    RootCertificates::none()
        .add_pem(pki().ca.as_bytes())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_against_the_tls_port_fails_cleanly() {
    let pki = pki();
    let server = serve_tls(&pki, quick_config()).await;
    for binding in BINDINGS {
        let client = a2a_grpc::register(ClientBuilder::new())
            .retry(RetryPolicy::none())
            .prefer([binding])
            .build(card(server.addr, "http"))
            .unwrap();
        let err = bounded(binding, client.send_message(request("echo plain"), None))
            .await
            .unwrap_err();
        if binding == binding::GRPC {
            // h2c's preface meets an HTTP/1 answer: the connection fails.
            assert_eq!(err.kind(), ClientErrorKind::Connection, "{binding}: {err}");
        } else {
            // The HTTP bindings read why.
            assert_eq!(err.status(), Some(400), "{binding}: {err}");
            assert!(err.to_string().contains("https://"), "{binding}: {err}");
        }
    }
    // The server took no harm from them.
    let client = trusting_client(&server, &pki, binding::JSONRPC).await;
    assert_eq!(
        status_text(&send_task(&client, request("echo still here")).await),
        "still here"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_handshakes_do_not_disturb_other_connections() {
    let pki = pki();
    let server = serve_tls(&pki, quick_config()).await;
    for binding in [binding::GRPC, binding::HTTP_JSON] {
        let client = trusting_client(&server, &pki, binding).await;
        let task = send_task(&client, immediate("wait")).await;
        let mut events = client
            .subscribe_to_task(
                SubscribeToTaskRequest {
                    id: task.id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        // The subscription is live: its first event is the task itself.
        let first = bounded("the first event", events.next())
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(first, StreamResponse::Task(_)), "{first:?}");

        // Handshakes that fail, every way a client can make them fail.
        let mut garbage = TcpStream::connect(server.addr).await.unwrap();
        garbage
            .write_all(b"\x16\x03\x01\x00\x05hello")
            .await
            .unwrap();
        let mut sink = Vec::new();
        bounded("the garbage handshake", garbage.read_to_end(&mut sink))
            .await
            .ok();
        let untrusting = a2a_grpc::register(ClientBuilder::new())
            .retry(RetryPolicy::none())
            .prefer([binding])
            .build(card(server.addr, "https"))
            .unwrap();
        bounded("the untrusting client", untrusting.send_text("echo no"))
            .await
            .unwrap_err();

        // The live connection still carries calls and events.
        client
            .cancel_task(
                CancelTaskRequest {
                    id: task.id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        let last = bounded("the cancel event", async {
            let mut last = None;
            while let Some(event) = events.next().await {
                last = event.unwrap().state();
            }
            last
        })
        .await;
        assert_eq!(last, Some(TaskState::Canceled), "{binding}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_handshake_is_dropped_and_frees_its_connection_slot() {
    let pki = pki();
    let mut config = quick_config();
    config.header_read_timeout = Duration::from_millis(400);
    config.max_connections = 1;
    let server = serve_tls(&pki, config).await;

    // Connects, starts a TLS record and never finishes it, taking the one slot.
    let mut stalled = TcpStream::connect(server.addr).await.unwrap();
    stalled.write_all(b"\x16\x03\x01").await.unwrap();
    let started = Instant::now();
    // A proper client meanwhile waits in the backlog...
    let pki_roots = pki.roots();
    let url = server.url("https");
    let waiting = tokio::spawn(async move {
        let client = a2a_grpc::register(ClientBuilder::new())
            .root_certificates(pki_roots)
            .prefer([binding::JSONRPC])
            .connect(&url)
            .await
            .unwrap();
        let answered = client.send_text("echo after the stall").await;
        (answered, Instant::now())
    });

    // ...until the server drops the stalled one at the header timeout.
    let mut sink = Vec::new();
    // Closed or reset, either ends the read.
    let _ = bounded("the stalled handshake", stalled.read_to_end(&mut sink)).await;
    let dropped_after = started.elapsed();
    assert!(
        dropped_after >= Duration::from_millis(300) && dropped_after < Duration::from_secs(5),
        "dropped after {dropped_after:?}"
    );
    let (answered, at) = bounded("the waiting client", waiting).await.unwrap();
    assert!(answered.is_ok(), "{answered:?}");
    assert!(
        at.duration_since(started) >= Duration::from_millis(300),
        "the waiting client was served before the stalled one left"
    );
    server.stop().await;
}

/// A TLS client that trusts the test CA and offers HTTP/1.1 only.
fn http1_tls_connector(pki: &Pki) -> tokio_rustls::TlsConnector {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca.as_bytes()).unwrap())
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handshake_and_slow_headers_share_one_header_timeout() {
    let pki = pki();
    let timeout = Duration::from_secs(1);
    let mut config = quick_config();
    config.header_read_timeout = timeout;
    let server = serve_tls(&pki, config).await;

    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let started = Instant::now();
    // Most of the budget goes before the handshake...
    tokio::time::sleep(timeout * 7 / 10).await;
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = bounded(
        "the handshake",
        http1_tls_connector(&pki).connect(name, tcp),
    )
    .await
    .unwrap();
    // ...and the rest on request headers dribbled a byte at a time, never
    // finished, until the server closes the connection.
    let (mut read, mut write) = tokio::io::split(tls);
    let dribble = async {
        let head = b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: localhost\r\nx-slow: ";
        for byte in head.iter().chain(std::iter::repeat(&b'z')) {
            if write.write_all(&[*byte]).await.is_err() || write.flush().await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        std::future::pending::<()>().await;
    };
    let mut sink = [0u8; 1024];
    let closed = async { while matches!(read.read(&mut sink).await, Ok(n) if n > 0) {} };
    tokio::select! {
        () = dribble => unreachable!("the dribble never ends"),
        () = bounded("the dribbled headers", closed) => {}
    }
    // Cut at one timeout from the accept; the handshake's time and then a
    // whole timeout for the headers would be 1.7 s.
    let cut_after = started.elapsed();
    assert!(
        cut_after >= timeout * 9 / 10 && cut_after < timeout * 14 / 10,
        "cut after {cut_after:?}"
    );
    server.stop().await;
}

#[test]
fn unusable_certificate_files_are_refused_with_a_clear_error() {
    let pki = pki();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cert = write("cert.pem", &pki.cert);
    let key = write("key.pem", &pki.key);
    let other_key = write(
        "other-key.pem",
        &KeyPair::generate().unwrap().serialize_pem(),
    );
    let garbage = write("garbage.pem", "not a pem file\n");
    let missing = dir.path().join("missing.pem");

    TlsConfig::from_pem_files(&cert, &key).unwrap();
    let message = |cert: &std::path::Path, key: &std::path::Path| {
        TlsConfig::from_pem_files(cert, key)
            .unwrap_err()
            .to_string()
    };
    let err = message(&missing, &key);
    assert!(
        err.contains("cannot read the TLS certificate") && err.contains("missing.pem"),
        "{err}"
    );
    let err = message(&garbage, &key);
    assert!(
        err.contains("no certificate") && err.contains("garbage.pem"),
        "{err}"
    );
    let err = message(&cert, &garbage);
    assert!(
        err.contains("no private key") && err.contains("garbage.pem"),
        "{err}"
    );
    // Each file is fine alone; the pair is not.
    let err = message(&cert, &other_key);
    assert!(
        err.contains("cannot serve TLS") && err.contains("other-key.pem"),
        "{err}"
    );

    let err = RootCertificates::system()
        .add_pem(b"not a pem file")
        .unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Config, "{err}");
    let err = RootCertificates::system()
        .add_pem_file(&missing)
        .unwrap_err();
    assert!(err.to_string().contains("missing.pem"), "{err}");
}
