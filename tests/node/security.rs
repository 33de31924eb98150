//! The chart's securityContext, as the kernel applies it to the container's process (read from its
//! `/proc` on the node, not from the Pod's spec): user and group 65532, no capabilities (effective,
//! permitted, bounding), no privilege escalation, the runtime's seccomp filter, a read-only root file
//! system.

use super::{ECOSYSTEM, ecosystem_completed, json, turn};

/// The host's pid of a Pod's first container, from containerd.
pub fn container_pid(node: &blueprint_operator::sandbox::node::Node, namespace: &str, pod: &str) -> u32 {
    let pod = json(node, &["get", "pod", pod, "-n", namespace]);
    let id = pod["status"]["containerStatuses"][0]["containerID"].as_str().unwrap_or_default();
    let id = id.strip_prefix("containerd://").unwrap_or_else(|| panic!("a containerd container: {pod}"));
    let tasks = node.ctr(&["tasks", "ls"]).unwrap();
    tasks
        .lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next() == Some(id)).then(|| fields.next().unwrap().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no task {id} in:\n{tasks}"))
}

/// A field of `/proc/<pid>/status`.
fn status(pid: u32, field: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_operator_runs_as_65532_without_capabilities_on_a_read_only_root() {
    let (node, _turn) = turn();
    let pods = ecosystem_completed(node);
    for pod in &pods {
        let pid = container_pid(node, ECOSYSTEM, pod);
        let command = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(command.starts_with("/usr/local/bin/blueprint-operator\0run"), "{command:?}");
        assert_eq!(status(pid, "Uid"), "65532 65532 65532 65532", "{pod}");
        assert_eq!(status(pid, "Gid"), "65532 65532 65532 65532", "{pod}");
        for capabilities in ["CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"] {
            assert_eq!(status(pid, capabilities), "0000000000000000", "{pod}: {capabilities}");
        }
        assert_eq!(status(pid, "NoNewPrivs"), "1", "{pod}: allowPrivilegeEscalation: false");
        assert_eq!(status(pid, "Seccomp"), "2", "{pod}: the RuntimeDefault profile filters");
        // The root mount as the container sees it: mounted read-only.
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
        let root = mounts
            .lines()
            .find(|line| line.split(' ').nth(4) == Some("/"))
            .unwrap_or_else(|| panic!("no root mount:\n{mounts}"));
        let options = root.split(' ').nth(5).unwrap();
        assert!(options.split(',').any(|o| o == "ro"), "{pod}: the root is mounted {options}: {root}");
    }
}
