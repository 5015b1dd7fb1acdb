"""The one release step of the mechanisms (check random_state, charge, hand out the generator),
and the import paths kept when modules were cut along their seams (issue 29, part B)."""

import pickle

import numpy as np
import pytest

from dpuq.mechanisms.class_thresholds import class_thresholds
from dpuq.mechanisms.exponential import exponential_mechanism
from dpuq.mechanisms.laplace import laplace_mechanism
from dpuq.mechanisms.permute_and_flip import permute_and_flip
from dpuq.mechanisms.quantile import private_quantile, private_quantile_from_counts
from dpuq.mechanisms.randomness import release_generator
from dpuq.privacy.ledger import BudgetExceededError, Ledger, LedgerRequiredError


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.create_budget("d", epsilon=10.0)
    return led


def test_release_generator_charges_then_hands_out_a_seeded_generator(ledger):
    rng = release_generator(3, ledger, "d", 1.5, what="a count", settings={"n": 10})
    assert rng.random() == np.random.default_rng(3).random()
    (entry,) = ledger.releases("d")
    assert (entry.what, entry.epsilon, entry.seeded, entry.settings) == (
        "a count",
        1.5,
        True,
        {"n": 10},
    )


def test_release_generator_refuses_beyond_the_budget_and_charges_nothing(ledger):
    with pytest.raises(BudgetExceededError):
        release_generator(None, ledger, "d", 11.0, what="too much", settings={})
    assert ledger.releases("d") == []


BAD_RANDOM_STATE = "seed"  # neither None, an int nor a Generator

RELEASES = {
    "exponential_mechanism": lambda **k: exponential_mechanism(
        [0.0, 1.0], epsilon=1.0, sensitivity=1.0, **k
    ),
    "permute_and_flip": lambda **k: permute_and_flip([0.0, 1.0], epsilon=1.0, sensitivity=1.0, **k),
    "laplace_mechanism": lambda **k: laplace_mechanism(1.0, sensitivity=1.0, epsilon=1.0, **k),
    "private_quantile": lambda **k: private_quantile([0.1, 0.5, 0.9], 0.5, 1.0, 4, **k),
    "private_quantile_from_counts": lambda **k: private_quantile_from_counts(
        [1, 2, 3, 4], 0.5, 1.0, **k
    ),
    "class_thresholds": lambda **k: class_thresholds(
        [0.1, 0.2, 0.9], [0, 0, 1], 2, epsilon=1.0, n_bins=4, schedule=[3, 4, 5], pad=3, **k
    ),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_bad_random_state_is_refused_before_the_charge(name, ledger):
    with pytest.raises(TypeError, match="random_state"):
        RELEASES[name](random_state=BAD_RANDOM_STATE, ledger=ledger, dataset="d")
    assert ledger.releases("d") == []  # nothing spent on a refused call


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_each_release_is_charged_once_with_its_seed_recorded(name, ledger):
    RELEASES[name](random_state=0, ledger=ledger, dataset="d")
    (entry,) = ledger.releases("d")
    assert entry.epsilon == 1.0 and entry.seeded


def test_permute_and_flip_is_still_importable_from_the_exponential_module():
    import dpuq
    from dpuq.mechanisms import exponential
    from dpuq.mechanisms import permute_and_flip as pf_module

    for name in pf_module.__all__:
        assert getattr(exponential, name) is getattr(pf_module, name)
    assert dpuq.permute_and_flip is pf_module.permute_and_flip


def test_moved_names_keep_their_public_homes():
    import dpuq.io
    import dpuq.mechanisms.quantile as quantile
    import dpuq.privacy.ledger
    from dpuq.mechanisms import bins

    assert quantile.bin_edges is bins.bin_edges and quantile._bin_index_fast is bins._bin_index_fast
    for name in ("text_layout", "is_data_line", "_decimal_point"):
        assert callable(getattr(dpuq.io, name))
    for name in ("_simulation", "_within_charged_release", "SCHEMA_VERSION", "default_ledger_path"):
        assert hasattr(dpuq.privacy.ledger, name)
    # CALLER_CHARGED stays one object through pickles, under its old path too
    from dpuq.privacy.ledger import CALLER_CHARGED, _CallerCharged

    assert pickle.loads(pickle.dumps(CALLER_CHARGED)) is CALLER_CHARGED
    assert isinstance(CALLER_CHARGED, _CallerCharged)
    # the ledger's errors keep their public module name (tracebacks, pickles)
    for cls in (dpuq.privacy.ledger.BudgetError, BudgetExceededError, LedgerRequiredError):
        assert cls.__module__ == "dpuq.privacy.ledger"
        err = pickle.loads(pickle.dumps(cls("refused")))
        assert type(err) is cls and str(err) == "refused"
