"""Print the largest difference between lambda_keras.detection.ops and torchvision's ops.

Run as a script (PyTorch is imported before TensorFlow), on the Keras backend ``KERAS_BACKEND``
names. Lines: ``<op> max_diff=<float>`` or ``<op> equal=<bool>``.
"""

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from reference import clustered_boxes  # this script's folder: NumPy only
from torchvision.ops import boxes as tv_boxes

RNG = np.random.default_rng(0)
ADAPTIVE = {"sampling_ratio": 0, "max_sampling_ratio": 8}


def random_boxes(n, size):
    y = np.sort(RNG.uniform(-0.2 * size, 1.1 * size, (n, 2)), axis=1)
    x = np.sort(RNG.uniform(-0.2 * size, 1.1 * size, (n, 2)), axis=1)
    return np.stack([y[:, 0], x[:, 0], y[:, 1], x[:, 1]], 1).astype("float32")


def xyxy(boxes):
    return torch.from_numpy(np.ascontiguousarray(boxes[..., [1, 0, 3, 2]]))


def _non_finite_nms():
    """Clustered boxes, a tenth with a NaN or infinite coordinate, scores with NaN and +-inf
    (ties among them): torchvision's nms and its per-class batched_nms loop (the rule its trick
    breaks when a coordinate is not finite). Its own generator: the other cases' inputs stay."""
    rng = np.random.default_rng(1)
    boxes = clustered_boxes(rng, 120, centres=8, extent=80.0, spread=4.0, sides=(8.0, 24.0))
    rows = rng.choice(120, 12, replace=False)
    boxes[rows, rng.integers(0, 4, 12)] = rng.choice([np.nan, np.inf, -np.inf], 12)
    scores = rng.permutation(120).astype("float32") / 120
    scores[rng.choice(120, 9, replace=False)] = [np.nan] * 3 + [np.inf] * 3 + [-np.inf] * 3
    classes = rng.integers(0, 3, 120)
    keep = torchvision.ops.nms(xyxy(boxes), torch.from_numpy(scores), 0.5).numpy()
    keep_cls = tv_boxes._batched_nms_vanilla(
        xyxy(boxes), torch.from_numpy(scores), torch.from_numpy(classes), 0.5
    ).numpy()
    return boxes, scores, classes, keep, keep_cls


def torch_results():
    out = {}
    features = RNG.normal(size=(2, 4, 23, 31)).astype("float32")  # NCHW
    boxes = np.stack([random_boxes(16, 124), random_boxes(16, 124)])
    rois = torch.cat(
        [torch.cat([torch.full((16, 1), float(b)), xyxy(boxes[b])], 1) for b in (0, 1)]
    )
    for aligned in (True, False):
        pooled = torchvision.ops.roi_align(
            torch.from_numpy(features), rois, (7, 5), 0.25, sampling_ratio=2, aligned=aligned
        )
        out[f"roi_align_aligned={aligned}"] = (features, boxes, pooled.numpy())
        adaptive = torchvision.ops.roi_align(
            torch.from_numpy(features), rois, (7, 5), 0.25, sampling_ratio=0, aligned=aligned
        )
        out[f"roi_align_adaptive_aligned={aligned}"] = adaptive.numpy()
    a, b = random_boxes(30, 50), random_boxes(20, 50)
    out["box_iou"] = (a, b, tv_boxes.box_iou(xyxy(a), xyxy(b)).numpy())
    scores = RNG.permutation(200).astype("float32") / 200
    many = random_boxes(200, 60)
    keep = torchvision.ops.nms(xyxy(many), torch.from_numpy(scores), 0.5).numpy()
    classes = RNG.integers(0, 4, 200)
    keep_cls = tv_boxes.batched_nms(
        xyxy(many), torch.from_numpy(scores), torch.from_numpy(classes), 0.5
    ).numpy()
    out["nms"] = (many, scores, classes, keep, keep_cls)
    # With a score threshold: torchvision's nms on the boxes above it (clustered boxes).
    clustered = clustered_boxes(RNG, 150)
    clustered_scores = RNG.permutation(150).astype("float32") / 150
    clustered_classes = RNG.integers(0, 3, 150)
    above = np.flatnonzero(clustered_scores > 0.3)
    keep = torchvision.ops.nms(
        xyxy(clustered[above]), torch.from_numpy(clustered_scores[above]), 0.5
    ).numpy()
    keep_cls = tv_boxes.batched_nms(
        xyxy(clustered[above]),
        torch.from_numpy(clustered_scores[above]),
        torch.from_numpy(clustered_classes[above]),
        0.5,
    ).numpy()
    out["nms_threshold"] = (
        clustered,
        clustered_scores,
        clustered_classes,
        above[keep],
        above[keep_cls],
    )
    out["nms_non_finite"] = _non_finite_nms()
    masks = RNG.uniform(size=(5, 28, 28)).astype("float32")
    mboxes = random_boxes(5, 40)
    mboxes[:, 2:] += 2.0
    out["paste_masks"] = (masks, mboxes, _grid_sample_paste(masks, mboxes, 40, 48))
    anchors = random_boxes(50, 100) + np.array([0, 0, 1, 1], "float32")
    targets = random_boxes(50, 100) + np.array([0, 0, 1, 1], "float32")
    coder = torchvision.models.detection._utils.BoxCoder((10.0, 10.0, 5.0, 5.0))
    deltas = coder.encode_single(xyxy(targets), xyxy(anchors)).numpy()[:, [1, 0, 3, 2]]
    out["encode_boxes"] = (targets, anchors, deltas)
    out["paste_masks_torchvision"] = _torchvision_paste(masks, mboxes, 40, 48)
    out["torchvision_anchors"] = _torchvision_anchors((800, 1088))
    # ROIAlign of a 20 x 24 map (stride 4) that a batch pads to 32 x 40 with other values.
    small = RNG.normal(size=(1, 4, 20, 24)).astype("float32")
    fboxes = random_boxes(16, 80).clip(0, 80)
    pooled = torchvision.ops.roi_align(
        torch.from_numpy(small),
        torch.cat([torch.zeros(16, 1), xyxy(fboxes)], 1),
        7,
        0.25,
        sampling_ratio=2,
    )
    out["roi_align_valid_sizes"] = (small, fboxes, pooled.numpy())
    return out


def _torchvision_paste(masks, boxes, height, width):
    from torchvision.models.detection.roi_heads import paste_masks_in_image

    pasted = paste_masks_in_image(torch.from_numpy(masks)[:, None], xyxy(boxes), (height, width))
    return pasted[:, 0].numpy()


def _torchvision_anchors(padded):
    """torchvision's anchors (y1, x1, y2, x2) for one image padded to ``padded``."""
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.image_list import ImageList

    generator = AnchorGenerator(((32,), (64,), (128,), (256,), (512,)), ((0.5, 1.0, 2.0),) * 5)
    sides = [(-(-padded[0] // s), -(-padded[1] // s)) for s in (4, 8, 16, 32, 64)]
    maps = [torch.zeros(1, 1, *side) for side in sides]
    images = ImageList(torch.zeros(1, 3, *padded), [padded])
    anchors = generator(images, maps)[0].numpy()[:, [1, 0, 3, 2]]
    counts = [3 * h * w for h, w in sides]
    return padded, np.split(anchors, np.cumsum(counts)[:-1])


def _grid_sample_paste(masks, boxes, height, width):
    """Detectron2's paste: grid_sample(align_corners=False) of each mask over its box."""
    ys = torch.arange(height, dtype=torch.float32) + 0.5
    xs = torch.arange(width, dtype=torch.float32) + 0.5
    b = torch.from_numpy(boxes)
    gy = (ys[None] - b[:, 0:1]) / (b[:, 2:3] - b[:, 0:1]) * 2 - 1
    gx = (xs[None] - b[:, 1:2]) / (b[:, 3:4] - b[:, 1:2]) * 2 - 1
    grid = torch.stack(
        [gx[:, None, :].expand(-1, height, -1), gy[:, :, None].expand(-1, -1, width)], -1
    )
    pasted = F.grid_sample(torch.from_numpy(masks)[:, None], grid, align_corners=False)
    return pasted[:, 0].numpy()


def arr(x):
    """One of lambda_keras' results, on any backend, as a NumPy array."""
    import keras

    return np.asarray(keras.ops.convert_to_numpy(x))


def main():
    reference = torch_results()
    from lambda_keras.detection import ops

    # Fixed: 2 samples per bin; adaptive: up to ceil(40 cells / 5) = 8 on these boxes.
    for aligned in (True, False):
        for name, sampling in (("", {"sampling_ratio": 2}), ("adaptive_", ADAPTIVE)):
            features, boxes, _ = reference[f"roi_align_aligned={aligned}"]
            expected = reference[f"roi_align_{name}aligned={aligned}"]
            if isinstance(expected, tuple):
                expected = expected[2]
            pooled = ops.roi_align(
                features.transpose(0, 2, 3, 1), boxes, (7, 5), 0.25, aligned=aligned, **sampling
            )
            expected = expected.reshape(2, 16, 4, 7, 5).transpose(0, 1, 3, 4, 2)
            diff = np.abs(arr(pooled) - expected).max()
            print(f"roi_align_{name}aligned={aligned} max_diff={diff:.3g}")
    a, b, expected = reference["box_iou"]
    print(f"box_iou max_diff={np.abs(arr(ops.box_iou(a, b)) - expected).max():.3g}")
    many, scores, classes, keep, keep_cls = reference["nms"]
    indices, valid = ops.nms(many, scores, 200, 0.5)
    print(f"nms equal={arr(indices)[arr(valid)].tolist() == keep.tolist()}")
    indices, valid = ops.batched_nms(many, scores, classes, 200, 0.5)
    print(f"batched_nms equal={arr(indices)[arr(valid)].tolist() == keep_cls.tolist()}")
    many, scores, classes, keep, keep_cls = reference["nms_threshold"]
    indices, valid = ops.nms(many, scores, 150, 0.5, score_threshold=0.3)
    print(f"nms_threshold equal={arr(indices)[arr(valid)].tolist() == keep.tolist()}")
    indices, valid = ops.batched_nms(many, scores, classes, 150, 0.5, score_threshold=0.3)
    same = arr(indices)[arr(valid)].tolist() == keep_cls.tolist()
    print(f"batched_nms_threshold equal={same}")
    many, scores, classes, keep, keep_cls = reference["nms_non_finite"]
    indices, valid = ops.nms(many, scores, 120, 0.5)
    print(f"nms_non_finite equal={arr(indices)[arr(valid)].tolist() == keep.tolist()}")
    indices, valid = ops.batched_nms(many, scores, classes, 120, 0.5)

    # torchvision merges its classes with an unstable sort: equal scores (the NaNs, the infs)
    # come in any order there, by index in the contract.
    def rank(i):
        return (0, 0.0, i) if np.isnan(scores[i]) else (1, -scores[i], i)

    contract = sorted(keep_cls.tolist(), key=rank)
    same = arr(indices)[arr(valid)].tolist() == contract
    print(f"batched_nms_non_finite equal={same}")
    masks, mboxes, expected = reference["paste_masks"]
    got = arr(ops.paste_masks(masks, mboxes, (40, 48), threshold=None))
    print(f"paste_masks max_diff={np.abs(got - expected).max():.3g}")
    targets, anchors, expected = reference["encode_boxes"]
    got = arr(ops.encode_boxes(targets, anchors, (10.0, 10.0, 5.0, 5.0)))
    print(f"encode_boxes max_diff={np.abs(got - expected).max():.3g}")
    got = arr(ops.paste_masks_torchvision(masks, mboxes, (40, 48)))
    expected = reference["paste_masks_torchvision"]
    print(f"paste_masks_torchvision max_diff={np.abs(got - expected).max():.3g}")
    padded, expected = reference["torchvision_anchors"]
    canvas = (-(-padded[0] // 64) * 64 + 64, -(-padded[1] // 64) * 64)
    anchors, valid = ops.torchvision_anchors(canvas, [padded])
    diffs = [
        np.abs(arr(anchors[f"P{level}"])[0][arr(valid[f"P{level}"])[0]] - e).max()
        for level, e in zip(range(2, 7), expected, strict=True)
    ]
    print(f"torchvision_anchors max_diff={max(diffs):.3g}")
    small, fboxes, expected = reference["roi_align_valid_sizes"]
    canvas = RNG.normal(size=(1, 32, 40, 4)).astype("float32")
    canvas[:, :20, :24] = small.transpose(0, 2, 3, 1)
    pyramid = {"P2": canvas}
    got = arr(
        ops.multilevel_roi_align(pyramid, fboxes[None], 7, aligned=False, valid_sizes=[[80, 96]])
    )[0]
    expected = expected.transpose(0, 2, 3, 1)
    print(f"roi_align_valid_sizes max_diff={np.abs(got - expected).max():.3g}")


if __name__ == "__main__":
    main()
