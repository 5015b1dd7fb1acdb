"""DP-SGD / DP-SGLD training on Opacus: noise scale, stopping at the budget, bad input."""

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import GradSampleModule  # noqa: E402
from torch import nn  # noqa: E402

from dpuq.data import load_digits_images  # noqa: E402
from dpuq.privacy import accounting  # noqa: E402
from dpuq.training import (  # noqa: E402
    DPSGLDOptimizer,
    PolynomialDecay,
    PosteriorAverage,
    predict_proba,
    small_cnn,
    train_classifier,
)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: the tests are small, and the machine is shared (no oversubscription)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def digits():
    d = load_digits_images()
    rng = np.random.default_rng(0)
    idx = rng.permutation(d.labels.size)[:600]
    return d.images[idx, None], d.labels[idx]


def _zero_grad_step(opt, net, batch):
    opt.zero_grad()
    out = net(torch.ones(batch, net._module.in_features))
    with warnings.catch_warnings():  # Opacus' hook on an input that needs no gradient
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        (out * 0.0).sum().backward()  # every per-example gradient is exactly zero
    opt.step()


class TestNoiseScale:
    """The parameter noise of a step is N(0, 2 η_t T / N) per coordinate (SPEC B)."""

    def _setup(self, lr, temperature, n_samples, batch, clip, pre=0.0, seed=0):
        torch.manual_seed(seed)
        model = nn.Linear(200, 100)  # 20,100 parameters
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        net = GradSampleModule(model)
        opt = DPSGLDOptimizer(
            torch.optim.SGD(net.parameters(), lr=lr),
            max_grad_norm=clip,
            expected_batch_size=batch,
            n_samples=n_samples,
            temperature=temperature,
            pre_noise_scale=pre,
            generator=torch.Generator().manual_seed(seed),
        )
        return model, net, opt

    @staticmethod
    def _flat(model):
        return torch.cat([p.detach().ravel() for p in model.parameters()]).double().numpy()

    @pytest.mark.parametrize("lr", [0.05, 0.5])
    def test_langevin_noise_std(self, lr):
        temperature, n, b, c = 0.7, 5000, 50, 1.5
        model, net, opt = self._setup(lr, temperature, n, b, c)
        _zero_grad_step(opt, net, b)
        delta = self._flat(model)
        want = math.sqrt(2 * lr * temperature / n)
        # the sample std of 20,100 normals has relative SE 1/sqrt(2 * 20100) = 0.5%: 4 SE
        assert delta.std() == pytest.approx(want, rel=0.02)
        assert abs(delta.mean()) < 4 * want / math.sqrt(delta.size)
        sigma = (b / c) * math.sqrt(2 * temperature / (lr * n))
        assert opt.noise_history == [pytest.approx(sigma)]

    def test_sigma_follows_the_learning_rate_each_step(self):
        model, net, opt = self._setup(0.1, 0.5, 4000, 40, 1.0)
        before = self._flat(model)
        _zero_grad_step(opt, net, 40)
        mid = self._flat(model)
        for group in opt.param_groups:
            group["lr"] = 0.025  # 4x smaller: σ_t doubles, parameter noise halves
        _zero_grad_step(opt, net, 40)
        after = self._flat(model)
        s1, s2 = (mid - before).std(), (after - mid).std()
        assert s1 == pytest.approx(math.sqrt(2 * 0.1 * 0.5 / 4000), rel=0.02)
        assert s2 == pytest.approx(math.sqrt(2 * 0.025 * 0.5 / 4000), rel=0.02)
        assert opt.noise_history[1] == pytest.approx(2 * opt.noise_history[0])

    def test_pre_noise_adds_before_clipping(self):
        # zero gradients + pre-noise σ_pre and a clip norm far above ||z_i||: nothing is
        # clipped, so the summed gradient noise has variance b σ_pre² + σ_t² C² per coordinate
        lr, temperature, n, b, c, pre = 0.1, 0.2, 3000, 30, 100.0, 0.05
        model, net, opt = self._setup(lr, temperature, n, b, c, pre=pre)
        _zero_grad_step(opt, net, b)
        sigma = opt.noise_history[0]
        want = lr / b * math.sqrt(b * pre**2 + (sigma * c) ** 2)
        assert self._flat(model).std() == pytest.approx(want, rel=0.02)

    def test_pre_noise_is_clipped(self):
        # tiny clip norm: each pre-noised gradient is cut to norm C, so its contribution
        # to the sum has norm <= b C; the privacy noise is unchanged
        lr, temperature, n, b, c, pre = 0.1, 0.2, 3000, 30, 1e-3, 1.0
        model, net, opt = self._setup(lr, temperature, n, b, c, pre=pre)
        _zero_grad_step(opt, net, b)
        sigma = opt.noise_history[0]
        update_sum = self._flat(model) * b / lr  # = -(sum of clipped + N(0, σ² C²))
        noise_only = sigma * c * math.sqrt(update_sum.size)
        assert np.linalg.norm(update_sum) <= noise_only * 1.05 + b * c

    def test_rejects_momentum_and_other_optimizers(self):
        net = GradSampleModule(nn.Linear(2, 2))
        kw = dict(max_grad_norm=1.0, expected_batch_size=4, n_samples=100, temperature=1.0)
        with pytest.raises(ValueError, match="momentum"):
            DPSGLDOptimizer(torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9), **kw)
        with pytest.raises(TypeError, match="SGD"):
            DPSGLDOptimizer(torch.optim.Adam(net.parameters(), lr=0.1), **kw)


class TestEndToEnd:
    def test_dpsgld_on_digits_stops_at_the_budget(self, digits):
        x, y = digits
        torch.manual_seed(0)
        # decaying, piecewise constant (4 distinct σ_t keep the PLD accounting fast)
        sched = lambda t: PolynomialDecay(0.5, gamma=0.55, scale=20)(np.asarray(t) // 25 * 25)  # noqa: E731
        kw = dict(
            method="dpsgld",
            epsilon=1.0,
            delta=1e-5,
            epochs=10,
            batch_size=60,
            learning_rate=sched,
            temperature=0.3,
            pre_noise_scale=1e-3,
            prior_std=1.0,
            random_state=0,
            show_progress=False,
        )
        model, report = train_classifier(small_cnn(10, image_size=8), (x, y), **kw)
        d = report.details
        assert d["planned steps"] == 100
        assert 0 < d["steps"] < d["planned steps"]
        assert d["stopped because"].startswith("budget")
        assert report.epsilon <= 1.0
        # the next step would have exceeded the budget, by the same accountant
        eta = sched(np.arange(d["steps"] + 1))
        sig = accounting.dpsgld_noise_multiplier(
            batch_size=60, max_grad_norm=1.0, temperature=0.3, learning_rate=eta, n_samples=600
        )
        assert accounting.pld_epsilon(0.1, sig, 1e-5) > 1.0
        assert report.relation == "replace-one" and report.seeded
        probs = predict_proba(model, x[:50])
        np.testing.assert_allclose(probs.sum(1), 1.0)
        assert not model.training
        assert not any(hasattr(p, "grad_sample") for p in model.parameters())

    def test_dpsgd_calibrated_noise_spends_the_budget(self, digits):
        x, y = digits
        _, report = train_classifier(
            small_cnn(10, image_size=8),
            (x, y),
            method="dpsgd",
            epsilon=2.0,
            delta=1e-5,
            epochs=3,
            batch_size=60,
            learning_rate=0.1,  # own rate: classic settings (flat clipping, last iterate)
            random_state=1,
            show_progress=False,
        )
        assert report.details["steps"] == report.details["planned steps"] == 30
        assert 1.9 < report.epsilon <= 2.0
        assert report.relation == "replace-one"
        assert report.seeded
        text = str(report)
        assert "floating-point" in text and "Opacus" in text
        assert "Released: the last iterate" in text

    def test_relation_named_by_the_user(self, digits):
        x, y = digits
        kw = dict(method="dpsgd", epsilon=2.0, delta=1e-5, epochs=3, batch_size=60,
                  show_progress=False)  # fmt: skip
        _, ro = train_classifier(small_cnn(10, image_size=8), (x, y), random_state=1, **kw)
        _, ar = train_classifier(
            small_cnn(10, image_size=8), (x, y), relation="add/remove-one", **kw
        )
        assert ar.relation == "add/remove-one" and not ar.seeded
        assert 1.9 < ar.epsilon <= 2.0
        # the same ε under replace-one needs more noise (one swap = two add/remove steps at most)
        s_ro, s_ar = ro.details["noise multiplier min"], ar.details["noise multiplier min"]
        assert s_ro > s_ar
        eps_ar_as_ro = accounting.pld_epsilon(0.1, [s_ar] * 30, 1e-5)
        assert 2.0 < eps_ar_as_ro < 4.0

    def test_sgd_and_iterate_average(self, digits):
        x, y = digits
        torch.manual_seed(0)
        model, report = train_classifier(
            small_cnn(10, image_size=8),
            (x, y),
            method="sgd",
            epochs=5,
            batch_size=32,
            learning_rate=0.5,
            iterate_averaging=4,
            random_state=0,
            show_progress=False,
        )
        assert report.details["averaged iterates"] == 4
        assert math.isinf(report.epsilon)
        assert isinstance(model, PosteriorAverage) and len(model.members) == 4
        probs = predict_proba(model, x)
        np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-9)
        assert np.mean(probs.argmax(1) == y) > 0.8  # trained, on its own training data
        member_probs = np.mean([predict_proba(m, x) for m in model.members], axis=0)
        np.testing.assert_allclose(probs, member_probs, atol=1e-6)

    def test_dpsgd_weight_averaging_and_deprecated_alias(self, digits):
        x, y = digits
        kw = dict(method="dpsgd", epsilon=2.0, delta=1e-5, epochs=2, batch_size=60,
                  learning_rate=0.1, random_state=0, show_progress=False)  # fmt: skip
        torch.manual_seed(0)
        model, report = train_classifier(
            small_cnn(10, image_size=8), (x, y), iterate_averaging=5, averaging="weights", **kw
        )
        assert isinstance(model, nn.Sequential)  # one network holding the mean weights
        assert report.details["averaging"] == "weights"
        assert "post-processing" in str(report) and "weights of 5 late iterates" in str(report)
        torch.manual_seed(0)
        with pytest.warns(DeprecationWarning, match="iterate_averaging"):
            avg, rep = train_classifier(
                small_cnn(10, image_size=8), (x, y), posterior_samples=5, **kw
            )
        assert isinstance(avg, PosteriorAverage) and len(avg.members) == 5
        # the mean of the members' weights is the weight-averaged model (same seed, same run)
        for name, p in model.named_parameters():
            members = torch.stack([dict(m.named_parameters())[name] for m in avg.members])
            torch.testing.assert_close(p, members.mean(0))
        assert rep.epsilon == report.epsilon

    def test_reproducible_with_a_seed(self, digits):
        x, y = digits
        outs = []
        for _ in range(2):
            torch.manual_seed(3)
            model, _ = train_classifier(
                small_cnn(10, image_size=8),
                (x, y),
                method="dpsgd",
                noise_multiplier=1.0,
                epsilon=5.0,
                delta=1e-5,
                epochs=1,
                batch_size=60,
                random_state=7,
                show_progress=False,
            )
            outs.append(predict_proba(model, x[:20]))
        np.testing.assert_array_equal(outs[0], outs[1])


class TestBadInput:
    def _train(self, digits, model=None, **kw):
        x, y = kw.pop("data", digits)
        args = dict(
            method="dpsgld",
            epsilon=1.0,
            delta=1e-5,
            epochs=1,
            batch_size=60,
            temperature=0.1,
            show_progress=False,
        )
        args.update(kw)
        return train_classifier(model or small_cnn(10, image_size=8), (x, y), **args)

    @pytest.mark.parametrize("eps", [0.0, -1.0, float("nan")])
    def test_nonpositive_epsilon(self, digits, eps):
        with pytest.raises(ValueError, match="epsilon"):
            self._train(digits, epsilon=eps)

    @pytest.mark.parametrize("delta", [0.0, 1.0, 2.0])
    def test_delta_outside_unit_interval(self, digits, delta):
        with pytest.raises(ValueError, match="delta"):
            self._train(digits, delta=delta)

    def test_model_opacus_cannot_make_private_names_the_layer(self, digits):
        model = nn.Sequential(
            nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 36, 10)
        )
        with pytest.raises(ValueError, match=r"layer '1' \(BatchNorm2d\)"):
            self._train(digits, model=model)

    @pytest.mark.parametrize("temperature", [0.0, -0.5])
    def test_temperature_giving_nonpositive_sigma(self, digits, temperature):
        with pytest.raises(ValueError, match="temperature"):
            self._train(digits, temperature=temperature)

    def test_learning_rate_schedule_giving_nonpositive_sigma(self, digits):
        with pytest.raises(ValueError, match="step 5"):
            self._train(digits, learning_rate=lambda t: 0.1 - 0.02 * np.asarray(t))

    def test_labels_out_of_range(self, digits):
        x, y = digits
        bad = y.copy()
        bad[3] = 10
        with pytest.raises(ValueError, match=r"outside the model's classes 0\.\.9"):
            self._train(digits, data=(x, bad))
        bad[3] = -1
        with pytest.raises(ValueError, match="label"):
            self._train(digits, data=(x, bad))

    def test_method_and_parameter_mismatch(self, digits):
        with pytest.raises(ValueError, match="method"):
            self._train(digits, method="adam")
        with pytest.raises(ValueError, match="not private"):
            self._train(digits, method="sgd", temperature=None)
        with pytest.raises(ValueError, match="temperature"):
            self._train(digits, method="dpsgd", temperature="auto")
        with pytest.raises(ValueError, match="momentum"):
            self._train(digits, momentum=0.9)
