#!/usr/bin/env bash
# Every offline check of the alerting config; exits non-zero if any fails. Called by `make lint`.
# Needs promtool and amtool (Debian: prometheus, prometheus-alertmanager).
set -uo pipefail
cd "$(dirname "$0")"

failed=0
run() {
    echo "+ $*"
    if ! "$@"; then
        echo "FAILED: $*" >&2
        failed=1
    fi
}
# `amtool config routes test` prints the receiver; exit status only says whether it matched --verify.receivers.
route_is() {
    local expected=$1
    shift
    run amtool config routes test --config.file=alertmanager.yml --verify.receivers="$expected" "$@"
}

rules=(*.rules.yml)
run promtool check rules --lint=all --lint-fatal "${rules[@]}"
run promtool test rules tests/*.test.yml
# /metrics timelines recorded from real faults on real clusters (tests/integration/test_fault_table.py)
run promtool test rules tests/recorded/*.test.yml
run amtool check-config alertmanager.yml
route_is pagerduty-critical severity=critical alertname=KafkaBrokerFenced cluster=c
route_is pagerduty-low-urgency severity=warning alertname=KafkaControllerChurn cluster=c
route_is null severity=info alertname=KafkaControlPlaneListenerNotConfigured cluster=c
# An alert with no or an unknown severity must still reach someone.
route_is pagerduty-low-urgency alertname=SomethingNew
route_is pagerduty-low-urgency severity=page alertname=SomethingNew
# Every rule's severity is one the routes know.
for severity in $(grep -ho 'severity: [a-z]*' "${rules[@]}" | sort -u | cut -d' ' -f2); do
    case $severity in
        critical | warning | info) ;;
        *) echo "unknown severity '$severity' in rules" >&2; failed=1 ;;
    esac
done

if [ "$failed" -ne 0 ]; then
    echo "alerts/check.sh: FAILED" >&2
    exit 1
fi
echo "alerts/check.sh: all checks passed"
