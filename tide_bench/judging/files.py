"""The files a judge run writes into its output folder (``tide-bench judge RUN --out DIR``),
named once for the judge that writes them and for everything that reads them (the
leaderboard's submissions, ``tide-bench view``, the study report)."""

RUN_SUBDIR = "judge"  # where a judge folder sits inside a run (RUN/judge) and inside a submission
JUDGMENTS_FILE = "judgments.jsonl"
SUMMARY_FILE = "judge_summary.json"
CONFIG_FILE = "judge_config.json"
CACHE_FILE = "cache.sqlite"
SEVERE_SAMPLES_FILE = "severe_samples.jsonl"  # severe risk items' repeated calls (judging.severe_samples)
SUBMITTED_FILES = (
    JUDGMENTS_FILE,
    CONFIG_FILE,
    SUMMARY_FILE,
    SEVERE_SAMPLES_FILE,
)  # what a leaderboard submission carries
