"""The numbers: each entry's row recomputed from its per-item files, the paired ranking, the
comparison groups and the judge-bias diagnostics. Reads validated submissions; writes no file.
"""
