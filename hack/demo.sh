#!/usr/bin/env bash
# make demo: the story of a cluster's life on the embedded simulated cluster, one narrated step at a time.
# Install 4.16.0, take the 4.16.3 patch, ask whether 4.17.0 may start (no: etcd's OperatorCondition blocks
# minor updates), start it anyway and watch it wait, override the block from another command, and see the
# waiting upgrade go ahead by itself.  Every step says what is about to happen and why before it runs; an
# expected non-zero exit is shown as the expected outcome, anything unexpected stops the demo (exit 1).
set -euo pipefail

CVO=${CVO:-.venv/bin/cvo}
STATE=${DEMO_STATE:-.cvo-demo-state.db}
SPEED=${DEMO_SPEED:-600}
DEMO=(--state "$STATE" --speed "$SPEED" --operators payloads/demo-operators.yaml)

if [[ -t 1 && -z "${NO_COLOR:-}" ]]; then bold=$'\e[1m' dim=$'\e[2m' off=$'\e[0m'; else bold="" dim="" off=""; fi
n=0
step() { n=$((n + 1)); printf '\n%s%d. %s%s\n' "$bold" "$n" "$*" "$off"; }
# shown ARGS...: the command line as a reader would type it (arguments with spaces quoted)
shown() {
    local words=() a
    for a in "$@"; do [[ $a == *" "* && $a != "|"* ]] && words+=("\"$a\"") || words+=("$a"); done
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

step "Lint the 4.16.0 payload: the problems a sweep would trip over, each with its fix (none here)."
run lint payloads/demo-4.16.0

step "Plan the 4.17.0 update without a cluster: the task graph a sweep walks, by run level (first lines)."
shown plan payloads/demo-4.17.0 "| head -12"
"$CVO" plan payloads/demo-4.17.0 | head -12 || true

step "Install 4.16.0 into a new embedded cluster ($STATE, $SPEED simulated seconds per second): every ClusterOperator becomes Available."
run install payloads/demo-4.16.0 "${DEMO[@]}"

step "Take the 4.16.3 patch: Upgradeable=False gates minor updates only, so etcd's migration does not stop a patch."
run upgrade --to payloads/demo-4.16.3 "${DEMO[@]}"

step "Ask whether 4.17.0, a minor update, may start (a dry run): etcd's OperatorCondition says Upgradeable=False."
expect 1 "the upgrade is blocked, and nothing was changed" upgrade --to payloads/demo-4.17.0 --dry-run --state "$STATE"

step "Start the 4.17.0 upgrade anyway: it is accepted but waits, blocked by etcd, while the cluster keeps reconciling 4.16.3."
shown upgrade --to payloads/demo-4.17.0 "${DEMO[@]}" "&"
"$CVO" upgrade --to payloads/demo-4.17.0 "${DEMO[@]}" &
upgrade=$!
until "$CVO" status --state "$STATE" -o json 2>/dev/null | grep -q PreconditionChecks; do
    kill -0 "$upgrade" 2>/dev/null || { echo "demo: the upgrade ended before it was blocked" >&2; exit 1; }
    sleep 0.2
done
sleep 1  # let the waiting upgrade's screen show what blocks it

step "Meanwhile, from another command, the admin checks the migration and overrides etcd's block."
run override etcd Upgradeable=True --reason MigrationVerified --message "storage migration checked by the admin" --state "$STATE"

step "The waiting upgrade sees the override through its watch and goes ahead by itself; wait for it."
printf '%s$ wait   # for the upgrade started in step 6%s\n' "$dim" "$off"
wait "$upgrade"

step "The cluster now: 4.17.0 everywhere; openshift-samples, dropped by 4.17.0, is marked as not in the release."
run status --state "$STATE"
