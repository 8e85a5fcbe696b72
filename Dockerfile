# ctlplane: the exporter (+ dashboard) in one image. Build: docker build -t ctlplane .
# Run:   docker run -p 18309:18309 -v $PWD/ctlplane.yaml:/etc/ctlplane.yaml:ro ctlplane run --config /etc/ctlplane.yaml

# Kafka's Java client for the quorum's view (ctlplane/exporter/sources/admin/client.py): fetched at build time and
# placed in the package below (tools/client_jars.py, as `make wheel` does), so the wheel the image installs
# carries it like any wheel of ctlplane, and the image needs neither Maven nor the network to ask a quorum.
FROM maven:3.9.9-eclipse-temurin-17 AS kafka-clients
COPY ctlplane/exporter/sources/admin/kafka-clients.pom.xml /build/pom.xml
RUN mvn -q -B -f /build/pom.xml dependency:copy-dependencies -DoutputDirectory=/kafka-clients

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
# The dependencies first, in layers of their own: a change to ctlplane/ rebuilds one small wheel, not ~90 MB
# of downloads (tools/image.py's builds reuse the layers while requirements.lock is unchanged).
# requirements.lock (tools/lock.py): the versions the suite passed with, not whatever is newest today
COPY requirements.lock ./
RUN pip wheel --no-cache-dir --wheel-dir /wheels --requirement requirements.lock \
    && pip wheel --no-cache-dir --wheel-dir /build-wheels "setuptools>=68"
COPY pyproject.toml README.md ./
COPY ctlplane ctlplane
COPY tools/__init__.py tools/client_jars.py tools/
COPY tools/licenses tools/licenses
COPY --from=kafka-clients /kafka-clients /kafka-clients
# The client's jars and their licences into ctlplane/exporter/sources/admin/jars/ (the package data of pyproject.toml).
# Offline: a dependency missing from the lock fails the build here rather than being fetched unpinned
RUN python -m tools.client_jars --jars /kafka-clients \
    && pip wheel --no-cache-dir --no-index --find-links /wheels --find-links /build-wheels --no-deps \
        --wheel-dir /dist ".[dashboard]" \
    && pip download --no-index --find-links /wheels --find-links /build-wheels --dest /tmp/check ".[dashboard]" >/dev/null

FROM python:3.11-slim-bookworm
# JPype needs a JVM in-process for the persistent JMX connectors; a headless JRE is enough.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless=17.* \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin ctlplane
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels
COPY --from=build /dist /dist
RUN pip install --no-cache-dir --no-index --no-deps /dist/*.whl && rm -rf /dist && pip check
USER 10001
EXPOSE 18309
# Port, scheme and client certificate come from the config: auth, TLS or another port keep it working.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["ctlplane", "healthcheck", "--config", "/etc/ctlplane.yaml"]
ENTRYPOINT ["ctlplane"]
CMD ["run", "--config", "/etc/ctlplane.yaml"]
