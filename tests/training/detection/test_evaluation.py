"""COCOeval on detections mapped back to the original images; nothing detected scores 0."""

import numpy as np
import pytest

from lambda_keras.training.detection import evaluation
from lambda_keras.training.detection.datasets import coco, shapes


class _Oracle:
    """Detects exactly the ground truth of the images (read back from the JSON); evaluation
    calls ``predict_on_batch``, as on a Keras model."""

    def __init__(self, source, image_size):
        self.source, self.image_size = source, image_size
        self.calls = 0

    def predict_on_batch(self, images):
        batch = images.shape[0]
        ids = self.source.image_ids[self.calls * batch : (self.calls + 1) * batch]
        self.calls += 1
        out = {
            "boxes": np.zeros((batch, 10, 4), "float32"),
            "scores": np.zeros((batch, 10), "float32"),
            "classes": -np.ones((batch, 10), "int32"),
            "masks": np.zeros((batch, 10, 28, 28), "float32"),
            "valid": np.zeros((batch, 10), bool),
        }
        label_of = {c: i for i, c in enumerate(self.source.category_ids)}
        for i, image_id in enumerate(ids):
            info = self.source.coco.imgs[image_id]
            scale = self.image_size / max(info["height"], info["width"])
            for j, ann in enumerate(self.source.coco.imgToAnns[image_id][:10]):
                x, y, w, h = ann["bbox"]
                out["boxes"][i, j] = np.array([y, x, y + h, x + w]) * scale
                out["scores"][i, j] = 0.9
                out["classes"][i, j] = label_of[ann["category_id"]]
                mask = self.source.coco.annToMask(ann)[
                    int(y) : int(np.ceil(y + h)), int(x) : int(np.ceil(x + w))
                ]
                rows = np.linspace(0, mask.shape[0] - 1, 28).round().astype(int)
                cols = np.linspace(0, mask.shape[1] - 1, 28).round().astype(int)
                out["masks"][i, j] = mask[rows][:, cols]
                out["valid"][i, j] = True
        return out


@pytest.fixture(scope="module")
def val_source(tmp_path_factory):
    paths = shapes.write_shapes_dataset(tmp_path_factory.mktemp("shapes"), 1, 8, image_size=64)
    return coco.load_coco(paths["val_annotations"], paths["val_images"])


def test_ground_truth_as_detections_scores_near_one(val_source, tmp_path):
    # Evaluated at twice the image size: boxes are scaled back by the evaluation.
    scores = evaluation.evaluate(
        _Oracle(val_source, 128),
        val_source,
        image_size=128,
        batch_size=4,
        results_file=tmp_path / "results.json",
    )
    assert scores["bbox"]["AP"] > 0.95, scores
    assert scores["segm"]["AP50"] > 0.9, scores
    assert (tmp_path / "results.json").stat().st_size > 0


def test_a_model_that_detects_nothing_scores_zero(val_source, capsys):
    class Nothing(_Oracle):
        def predict_on_batch(self, images):
            out = super().predict_on_batch(images)
            out["valid"][:] = False
            return out

    scores = evaluation.evaluate(Nothing(val_source, 64), val_source, image_size=64, batch_size=4)
    assert scores["bbox"] == dict.fromkeys(evaluation.METRICS, 0.0)
    assert "no detections" in capsys.readouterr().out
