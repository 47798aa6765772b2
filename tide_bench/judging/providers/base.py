"""What every provider adapter returns, and the shared pre-flight check."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.retry import FatalJudgeError, TransientFailure, call_with_retries
from tide_bench.judging.usage import Usage


@dataclass
class CallOutcome:
    """One API answer, interpreted: a payload to validate, or why there is none."""

    payload: Any | None = None
    refusal: str | None = None  # the model declined
    filtered: str | None = None  # the provider's content filter stopped it
    malformed: str | None = None  # no tool call / not JSON
    usage: Usage = field(default_factory=Usage)


class Provider(ABC):
    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        self.config = config
        self._key = key  # held in memory only

    @abstractmethod
    async def rate(self, system: str, user: str) -> CallOutcome: ...

    @abstractmethod
    async def _list_models(self) -> Any: ...

    @abstractmethod
    def endpoint(self) -> str: ...

    async def preflight(self) -> None:
        """Fail before any work when the server is unreachable or the key is rejected."""
        try:
            await call_with_retries(self._list_models, max_retries=2, base_s=0.5, cap_s=2.0)
        except TransientFailure as exc:
            raise FatalJudgeError(f"cannot reach the judge API at {self.endpoint()}: {exc}", hint="check --base-url and the network") from None

    async def aclose(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            await client.close()
