"""`make bench`: run every benchmark and print its figures (copy them into docs/BENCHMARKS.md), each between two
readings of the machine's pace (bench/pace.py), so figures of two runs can be told apart from the machine's moment."""

from __future__ import annotations

import platform
import sys

from bench import (
    audit_throughput,
    chat_turn,
    cold_start,
    console,
    guard,
    hops,
    isolate_runtime,
    knowledge_search,
    launcher_lines,
    load,
    mcp_latency,
    pace,
    proxy_latency,
    sandbox_engines,
    shipyard,
    stdio_lines,
    token_propagation,
    tool_latency,
    tracing,
)


def main() -> None:
    print(f"saip benchmarks on {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    benchmarks = (
        ("mcp_latency", mcp_latency),
        ("launcher_lines", launcher_lines),
        ("audit_throughput", audit_throughput),
        ("token_propagation", token_propagation),
        ("tool_latency", tool_latency),
        ("knowledge_search", knowledge_search),
        ("load", load),
        ("chat_turn", chat_turn),
        ("shipyard", shipyard),
        ("proxy_latency", proxy_latency),
        ("tracing", tracing),
        ("cold_start", cold_start),
        ("stdio_lines", stdio_lines),
        ("isolate_runtime", isolate_runtime),
        ("sandbox_engines", sandbox_engines),
        ("hops", hops),
        ("console", console),
        ("guard", guard),
    )
    for name, benchmark in benchmarks:
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        print()
        print(pace.line(f"before {name}"), flush=True)
        print(benchmark.run(), flush=True)
        print(pace.line(f"after {name}"), flush=True)


if __name__ == "__main__":
    main()
