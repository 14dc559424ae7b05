"""Detection data sets, read for the trainer: COCO-format files into ``tf.data``
([`coco`][lambda_keras.training.detection.datasets.coco]), labelme folders into COCO annotations
([`labelme`][lambda_keras.training.detection.datasets.labelme]) and the generated shapes set
([`shapes`][lambda_keras.training.detection.datasets.shapes]). Their COCOeval is
[`lambda_keras.training.detection.evaluation`][lambda_keras.training.detection.evaluation].
Reading data needs TensorFlow (``tf.data``) and pycocotools (the ``[detection]`` extra)."""
