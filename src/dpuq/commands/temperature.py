"""``dpuq temperature``: release a softmax temperature with ε-DP from a user's held-out logits."""

from __future__ import annotations

import argparse
import sys

from dpuq.commands._args import (
    add_command,
    add_seed_argument,
    charged_release,
    float_arg,
    release_header,
    write_release,
)

HELP = "release an epsilon-DP softmax temperature from held-out logits"

DESCRIPTION = """\
Private temperature scaling: release one softmax temperature T (use softmax(logits / T))
with epsilon-differential privacy for the held-out people whose logits and labels are given,
by the exponential mechanism over a public grid of temperatures (default: 201 log-spaced
values from 0.1 to 10). The default utility is the calibration gap
-|sum of confidences - number correct| (sensitivity 2); --loss brier or nll (clipped) are
proper-scoring-rule alternatives.

The people must be held out: not the model's training people, not the people you calibrate
prediction sets on (or add the epsilons). Privacy: epsilon-DP (delta = 0), replace-one
neighbours with n public. Each run is a fresh release and spends epsilon again.
"""

EPILOG = """\
examples:
  dpuq temperature --logits heldout_logits.npy --labels heldout_labels.csv --epsilon 0.5 \\
      -o temperature.json
  dpuq temperature --probs heldout_probs.npy --labels heldout_labels.npy --epsilon 1 \\
      --loss brier -o temperature.json
"""


def register(subparsers) -> None:
    p = add_command(subparsers, "temperature", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--logits", metavar="FILE", help="held-out logits, shape (n, K)")
    p.add_argument("--probs", metavar="FILE", help="held-out probabilities (n, K) instead")
    p.add_argument("--labels", metavar="FILE", required=True, help="true classes 0..K-1, (n,)")
    p.add_argument("--epsilon", type=float_arg, required=True, help="privacy of the release")
    p.add_argument("--loss", choices=["gap", "brier", "nll"], default="gap", help="utility (gap)")
    p.add_argument(
        "--grid",
        type=float_arg,
        nargs=3,
        metavar=("MIN", "MAX", "COUNT"),
        default=None,
        help="public grid: COUNT log-spaced temperatures from MIN to MAX (0.1 10 201)",
    )
    add_seed_argument(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE.json", help="the release")
    p.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    from dpuq.commands.budget import add_ledger_arguments

    add_ledger_arguments(p)
    p.set_defaults(func=run)


def _grid(values):
    import numpy as np

    if values is None:
        return None
    lo, hi, count = values
    if not (0 < lo < hi) or count != int(count) or count < 2:
        raise ValueError("--grid: need 0 < MIN < MAX and an integer COUNT >= 2")
    return np.geomspace(lo, hi, int(count))


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from dpuq._validation import check_epsilon
    from dpuq.io import check_output_path, read_matrix, read_vector
    from dpuq.privacy.ledger import CALLER_CHARGED
    from dpuq.training import temperature as ts

    # everything that can fail is checked before the release (no second release on retry)
    out = check_output_path(args.output, "-o", (".json",), force=args.force)
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    if (args.logits is None) == (args.probs is None):
        raise ValueError("give exactly one of --logits and --probs")
    if args.logits is not None:
        logits = read_matrix(args.logits, "--logits")
    else:
        probs = read_matrix(args.probs, "--probs")
        if (probs < 0).any() or not np.allclose(probs.sum(axis=1), 1.0, atol=1e-6):
            raise ValueError("--probs: rows must be probabilities that sum to 1")
        logits = np.log(np.maximum(probs, np.finfo(float).tiny))
    labels = read_vector(args.labels, "--labels", integer=True)
    grid = _grid(args.grid)
    # every input and setting is checked before the ledger is charged
    z = ts._check_logits(logits)
    from dpuq._validation import check_labels

    labels = check_labels(labels, z.shape[1], z.shape[0], "--labels")  # the flag, as typed
    ts._check_labels(labels, *z.shape)
    ts._check_grid(grid)
    ts._check_loss(args.loss, ts.DEFAULT_NLL_CLIP)
    what = f"dpuq temperature (utility {args.loss})"
    settings = {"n": int(labels.size), "classes": int(z.shape[1]), "loss": args.loss}
    with charged_release(out, args, epsilon, what, settings) as (pending, receipt):
        t, report = ts.private_temperature_scaling(
            logits,
            labels,
            epsilon=epsilon,
            temperatures=grid,
            loss=args.loss,
            random_state=args.seed,
            ledger=CALLER_CHARGED,
        )
        record = {
            **release_header("dpuq-temperature", 1),
            "temperature": t,
            "usage": "probabilities = softmax(logits / temperature)",
            "privacy": report.to_dict(),
            "seeded": report.seeded,
        }
        write_release(pending, args, what, receipt, record)
    print(
        f"released temperature {t:.6g} from n = {labels.size} held-out people at "
        f"epsilon = {epsilon:g} (pure DP, delta = 0, replace-one; utility {args.loss})"
        + (" [seeded: not private if the seed is known]" if report.seeded else "")
        + f"\nwrote {out}",
        file=sys.stdout,
    )
    return 0
