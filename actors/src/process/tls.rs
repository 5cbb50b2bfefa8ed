//! The one way the service makes an HTTP client: rustls with ring's crypto, installed for the
//! process before the first client is built (reqwest is built without a provider of its own).

use std::sync::Once;

static INSTALL: Once = Once::new();

/// A client builder whose TLS is ring's (installed once for the whole process).
pub fn client_builder() -> reqwest::ClientBuilder {
    INSTALL.call_once(|| {
        // Err: a provider is installed already (by whoever came first): that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_with_the_provider_installed() {
        let client = super::client_builder().build();
        assert!(client.is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
