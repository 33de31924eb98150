//! The operator's own requests, as the sandbox saw it send them: method, path, body and the answer's
//! status, recorded by a layer of the controller's client. The same on the emulator and on a real API
//! server (whose own log the tests cannot read), so scenarios can check the order of writes on both.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use http::{Request, Response};
use kube::client::Body;

use super::api::LoggedRequest;

/// The log the layer writes into.
#[derive(Clone, Default)]
pub struct Requests(Arc<Mutex<Vec<LoggedRequest>>>);

impl Requests {
    /// Every request so far, in the order they were sent.
    pub fn all(&self) -> Vec<LoggedRequest> {
        self.0.lock().expect("not poisoned").clone()
    }

    pub fn len(&self) -> usize {
        self.0.lock().expect("not poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone)]
pub struct RecordLayer(pub Requests);

impl<S> tower::Layer<S> for RecordLayer {
    type Service = Record<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Record { inner, log: self.0.clone() }
    }
}

#[derive(Clone)]
pub struct Record<S> {
    inner: S,
    log: Requests,
}

impl<S, B> tower::Service<Request<Body>> for Record<S>
where
    S: tower::Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // kube's request bodies are in memory: cloned and read at once.
        let body = request
            .body()
            .try_clone()
            .and_then(|b| b.collect_bytes().now_or_never())
            .and_then(Result::ok)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let mut logged = LoggedRequest {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
            query: request.uri().query().unwrap_or_default().to_owned(),
            user_agent: String::new(),
            status: 0,
            body,
        };
        let log = self.log.clone();
        let answer = self.inner.call(request);
        async move {
            let result = answer.await;
            logged.status = result.as_ref().map(|r| r.status().as_u16()).unwrap_or(0);
            log.0.lock().expect("not poisoned").push(logged);
            result
        }
        .boxed()
    }
}
