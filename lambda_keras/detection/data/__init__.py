"""Detection data and evaluation, apart from the model: COCO-format files into ``tf.data``
([`coco`][lambda_keras.detection.data.coco]), labelme folders into COCO annotations
([`labelme`][lambda_keras.detection.data.labelme]), the generated shapes set
([`shapes`][lambda_keras.detection.data.shapes]) and pycocotools' COCOeval
([`coco_eval`][lambda_keras.detection.data.coco_eval]). Reading data needs TensorFlow (``tf.data``)
and pycocotools (the ``[detection]`` extra)."""

from lambda_keras.backend.requirements import require_tensorflow

require_tensorflow("lambda_keras.detection.data", "reads its data with tf.data")
