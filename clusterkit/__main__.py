"""Command line: ``python -m clusterkit demo [--n-side N] [--random-state S] [--n-threads T]``."""
import argparse
import sys


def main(argv=None):
    """Dispatch ``python -m clusterkit <command> [options]``.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after ``python -m clusterkit``; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        The command's exit status.
    """
    parser = argparse.ArgumentParser(prog="python -m clusterkit",
                                     description="clusterkit command line.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    # the demo parses its own options, so its --help lists them
    commands.add_parser("demo", add_help=False,
                        help="fit k-means and GMM variants on a BIRCH grid and print a table "
                             "(see 'python -m clusterkit demo --help')")
    _, rest = parser.parse_known_args(argv)  # "demo" is the only command so far
    from . import _demo
    return _demo.main(rest)


if __name__ == "__main__":
    sys.exit(main())
