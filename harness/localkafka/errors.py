"""The harness's errors: one base class, so a caller can catch everything it raises."""


class LocalKafkaError(RuntimeError):
    """Base error of harness.localkafka."""


class JarFetchError(LocalKafkaError):
    """Maven could not fetch the Kafka jars."""


class ClusterStartError(LocalKafkaError):
    """A process exited or did not become ready in time."""
