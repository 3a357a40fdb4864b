//! An S3 (or S3-compatible) store set up for syncing saves: short client retries and timeouts
//! (the sync retries on top), conditional puts on, plain HTTP allowed for a local endpoint.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use savegame::{Error, Result};

/// Builds the [`ObjectStore`] of an S3 bucket for a [`CloudSync`](super::CloudSync).
///
/// Credentials come from [`credentials`](Self::credentials), or else from the environment
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`, ... as
/// `object_store`'s `AmazonS3Builder::from_env` reads them). The client tries each request 3
/// times within 10 s, and gives up on a request after 60 s (5 s to connect); the sync's own
/// retries ([`CloudBuilder::attempts`](super::CloudBuilder::attempts)) come on top. For other
/// settings, build an `object_store::aws::AmazonS3` yourself: any `ObjectStore` works.
#[derive(Debug)]
#[must_use]
pub struct S3 {
    builder: AmazonS3Builder,
    /// Plain HTTP allowed (an `http://` endpoint): part of the client options, set at build.
    allow_http: bool,
}

impl S3 {
    /// The bucket `bucket`, with what the environment says of the rest.
    pub fn new(bucket: impl Into<String>) -> Self {
        S3 {
            builder: AmazonS3Builder::from_env().with_bucket_name(bucket),
            allow_http: false,
        }
    }

    /// The bucket's region (default: `AWS_REGION`, else `us-east-1`).
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.builder = self.builder.with_region(region);
        self
    }

    /// An S3-compatible server's address, such as `http://127.0.0.1:9000` (path-style
    /// requests; plain HTTP is allowed when the address says `http://`).
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        let endpoint = endpoint.into();
        self.allow_http = endpoint.starts_with("http://");
        self.builder = self
            .builder
            .with_endpoint(endpoint)
            .with_virtual_hosted_style_request(false);
        self
    }

    /// The access key id and secret access key.
    pub fn credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret: impl Into<String>,
    ) -> Self {
        self.builder = self
            .builder
            .with_access_key_id(access_key_id)
            .with_secret_access_key(secret);
        self
    }

    /// Builds the store.
    ///
    /// # Errors
    /// [`Error::Config`] when the settings are incomplete or invalid (no bucket, a bad
    /// endpoint).
    pub fn build(self) -> Result<Arc<dyn ObjectStore>> {
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            max_retries: 2,
            retry_timeout: Duration::from_secs(10),
        };
        let client = ClientOptions::new()
            .with_timeout(Duration::from_secs(60))
            .with_connect_timeout(Duration::from_secs(5))
            .with_allow_http(self.allow_http);
        let store = self
            .builder
            .with_retry(retry)
            .with_client_options(client)
            .build()
            .map_err(|e| Error::Config {
                reason: format!("the S3 store: {e}"),
            })?;
        Ok(Arc::new(store))
    }
}
