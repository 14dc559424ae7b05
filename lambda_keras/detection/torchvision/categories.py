"""COCO's 80 object categories by their ids (1-90, with gaps), as COCO's annotation files and
torchvision's COCO-trained detectors number them."""

from __future__ import annotations

__all__ = ["COCO_CATEGORIES", "coco_class_categories"]

_NAMES = (
    "person bicycle car motorcycle airplane bus train truck boat traffic_light fire_hydrant - "
    "stop_sign parking_meter bench bird cat dog horse sheep cow elephant bear zebra giraffe - "
    "backpack umbrella - - handbag tie suitcase frisbee skis snowboard sports_ball kite "
    "baseball_bat baseball_glove skateboard surfboard tennis_racket bottle - wine_glass cup fork "
    "knife spoon bowl banana apple sandwich orange broccoli carrot hot_dog pizza donut cake chair "
    "couch potted_plant bed - dining_table - - toilet - tv laptop mouse remote keyboard "
    "cell_phone microwave oven toaster sink refrigerator - book clock vase scissors teddy_bear "
    "hair_drier toothbrush"
).split()

# {category id: name}; the ids COCO leaves unused ("-" above) are absent.
COCO_CATEGORIES: dict[int, str] = {
    i: name.replace("_", " ") for i, name in enumerate(_NAMES, start=1) if name != "-"
}
"""COCO category id -> name, for the 80 categories torchvision's COCO models detect (ids 1 to
90, with gaps)."""


def coco_class_categories() -> list[dict]:
    """The 90 classes of a torchvision COCO detector in the project's 0-based order: class ``c``
    is COCO category ``c + 1`` (torchvision's label ``c + 1``); ids COCO does not use are named
    ``"N/A"`` (torchvision's name for them)."""
    return [{"id": i, "name": COCO_CATEGORIES.get(i, "N/A")} for i in range(1, len(_NAMES) + 1)]
