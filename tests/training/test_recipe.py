"""Issue 24: the data-free recipe, normalised clipping, fast noise calibration, fixed features."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

from torch import nn  # noqa: E402

from dpuq.privacy.accounting import calibrate_noise_multiplier, gdp_mu_for_budget, pld_epsilon  # noqa: E402
from dpuq.training import predict_proba, train_classifier  # noqa: E402
from dpuq.training.features import synthetic_images  # noqa: E402
from dpuq.training.recipe import auto_recipe  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


PLAN_KEYS = (
    "expected batch size", "planned steps", "steps", "noise multiplier min",
    "noise multiplier max", "learning rate first", "learning rate last planned", "clipping",
    "averaged iterates", "temperature",
)  # fmt: skip


class TestRecipeIsDataFree:
    def test_pure_function_of_public_quantities(self):
        kw = dict(n_samples=1000, epsilon=2.0, delta=1e-5, n_params=650, n_classes=10)
        assert auto_recipe("dpsgd", **kw) == auto_recipe("dpsgd", **kw)
        big = auto_recipe("dpsgd", **{**kw, "n_samples": 50_000})
        assert big.epochs < auto_recipe("dpsgd", **kw).epochs  # compute budget scales with N
        r = auto_recipe("dpsgld", **kw)
        assert r.temperature == "auto" and r.momentum == 0.0 and r.averaging == "predictive"

    @pytest.mark.parametrize("method", ["dpsgd", "dpsgld"])
    def test_same_plan_for_permuted_and_other_data(self, method):
        """What the recipe chooses cannot depend on the data: only on N, ε, δ, the model."""
        x, y = synthetic_images(200, seed=1)
        rng = np.random.default_rng(0)
        other_x = rng.random((200, 8, 8)).astype(np.float32)
        other_y = rng.integers(0, 10, 200)
        perm = rng.permutation(200)
        plans = []
        for xx, yy in [(x, y), (x[perm], y[perm]), (other_x, other_y)]:
            torch.manual_seed(0)
            _, report = train_classifier(
                nn.Linear(64, 10), (xx.reshape(200, -1), yy), method=method, epsilon=2.0,
                delta=1e-5, epochs=2, random_state=0, show_progress=False,
            )  # fmt: skip
            plans.append({k: report.details.get(k) for k in PLAN_KEYS})
        assert plans[0] == plans[1] == plans[2]
        assert plans[0]["clipping"] == "normalized"

    def test_own_learning_rate_keeps_classic_settings(self):
        x, y = synthetic_images(100, seed=2)
        _, report = train_classifier(
            nn.Linear(64, 10), (x.reshape(100, -1), y), method="dpsgd", epsilon=2.0,
            delta=1e-5, epochs=1, batch_size=20, learning_rate=0.1, show_progress=False,
            random_state=0,
        )  # fmt: skip
        assert report.details["clipping"] == "flat"
        assert "averaged iterates" not in report.details

    def test_bad_clipping_is_named(self):
        x, y = synthetic_images(50, seed=2)
        with pytest.raises(ValueError, match="clipping"):
            train_classifier(
                nn.Linear(64, 10), (x.reshape(50, -1), y), method="dpsgd", epsilon=1.0,
                delta=1e-5, clipping="soft", show_progress=False,
            )  # fmt: skip


class TestNormalizedClipping:
    def test_sum_is_sum_of_normalised_gradients_and_sensitivity_is_c(self):
        from opacus import GradSampleModule

        from dpuq.training.optimizer import NORMALIZED_STABILITY, DPSGDOptimizer

        torch.manual_seed(0)
        lin = nn.Linear(5, 3)
        net = GradSampleModule(lin)
        opt = DPSGDOptimizer(
            torch.optim.SGD(net.parameters(), lr=1.0), noise_multiplier=0.0, max_grad_norm=2.0,
            expected_batch_size=8, clipping="normalized",
        )  # fmt: skip
        x = torch.randn(8, 5) * torch.tensor([0.01, 1, 10, 100, 1000.0])
        y = torch.randint(0, 3, (8,))
        nn.functional.cross_entropy(net(x), y).backward()
        per = [p.grad_sample.clone() for p in net.parameters()]
        flat = torch.cat([g.reshape(8, -1) for g in per], dim=1)
        norms = flat.norm(dim=1)
        want = (flat * (2.0 / (norms + NORMALIZED_STABILITY))[:, None]).sum(0) / 8
        opt.pre_step()
        got = torch.cat([p.grad.reshape(-1) for p in net.parameters()])
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        scaled = flat * (2.0 / (norms + NORMALIZED_STABILITY))[:, None]
        assert bool((scaled.norm(dim=1) <= 2.0).all())  # sensitivity: still C

    @pytest.mark.parametrize("method", ["dpsgd", "dpsgld"])
    def test_one_pass_equals_normalise_then_opacus_clipping(self, method):
        """Issue 35: the one-pass sum is the two-stage one (normalise in place, then Opacus
        clips at C and sums), per-example gradient norms from about 0 to huge."""
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer

        from dpuq.training.optimizer import NORMALIZED_STABILITY, DPSGDOptimizer, DPSGLDOptimizer

        torch.manual_seed(1)
        x = torch.randn(16, 5) * torch.logspace(-6, 6, 16)[:, None]  # norms from ~0 to huge
        y = torch.randint(0, 3, (16,))
        sums = []
        for one_pass in (True, False):
            torch.manual_seed(0)
            net = GradSampleModule(nn.Linear(5, 3))
            base = torch.optim.SGD(net.parameters(), lr=1.0)
            if method == "dpsgd":
                opt = DPSGDOptimizer(base, noise_multiplier=0.0, max_grad_norm=0.7,
                                     expected_batch_size=16, clipping="normalized")  # fmt: skip
            else:
                opt = DPSGLDOptimizer(
                    base, max_grad_norm=0.7, expected_batch_size=16, n_samples=100,
                    temperature=1.0, clipping="normalized",
                )  # fmt: skip
            nn.functional.cross_entropy(net(x), y).backward()
            if one_pass:
                opt.clip_and_accumulate()
            else:  # the code before issue 35: rescale in place, then Opacus' own clipping
                g = [opt._get_flat_grad_sample(p) for p in opt.params]
                n = torch.stack([v.reshape(16, -1).norm(dim=1) for v in g], dim=1).norm(dim=1)
                f = 0.7 / (n + NORMALIZED_STABILITY)
                for p, v in zip(opt.params, g, strict=True):
                    p.grad_sample = v * f.view(-1, *([1] * (v.ndim - 1)))
                DPOptimizer.clip_and_accumulate(opt)
            sums.append(torch.cat([p.summed_grad.reshape(-1) for p in opt.params]))
        torch.testing.assert_close(sums[0], sums[1], rtol=1e-5, atol=1e-7)

    def test_privacy_report_unchanged_in_law(self):
        """Same public plan -> same noise schedule and ε, whatever the clipping rule."""
        x, y = synthetic_images(120, seed=3)
        eps = {}
        for clipping in ("flat", "normalized"):
            _, rep = train_classifier(
                nn.Linear(64, 10), (x.reshape(120, -1), y), method="dpsgd", epsilon=1.5,
                delta=1e-5, epochs=2, batch_size=30, learning_rate=0.5, clipping=clipping,
                random_state=0, show_progress=False,
            )  # fmt: skip
            eps[clipping] = (rep.epsilon, rep.details["noise multiplier min"])
            assert rep.epsilon <= 1.5
        assert eps["flat"] == eps["normalized"]


class TestStepNoiseRate:
    """Issue 35: the rate is 1/R within [0.5, 4] (R = sqrt(T·P)/(μN), the noise of a step
    against its signal) and the σ floor is 1, so large N·ε runs its planned 300 steps."""

    def test_quiet_runs_take_larger_steps_and_every_planned_step(self):
        big = auto_recipe("dpsgd", n_samples=20_000, epsilon=3.0, delta=1e-5,
                          relation="add/remove-one", n_params=39_700, n_classes=10)  # fmt: skip
        steps = big.epochs * 20_000 / big.batch_size
        assert steps == pytest.approx(300, rel=0.01)  # the old σ >= 2 floor cut it to 146
        assert big.learning_rate == 4.0  # was 0.5
        tabular = auto_recipe("dpsgd", n_samples=5000, epsilon=1.0, delta=1e-5, n_params=42,
                              n_classes=2)  # fmt: skip
        assert tabular.learning_rate == 4.0

    def test_noisy_runs_keep_the_small_rate(self):
        demo = auto_recipe("dpsgd", n_samples=597, epsilon=3.0, delta=1e-5, n_params=2090,
                           n_classes=10)  # fmt: skip
        assert demo.learning_rate == 0.5
        sgld = auto_recipe("dpsgld", n_samples=597, epsilon=3.0, delta=1e-5, n_params=2090,
                           n_classes=10)  # fmt: skip
        assert sgld.learning_rate.initial == 0.5

    def test_rate_is_monotone_in_the_noise(self):
        from dpuq.training.recipe import step_noise_ratio

        rates = [
            auto_recipe("dpsgd", n_samples=n, epsilon=1.0, delta=1e-5, n_params=39_700,
                        n_classes=10).learning_rate
            for n in (1000, 5000, 20_000, 200_000)
        ]  # fmt: skip
        assert rates == sorted(rates) and rates[0] == 0.5 and rates[-1] == 4.0
        assert step_noise_ratio(300, 39_700, 0.72, 20_000) == pytest.approx(0.24, abs=0.005)


class TestFastCalibration:
    @pytest.mark.parametrize(
        "p,k,eps,rel",
        [(0.5, 400, 3.0, "replace-one"), (0.02, 1000, 1.0, "replace-one"),
         (0.01, 500, 2.0, "add/remove-one"), (0.3, 30, 0.5, "replace-one")],
    )  # fmt: skip
    def test_sigma_fits_and_is_tight(self, p, k, eps, rel):
        s = calibrate_noise_multiplier(sample_rate=p, steps=k, epsilon=eps, delta=1e-5,
                                       relation=rel)  # fmt: skip
        assert pld_epsilon(p, [s] * k, 1e-5, relation=rel) <= eps  # never under-stated
        assert pld_epsilon(p, [s / 1.003] * k, 1e-5, relation=rel) > eps  # and tight

    def test_gdp_mu_for_budget_inverts_gdp_epsilon(self):
        from dpuq.privacy.accounting import gdp_epsilon

        mu = gdp_mu_for_budget(2.0, 1e-6)
        assert gdp_epsilon(mu, 1e-6) == pytest.approx(2.0, rel=1e-6)


class TestFeatures:
    def test_synthetic_images_shift(self):
        """max_shift=None keeps the old law (side // 8); 0 draws unshifted glyphs."""
        a, ya = synthetic_images(40, seed=3)
        b, yb = synthetic_images(40, seed=3, max_shift=1)  # side 8: side // 8 == 1
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ya, yb)
        c, yc = synthetic_images(40, seed=3, max_shift=0, noise=0.0, jitter=0.0)
        same = np.flatnonzero(yc == yc[0])[:2]  # unshifted, unjittered: only the ink differs
        u, v = (c[i].ravel() / c[i].max() for i in same)
        np.testing.assert_allclose(u, v, atol=1e-6)
        shifted, ys = synthetic_images(40, seed=3, max_shift=1, noise=0.0, jitter=0.0)
        pairs = [np.flatnonzero(ys == k)[:2] for k in range(10)]
        norm = [(shifted[i].ravel() / shifted[i].max(), shifted[j].ravel() / shifted[j].max())
                for i, j in pairs]  # fmt: skip
        assert any(not np.allclose(p, q, atol=1e-3) for p, q in norm)


class TestAccuracy:
    def test_auto_recipe_learns_synthetic_images_fast(self):
        """Only (model, data, method, ε, δ): both private methods learn, DP-SGLD competes."""
        x, y = synthetic_images(1400, jitter=0.02, noise=0.05, seed=5)
        x = x.reshape(len(x), -1)
        acc = {}
        for method in ("dpsgd", "dpsgld"):
            torch.manual_seed(0)
            model, rep = train_classifier(
                nn.Linear(64, 10), (x[:1000], y[:1000]), method=method, epsilon=4.0,
                delta=1e-5, random_state=1, show_progress=False,
            )  # fmt: skip
            assert rep.epsilon <= 4.0
            acc[method] = float(np.mean(predict_proba(model, x[1000:]).argmax(1) == y[1000:]))
        assert acc["dpsgd"] > 0.5 and acc["dpsgld"] > 0.5  # chance: 0.1
        assert abs(acc["dpsgd"] - acc["dpsgld"]) < 0.1

    @pytest.mark.slow
    def test_digits_demo_models_reach_the_goal(self):
        from sklearn.datasets import load_digits

        d = load_digits()
        x, y = (d.images / 16.0).reshape(len(d.target), -1).astype(np.float32), d.target
        accs = []
        for seed in range(3):
            order = np.random.default_rng(seed).permutation(len(y))
            tr, te = order[:597], order[597:]
            torch.manual_seed(seed)
            model, _ = train_classifier(nn.Linear(64, 10), (x[tr], y[tr]), method="dpsgd",
                                        epsilon=3.0, delta=1e-5, random_state=seed,
                                        show_progress=False)  # fmt: skip
            accs.append(np.mean(predict_proba(model, x[te]).argmax(1) == y[te]))
        assert math.isfinite(float(np.median(accs))) and np.median(accs) > 0.8


class TestAugmentationMultiplicity:
    """De et al. 2022, Section 3: K augmentations averaged per example before clipping."""

    def test_translations_are_zero_padded_shifts(self):
        from dpuq.training.augment import random_translations

        x = torch.rand(5, 2, 6, 7)
        out = random_translations(x, 4, torch.Generator().manual_seed(0))
        assert out.shape == (20, 2, 6, 7)
        shifts = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        seen = set()
        for row in range(20):
            src = x[row // 4]
            for dy, dx in shifts:
                want = torch.zeros_like(src)
                want[:, max(dy, 0) : 6 + min(dy, 0), max(dx, 0) : 7 + min(dx, 0)] = src[
                    :, max(-dy, 0) : 6 + min(-dy, 0), max(-dx, 0) : 7 + min(-dx, 0)
                ]
                if torch.equal(out[row], want):
                    seen.add((dy, dx))
                    break
            else:
                raise AssertionError(f"row {row} is not a one-pixel shift of its example")
        assert len(seen) > 3  # the shifts vary

    def test_k1_reproduces_the_seeded_model_exactly(self):
        x, y = synthetic_images(120, seed=6)
        weights = []
        for k, xx in ((None, x.reshape(120, -1)), (1, x)):
            torch.manual_seed(0)
            net = nn.Linear(64, 10)
            kw = {}
            if k is not None:
                net, kw = nn.Sequential(nn.Flatten(), net), {"augmentation_multiplicity": k}
            model, _ = train_classifier(
                net, (xx, y), method="dpsgd", epsilon=2.0, delta=1e-5, epochs=3,
                iterate_averaging=0, random_state=4, show_progress=False, **kw,
            )  # fmt: skip
            weights.append([p.detach().clone() for p in model.parameters()])
        for a, b in zip(*weights, strict=True):
            assert torch.equal(a, b)

    def test_same_seed_same_model_and_unchanged_accounting(self):
        x, y = synthetic_images(120, seed=6)
        runs = []
        for k in (4, 4, 1):
            torch.manual_seed(0)
            model, rep = train_classifier(
                nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), (x, y), method="dpsgld",
                epsilon=2.0, delta=1e-5, epochs=3, augmentation_multiplicity=k,
                random_state=4, show_progress=False,
            )  # fmt: skip
            probs = predict_proba(model, x)
            runs.append((probs, rep))
        np.testing.assert_array_equal(runs[0][0], runs[1][0])
        assert not np.array_equal(runs[0][0], runs[2][0])  # the augmentations did something
        assert runs[0][1].details["augmentation multiplicity"] == 4
        assert runs[0][1].epsilon == runs[2][1].epsilon <= 2.0  # accounting untouched
        assert runs[0][1].details["steps"] == runs[2][1].details["steps"]

    @pytest.mark.filterwarnings("ignore:Full backward hook")
    @pytest.mark.parametrize("clipping", ["flat", "normalized"])
    def test_each_example_contributes_one_clipped_vector(self, clipping):
        """Sensitivity unchanged: per example ONE vector of norm <= C, whatever K."""
        from opacus import GradSampleModule

        from dpuq.training.augment import average_grad_samples, random_translations
        from dpuq.training.optimizer import DPSGDOptimizer

        torch.manual_seed(0)
        lin = nn.Sequential(nn.Flatten(), nn.Linear(36, 3))
        net = GradSampleModule(lin)
        opt = DPSGDOptimizer(
            torch.optim.SGD(net.parameters(), lr=1.0), noise_multiplier=0.0, max_grad_norm=0.5,
            expected_batch_size=1, clipping=clipping,
        )  # fmt: skip
        sums = []
        for scale in (1.0, 1e3):  # a neighbour's example with a huge gradient
            x = torch.rand(1, 6, 6) * scale
            y = torch.tensor([2])
            k = 8
            xa = random_translations(x, k, torch.Generator().manual_seed(1))
            opt.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(net(xa), y.repeat_interleave(k)).backward()
            average_grad_samples(lin, k)
            assert all(p.grad_sample.shape[0] == 1 for p in lin.parameters())
            opt.pre_step()
            sums.append(torch.cat([p.grad.reshape(-1) for p in lin.parameters()]))
            assert float(sums[-1].norm()) <= 0.5 * (1 + 1e-5)
        assert float((sums[0] - sums[1]).norm()) <= 1.0 * (1 + 1e-5)  # ||Δ|| <= 2C

    @pytest.mark.parametrize("bad", [0, -2, 1.5, "many", True])
    def test_bad_multiplicity_is_named(self, bad):
        x, y = synthetic_images(50, seed=2)
        with pytest.raises(ValueError, match="augmentation_multiplicity"):
            train_classifier(
                nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), (x, y), method="dpsgd",
                epsilon=1.0, delta=1e-5, augmentation_multiplicity=bad, show_progress=False,
            )  # fmt: skip

    def test_needs_image_shaped_inputs(self):
        from dpuq.training.augment import check_multiplicity

        x, y = synthetic_images(50, seed=2)
        with pytest.raises(ValueError, match="augmentation_multiplicity > 1 needs image"):
            train_classifier(
                nn.Linear(64, 10), (x.reshape(50, -1), y), method="dpsgd", epsilon=1.0,
                delta=1e-5, augmentation_multiplicity=4, show_progress=False,
            )  # fmt: skip
        assert check_multiplicity("auto", 2) == 1  # not images: off
