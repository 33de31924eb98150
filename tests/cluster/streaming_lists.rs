//! A real kube-apiserver without streaming lists (its `WatchList` feature gate off, as on Kubernetes
//! 1.27 to 1.31 by default and on 1.33) refuses a watch with `sendInitialEvents=true` with 422: the
//! operator lists and watches instead, once per cache, and converges. The emulator's imitation of the
//! refusal is tested in `sandbox::e2e::faults`; this is the server's own answer.

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;

use super::control_plane;
use crate::sandbox::e2e::Scene;
use crate::sandbox::e2e::faults::lists_and_watches_where_streaming_lists_are_refused;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_apiserver_without_streaming_lists_gets_list_and_watch() {
    let plane = control_plane::without_streaming_lists();
    let namespace = plane.namespace("no-watch-list");
    let scene = Scene::on_control_plane(plane, namespace, None, Behaviour::default(), seed::DEFAULT_CLUSTER).await;
    lists_and_watches_where_streaming_lists_are_refused(scene).await;
}
