"""Shared fixtures. Tests run offline on CPU; torch's threads are capped (through the OpenMP and MKL
variables it reads when first imported, so collection never imports torch itself) because torch
with default threads next to another busy process slows down many times."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tide_bench.data.sources import SAMPLE_DIR, _load_cached

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, str(max(1, min(2, os.cpu_count() or 1))))


ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run the calibration suite (tests/calibration) at the statistics review's Monte Carlo sizes",
    )


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's data source choice or a stale dataset cache."""
    monkeypatch.delenv("TIDE_BENCH_DATA", raising=False)
    _load_cached.cache_clear()


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A writable copy of the built-in sample, to break on purpose."""
    target = tmp_path / "tide"
    shutil.copytree(SAMPLE_DIR, target)
    return target


@pytest.fixture
def multi_exchange_copy(tmp_path: Path) -> Path:
    """A writable copy of the two-exchanges-per-conversation fixture."""
    from tests.helpers import MULTI_EXCHANGE

    target = tmp_path / "tide-multi"
    shutil.copytree(MULTI_EXCHANGE, target)
    return target


@pytest.fixture(scope="session")
def demo_model_dir() -> Path:
    """The offline demo model as a transformers folder (converted once, then cached)."""
    from tide_bench.demo.model import prepare_demo_model

    return prepare_demo_model()


@pytest.fixture(scope="module")
def llm_server():
    """A fake LLM API server on 127.0.0.1 (tests/fakes/llm_server.py), shared by a module's tests."""
    from tests.fakes.llm_server import FakeLLMServer

    server = FakeLLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def server(request: pytest.FixtureRequest):
    """A fake LLM API server that accepts only the test module's ``KEY`` (started with the module's
    ``SERVER_OPTIONS``, if any): for tests of authentication, redaction and API answers."""
    from tests.fakes.llm_server import FakeLLMServer

    srv = FakeLLMServer(api_key=request.module.KEY, **getattr(request.module, "SERVER_OPTIONS", {})).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def epitome_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local EPITOME scorer trained once per session on the synthetic EPITOME fixture: a 1-layer
    random encoder, one epoch, two grouped folds (tests/epitome_helpers.py)."""
    from tests.epitome_helpers import train_tiny

    return train_tiny(tmp_path_factory.mktemp("epitome-model"))
