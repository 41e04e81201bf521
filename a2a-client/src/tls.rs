//! `RootCertificates`: the certificate authorities a client trusts, shared by
//! every binding.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, TrustAnchor};

use crate::{ClientError, ClientErrorKind};

/// The certificate authorities a client trusts for `https` URLs: the
/// system's store (by default) and any added here.
///
/// Given once to [`ClientBuilder::root_certificates`](crate::ClientBuilder::root_certificates),
/// they hold for the card fetch, JSON-RPC, HTTP+JSON and gRPC alike (the gRPC
/// transport of `a2a-grpc` reads them from the builder), so a private CA is
/// configured in one place.
///
/// The system's store is the operating system's: the HTTP bindings verify
/// through `rustls-platform-verifier` (as reqwest does by default) and gRPC
/// through the same certificates loaded with `rustls-native-certs`, which is
/// what that verifier reads on Linux.
///
/// ```no_run
/// # fn demo() -> Result<(), a2a_client::ClientError> {
/// use a2a_client::{ClientBuilder, RootCertificates};
/// let roots = RootCertificates::system().add_pem_file("private-ca.pem")?;
/// let builder = ClientBuilder::new().root_certificates(roots);
/// # let _ = builder; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RootCertificates {
    added: Arc<[CertificateDer<'static>]>,
    system: bool,
}

impl std::fmt::Debug for RootCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootCertificates")
            .field("system", &self.system)
            .field("added", &self.added.len())
            .finish()
    }
}

impl Default for RootCertificates {
    fn default() -> Self {
        RootCertificates::system()
    }
}

fn config_error(message: String) -> ClientError {
    ClientError::new(ClientErrorKind::Config, message)
}

impl RootCertificates {
    /// The system's store only (what a client trusts unless told otherwise).
    pub fn system() -> Self {
        RootCertificates {
            added: Arc::from(Vec::new()),
            system: true,
        }
    }

    /// No authority at all until some are added: for deployments that must
    /// trust their own CA and nothing else.
    pub fn none() -> Self {
        RootCertificates {
            system: false,
            ..RootCertificates::system()
        }
    }

    /// Trusts one more certificate authority, DER-encoded. Refused when it
    /// cannot serve as a trust anchor (not a certificate, say), so a bad
    /// file fails here rather than at the first connection.
    pub fn add_der(self, certificate: CertificateDer<'static>) -> Result<Self, ClientError> {
        webpki::anchor_from_trusted_cert(&certificate)
            .map_err(|err| config_error(format!("not a usable CA certificate: {err}")))?;
        let mut added = self.added.to_vec();
        added.push(certificate);
        Ok(RootCertificates {
            added: added.into(),
            system: self.system,
        })
    }

    /// Trusts every certificate of a PEM bundle (`-----BEGIN CERTIFICATE-----`
    /// sections; anything else in the text is skipped). A bundle without a
    /// certificate is refused.
    pub fn add_pem(self, pem: &[u8]) -> Result<Self, ClientError> {
        self.add_pem_from(pem, "the PEM text")
    }

    /// [`add_pem`](Self::add_pem) with the bundle read from a file.
    pub fn add_pem_file(self, path: impl AsRef<Path>) -> Result<Self, ClientError> {
        let path = path.as_ref();
        let pem = std::fs::read(path).map_err(|err| {
            config_error(format!(
                "cannot read CA certificates from {}: {err}",
                path.display()
            ))
        })?;
        self.add_pem_from(&pem, &path.display().to_string())
    }

    fn add_pem_from(mut self, pem: &[u8], source: &str) -> Result<Self, ClientError> {
        let mut found = 0;
        for certificate in CertificateDer::pem_slice_iter(pem) {
            let certificate = certificate
                .map_err(|err| config_error(format!("malformed PEM in {source}: {err}")))?;
            self = self.add_der(certificate).map_err(|err| {
                config_error(format!("certificate {} of {source}: {err}", found + 1))
            })?;
            found += 1;
        }
        if found == 0 {
            return Err(config_error(format!(
                "no certificate (-----BEGIN CERTIFICATE-----) in {source}"
            )));
        }
        Ok(self)
    }

    /// Whether the system's store is trusted.
    pub fn includes_system(&self) -> bool {
        self.system
    }

    /// The authorities added to (or instead of) the system's store.
    pub fn added(&self) -> &[CertificateDer<'static>] {
        &self.added
    }

    /// Every trusted authority as a trust anchor, the system's included when
    /// they are trusted: what a transport that verifies servers itself (gRPC)
    /// needs.
    pub fn trust_anchors(&self) -> Vec<TrustAnchor<'static>> {
        let mut anchors: Vec<TrustAnchor<'static>> = self
            .added
            .iter()
            .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
            .map(|anchor| anchor.to_owned())
            .collect();
        if self.system {
            anchors.extend(system_anchors().iter().cloned());
        }
        anchors
    }

    /// A reqwest client trusting these authorities, with the settings of
    /// the default client.
    pub(crate) fn http_client(&self) -> Result<reqwest::Client, ClientError> {
        let added = self
            .added
            .iter()
            .map(|c| reqwest::Certificate::from_der(c.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| config_error(format!("unusable CA certificate: {err}")))?;
        let builder = crate::http::default_client_builder();
        let builder = if self.system {
            builder.tls_certs_merge(added)
        } else {
            builder.tls_certs_only(added)
        };
        builder
            .build()
            .map_err(|err| config_error(format!("cannot set up the HTTP client: {err:#}")))
    }
}

/// The system's store, read once per process: it is a few hundred files,
/// and every gRPC transport made with the system's roots needs it.
fn system_anchors() -> &'static [TrustAnchor<'static>] {
    static ANCHORS: OnceLock<Vec<TrustAnchor<'static>>> = OnceLock::new();
    ANCHORS.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        for err in &loaded.errors {
            tracing::debug!(error = %err, "reading the system's CA certificates");
        }
        loaded
            .certs
            .iter()
            .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
            .map(|anchor| anchor.to_owned())
            .collect()
    })
}
