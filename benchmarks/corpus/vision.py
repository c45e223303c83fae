"""Image classifiers: transformers' CNN and vision-transformer architectures, small configs,
random weights, exported as users export a fine-tuned checkpoint (a wrapper returning the
logits, dynamic batch)."""

from __future__ import annotations

from typing import Any

from corpus import data
from corpus.spec import Built, model

BATCH = {0: "batch"}


def classifier(
    architecture: str,
    config: Any,
    size: int,
    outputs: tuple[str, ...] = ("logits",),
    norm: str = "imagenet",
    spatial: bool = False,
) -> Built:
    """``transformers.<architecture>`` from ``config``, on ``size`` px photographs."""
    import transformers

    from corpus.blocks import hf

    net = getattr(transformers, architecture)(config)
    input_axes = {0: "batch", 2: "height", 3: "width"} if spatial else BATCH
    return Built(
        model=hf(net, ["pixel_values"], list(outputs)),
        samples=[{"pixel_values": x} for x in data.photos(size, norm=norm)],
        outputs=list(outputs),
        dynamic={"pixel_values": input_axes, **{name: BATCH for name in outputs}},
    )


@model(
    "resnet",
    "classification",
    "transformers.ResNetForImageClassification",
    ["dynamic_batch"],
)
def resnet() -> Built:
    from transformers import ResNetConfig

    config = ResNetConfig(
        embedding_size=32,
        hidden_sizes=[32, 64, 128, 256],
        depths=[1, 1, 2, 1],
        layer_type="basic",
        num_labels=1000,
    )
    return classifier("ResNetForImageClassification", config, 224)


@model(
    "mobilenet_v2",
    "classification",
    "transformers.MobileNetV2ForImageClassification",
    ["dynamic_batch", "dynamic_spatial"],
)
def mobilenet_v2() -> Built:
    from transformers import MobileNetV2Config

    config = MobileNetV2Config(depth_multiplier=0.5, image_size=160, num_labels=1000)
    return classifier("MobileNetV2ForImageClassification", config, 160, spatial=True)


@model(
    "efficientnet",
    "classification",
    "transformers.EfficientNetForImageClassification",
    ["dynamic_batch"],
)
def efficientnet() -> Built:
    from transformers import EfficientNetConfig

    config = EfficientNetConfig(
        width_coefficient=0.5,
        depth_coefficient=0.5,
        image_size=128,
        hidden_dim=640,
        num_labels=100,
    )
    return classifier("EfficientNetForImageClassification", config, 128)


@model(
    "convnext",
    "classification",
    "transformers.ConvNextForImageClassification",
    ["dynamic_batch"],
    dynamo=True,
)
def convnext() -> Built:
    from transformers import ConvNextConfig

    config = ConvNextConfig(hidden_sizes=[24, 48, 96, 192], depths=[1, 1, 2, 1], num_labels=100)
    return classifier("ConvNextForImageClassification", config, 128)


@model(
    "regnet",
    "classification",
    "transformers.RegNetForImageClassification",
    ["dynamic_batch"],
)
def regnet() -> Built:
    from transformers import RegNetConfig

    config = RegNetConfig(
        embedding_size=16,
        hidden_sizes=[24, 56, 152, 368],
        depths=[1, 1, 2, 1],
        groups_width=8,
        num_labels=100,
    )
    return classifier("RegNetForImageClassification", config, 128)


@model(
    "vit",
    "classification",
    "transformers.ViTForImageClassification",
    ["dynamic_batch", "attention"],
)
def vit() -> Built:
    from transformers import ViTConfig

    config = ViTConfig(
        image_size=96,
        patch_size=16,
        hidden_size=96,
        num_hidden_layers=4,
        num_attention_heads=3,
        intermediate_size=384,
        num_labels=100,
    )
    return classifier("ViTForImageClassification", config, 96, norm="symmetric")


@model(
    "deit_distilled",
    "classification",
    "transformers.DeiTForImageClassificationWithTeacher",
    ["dynamic_batch", "attention", "multi_output"],
)
def deit_distilled() -> Built:
    from transformers import DeiTConfig

    config = DeiTConfig(
        image_size=96,
        patch_size=16,
        hidden_size=96,
        num_hidden_layers=3,
        num_attention_heads=3,
        intermediate_size=384,
        num_labels=100,
    )
    outputs = ("logits", "cls_logits", "distillation_logits")
    return classifier("DeiTForImageClassificationWithTeacher", config, 96, outputs)


@model(
    "mobilevit",
    "classification",
    "transformers.MobileViTForImageClassification",
    ["dynamic_batch", "attention"],
)
def mobilevit() -> Built:
    from transformers import MobileViTConfig

    config = MobileViTConfig(
        image_size=128,
        hidden_sizes=[48, 64, 80],
        neck_hidden_sizes=[16, 16, 24, 48, 64, 80, 320],
        num_labels=100,
    )
    return classifier("MobileViTForImageClassification", config, 128, norm="unit")


@model(
    "swin",
    "classification",
    "transformers.SwinForImageClassification",
    ["dynamic_batch", "attention"],
    dynamo=True,
)
def swin() -> Built:
    from transformers import SwinConfig

    config = SwinConfig(
        image_size=128,
        patch_size=4,
        embed_dim=32,
        depths=[1, 1, 2, 1],
        num_heads=[1, 2, 4, 8],
        window_size=4,
        num_labels=100,
    )
    return classifier("SwinForImageClassification", config, 128)
