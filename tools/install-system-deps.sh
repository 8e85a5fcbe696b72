#!/usr/bin/env bash
# Install the Debian packages ctlplane needs, only those missing. Usage: install-system-deps.sh run|test
#   run:  a JDK (JPype's JVM and the local Kafka clusters) and Maven (fetches the Kafka jars)
#   test: the above plus Prometheus, Alertmanager (promtool, amtool), Chromium for the browser tests and
#         openssl for the TLS tests, and kustomize (kubectl's, else built with Go into .cache/bin) for the
#         Kubernetes objects' test
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-run}" = test ] && ! command -v kubectl >/dev/null 2>&1 && [ ! -x "$root/.cache/bin/kustomize" ]; then
  # Debian's kubernetes-client (1.20) is older than the kustomize the objects are checked with; Go is on the
  # machine and its module proxy serves kustomize's source
  echo "building kustomize into .cache/bin (no kubectl on PATH)"
  GOBIN="$root/.cache/bin" go install sigs.k8s.io/kustomize/kustomize/v5@v5.5.0
fi
want=(java:openjdk-17-jdk-headless mvn:maven)
if [ "${1:-run}" = test ]; then
  want+=(promtool:prometheus amtool:prometheus-alertmanager prometheus-alertmanager:prometheus-alertmanager
         chromium:chromium openssl:openssl)
fi
missing=()
for pair in "${want[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# make test runs this beside other installs: wait for another apt/dpkg run instead of failing on its lock
lock=(-o DPkg::Lock::Timeout=600)
apt-get "${lock[@]}" update -qq
apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
