#!/usr/bin/env bash
# Removes what a test node left on this machine: the processes of its Pods (and containerd's shims,
# which outlive containerd), its cgroups, the mounts under its folder, its network namespace, and the
# folder but its logs.
#   cleanup.sh now  SLOT DIR    at once (a node's start, over what a killed run left)
#   cleanup.sh reap SLOT DIR    when standard input ends: the process that started the node holds the
#                               other end of the pipe, so that is when it ends, however it ends
# The slot's lock is this script's file descriptor 3 (inherited): a new node of the same slot waits
# until the cleanup is done.
set -u
mode=$1 slot=$2 dir=$3
netns=bo-node$slot
if [ "$mode" = reap ]; then
  read -r _ || true
fi
for _ in 1 2 3 4 5 6 7 8 9 10; do
  pids=$(
    for cgroup in /sys/fs/cgroup/*/"$netns"; do
      [ -d "$cgroup" ] && find "$cgroup" -name cgroup.procs -exec cat {} + 2>/dev/null
    done
    grep -l -a -F -- "$dir/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3
    ip netns pids "$netns" 2>/dev/null
  )
  pids=$(printf '%s\n' $pids | grep -v -x -e "$$" -e "$PPID" -e '' | sort -u)
  [ -z "$pids" ] && break
  kill -9 $pids 2>/dev/null
  sleep 0.2
done
for cgroup in /sys/fs/cgroup/*/"$netns"; do
  [ -d "$cgroup" ] && find "$cgroup" -depth -type d -exec rmdir {} \; 2>/dev/null
done
awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r mount; do
  umount -l "$mount" 2>/dev/null
done
ip netns del "$netns" 2>/dev/null
# The logs stay for a look after a failed run; everything else goes (nothing is mounted there now).
if [ -d "$dir" ] && ! awk -v d="$dir/" 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
  find "$dir" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
fi
exit 0
