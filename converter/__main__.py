"""`python -m converter ...` works as `webnn-convert ...`."""
import sys


def _main() -> int:
    from cli.main import main  # imported here, so that `import converter` stays light

    return main(prog_name="webnn-convert")


if __name__ == "__main__":
    sys.exit(_main())
