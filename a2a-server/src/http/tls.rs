//! TLS on the listener of [`serve_with`](super::serve_with), with rustls.

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;

/// A server certificate chain and its private key, ready for
/// [`ServeConfig::with_tls`](super::ServeConfig::with_tls).
///
/// The listener then speaks TLS 1.2 and 1.3 only, offering `h2` and
/// `http/1.1` by ALPN, so gRPC and the HTTP bindings keep sharing one port.
///
/// ```no_run
/// # fn demo() -> Result<(), a2a_server::http::TlsConfigError> {
/// use a2a_server::http::{ServeConfig, TlsConfig};
/// let config = ServeConfig::default().with_tls(TlsConfig::from_pem_files("cert.pem", "key.pem")?);
/// # let _ = config; Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

/// Why a certificate or key cannot serve TLS; its message names the file
/// and the problem.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsConfigError(String);

/// The ALPN protocols offered: HTTP/2 first, which gRPC clients require.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

impl TlsConfig {
    /// `chain` (the server's certificate first, then any intermediates) and
    /// its private key. Refused when the key does not match the certificate.
    pub fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, TlsConfigError> {
        if chain.is_empty() {
            return Err(TlsConfigError("no certificate given".into()));
        }
        // The process's provider when the application installed one;
        // otherwise aws-lc-rs, the one reqwest already brings in.
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| TlsConfigError(format!("TLS setup: {err}")))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|err| {
                TlsConfigError(format!("the certificate and key cannot serve TLS: {err}"))
            })?;
        Ok(TlsConfig::from_rustls(config))
    }

    /// A certificate chain and a private key in PEM (`CERTIFICATE` sections;
    /// a `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` section).
    pub fn from_pem(chain: &[u8], key: &[u8]) -> Result<Self, TlsConfigError> {
        let (chain, key) = (
            certificates(chain, "the certificate PEM")?,
            private_key(key, "the key PEM")?,
        );
        TlsConfig::new(chain, key)
    }

    /// [`from_pem`](Self::from_pem) with both read from files, as most
    /// certificate tools write them.
    pub fn from_pem_files(
        chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, TlsConfigError> {
        let (chain_path, key_path) = (chain.as_ref(), key.as_ref());
        let read = |path: &Path, what: &str| {
            std::fs::read(path).map_err(|err| {
                TlsConfigError(format!(
                    "cannot read the TLS {what} {}: {err}",
                    path.display()
                ))
            })
        };
        let chain = certificates(
            &read(chain_path, "certificate")?,
            &chain_path.display().to_string(),
        )?;
        let key = private_key(&read(key_path, "key")?, &key_path.display().to_string())?;
        TlsConfig::new(chain, key).map_err(|TlsConfigError(message)| {
            TlsConfigError(format!(
                "{} with {}: {message}",
                chain_path.display(),
                key_path.display()
            ))
        })
    }

    /// A rustls configuration of your own (client certificates, several
    /// certificates by SNI...). Its ALPN protocols are set to `h2` and
    /// `http/1.1` when it has none, since gRPC clients insist on `h2`.
    pub fn from_rustls(mut config: rustls::ServerConfig) -> Self {
        if config.alpn_protocols.is_empty() {
            config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        }
        TlsConfig {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        }
    }

    /// The handshake on an accepted connection, finished by `deadline` or
    /// given up. A client that speaks plain HTTP gets a plain `400` saying to
    /// use `https://` (rather than a closed socket it cannot explain).
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
        deadline: tokio::time::Instant,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let handshake = async {
            let mut first = [0u8; 1];
            let read = stream.peek(&mut first).await?;
            // Every TLS connection opens with a handshake record (type 22).
            if read == 1 && first[0] != 22 {
                refuse_plaintext(stream).await;
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a plaintext request on the TLS port",
                ));
            }
            self.acceptor.accept(stream).await
        };
        tokio::time::timeout_at(deadline, handshake)
            .await
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the TLS handshake did not finish within the header read timeout",
                )
            })?
    }
}

fn certificates(pem: &[u8], source: &str) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| TlsConfigError(format!("malformed PEM in {source}: {err}")))?;
    if chain.is_empty() {
        return Err(TlsConfigError(format!(
            "no certificate (-----BEGIN CERTIFICATE-----) in {source}"
        )));
    }
    Ok(chain)
}

fn private_key(pem: &[u8], source: &str) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|err| match err {
        rustls::pki_types::pem::Error::NoItemsFound => TlsConfigError(format!(
            "no private key (-----BEGIN PRIVATE KEY-----) in {source}"
        )),
        err => TlsConfigError(format!("malformed private key in {source}: {err}")),
    })
}

/// Answers a plaintext HTTP request with a plaintext `400`, then waits for
/// the client to close: closing first, with its request unread, would reset
/// the connection and could destroy the answer before the client reads it.
async fn refuse_plaintext(mut stream: TcpStream) {
    const BODY: &str = "This server speaks TLS: use an https:// URL.\n";
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    if stream.write_all(answer.as_bytes()).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}
