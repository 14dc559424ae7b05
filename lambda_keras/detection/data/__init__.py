"""Detection data and evaluation, apart from the model: COCO-format files into ``tf.data``
(:mod:`.coco`), labelme folders into COCO annotations (:mod:`.labelme`), the generated shapes set
(:mod:`.shapes`) and pycocotools' COCOeval (:mod:`.coco_eval`). Reading data needs TensorFlow
(``tf.data``) and pycocotools (the ``[detection]`` extra)."""

from lambda_keras.backend.requirements import require_tensorflow

require_tensorflow("lambda_keras.detection.data", "reads its data with tf.data")
