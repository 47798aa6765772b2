"""Shared foundations every stage may import: errors, hashing, JSONL I/O, statistics,
provenance and packaged resources. Nothing here imports a later stage."""
