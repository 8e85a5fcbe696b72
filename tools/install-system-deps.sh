#!/usr/bin/env bash
# Install the Debian packages ctlplane needs, only those missing. Usage: install-system-deps.sh run|test
#   run:  a JDK (JPype's JVM and the local Kafka clusters) and Maven (fetches the Kafka jars)
#   test: the above plus Prometheus, Alertmanager (promtool, amtool), Chromium for the browser tests and
#         openssl for the TLS tests, kustomize (kubectl's, else built with Go into .cache/bin) for the
#         Kubernetes objects' test and helm (built with Go into .cache/bin when not on PATH) for the chart's;
#         buildah, podman, runc and mmdebstrap for the image's (tools/image.py: no Docker engine, the
#         Dockerfile is built daemonless, on bases made from Debian's packages where Docker Hub is out of reach);
#         systemd-analyze (Debian's systemd) for the systemd unit's check; MIT Kerberos's KDC and kadmin.local
#         for the GSSAPI test (tests/integration/test_kerberos.py makes its own realm in a temporary directory;
#         the packages make no realm database, so their services cannot start: their postinst says so and goes on)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-run}" = test ] && ! command -v kubectl >/dev/null 2>&1 && [ ! -x "$root/.cache/bin/kustomize" ]; then
  # Debian's kubernetes-client (1.20) is older than the kustomize the objects are checked with; Go is on the
  # machine and its module proxy serves kustomize's source
  echo "building kustomize into .cache/bin (no kubectl on PATH)"
  GOBIN="$root/.cache/bin" go install sigs.k8s.io/kustomize/kustomize/v5@v5.5.0
fi
if [ "${1:-run}" = test ] && ! command -v helm >/dev/null 2>&1 && [ ! -x "$root/.cache/bin/helm" ]; then
  # no Debian package; the Helm chart's test lints and renders it. ~8 min from a clean Go cache on 2 busy
  # cores (5.5 min of CPU), a few seconds once .cache/bin/helm is there (or Go's own build cache is warm).
  # With CTLPLANE_HELM_BUILD=background (make test) it builds at nice 19 beside the suite, which waits for
  # it only in the chart's tests (tests/integration/manifests.py: .cache/bin/helm.building holds the
  # builder's pid until it ends, .cache/bin/helm.log its output): 8 minutes the suite's first minutes
  # would otherwise wait, on the cores' idle time instead.
  mkdir -p "$root/.cache/bin"
  build=(go install helm.sh/helm/v3/cmd/helm@v3.22.0)
  if [ "${CTLPLANE_HELM_BUILD:-}" = background ]; then
    if [ ! -e "$root/.cache/bin/helm.building" ]; then
      echo "building helm into .cache/bin in the background at nice 19 (no helm on PATH): .cache/bin/helm.log"
      setsid nohup bash -c 'echo $$ > "$1/helm.building"; GOBIN="$1" nice -n 19 "${@:2}" > "$1/helm.log" 2>&1;
                            echo "exit $?" >> "$1/helm.log"; rm -f "$1/helm.building"' \
        _ "$root/.cache/bin" "${build[@]}" < /dev/null > /dev/null 2>&1 &
      while [ ! -e "$root/.cache/bin/helm.building" ] && [ ! -e "$root/.cache/bin/helm.log" ]; do sleep 0.1; done
    fi
  else
    echo "building helm into .cache/bin (no helm on PATH)"
    GOBIN="$root/.cache/bin" "${build[@]}"
  fi
fi
want=(java:openjdk-17-jdk-headless mvn:maven)
if [ "${1:-run}" = test ]; then
  want+=(promtool:prometheus amtool:prometheus-alertmanager prometheus-alertmanager:prometheus-alertmanager
         chromium:chromium openssl:openssl buildah:buildah podman:podman mmdebstrap:mmdebstrap
         runc:runc systemd-analyze:systemd krb5kdc:krb5-kdc kadmin.local:krb5-admin-server
         nginx:nginx-light)
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
