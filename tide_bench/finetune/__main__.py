"""``python -m tide_bench.finetune`` / ``accelerate launch -m tide_bench.finetune``."""

from tide_bench.cli.finetune_cmd import finetune_cmd

if __name__ == "__main__":
    finetune_cmd()
