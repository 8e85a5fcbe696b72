# ctlplane: the exporter (+ dashboard) in one image. Build: docker build -t ctlplane .
# Run:   docker run -p 18309:18309 -v $PWD/ctlplane.yaml:/etc/ctlplane.yaml:ro ctlplane run --config /etc/ctlplane.yaml

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY ctlplane ctlplane
# requirements.lock (tools/lock.py): the versions the suite passed with, not whatever is newest today
RUN pip wheel --no-cache-dir --wheel-dir /wheels --constraint requirements.lock ".[dashboard]"

# Kafka's Java client for the quorum's view (ctlplane/exporter/kafka_admin.py): fetched at build time, so the image
# needs neither Maven nor the network to ask a cluster's quorum.
FROM maven:3.9.9-eclipse-temurin-17 AS kafka-clients
COPY ctlplane/exporter/kafka-clients.pom.xml /build/pom.xml
RUN mvn -q -B -f /build/pom.xml dependency:copy-dependencies -DoutputDirectory=/kafka-clients

FROM python:3.11-slim-bookworm
# JPype needs a JVM in-process for the persistent JMX connectors; a headless JRE is enough.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless=17.* \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
COPY --from=kafka-clients /kafka-clients /opt/ctlplane/kafka-clients
ENV CTLPLANE_KAFKA_CLIENT_JARS=/opt/ctlplane/kafka-clients
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin ctlplane
USER 10001
EXPOSE 18309
# Port, scheme and client certificate come from the config: auth, TLS or another port keep it working.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["ctlplane", "healthcheck", "--config", "/etc/ctlplane.yaml"]
ENTRYPOINT ["ctlplane"]
CMD ["run", "--config", "/etc/ctlplane.yaml"]
