//! The configuration files of the node's parts: containerd, the CNI network, the kubelet and
//! kube-proxy. Everything the node writes lives in its own folder; nothing touches the machine's
//! defaults (/etc/containerd, /etc/cni, /var/lib/kubelet).

use std::net::Ipv4Addr;
use std::path::Path;

/// The node's name, as the kubelet registers it.
pub const NODE_NAME: &str = "bo-node";
/// The addresses of the node's Pods (one bridge, host-local IPAM).
pub const POD_RANGE: &str = "10.244.0.0/24";
/// Where the image of every Pod sandbox comes from (tools/node/pause.c, `make node`).
pub const PAUSE_IMAGE: &str = "localhost/pause:1";

/// containerd with the CRI plugin: its root, state and socket in `dir`, Pod sandboxes from the pause
/// image built here, the bridge network of [`cni_network`], and runc.
pub fn containerd(dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"version = 2
root = "{d}/root"
state = "{d}/state"
# Not needed here, and /opt/containerd would be the machine's.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{d}/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # Root without CAP_SYS_RESOURCE cannot lower an oom_score_adj; the kubelet asks -998 for every
  # sandbox, and runc would fail the sandbox ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  # The Pods' network namespaces under the state folder, not /var/run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{d}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d}/cni"
    max_conf_num = 1
"#
    )
}

/// One bridge for every Pod, its gateway the node's side; addresses by host-local IPAM (its records
/// in `ipam`); masquerade out of the Pod range; hairpin so a Pod reaches itself through a Service.
pub fn cni_network(ipam: &Path) -> String {
    serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "bo-pods",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "bo-cni0",
                "isGateway": true,
                "ipMasq": true,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_RANGE}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": ipam.display().to_string(),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
        ],
    })
    .to_string()
}

/// The kubelet: cgroup v1 with the cgroupfs driver under `cgroup_root`, containerd's CRI, its files
/// in `dir`; it serves on the node's address (the API server reaches it for logs) and trusts every
/// caller there, because only this machine can reach that address.
pub fn kubelet(dir: &Path, socket: &Path, node: Ipv4Addr, cgroup_root: &str) -> String {
    serde_json::json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": false,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "containerRuntimeEndpoint": format!("unix://{}", socket.display()),
        "failSwapOn": false,
        "address": node.to_string(),
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": node.to_string(),
        "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": true}, "webhook": {"enabled": false}},
        "authorization": {"mode": "AlwaysAllow"},
        // The eviction manager cannot read the overlay snapshotter's disk here ("cannot find
        // filesystem info"): thresholds it never reaches, and no local storage accounting.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "localStorageCapacityIsolation": false,
        // The images are imported, not pulled: never collected.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "podLogsDir": dir.join("pod-logs").display().to_string(),
        // Root here may not lower its own oom_score_adj.
        "oomScoreAdj": 0,
        "serializeImagePulls": false,
        "rotateCertificates": false,
    })
    .to_string()
}

/// kube-proxy in iptables mode: ClusterIP Services for the Pod range; health on the node's address
/// (the harness waits for it); conntrack and its own oom_score_adj left as they are (root here may
/// not change them).
pub fn kube_proxy(kubeconfig: &Path, node: Ipv4Addr) -> String {
    serde_json::json!({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig.display().to_string()},
        "mode": "iptables",
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": "10.244.0.0/16",
        "bindAddress": "0.0.0.0",
        "healthzBindAddress": format!("{node}:10256"),
        "metricsBindAddress": "127.0.0.1:10249",
        "oomScoreAdj": 0,
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"syncPeriod": "30s", "minSyncPeriod": "0s"},
    })
    .to_string()
}
