"""GPU generation throughput of `tide-bench eval` (tokens/s per batch size).

No weights can be carried to the device machine, so the model is a randomly initialised
~0.5B-parameter Llama-architecture config (SmolLM2's tokenizer and chat template), built
locally and saved once. Random weights rarely emit EOS, so nearly every reply runs to
max_gen_toks; tokens/s counts the generated tokens exactly (re-tokenising the replies).

    python benchmarks/gpu_eval.py [--batch-sizes 1,8,32,64] [--max-gen-toks 128] [--limit 32]

Prints a markdown table for docs/benchmarks.md. Needs a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table


def build_random_model(target: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tide_bench.demo.model import prepare_demo_model

    tokenizer = AutoTokenizer.from_pretrained(prepare_demo_model())
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=16,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-sizes", default="1,8,32,64")
    parser.add_argument("--max-gen-toks", type=int, default=128)
    parser.add_argument(
        "--limit",
        type=int,
        default=32,
        help="items per subtask (the sample test split has 6 per turn; use --data for more)",
    )
    parser.add_argument("--data", default="sample")
    parser.add_argument("--split", default="all")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    from tide_bench.generation import EvalConfig, load_run, run_eval

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this benchmark needs a GPU")
    work = Path(tempfile.mkdtemp())
    model_dir = build_random_model(work / "random-0.5b")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    n_params = sum(
        p.numel() for p in __import__("transformers").AutoModelForCausalLM.from_pretrained(model_dir).parameters()
    )
    rows = []
    for bs in [int(b) for b in args.batch_sizes.split(",")]:
        manifest = run_eval(
            EvalConfig(
                model="hf",
                model_args=f"pretrained={model_dir},dtype=bfloat16",
                output_dir=work / f"bs{bs}",
                data=args.data,
                split=args.split,
                device="cuda:0",
                batch_size=bs,
                limit=args.limit,
                gen_kwargs={"max_gen_toks": args.max_gen_toks},
                overwrite=True,
            )
        )
        timings = json.loads(manifest.read_text())["timings"]
        gens = load_run(manifest.parent).generations
        tokens = sum(len(tokenizer(g.reply, add_special_tokens=False).input_ids) for g in gens)
        seconds = timings["total_s"] - timings["model_load_s"]
        rows.append([bs, len(gens), tokens, f"{seconds:.1f}", f"{tokens / seconds:.0f}"])
        print(rows[-1], flush=True)
    print(
        f"\nmachine: {machine()}, GPU {torch.cuda.get_device_name(0)}\nmodel: random-init Llama config, "
        f"{n_params / 1e6:.0f}M parameters, bf16; max_gen_toks {args.max_gen_toks}\n"
    )
    print(table(["batch size", "items", "generated tokens", "wall s (minus model load)", "tokens/s"], rows))


if __name__ == "__main__":
    main()
