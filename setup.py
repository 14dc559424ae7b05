"""lambda_keras: LambdaNetworks (Bello, ICLR 2021) for Keras 3 on JAX, TensorFlow and PyTorch."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "lambda_keras/__init__.py").read_text())[1]
# The oldest PyTorch and torchvision supported, one fact in lambda_keras/backend/requirements.py
# (which refuses an older PyTorch at import on Keras' PyTorch backend).
_REQUIREMENTS = (HERE / "lambda_keras/backend/requirements.py").read_text()
TORCH_FLOOR, TORCHVISION_FLOOR = (
    re.search(rf'^{name} = "([^"]+)"', _REQUIREMENTS, re.M)[1]
    for name in ("TORCH_FLOOR", "TORCHVISION_FLOOR")
)

# ruff formats the signatures in the API reference.
DOCS = [
    "mkdocs>=1.6",
    "mkdocs-material>=9.5",
    "mkdocstrings[python]>=0.26",
    "ruff>=0.6",
    "mkdocs-jupyter>=0.25",  # the notebooks as pages
]

setup(
    name="lambda-keras",
    version=VERSION,
    description="LambdaNetworks (lambda layers, LambdaResNets) for Keras 3 on JAX, TensorFlow "
    "and PyTorch",
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["lambda_keras", "lambda_keras.*"]),
    package_data={"lambda_keras.zoo": ["imagenet_classes.tsv"]},
    # TensorFlow itself comes from an extra, so users pick the build for their accelerator.
    install_requires=["keras>=3.10", "numpy>=1.26"],
    extras_require={
        "cpu": ["tensorflow-cpu>=2.20,<2.22"],
        "gpu": ["tensorflow[and-cuda]>=2.20,<2.22"],
        "tf": ["tensorflow>=2.20,<2.22"],
        # Keras on JAX (CPU; add jax[cuda12] for GPUs) with tensorflow-cpu for tf.data input,
        # SavedModel export and the TensorFlow-only parts.
        "jax": ["jax[cpu]>=0.4.30", "tensorflow-cpu>=2.20,<2.22"],
        # TPU VMs: Keras on JAX (libtpu from PyPI through jax[tpu]); TensorFlow's TPU builds
        # end at 2.19.1 (keras-team/keras requirements-tensorflow-tpu.txt), Keras' TPU CI runs
        # JAX only. The legacy TensorFlow TPUStrategy path: "tpu-tensorflow" (untested here).
        "tpu": ["jax[tpu]>=0.4.30", "tensorflow-cpu>=2.20,<2.22"],
        "tpu-tensorflow": ["tensorflow-tpu==2.19.1"],
        # Keras on PyTorch (CPU and CUDA wheels from PyPI; several GB with their CUDA libraries);
        # torchvision's NMS kernel serves detection there.
        "torch": [f"torch>={TORCH_FLOOR}", f"torchvision>={TORCHVISION_FLOOR}"],
        # The tests' PyTorch stage (.ci/run): the oldest supported PyTorch and torchvision, and
        # timm, the reference the lambda layer and the timm ports are compared with;
        # scikit-image's photos for the detectors against torchvision (-m slow).
        "test-torch": [
            f"torch=={TORCH_FLOOR}",
            f"torchvision=={TORCHVISION_FLOOR}",
            "timm>=1.0",
            "scikit-image>=0.22",
        ],
        "demo": ["scikit-learn>=1.3"],
        "train": ["scikit-learn>=1.3", "tensorboard>=2.20"],
        "tfds": ["tensorflow-datasets>=4.9", "importlib_resources"],
        # Reading timm's .safetensors checkpoints (convert_timm) without PyTorch; fetching them
        # from the Hugging Face Hub (huggingface_hub: cache, resume, checked downloads).
        "timm": ["safetensors>=0.4", "huggingface_hub>=0.23"],
        # COCO-format data and COCOeval for lambda_keras.detection.
        "detection": ["pycocotools>=2.0.7"],
        # The pyramid backbones as keras-hub backbones and presets (lambda_keras.hub). keras-hub
        # requires tensorflow-text, and with it the full tensorflow wheel beside tensorflow-cpu.
        "hub": ["keras-hub>=0.32"],
        # Running the notebooks in notebooks/ (Jupyter or nbclient).
        "notebooks": ["matplotlib>=3.7", "ipykernel>=6", "nbclient>=0.9", "scikit-learn>=1.3"],
        # The documentation site (mkdocs build --strict; the API reference from the docstrings).
        "docs": DOCS,
        "test": [
            "pytest>=8",
            "pytest-xdist>=3.5",
            "filelock>=3.12",  # pytest-xdist's workers share one build of the site
            # The layers and the zoo on the JAX backend (tests/test_backends.py); PyTorch comes
            # with "test-torch" (its PyPI wheel pulls GB of CUDA libraries), in CI's second stage.
            "jax[cpu]>=0.4.30",
            "ruff>=0.6",
            "scikit-learn>=1.3",
            "tensorboard>=2.20",
            "tensorflow-datasets>=4.9",
            "importlib_resources",
            "safetensors>=0.4",
            "huggingface_hub>=0.23",
            "matplotlib>=3.7",
            "ipykernel>=6",
            "nbclient>=0.9",
            "pycocotools>=2.0.7",
            "keras-hub>=0.32",  # lambda_keras.hub (its docs page imports it)
            *DOCS,  # the tests build the site
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Framework :: Keras",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
