#!/usr/bin/env bash
# make demo: the story of a cluster's life on the embedded simulated cluster, one narrated step at a time.
# Build the demo releases as signed release images (OCI layouts: no registry needed) and their update graph,
# served as the update service serves it; install 4.16.0, set its channel, list what it may update to and take
# the signed 4.16.3 patch by version (its worker pool going on after the control plane, a drain held by a
# PodDisruptionBudget and a paused pool until the admin acts), see an unsigned 4.17.0 refused, ask whether the signed 4.17.0 may start
# (no: etcd's OperatorCondition blocks minor updates), start it anyway and watch it wait, override the block
# from another command, see the waiting upgrade go ahead by itself, and finally force an unsigned rebuild.  Every step says what is about to happen and why before it runs; an
# expected non-zero exit is shown as the expected outcome, anything unexpected stops the demo (exit 1).
set -euo pipefail

CVO=${CVO:-.venv/bin/cvo}
STATE=${DEMO_STATE:-.cvo-demo-state.db}
SPEED=${DEMO_SPEED:-600}
DEMO=(--state "$STATE" --speed "$SPEED" --operators payloads/demo-operators-nodes.yaml)

if [[ -t 1 && -z "${NO_COLOR:-}" ]]; then bold=$'\e[1m' dim=$'\e[2m' off=$'\e[0m'; else bold="" dim="" off=""; fi
n=0
step() { n=$((n + 1)); printf '\n%s%d. %s%s\n' "$bold" "$n" "$*" "$off"; }
# shown ARGS...: the command line as a reader would type it (arguments with spaces double-quoted, JSON and
# other shell syntax single-quoted; a pipe or redirection given as one word stays as it is)
shown() {
    local words=() a
    for a in "$@"; do
        if [[ $a == "|"* || $a == ">"* || $a == "&" ]]; then words+=("$a")
        elif [[ $a == *[\"\{\}\$]* ]]; then words+=("'$a'")
        elif [[ $a == *" "* ]]; then words+=("\"$a\"")
        else words+=("$a"); fi
    done
    printf '%s$ cvo %s%s\n' "$dim" "${words[*]}" "$off"
}
run() { shown "$@"; "$CVO" "$@"; }
# expect CODE WHY ARGS...: run cvo, which must exit with CODE; say that it did, and why that is right
expect() {
    local want=$1 why=$2 code=0
    shift 2
    shown "$@"
    "$CVO" "$@" || code=$?
    if [[ $code -ne $want ]]; then
        printf 'demo: cvo %s exited %d, expected %d\n' "$*" "$code" "$want" >&2
        exit 1
    fi
    printf '%s(exit %d, as expected: %s)%s\n' "$dim" "$code" "$why" "$off"
}

rm -f "$STATE" "$STATE-wal" "$STATE-shm" "$STATE.lock"

# The demo's own releases, keys and signatures: a throwaway GnuPG key, release directories that trust it (a
# ConfigMap annotated release.openshift.io/verification-config-map, as every OpenShift release carries one),
# the images built from them and a file signature store.  Everything lives in $WORK.
WORK=${DEMO_WORK:-.cvo-demo}
rm -rf "$WORK"
mkdir -p "$WORK/gnupg" "$WORK/signatures"
chmod 700 "$WORK/gnupg"
ABS=$(cd "$WORK" && pwd)
export GNUPGHOME="$ABS/gnupg" CVO_CACHE_DIR="$ABS/cache"
gpg --batch --quiet --passphrase '' --quick-gen-key 'cvo demo release key <releases@demo.invalid>' ed25519 sign 1d 2>/dev/null
IMAGES="oci:$WORK/images"
trusting() {  # trusting VERSION DIR: the demo release VERSION, copied to DIR with the demo key's verifier
    cp -r "payloads/demo-$1" "$2"
    {
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-verification\n'
        printf '  namespace: openshift-config-managed\n  annotations:\n'
        printf '    include.release.openshift.io/self-managed-high-availability: "true"\n'
        printf '    include.release.openshift.io/single-node-developer: "true"\n'
        printf '    release.openshift.io/verification-config-map: ""\n'
        printf 'data:\n  store-demo: file://%s/signatures\n  verifier-public-key-demo: |\n' "$ABS"
        gpg --armor --export releases@demo.invalid | sed 's/^/    /'
    } > "$2/release-manifests/0000_90_cluster-update-keys_configmap.yaml"
}
digest_of() { "$CVO" release info "$1" -o json | sed -n 's/^ *"digest": "\(sha256:[0-9a-f]*\)".*/\1/p' | head -1; }

step "Lint the 4.16.0 payload: the problems a sweep would trip over, each with its fix (none here)."
run lint payloads/demo-4.16.0

step "Plan the 4.17.0 update without a cluster: the task graph a sweep walks, by run level (first lines)."
shown plan payloads/demo-4.17.0 "| head -12"
"$CVO" plan payloads/demo-4.17.0 | head -12 || true

step "Build the releases as release images (OCI layouts in $WORK/images), laid out as 'oc adm release new' does; each trusts the demo's signing key."
for version in 4.16.0 4.16.3 4.17.0; do
    trusting "$version" "$WORK/release-$version"
    run release new --from-dir "$WORK/release-$version" --to "$IMAGES:$version"
done
shown release info "$IMAGES:4.16.3" "| head -12"
"$CVO" release info "$IMAGES:4.16.3" | head -12

step "Build their update graph (versions, 'previous' edges, channels and a blocked edge from the demo's graph data) and serve it on 127.0.0.1 as the update service does."
shown graph build "$IMAGES:4.16.0" "$IMAGES:4.16.3" "$IMAGES:4.17.0" --graph-data hack/demo-graph-data -o json "> $WORK/graph.json"
"$CVO" graph build "$IMAGES:4.16.0" "$IMAGES:4.16.3" "$IMAGES:4.17.0" --graph-data hack/demo-graph-data -o json > "$WORK/graph.json"
shown graph serve "$WORK/graph.json" --address 127.0.0.1:0 "&"
"$CVO" graph serve "$WORK/graph.json" --address 127.0.0.1:0 > "$WORK/serve.out" 2> "$WORK/serve.err" &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT
until grep -q '^Serving ' "$WORK/serve.out" 2>/dev/null; do
    kill -0 "$serve" 2>/dev/null || { echo "demo: cvo graph serve ended: $(cat "$WORK/serve.err")" >&2; exit 1; }
    sleep 0.1
done
UPSTREAM=$(sed -n 's/^Serving .* at \(http:[^ ]*\)$/\1/p' "$WORK/serve.out")
sed 's/^/  /' "$WORK/serve.out"

step "Install 4.16.0 from its image into a new embedded cluster ($STATE, $SPEED simulated seconds per second): every ClusterOperator becomes Available."
run install "$IMAGES:4.16.0" "${DEMO[@]}"

step "The cluster has pools of nodes: three masters, three workers, and an infra pool its admin paused. A database runs one replica on worker-0, guarded by a PodDisruptionBudget that allows no disruption."
run apply -f hack/demo-db.yaml --state "$STATE"

step "Point the cluster at the update service and subscribe it to stable-4.16, as 'oc adm upgrade channel' does; then ask what it may update to (no controller runs: the command retrieves the graph as the CVO would)."
run upgrade channel stable-4.16 --upstream "$UPSTREAM" --state "$STATE"
run upgrade --state "$STATE"

step "Sign 4.16.3 (GnuPG) and take it by version: the graph names its image by digest, verified against the running release's key (history: verified)."
run release sign "$IMAGES:4.16.3" --key releases@demo.invalid --to "$WORK/signatures"
run upgrade --to 4.16.3 "${DEMO[@]}"

step "The control plane is done (the masters too: the machine-config operator reports 4.16.3 only then); the workers go on, one at a time. Let the cluster run for twenty minutes: worker-0's drain is held by the database's budget, the whole pool with it, and the paused infra pool is left out."
run sim-operators "${DEMO[@]}" --duration 20m
run upgrade status --details nodes --state "$STATE"

step "The admin acts: deletes the budget that holds the drain, and unpauses the infra pool. A quarter of an hour later every node runs 4.16.3."
run delete pdb db -n demo --state "$STATE"
run patch mcp infra --type merge -p '{"spec":{"paused":false}}' --state "$STATE"
run sim-operators "${DEMO[@]}" --duration 15m
run upgrade status --state "$STATE"

step "On 4.16.3, whose own metadata names no channels (as OpenShift's releases), the update graph names them: nothing newer in stable-4.16, but stable-4.17 is one of them, so the channel moves without --allow-explicit-channel. There 4.17.0 is offered; nobody signed it, so the cluster refuses it (ReleaseAccepted=False) and keeps 4.16.3."
run upgrade --state "$STATE"
run upgrade channel stable-4.17 --state "$STATE"
run upgrade --state "$STATE"
expect 1 "an unsigned image is refused" upgrade --to 4.17.0 "${DEMO[@]}"

step "The release team signs 4.17.0. Ask whether it may start (a dry run): etcd's OperatorCondition says Upgradeable=False."
run release sign "$IMAGES:4.17.0" --key releases@demo.invalid --to "$WORK/signatures"
expect 1 "the upgrade is blocked, and nothing was changed" upgrade --to 4.17.0 --dry-run --state "$STATE"

step "Start the 4.17.0 upgrade anyway: it is verified and accepted but waits, blocked by etcd, while the cluster keeps reconciling 4.16.3."
shown upgrade --to 4.17.0 "${DEMO[@]}" "&"
"$CVO" upgrade --to 4.17.0 "${DEMO[@]}" &
upgrade=$!
until "$CVO" status --state "$STATE" -o json 2>/dev/null | grep -q PreconditionChecks; do
    kill -0 "$upgrade" 2>/dev/null || { echo "demo: the upgrade ended before it was blocked" >&2; exit 1; }
    sleep 0.2
done
sleep 1  # let the waiting upgrade's screen show what blocks it

step "Meanwhile, from another command, the admin checks the migration and overrides etcd's block."
run override etcd Upgradeable=True --reason MigrationVerified --message "storage migration checked by the admin" --state "$STATE"

step "The waiting upgrade sees the override through its watch and goes ahead by itself; wait for it."
printf '%s$ wait   # for the upgrade started in step %d%s\n' "$dim" $((n - 2)) "$off"
wait "$upgrade"

step "Someone rebuilds 4.17.0 (a new digest, unsigned): refused; forced, it goes ahead and the history records the accepted risk."
trusting 4.17.0 "$WORK/rebuild-4.17.0"
echo "# rebuilt" >> "$WORK/rebuild-4.17.0/release-manifests/0000_90_cluster-update-keys_configmap.yaml"
run release new --from-dir "$WORK/rebuild-4.17.0" --to "$IMAGES:4.17.0-rebuild"
DR=$(digest_of "$IMAGES:4.17.0-rebuild")
expect 1 "an unsigned image is refused" upgrade --to-image "$IMAGES@$DR" --allow-explicit-upgrade "${DEMO[@]}"
run upgrade --to-image "$IMAGES@$DR" --allow-explicit-upgrade --force "${DEMO[@]}"

step "The cluster now: 4.17.0 everywhere; openshift-samples, dropped by 4.17.0, is marked as not in the release."
run status --state "$STATE"
