import click


@click.group()
def cli() -> None:
    """tide-bench."""


def main() -> None:
    cli()
