"""Build hook: make editable installs show task-YAML edits live in lm-eval's own task tree.

Why: lm-eval 0.4.13 finds tasks only in its own ``lm_eval/tasks/`` tree (and ``--include_path``).
The wheel therefore also installs ``tasks/tide_empathy/`` as ``lm_eval/tasks/tide_empathy/``
(the ``force-include`` table in pyproject.toml), so the literal ``lm_eval --tasks tide_empathy``
works after ``pip install tide-bench``; pip records those files in tide-bench's RECORD and
removes them on uninstall. In an *editable* install hatchling would copy the YAMLs (a snapshot
that goes stale as you edit them); instead this hook installs one stub per YAML holding
``include: <checkout>/tasks/tide_empathy/<name>.yaml``, which lm-eval resolves on every run.
Regular wheels are unchanged (real copies). A new YAML file still needs ``pip install -e .``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TASK_FOLDERS = ("tide_empathy", "ed_empathy")  # tasks/<name> -> lm_eval/tasks/<name>
STUB_HEADER = "# editable install of tide-bench: the real file is in the checkout\n"


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version != "editable":
            return
        for folder in TASK_FOLDERS:
            source = Path(self.root, "tasks", folder).resolve()
            stub_dir = Path(self.directory, ".editable-task-stubs", folder)
            stub_dir.mkdir(parents=True, exist_ok=True)
            for yaml_file in sorted(source.glob("*.yaml")):
                stub = stub_dir / yaml_file.name
                stub.write_text(f"{STUB_HEADER}include: {yaml_file}\n", encoding="utf-8")
                build_data["force_include_editable"][os.fspath(stub)] = f"lm_eval/tasks/{folder}/{yaml_file.name}"
