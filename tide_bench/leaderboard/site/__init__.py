"""What people read: the index and model pages, the per-item data, the downloads and the
single-run view, all rendered from the scored rows (never recomputing a number).
"""
