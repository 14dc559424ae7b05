"""The sentence under each rendered table says what its numbers say."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import results  # noqa: E402
import summaries  # noqa: E402

sys.path.remove(str(BENCHMARKS))


def make(columns, rows, labels=1, plot="bars"):
    table = results.Table("t", "T", columns, labels=labels, plot=plot)
    for row in rows:
        table.add(*row)
    return table


def test_two_series_give_their_ratio_and_where_their_order_turns():
    memory = make(
        ["map side", "lambda", "attention"],
        [(8, 20.0, 10.0), (32, 100.0, 80.0), (48, 250.0, 360.0), (64, 300.0, 1100.0)],
        plot="lines",
    )
    said = summaries.series("lambda", "attention", "memory")(memory)
    assert said == (
        "lambda needs 0.27-2.00x the memory of attention over map sides 8 to 64, "
        "and less from map side 48 on."
    )
    memory.rows[-1][1] = 2000.0  # no longer below at the end
    assert summaries.series("lambda", "attention", "memory")(memory).endswith(
        "and more at map side 64."
    )


def test_columns_against_a_reference_column_row_by_row():
    speed = make(["photo", "ref", "a", "b"], [("x", 4.0, 3.0, None), ("y", 2.0, 1.0, 2.2)])
    assert summaries.against("ref", "time")(speed) == (
        "Against ref's time (per row): a 0.50-0.75x, b 1.10x."
    )
    assert summaries.pairs("time", ("a", "ref"))(speed) == (
        "Over its 2 rows, a takes 0.50-0.75x the time of ref."
    )


def test_columns_against_their_targets_say_on_how_many_rows_each_is_met():
    speed = make(
        ["photo", "ref", "a", "b", "c"],
        [("x", 4.0, 3.0, 4.4, 2.0), ("y", 2.0, 1.0, 2.2, 3.0), ("z", 2.0, 1.8, None, 2.0)],
    )
    said = summaries.against_targets("ref", "time", {"a": 0.8, "b": 1.0, "c": 1.0})(speed)
    assert said == (
        "Against ref's time (per row): a 0.50-0.90x, b 1.10x, c 0.50-1.50x. Targets: "
        "a at most 0.80x: met on 2 of 3 rows; b at most 1.00x: not met; "
        "c at most 1.00x: met on 2 of 3 rows."
    )
    speed.rows[2][2] = 1.0  # a: 0.5x on every row now
    assert summaries.against_targets("ref", "time", {"a": 0.8})(speed).endswith(
        "Targets: a at most 0.80x: met on all 3 rows."
    )
    speed.rows[0][2] = 3.22  # 0.805x, shown as 0.81x: not met, as the sentence shows it
    speed.rows[1][2] = 1.602  # 0.801x, shown as 0.80x: met
    assert summaries.against_targets("ref", "time", {"a": 0.8})(speed).endswith(
        "a at most 0.80x: met on 2 of 3 rows."
    )
    assert summaries.against_targets("ref", "time", {"d": 1.0})(speed) == (
        summaries.against("ref", "time")(speed)
    )  # no column with a target: no target sentence


def test_rows_against_the_reference_row_with_the_same_other_labels():
    train = make(
        ["backend", "model", "XLA", "img/s"],
        [
            ("tf", "m1", "off", 10.0),
            ("tf", "m2", "off", 20.0),
            ("jax", "m1", "on", 4.0),
            ("jax", "m2", "on", 10.0),
        ],
        labels=3,
    )
    said = summaries.rows_against(0, "tf", ["img/s"], ignore=[2])(train)
    assert said == "Against backend tf (the same other settings): backend jax: img/s 0.40-0.50x."
    # Rows without their reference (a GPU image without TensorFlow) are compared with none.
    train.rows = [r for r in train.rows if r[:2] != ["tf", "m2"]] + [["timm", "m3", "off", 5.0]]
    said = summaries.rows_against(0, "tf", ["img/s"], ignore=[2])(train)
    assert said == "Against backend tf (the same other settings): backend jax: img/s 0.40x."
    train.rows = [r for r in train.rows if r[0] != "tf"]
    said = summaries.rows_against(0, "tf", ["img/s"], ignore=[2])(train)
    assert said == "No row has a backend tf row to be compared with."


def test_the_fastest_implementation_is_counted_per_shape_and_backend():
    layers = make(
        ["stage", "scope", "implementation", "tf", "jax"],
        [
            ("c4", "7x7", "einsum", 2.0, 1.0),
            ("c4", "7x7", "conv", 1.0, 9.0),
            ("c4", "7x7", "auto", "1.0 (conv)", "1.0 (einsum)"),
            ("c5", "7x7", "einsum", 3.0, 1.0),
            ("c5", "7x7", "conv", 4.0, 9.0),
        ],
        labels=3,
    )
    assert summaries.fastest_implementation(layers) == (
        "The fastest implementation, shapes won of 2: tf conv 1, einsum 1; jax einsum 2."
    )
    assert summaries.ratio_by_label(2, "jax", "tf", "time")(layers) == (
        "jax takes this multiple of tf's time: einsum 0.3-0.5x, conv 2.2-9.0x."
    )


def test_the_equality_sentence_says_whether_every_detection_matched():
    columns = ["model", "route", "tv", "ours", "matched", "box", "score", "mask"]
    table = make(
        columns,
        [("m", "detect, jax", 497, 497, 497, 0.0034, 6.1e-5, 0.0007)],
        labels=2,
    )
    said = summaries.equality(table)
    assert said.startswith("Every route matched all torchvision's 497 detections")
    assert "0.0034 px" in said and "0.000061" in said
    table.add("m", "LiteRT", 497, 496, 496, 0.1, 1e-3, 0.2)
    assert summaries.equality(table).startswith("Not every route matched")


def test_every_rendered_table_of_the_docs_has_a_sentence():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import render
    finally:
        sys.path.remove(str(BENCHMARKS))
    named = [
        f"{name}/{table}"
        for page in render.pages()
        for name, table, _ in render.named_tables(page.read_text())
    ]
    assert named and [n for n in named if n not in summaries.SUMMARIES] == []


def test_the_training_sentence_compares_only_the_row_with_torchvision_s_own_step():
    columns = ["model", "size", "torchvision", "tensorflow", "jax", "torch"]
    table = make(
        columns,
        [
            ("maskrcnn_resnet50_fpn, converted", 512, 4.0, 3.0, 8.0, 5.0),
            ("MaskRCNN, lambda_resnet50", 512, None, 5.0, 21.0, 7.0),
        ],
        labels=2,
    )
    said = summaries.detection_training(table)
    assert (
        "maskrcnn_resnet50_fpn, converted at 512 px: tensorflow 0.75x, jax 2.00x, torch 1.25x"
        in said
    )
    assert "lambda_resnet50" not in said
    table.rows[0][2] = None
    assert summaries.detection_training(table).startswith("No torchvision column")


def test_the_compiled_sentence_names_the_flags_that_changed_nothing():
    columns = ["XLA_FLAGS", "YNNPACK fusions", "oneDNN calls", "convolutions"]
    table = make(
        columns,
        [
            ("jax: (none)", 53, 0, 53),
            ("jax ynn: --x", 53, 0, 53),
            ("jax use_onednn: --y", 0, 9, 53),
        ],
        plot="none",
    )
    said = summaries.compiled_markers(table)
    assert said.startswith("jax compiles 53 YNNPACK fusions, 0 oneDNN calls, 53 convolutions")
    assert "jax ynn: the same programs" in said and "jax use_onednn: other counts" in said
    table.add("jax broken: --z", None, None, None)
    assert summaries.compiled_markers(table).endswith("jax broken: nothing compiled (note below).")


def test_auto_over_the_sweep_names_each_backends_worst_cell_and_the_target():
    summary = make(
        ["backend", "batch", "ratio", "cells", "worst", "mean", "best ratio (worst)"],
        [("torch", 8, "2", 30, 1.05, 1.01, "2 (1.05)"), ("jax", 32, "96", 30, 1.0, 1.0, "96")],
        labels=2,
        plot="none",
    )
    said = summaries.auto_over_sweep(summary)
    assert said == (
        "`auto`'s worst cell over 60 cells: torch (ratio 2) 1.05x at batch 8; jax (ratio 96) "
        "1.00x at batch 32; every cell within 1.1x of the faster implementation."
    )
    summary.rows[0][4] = 1.2
    assert summaries.auto_over_sweep(summary).endswith("; over 1.1x: torch at batch 8.")


def test_ready_times_are_against_tensorflow_model_by_model():
    build = make(
        ["model", "backend", "import (s)", "ready (s)", "first detect (s)", "second detect (s)"],
        [
            ("det", "tensorflow", 3.0, 4.0, 5.0, 2.0),
            ("det", "jax", 2.0, 1.0, 10.0, 2.0),
            ("net", "tensorflow", 3.0, 1.0, None, None),
            ("net", "jax", 2.0, 2.0, None, None),
            ("net", "torch", 3.0, 0.5, None, None),
            ("new", "torch", 3.0, "failed", None, None),
            ("old", "tensorflow", "failed", None, None, None),
            ("old", "jax", 2.0, 1.0, None, None),
        ],
        labels=2,
    )
    assert summaries.ready_times(build) == (
        "Time to a ready model against TensorFlow's: jax: det 0.25x (first detect 2.00x), "
        "net 2.00x; torch: net 0.50x."
    )
    build.rows = [row for row in build.rows if row[1] != "tensorflow"]
    assert summaries.ready_times(build) == "No row has a TensorFlow row to be compared with."


def test_the_torch_steps_sentence_says_where_the_compiled_steps_meet_timm_s_time():
    columns = ["model", "steps", "train x timm", "inference x timm"]
    rows = [
        ["m", "timm", 1.0, 1.0],
        ["m", "eager", 1.77, 2.55],
        ["m", "compiled", 0.83, 1.19],
        ["m", "compiled:default", 0.9, 0.95],
    ]
    sentence = summaries.torch_steps(1.0)(make(columns, rows, labels=2))
    assert "at most 1.00x" in sentence and "timm:" not in sentence
    assert "m eager: training 1.77x, inference 2.55x;" in sentence  # no target for eager
    assert "m compiled: training 0.83x (met), inference 1.19x (not met)" in sentence
    assert "m compiled:default: training 0.90x (met), inference 0.95x (met)" in sentence
    on_a_gpu = summaries.torch_steps(1.25)(make(columns, rows, labels=2))
    assert "inference 1.19x (met)" in on_a_gpu


def test_the_operators_sentence_splits_the_convolutions_from_the_rest_against_timm_s():
    columns = ["model", "steps", "step", "operators ms", "convolutions ms"]
    rows = [
        ["m", "timm", "training", 1500.0, 1150.0],
        ["m", "timm", "inference", 400.0, 320.0],
        ["m", "compiled", "training", 1560.0, 1130.0],
        ["m", "compiled", "inference", 380.0, 320.0],
    ]
    sentence = summaries.operator_split(make(columns, rows, labels=3))
    assert "m timm training: convolutions 1150 ms, the rest 350 ms;" in sentence
    assert "m compiled training: convolutions 1130 ms, the rest 430 ms (1.23x timm's)" in sentence
    assert "m compiled inference: convolutions 320 ms, the rest 60 ms (0.75x timm's)" in sentence
    assert "m timm inference: convolutions 320 ms, the rest 80 ms;" in sentence
    rows = [["n", "timm", "training", 900.0, 800.0], *rows]  # another model's timm, first
    sentence = summaries.operator_split(make(columns, rows, labels=3))
    assert "(1.23x timm's)" in sentence  # m's rest against m's timm, not n's


def test_the_counts_sentence_names_each_photo_where_a_column_differs():
    counts = make(
        ["photo", "torchvision", "tensorflow", "jax"],
        [("china", 100, 100, 100), ("flower", 100, 100, 99)],
        plot="none",
    )
    assert summaries.same_counts("torchvision", "detections per photo")(counts) == (
        "torchvision kept 100 / 100 detections per photo; tensorflow the same, "
        "jax differs (flower 99)."
    )


def test_the_spans_sentence_gives_each_column_s_smallest_and_largest_count():
    faults = make(
        ["photo", "torchvision", "tensorflow", "jax"],
        [("china", 500900, 3175, 456234), ("flower", 628883, 3175, None)],
        plot="none",
    )
    assert summaries.spans("minor page faults of one call per photo")(faults) == (
        "Minor page faults of one call per photo: torchvision 500,900-628,883, "
        "tensorflow 3,175, jax 456,234."
    )
    nothing = make(["photo", "torchvision"], [("china", None)], plot="none")
    assert summaries.spans("page faults")(nothing) == "Page faults: none counted."


def test_the_stages_sentence_names_where_each_column_spends_more_over_the_photos():
    stages = ("backbone", "mask head")
    table = make(
        ["photo", "stage", "torchvision", "tensorflow", "jax"],
        [
            ("a", "backbone", 1.0, 0.5, 1.5),
            ("a", "mask head", 0.4, 0.2, 0.3),
            ("a", "whole call", 1.5, 0.8, 2.0),
            ("b", "backbone", 1.0, 0.5, 0.7),
            ("b", "mask head", 0.4, 0.2, 0.6),
            ("b", "whole call", 1.5, 0.8, 1.4),
        ],
        labels=2,
    )
    assert summaries.stages_against("torchvision", stages, "whole call")(table) == (
        "Against torchvision's time per stage, summed over the photos: tensorflow more in no "
        "stage (whole call 0.53x); jax more in backbone 1.10x, mask head 1.12x "
        "(whole call 1.13x)."
    )



def test_batch_norm_kernels_split_by_the_layers_default_path():
    columns = ["map", "values", "Keras' formula (ms)", "PyTorch's kernels (ms)",
               "kernels x formula", "taken by default"]  # fmt: skip
    table = make(
        columns,
        [
            ("8x28x28x512", 3211264, 12.0, 4.8, 0.4, "PyTorch's kernels"),
            ("8x56x56x256", 6422528, 18.0, 13.5, 0.75, "PyTorch's kernels"),
            ("2x4x4x1024", 32768, 0.1, 0.2, 2.0, "Keras' formula"),
        ],
        labels=1,
        plot="none",
    )
    assert summaries.batch_norm_kernels(table) == (
        "Time through PyTorch's kernels as a multiple of Keras' formula's: 0.40-0.75x on the maps "
        "that take the kernels by default; 2.00x on the smaller maps, which keep Keras' formula."
    )


def test_layer_ops_against_timm_with_and_without_the_computing_columns():
    columns = ["layer", "forward ops", "forward+backward ops", "forward ops that compute",
               "forward+backward ops that compute", "forward PyTorch calls"]  # fmt: skip
    rows = [("LambdaLayer einsum", 100, 200, 30, 60, 100), ("timm LambdaLayer", 25, 80, 12, 40, 27)]
    table = make(columns, rows, labels=1, plot="none")
    assert summaries.layer_ops(table) == (
        "Operators against timm's LambdaLayer: LambdaLayer einsum 4.0x forward, 2.5x with the "
        "backward pass (computing: 2.5x, 1.5x)."
    )
    before = [row[:3] + row[5:] for row in rows]
    old = make(columns[:3] + columns[5:], before, labels=1, plot="none")
    assert summaries.layer_ops(old) == (
        "Operators against timm's LambdaLayer: LambdaLayer einsum 4.0x forward, 2.5x with the "
        "backward pass."
    )


def test_the_detection_job_sentence_says_which_runs_left_targets_out_of_the_loss():
    columns = ["backend", "box AP", "mask AP", "box AP50", "mask AP50", "targets left out",
               "training s", "whole run s"]  # fmt: skip
    table = results.Table("detection_job", "t", columns)
    table.add("tensorflow", 0.957, 0.973, 0.998, 1.0, 0, 578, 607)
    table.add("torch", 0.9, 0.91, 0.99, 1.0, 0, 1200, 1300)
    sentence = summaries.detection_job(table)
    assert "on torch box AP 0.900 and mask AP 0.910 (IoU .50:.95) after 1,200 s" in sentence
    assert sentence.endswith("No run left a target out of the loss.")
    table.add("jax", 0.5, 0.6, 0.9, 0.9, 557, 900, 950)
    sentence = summaries.detection_job(table)
    assert "after 900 s of training, 557 target rows left out of the loss" in sentence
    assert sentence.endswith("Only jax left targets out of the loss.")
