//! One `infera::http` `tracing` line per API request (verb, path, status,
//! latency), for `-v`. Headers and bodies are never logged; the
//! `Authorization` header is added by `kube`'s auth layer *below* the
//! request-log layer, so the layer never sees it. The subscriber that
//! writes the lines (stderr, scrubbed) is installed by the binary.

use std::time::Instant;

use futures::future::BoxFuture;
use kube::Client;
use kube::client::ClientBuilder;

use super::redact;

/// A `kube` client for `config` with the request-log layer on top.
pub fn client(config: kube::Config) -> Result<Client, kube::Error> {
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&RequestLogLayer)
        .build())
}

/// Logs `VERB path status latency` per request at info (`infera::http`).
#[derive(Debug, Clone, Copy)]
pub struct RequestLogLayer;

impl<S> tower::Layer<S> for RequestLogLayer {
    type Service = RequestLog<S>;

    fn layer(&self, inner: S) -> RequestLog<S> {
        RequestLog { inner }
    }
}

#[derive(Debug, Clone)]
pub struct RequestLog<S> {
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for RequestLog<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Into<tower::BoxError>,
    B: 'static,
    R: 'static,
{
    type Response = http::Response<R>;
    type Error = tower::BoxError;
    type Future = BoxFuture<'static, Result<http::Response<R>, tower::BoxError>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if !tracing::enabled!(target: crate::trace::target::HTTP, tracing::Level::INFO) {
            let fut = self.inner.call(req);
            return Box::pin(async move { fut.await.map_err(Into::into) });
        }
        let method = req.method().clone();
        let path = request_path(req.uri());
        let start = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await.map_err(Into::into);
            let ms = start.elapsed().as_millis();
            match &result {
                Ok(res) => tracing::info!(
                    target: crate::trace::target::HTTP,
                    "{method} {path} {} {ms}ms",
                    res.status().as_u16()
                ),
                Err(e) => tracing::warn!(
                    target: crate::trace::target::HTTP,
                    "{method} {path} failed after {ms}ms: {}",
                    redact::error_chain(e.as_ref())
                ),
            }
            result
        })
    }
}

/// Path and query of a request URI (never the authority: it may carry
/// userinfo), scrubbed.
fn request_path(uri: &http::Uri) -> String {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    redact::scrub(path)
}

/// Every `tracing` target infera logs under, in one place. `-v` turns on
/// `infera=info`, `-vv` `infera=debug`; `RUST_LOG=infera::rollout::driver=debug`
/// picks one (docs/architecture.md, "Verbose logs and credentials").
pub mod target {
    /// One line per API request (this module's layer).
    pub const HTTP: &str = "infera::http";
    /// The kubeconfig, context and server chosen.
    pub const CLUSTER: &str = "infera::cluster";
    /// The audit's pod bookkeeping and unobserved intervals.
    pub const AUDIT: &str = "infera::audit";
    /// `--until-complete`'s completion watches.
    pub const AUDIT_COMMAND: &str = "infera::audit::command";
    /// The audit session's pod watch.
    pub const AUDIT_SESSION: &str = "infera::audit::session";
    /// The rollout's API calls (trigger, patch retries).
    pub const ROLLOUT_API: &str = "infera::rollout::api";
    /// Every decision of the rollout driver and its watch restarts.
    pub const ROLLOUT_DRIVER: &str = "infera::rollout::driver";
    /// `infera drain`'s progress lines.
    pub const DRAIN: &str = "infera::drain";
    /// `infera monitor`'s own state changes.
    pub const MONITOR: &str = "infera::monitor";
}
