"""Time ``tide-bench validation report`` on the full MentalAlign pack (issue 27: <= 10 s on 2 cores).

Needs the pack in the cache (``tide-bench validation fetch mentalalign --accept-licence``, or
``--from`` a clone). Each repeat runs the whole report in a fresh process (reading the five
spreadsheets, 4 judges x 7 attributes with 1,000-resample cluster-bootstrap intervals), as the
command line does; the median of the repeats is reported with the load average, since the
machines are shared, and the CPU time (user + system) of each process: what the wall time would
be on an idle machine (the report is single-threaded: one BLAS thread).

    python benchmarks/bench_validation_report.py --repeats 5 [--mode tide|authors]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

SNIPPET = (
    "import time; t = time.perf_counter(); "
    "from tide_bench.validation import report_pack; "
    "r = report_pack('mentalalign', mode='{mode}'); "
    "print(time.perf_counter() - t, sum(len(b['dimensions']) for b in r['judges'].values()))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mode", default="tide", choices=["tide", "authors"])
    args = parser.parse_args()
    walls, inner, cpu = [], [], []
    for _ in range(args.repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", SNIPPET.format(mode=args.mode)], capture_output=True, text=True, check=True
        ).stdout.split()
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        inner.append(float(out[0]))
        rows = int(out[1])
    print(f"cores: {os.cpu_count()}, load average before/after: {os.getloadavg()[0]:.1f}")
    print(f"report mentalalign (mode {args.mode}, {rows} judge x attribute rows, 1,000 resamples each)")
    print(f"  process wall, median of {args.repeats}: {statistics.median(walls):.2f} s (min {min(walls):.2f})")
    print(f"  report_pack alone, median: {statistics.median(inner):.2f} s (min {min(inner):.2f})")
    print(f"  CPU time (user + system), median: {statistics.median(cpu):.2f} s: the wall time on an idle core")


if __name__ == "__main__":
    main()
