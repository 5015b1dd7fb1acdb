"""One-run canary audits of training (Steinke, Nasr, Jagielski 2023) on tiny vectors.

The inputs are the 8×8 digits followed by zero features, one per canary: dpuq's default
canaries then sit on features no real example uses (the strongest black-box design).
"""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from dpuq.audit import audit_training, one_run_epsilon_lower_bound
from dpuq.training import train_classifier


def padded_digits(extra: int):
    X, y = load_digits(return_X_y=True)
    X = np.hstack([X / 16.0, np.zeros((X.shape[0], extra))]).astype(np.float32)
    return X, y.astype(np.int64)


def linear(d):
    return lambda: torch.nn.Linear(d, 10)


SGD = {
    "method": "sgd",
    "epochs": 20,
    "batch_size": 256,
    "learning_rate": 20.0,
    "iterate_averaging": 0,
    "augmentation_multiplicity": 1,
}


def noiseless_dpsgd(model, data, **options):
    """DP-SGD with its noise (and clipping) switched off: plain SGD, whatever it claims.
    (train_classifier refuses noise_multiplier=0, rightly; this is the bug simulated.)"""
    options = {**options, "method": "sgd"}
    options.pop("epsilon", None), options.pop("delta", None)
    return train_classifier(model, data, **options)


def test_noiseless_training_is_caught_with_a_few_canaries():
    X, y = padded_digits(100)
    torch.manual_seed(0)
    res = audit_training(
        linear(X.shape[1]),
        (X[:300], y[:300]),
        train_options={**SGD, "epochs": 8},
        n_canaries=100,
        n_guesses=50,
        trainer=noiseless_dpsgd,
        claimed_epsilon=1.0,
        random_state=0,
    )
    assert res.n_correct == 50 and res.violated
    assert res.epsilon == pytest.approx(one_run_epsilon_lower_bound(100, 50, 50))


def test_an_untrained_model_proves_nothing_and_slots_keep_the_size_public():
    """A 'training' that ignores its data is 0-DP: the audit must not accuse it."""
    X, y = padded_digits(100)
    sizes = []

    def ignore_data(model, data, **options):
        sizes.append(len(data[0]))
        return model, None

    for seed in range(3):
        torch.manual_seed(seed)
        res = audit_training(
            linear(X.shape[1]),
            (X[:300], y[:300]),
            train_options={},
            n_canaries=100,
            n_guesses=40,
            trainer=ignore_data,
            random_state=seed,
        )
        assert res.epsilon < 1.0 and res.claimed_epsilon is None
    assert sizes == [400, 400, 400]  # replace-one: every slot holds a canary or a filler


def test_bad_settings_are_named():
    X, y = padded_digits(0)
    with pytest.raises(ValueError, match="n_guesses"):
        audit_training(linear(64), (X, y), train_options={}, n_canaries=10, n_guesses=3)
    with pytest.raises(ValueError, match="n_canaries"):
        audit_training(linear(64), (X, y), train_options={}, n_canaries=1)


@pytest.mark.slow
def test_dpsgd_at_eps_8_gives_a_nonzero_bound_below_8_with_1000_canaries():
    X, y = padded_digits(1000)
    torch.manual_seed(0)
    options = {**SGD, "method": "dpsgd", "epsilon": 8.0, "delta": 1e-5}
    res = audit_training(
        linear(X.shape[1]),
        (X, y),
        train_options=options,
        n_canaries=1000,
        n_guesses=100,
        random_state=0,
    )
    print(f"\n{res}")
    assert 0.0 < res.epsilon <= 8.0, res
    assert res.claimed_epsilon is not None and res.claimed_epsilon <= 8.0


@pytest.mark.slow
def test_dpsgd_with_noise_switched_off_is_caught_with_1000_canaries():
    """The largest bound 1000 canaries can give at 95% is about log(r/3) (all r guesses
    right): 5.6 for r = 800, so the noiseless run is held to a claim of ε = 1."""
    X, y = padded_digits(1000)
    torch.manual_seed(0)
    options = {**SGD, "method": "dpsgd", "epsilon": 1.0, "delta": 1e-5}
    res = audit_training(
        linear(X.shape[1]),
        (X, y),
        train_options=options,
        n_canaries=1000,
        n_guesses=800,
        trainer=noiseless_dpsgd,
        claimed_epsilon=1.0,
        random_state=0,
    )
    print(f"\n{res}")
    assert res.epsilon > 5.0 and res.violated, res
