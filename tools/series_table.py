"""Print README's series table from the catalogue: `python tools/series_table.py`."""

from __future__ import annotations

import sys

from ctlplane.exporter.catalog import CATALOG, DERIVED_SERIES, HEALTH_SERIES


def main() -> None:
    out = ["| series | type | MBean | attribute | modes | since |", "|---|---|---|---|---|---|"]
    for spec in CATALOG:
        modes = ", ".join(sorted(mode.value for mode in spec.modes))
        until = f"-{spec.until}" if spec.until else "+"
        until += f" (KRaft {spec.kraft_since}+)" if spec.kraft_since else ""
        attribute = "histogram" if not spec.attribute else spec.attribute
        out.append(
            f"| `{spec.series}` | {spec.type.value} | `{spec.mbean}` | {attribute} | {modes} | {spec.since}{until} |"
        )
    out.append("")
    out.append("| series | derived from |")
    out.append("|---|---|")
    for name, text in {**HEALTH_SERIES, **DERIVED_SERIES}.items():
        out.append(f"| `{name}` | {text} |")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
