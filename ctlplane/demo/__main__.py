"""`python -m ctlplane.demo`: run the simulator until SIGTERM/SIGINT; print one JSON line once every port answers."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ctlplane.demo.scenarios import ScenarioError, parse_script
from ctlplane.demo.shapes import ClusterSpec, fleet_shape, standard_shape
from ctlplane.demo.simulation import Simulation


def _shape(args: argparse.Namespace) -> tuple[ClusterSpec, ...]:
    if args.fleet_clusters:
        return fleet_shape(args.fleet_clusters, args.fleet_nodes)
    return standard_shape()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ctlplane.demo", description="simulated Kafka clusters over real JMX"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fleet-clusters", type=int, default=0, help="fleet mode: this many clusters")
    parser.add_argument("--fleet-nodes", type=int, default=10, help="fleet mode: nodes per cluster")
    parser.add_argument(
        "--script",
        default="",
        help="scenario steps SECONDS:SCENARIO[@CLUSTER[/NODE]], comma-separated, e.g. 0:fenced-broker,60:healthy",
    )
    parser.add_argument("--control-port", type=int, default=0, help="HTTP control port on 127.0.0.1 (0: any)")
    parser.add_argument("--max-heap", default="256m")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    try:
        steps = parse_script(args.script)
        simulation = Simulation(_shape(args), seed=args.seed)
        for offset, scenario, cluster, node in steps:  # validated before the JVM starts
            simulation.schedule(scenario, cluster, node, simulation.origin + offset)
    except (ScenarioError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2

    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    def announce(document: dict[str, object]) -> None:
        sys.stdout.write(json.dumps(document) + "\n")
        sys.stdout.flush()

    from ctlplane.demo.server import serve

    serve(simulation, max_heap=args.max_heap, control_port=args.control_port, stop=stop, on_ready=announce)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
