"""Running the ``dpuq`` command line inside a test."""

from dpuq.cli import main


def run_cli(capsys, *argv):
    """Exit status, stdout and stderr of `dpuq ARGV` (argparse errors exit via SystemExit)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err
