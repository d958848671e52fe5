#!/usr/bin/env bash
# A local Kubernetes cluster that acts, for a person: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (fake Nodes kept Ready, Pods moved through their lifecycle), the same
# control plane as the e2e tests' ControlPlane(acting=True) (tests/e2e/controlplane.py).
#
#   hack/kwok-cluster.sh up [--nodes N]   build what is missing, start, print the kubeconfig path
#   hack/kwok-cluster.sh down             stop it and remove its data
#   hack/kwok-cluster.sh status           running or not, and where
#   hack/kwok-cluster.sh kubeconfig       print the kubeconfig path (exit 1 when not running)
#
#   export KUBECONFIG=$(hack/kwok-cluster.sh up)
#
# The binaries are built from Go modules (hack/control-plane/build.sh, a few minutes the first time)
# and cached in ${CVO_CONTROL_PLANE_CACHE:-~/.cache/cvo/control-plane}. The cluster's state (pid,
# logs, etcd data, kubeconfig) lives in ${CVO_KWOK_CLUSTER_DIR:-~/.cache/cvo/kwok-cluster}.
# Everything listens on 127.0.0.1 only. Only the kubeconfig path goes to stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
STATE="${CVO_KWOK_CLUSTER_DIR:-$HOME/.cache/cvo/kwok-cluster}"
PIDFILE="$STATE/pid"
LOG="$STATE/controlplane.log"
WORKDIR="$STATE/cluster"
PYTHON="${PYTHON:-python3}"
READY_TIMEOUT="${CVO_KWOK_CLUSTER_TIMEOUT:-180}"

die() {
    echo "kwok-cluster: error: $*" >&2
    exit 1
}
usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

up() {
    local nodes=3
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --nodes) [[ $# -ge 2 ]] || die "--nodes needs a number"; nodes="$2"; shift 2 ;;
            --nodes=*) nodes="${1#--nodes=}"; shift ;;
            *) die "up: unknown argument: $1" ;;
        esac
    done
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive whole number, not '$nodes'"
    if running; then
        echo "kwok-cluster: already running (pid $(cat "$PIDFILE")); 'down' first to start afresh" >&2
        echo "$WORKDIR/kubeconfig"
        return 0
    fi
    mkdir -p "$STATE"
    rm -rf "$WORKDIR" "$PIDFILE"
    bash "$ROOT/hack/control-plane/build.sh" >/dev/null
    : >"$LOG"
    # Its own session, so closing the terminal does not stop it; SIGTERM (down) stops it in order.
    setsid "$PYTHON" "$ROOT/tests/e2e/controlplane.py" --acting --nodes "$nodes" --workdir "$WORKDIR" \
        --timeout "$READY_TIMEOUT" >"$STATE/ready" 2>>"$LOG" </dev/null &
    echo $! >"$PIDFILE"
    local waited=0
    # controlplane.py prints the kubeconfig path (one whole line) once everything is ready.
    until [[ -s "$STATE/ready" && -z "$(tail -c1 "$STATE/ready")" ]]; do
        if ! running; then
            tail -n 40 "$LOG" >&2
            rm -f "$PIDFILE"
            die "the control plane did not start (log above, in full: $LOG)"
        fi
        if (( waited >= READY_TIMEOUT * 4 + 40 )); then
            down >/dev/null 2>&1 || true
            die "the control plane was not ready after $((waited / 4))s (log: $LOG)"
        fi
        sleep 0.25
        waited=$((waited + 1))
    done
    cat "$LOG" >&2
    cat "$STATE/ready"
}

down() {
    if ! running; then
        rm -f "$PIDFILE"
        echo "kwok-cluster: not running" >&2
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    kill -TERM "$pid"
    for _ in $(seq 1 120); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        echo "kwok-cluster: pid $pid did not stop within 30s; killed it" >&2
    fi
    rm -rf "$PIDFILE" "$WORKDIR" "$STATE/ready"
    echo "kwok-cluster: stopped" >&2
}

cmd="${1:-}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
    up) up "$@" ;;
    down) [[ $# -eq 0 ]] || die "down takes no arguments"; down ;;
    status)
        if running; then
            echo "kwok-cluster: running (pid $(cat "$PIDFILE")), kubeconfig $WORKDIR/kubeconfig, log $LOG"
        else
            echo "kwok-cluster: not running"
            exit 1
        fi
        ;;
    kubeconfig) running || die "not running ('hack/kwok-cluster.sh up' starts it)"; echo "$WORKDIR/kubeconfig" ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
esac
