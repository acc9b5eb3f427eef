"""`python -m converter ...` works as `webnn-convert ...`."""


def _main() -> None:
    from cli.script import run  # imported here, so that `import converter` stays light

    run()


if __name__ == "__main__":
    _main()
