"""Compare LambdaLayer with timm's PyTorch LambdaLayer given the same weights.

Run as a script (PyTorch must be imported before TensorFlow in one process). Prints the
largest absolute difference and the output scale for each configuration, one line each.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import torch  # before TensorFlow
from timm.layers.lambda_layer import LambdaLayer as TimmLambdaLayer

from lambda_keras.layers import LambdaLayer


def compare(side_h, side_w, dim, dim_out, scope, seed=0):
    import keras  # after torch, which this module imports first

    torch.manual_seed(seed)
    timm_layer = TimmLambdaLayer(dim, dim_out, num_heads=4, dim_head=16, r=scope).eval()
    torch.nn.init.zeros_(timm_layer.conv_lambda.bias)  # the paper's lambda convolution has none
    for norm in (timm_layer.norm_q, timm_layer.norm_v):  # non-trivial inference statistics
        norm.weight.data.uniform_(0.5, 1.5)
        norm.bias.data.normal_(0, 0.3)
        norm.running_mean.normal_(0, 0.3)
        norm.running_var.uniform_(0.5, 2.0)
    ours = LambdaLayer(dim_out, key_dim=16, num_heads=4, scope_size=scope, batch_norm_epsilon=1e-5)
    ours.build((None, side_h, side_w, dim))
    ours.qkv_kernel.assign(timm_layer.qkv.weight.detach().numpy()[:, :, 0, 0].T)
    # timm's Conv3d weight [k, 1, r, r, 1] over (H, W, V) -> R[r, r, groups=1, k, u=1]
    kernel = timm_layer.conv_lambda.weight.detach().numpy()[:, 0, :, :, 0]
    ours.position_embedding.embeddings.assign(np.transpose(kernel, (1, 2, 0))[:, :, None, :, None])
    for mine, theirs in (
        (ours.query_norm, timm_layer.norm_q),
        (ours.value_norm, timm_layer.norm_v),
    ):
        mine.gamma.assign(theirs.weight.detach().numpy())
        mine.beta.assign(theirs.bias.detach().numpy())
        mine.moving_mean.assign(theirs.running_mean.numpy())
        mine.moving_variance.assign(theirs.running_var.numpy())
    x = np.random.default_rng(seed).normal(size=(2, side_h, side_w, dim)).astype("float32")
    with torch.no_grad():
        expected = timm_layer(torch.from_numpy(x).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
    results = {}
    for impl in ("einsum", "conv", "depthwise"):
        ours.implementation = impl
        got = keras.ops.convert_to_numpy(ours(x, training=False))  # detached on PyTorch
        results[impl] = np.abs(got - expected).max()
    return results, float(np.abs(expected).max())


if __name__ == "__main__":
    # timm assumes dim_out == dim (it reshapes the output with the input channels).
    for config in ((7, 7, 64, 64, 23), (14, 14, 64, 64, 7), (6, 9, 32, 32, 5)):
        results, scale = compare(*config)
        diffs = " ".join(f"{impl}={diff:.3g}" for impl, diff in results.items())
        print(f"config={config} scale={scale:.3g} {diffs}")
    sys.stdout.flush()
