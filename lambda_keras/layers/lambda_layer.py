"""The lambda layer (Bello, "LambdaNetworks", ICLR 2021): Eq. 1-2, Fig. 3, 5, 6, 7 and 8."""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.backend import devices
from lambda_keras.backend.graph_checks import after_checks, is_dynamic
from lambda_keras.layers import lambda_checks
from lambda_keras.layers.batch_normalization import BatchNormalization
from lambda_keras.layers.implementation_choice import (
    IMPLEMENTATIONS,
    choose_implementation,
    num_positions,
)
from lambda_keras.layers.masking import causal_window_mask, context_mask, select_finite_values
from lambda_keras.layers.position_lambdas import (
    conv_position_lambdas,
    depthwise_position_lambdas,
    einsum_position_lambdas,
)
from lambda_keras.layers.relative_position_embedding import RelativePositionEmbedding

__all__ = ["LambdaLayer", "IMPLEMENTATIONS", "KEY_NORMALIZATIONS", "QUERY_NORMALIZATIONS"]

KEY_NORMALIZATIONS = ("softmax", "l2", "none")
"""The values of `key_normalization`: softmax over the context positions (the paper's), L2, or
none."""
QUERY_NORMALIZATIONS = ("none", "softmax")
"""The values of `query_normalization`: none (the paper's, with batch norm) or softmax over
the key depth."""

# The einsum builds the dense embeddings of at most this many elements at a time (64 MiB in
# float32): larger maps are processed in chunks of queries.
EINSUM_CHUNK_ELEMENTS = 2**24


@keras.saving.register_keras_serializable(package="lambda_keras")
class LambdaLayer(keras.layers.Layer):
    """Multi-query lambda layer: content and position lambdas applied to queries.

    For each query position ``n`` the layer builds a linear function
    ``lambda_n = sum_m (softmax_m(k_m) + e_nm) v_m^T`` (``[key_dim, value_dim]``, Eq. 1) from the
    context (the input itself) and applies it to the ``num_heads`` queries of that position:
    ``y_n = concat_h(lambda_n^T q_nh)`` (Eq. 2). ``e_nm`` are translation-equivariant relative
    position embeddings (§3.3) restricted to a local scope or spanning the global context.

    Input: ``[batch, height, width, channels]`` (images) or ``[batch, length, channels]``
    (sequences). Output: the same with ``dim_out`` channels.

    Projections (no bias by default) are one fused kernel ``qkv_kernel`` of shape
    ``[channels, num_heads*key_dim + groups*key_dim*intra_depth + groups*value_dim*intra_depth]``
    whose columns are, in order, the queries ``[heads, key_dim]``, the keys
    ``[groups, key_dim, intra_depth]`` and the values ``[groups, value_dim, intra_depth]``
    (row-major), with ``value_dim = dim_out // num_heads`` and ``groups`` 1 (multi-query) or
    ``num_heads`` (multi-head). Initialisation follows Appendix F.2: keys and values
    ``N(0, d^-1/2)``, queries ``N(0, (key_dim * d)^-1/2)``, position embeddings ``N(0, 1)``.
    Batch normalisation is applied to queries and values; the key softmax, the lambdas and
    their application to the queries are computed in float32 under 16-bit dtype policies
    (``mixed_float16``, ``mixed_bfloat16``) and only the output is cast to the compute dtype.
    Under ``mixed_float16`` that output must fit in float16 (|y| < 65504): it does once batch
    norm statistics are trained, but a freshly initialised layer in inference mode on inputs
    of magnitude ~1e3 produces outputs of ~1e7.

    Args:
        dim_out: Output channels ``d``; defaults to the input channels. Must be divisible by
            ``num_heads``.
        key_dim: Query/key depth ``|k|`` (paper default 16).
        num_heads: Number of queries ``|h|`` per position (paper default 4); the value depth is
            ``|v| = dim_out / num_heads``.
        intra_depth: Intra-depth ``|u|`` (Appendix C.4, Fig. 8); default 1.
        scope_size: Odd extent of the local context of the position lambdas: an int (square for
            images) or a tuple per spatial axis. ``None`` means the global context, i.e. every
            position of the map. Paper default: 23 (23x23). Content lambdas always use the
            global (or masked) context.
        max_size: Global context only: the largest map, per spatial axis, the relative
            embeddings must cover (the embedding window is ``2 * max_size - 1``). Defaults to
            the spatial shape the layer is built with.
        implementation: How position lambdas are computed: ``"einsum"`` (dense relative
            embeddings, Fig. 3), ``"conv"`` (lambda convolution as ``keras.ops.conv`` on 5-D
            ``[b, h, w, v, u]`` values, the paper's conv3d, or 4-D for sequences, Fig. 5/8),
            ``"depthwise"`` (``keras.ops.depthwise_conv`` with channel multiplier ``key_dim``, Fig.
            5; requires ``intra_depth=1``), or ``"auto"``, see
            [`resolve_implementation`][lambda_keras.layers.lambda_layer.LambdaLayer.resolve_implementation].
            All give the same result on finite inputs. A NaN or infinite input value reaches
            every output of its map through the content lambda; in a position-only layer
            (``content=False``) ``"einsum"`` still spreads it over the whole map (its dense
            embeddings multiply every position, zeros outside the scope), where ``"conv"`` and
            ``"depthwise"`` keep it inside the scope.
        content: Whether to use the content lambda (``False``: position-only layer).
        position: Whether to use position lambdas (``False``: content-only layer, i.e.
            multi-query linear attention).
        multi_head: Use the multi-head variant (Fig. 7: per-head keys, values and embeddings,
            ``num_heads`` lambdas per position) instead of the default multi-query layer.
        key_normalization: ``"softmax"`` over context positions (default), ``"l2"`` over context
            positions, or ``"none"`` (Table 11).
        query_normalization: ``"none"`` (default) or ``"softmax"`` over the key depth
            (Table 11).
        query_batch_norm: Batch-normalise the queries (default True, §3.1).
        value_batch_norm: Batch-normalise the values (default True, §3.1).
        batch_norm_momentum: Momentum of those batch normalisations.
        batch_norm_epsilon: Epsilon of those batch normalisations.
        causal: Mask the future (Appendix C.2): query ``n`` only sees context positions
            ``m <= n`` in raster order (for sequences: the usual autoregressive mask). Keys are
            normalised over each query's own context. Masks select, they do not multiply: a
            masked position has no influence on an unmasked output, also not through NaN or
            Inf values; a non-finite value in a query's visible context makes its output NaN.
            Note that batch normalisation in training mode uses statistics of all positions;
            disable it for strictly autoregressive training.
        context_mask: Optional ``[n, n]`` array of booleans (``n`` = positions of the input, in
            raster order): ``context_mask[n, m]`` says whether query ``n`` sees context element
            ``m`` (Fig. 6). Keys are normalised over each query's unmasked context; a query
            whose context is empty gets a zero lambda. Requires the einsum implementation.
        position_embedding: Optional
            [`RelativePositionEmbedding`][lambda_keras.layers.lambda_layer.RelativePositionEmbedding]
            to use (and share with other layers) instead of creating one. Its ``key_dim``,
            ``intra_depth`` and ``groups`` must match this layer, and its ``size`` the local scope.
        use_bias: Whether the projections have a bias (default False, as in the paper).
        use_position_bias: Add a learned per-key constant ``b`` (``[groups, key_dim]``, zeros
            at first) to every position lambda, ``lambda_n += b 1^T``, i.e. ``y_n`` gains
            ``q_n . b`` on every value channel — the bias of timm's lambda convolution
            (``Conv3d(..., bias=True)``). Independent of the context and of masks. Default
            False (the paper's layer has none). Requires ``position=True``.
        kernel_regularizer: Regularizer of the projection kernel (e.g. the paper's L2).

    Examples:
        >>> import numpy as np
        >>> from lambda_keras.layers import LambdaLayer
        >>> # [batch, height, width, channels]
        >>> images = np.zeros((2, 14, 14, 64), "float32")
        >>> layer = LambdaLayer(dim_out=128, key_dim=16, num_heads=4, scope_size=23)
        >>> tuple(layer(images).shape)
        (2, 14, 14, 128)
    """

    def __init__(
        self,
        dim_out: int | None = None,
        key_dim: int = 16,
        num_heads: int = 4,
        intra_depth: int = 1,
        scope_size: int | Sequence[int] | None = 23,
        max_size: int | Sequence[int] | None = None,
        implementation: str = "auto",
        content: bool = True,
        position: bool = True,
        multi_head: bool = False,
        key_normalization: str = "softmax",
        query_normalization: str = "none",
        query_batch_norm: bool = True,
        value_batch_norm: bool = True,
        batch_norm_momentum: float = 0.99,
        batch_norm_epsilon: float = 1e-3,
        causal: bool = False,
        context_mask=None,
        position_embedding: RelativePositionEmbedding | None = None,
        use_bias: bool = False,
        kernel_regularizer: str | keras.regularizers.Regularizer | None = None,
        use_position_bias: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.dim_out = None if dim_out is None else v.positive_int("dim_out", dim_out)
        self.key_dim = v.positive_int("key_dim", key_dim)
        self.num_heads = v.positive_int("num_heads", num_heads)
        self.intra_depth = v.positive_int("intra_depth", intra_depth)
        if self.dim_out is not None:
            v.divisible("dim_out", self.dim_out, "num_heads", self.num_heads)
        self.scope_size = v.scope("scope_size", scope_size)
        self.max_size = v.extent("max_size", max_size)
        if self.max_size is not None and self.scope_size is not None:
            raise ValueError(
                "`max_size` only applies to the global context (scope_size=None); received "
                f"max_size={max_size!r} with scope_size={scope_size!r}."
            )
        self.implementation = v.implementation(
            implementation, IMPLEMENTATIONS, intra_depth=self.intra_depth
        )
        self.content = v.boolean("content", content)
        self.position = v.boolean("position", position)
        self.multi_head = v.boolean("multi_head", multi_head)
        self.key_normalization = v.one_of(
            "key_normalization", key_normalization, KEY_NORMALIZATIONS
        )
        self.query_normalization = v.one_of(
            "query_normalization", query_normalization, QUERY_NORMALIZATIONS
        )
        self.query_batch_norm = v.boolean("query_batch_norm", query_batch_norm)
        self.value_batch_norm = v.boolean("value_batch_norm", value_batch_norm)
        self.batch_norm_momentum = v.number_in(
            "batch_norm_momentum", batch_norm_momentum, 0.0, 1.0, high_open=True
        )
        self.batch_norm_epsilon = v.positive_number("batch_norm_epsilon", batch_norm_epsilon)
        self.causal = v.boolean("causal", causal)
        self.context_mask = v.square_bool_mask("context_mask", context_mask)
        self.use_bias = v.boolean("use_bias", use_bias)
        self.use_position_bias = v.boolean("use_position_bias", use_position_bias)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        lambda_checks.check_combinations(self)

        if isinstance(position_embedding, dict):
            position_embedding = keras.saving.deserialize_keras_object(position_embedding)
        if position_embedding is not None:
            lambda_checks.check_shared_embedding(self, position_embedding)
        self._shared_embedding = position_embedding is not None
        self.position_embedding = position_embedding

    # ------------------------------------------------------------------ checks
    @property
    def groups(self) -> int:
        """Number of lambdas per position: 1 (multi-query) or ``num_heads`` (multi-head)."""
        return self.num_heads if self.multi_head else 1

    # ------------------------------------------------------------------ build
    def build(self, input_shape):
        input_shape = tuple(input_shape)  # a list when a saved model is reloaded
        rank = lambda_checks.check_input_rank(input_shape)
        lambda_checks.check_input_sides(input_shape)
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(
                f"The channel dimension of the inputs must be known; received input shape "
                f"{input_shape}."
            )
        dim_out = self.dim_out or channels
        v.divisible("dim_out", dim_out, "num_heads", self.num_heads)
        self._rank = rank
        self._dim_out = dim_out
        self._value_dim = dim_out // self.num_heads
        spatial = input_shape[1:-1]
        if self.position:
            self._build_position_embedding(spatial)
        lambda_checks.check_map(self, spatial, num_positions(spatial))
        h, k, u, g = self.num_heads, self.key_dim, self.intra_depth, self.groups
        self._splits = [h * k, g * k * u, g * self._value_dim * u]
        self._build_projections(channels)
        self.position_bias = (
            self.add_weight(name="position_bias", shape=(g, k), initializer="zeros")
            if self.use_position_bias
            else None
        )
        self.query_norm = self._batch_norm("query_norm", input_shape, self.query_batch_norm, 0)
        self.value_norm = self._batch_norm("value_norm", input_shape, self.value_batch_norm, 2)
        self.built = True

    def _build_position_embedding(self, spatial):
        """Create the layer's own embeddings, or check that a shared one fits the inputs."""
        rank = len(spatial)
        if self.position_embedding is None:
            size = lambda_checks.embedding_size(self, spatial)
            name = "scope_size" if self.scope_size is not None else "max_size"
            lambda_checks.check_embedding_size(
                name, size, self.key_dim * self.intra_depth * self.groups
            )
            self.position_embedding = RelativePositionEmbedding(
                size=size,
                key_dim=self.key_dim,
                intra_depth=self.intra_depth,
                groups=self.groups,
                rank=rank,
                name="position_embedding",
                dtype=self.dtype_policy,
            )
        elif self.position_embedding.rank != rank:
            raise ValueError(
                f"The shared position_embedding has rank={self.position_embedding.rank} but "
                f"the inputs have {rank} spatial axes (spatial shape {tuple(spatial)})."
            )
        self.position_embedding.build()

    def _build_projections(self, channels: int):
        """The fused query/key/value kernel ``[channels, sum(splits)]`` (App. F.2 init)."""
        k = self.key_dim
        init_kv = keras.initializers.RandomNormal(stddev=channels**-0.5)
        init_q = keras.initializers.RandomNormal(stddev=(k * channels) ** -0.5)

        def qkv_initializer(shape, dtype=None):
            q = init_q((channels, self._splits[0]), dtype=dtype)
            kv = init_kv((channels, self._splits[1] + self._splits[2]), dtype=dtype)
            return keras.ops.concatenate([q, kv], axis=-1)

        self.qkv_kernel = self.add_weight(
            name="qkv_kernel",
            shape=(channels, sum(self._splits)),
            initializer=qkv_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.qkv_bias = (
            self.add_weight(name="qkv_bias", shape=(sum(self._splits),), initializer="zeros")
            if self.use_bias
            else None
        )

    def _batch_norm(self, name: str, input_shape, enabled: bool, split: int):
        """The batch norm of the queries (split 0) or values (split 2), built; None if off."""
        if not enabled:
            return None
        norm = BatchNormalization(
            momentum=self.batch_norm_momentum,
            epsilon=self.batch_norm_epsilon,
            dtype=self.dtype_policy,
            name=name,
        )
        norm.build((*input_shape[:-1], self._splits[split]))
        return norm

    # ------------------------------------------------------------------ call
    def resolve_implementation(
        self, spatial_shape: Sequence[int | None], batch: int | None = None
    ) -> str:
        """The implementation used for inputs of the given spatial shape and batch (None:
        unknown; ``"auto"``: see
        [`choose_implementation`][lambda_keras.layers.implementation_choice.choose_implementation])."""
        return choose_implementation(
            self.implementation,
            spatial_shape,
            scope_size=self.scope_size,
            intra_depth=self.intra_depth,
            masked=self.context_mask is not None,
            batch=batch,
        )

    @property
    def _accumulation_dtype(self) -> str:
        """float32 under 16-bit policies, else the compute dtype (e.g. float64)."""
        dtype = keras.backend.standardize_dtype(self.compute_dtype)
        return "float32" if dtype in ("float16", "bfloat16") else dtype

    def call(self, inputs, training=None):
        x = inputs
        rank = self._rank
        static = x.shape
        if len(static) != rank + 2:
            lambda_checks.check_input_rank(static)
            raise ValueError(
                f"This LambdaLayer was built for inputs of rank {rank + 2}; received input shape "
                f"{tuple(static)}."
            )
        lambda_checks.check_input_sides(static)
        if static[-1] is not None and static[-1] != self.qkv_kernel.shape[0]:
            raise ValueError(
                f"LambdaLayer {self.name!r} was built for inputs with "
                f"{self.qkv_kernel.shape[0]} channels; received input shape {tuple(static)}."
            )
        shape = ops.shape(x)
        batch, spatial = shape[0], list(shape[1:-1])
        n = spatial[0] * spatial[1] if rank == 2 else spatial[0]
        # Nothing runs on a map the layer does not cover: the check's error comes first. In a
        # TensorFlow graph everything computed from the sizes (embedding indices, masks) must
        # wait for the check too, not only the input, or a shape error may win the race.
        checks = lambda_checks.check_map(self, spatial, n)
        x = after_checks(x, checks)
        spatial = [after_checks(s, checks) if is_dynamic(s) else s for s in spatial]
        n = spatial[0] * spatial[1] if rank == 2 else spatial[0]
        h, k, u, g, vd = (
            self.num_heads,
            self.key_dim,
            self.intra_depth,
            self.groups,
            self._value_dim,
        )

        qkv = keras.ops.matmul(x, self.qkv_kernel)
        if self.qkv_bias is not None:
            qkv = qkv + self.qkv_bias
        # Slices, not ops.split: PyTorch's split by sizes reads them on the host (a sync per
        # call, and no compiled graph around it).
        a, b = np.cumsum(self._splits[:2]).tolist()
        q, keys, values = qkv[..., :a], qkv[..., a:b], qkv[..., b:]
        if self.query_norm is not None:
            q = self.query_norm(q, training=training)
        if self.value_norm is not None:
            values = self.value_norm(values, training=training)

        dtype = self._accumulation_dtype
        q = ops.reshape(ops.cast(q, dtype), [batch, n, g, h // g, k])
        if self.query_normalization == "softmax":
            q = _softmax(q, axis=-1)
        keys = ops.reshape(ops.cast(keys, dtype), [batch, n, g, k, u])
        values = ops.reshape(ops.cast(values, dtype), [batch, n, g, vd, u])
        mask = context_mask(self.context_mask, self.causal, n, dtype)
        poisoned = None
        if mask is not None:
            values, poisoned = select_finite_values(values, mask, self.causal)

        # Content lambdas: [b, 1, g, k, v] (shared by all queries) or [b, n, g, k, v] (masked).
        content = self._content_lambdas(keys, values, mask) if self.content else None
        impl = None
        if self.position:
            impl = self.resolve_implementation(static[1:-1], static[0])
        if impl == "einsum":
            y = self._einsum_outputs(q, values, content, spatial, mask)
        else:
            lambdas = content
            if self.position:
                devices.warn_if_slow_convolutions()
                position = self._conv_position_lambdas(values, spatial, impl)
                lambdas = position if lambdas is None else lambdas + position
            y = _apply_lambdas(q, lambdas)
        if self.position_bias is not None:
            bias = ops.cast(self.position_bias, dtype)
            y = y + ops.einsum("bngqk,gk->bngq", q, bias)[..., None]
        if poisoned is not None:
            y = ops.where(poisoned[:, :, None, None, None], ops.full_like(y, np.nan), y)
        y = ops.reshape(y, [batch, *spatial, self._dim_out])
        return ops.cast(y, self.compute_dtype)

    def _content_lambdas(self, keys, values, mask):
        """Content lambdas ``sum_m normalised(k)_m v_m^T`` (Eq. 1, Fig. 6 and 8).

        Args:
            keys: ``[b, m, g, k, u]``; values: ``[b, m, g, v, u]``; mask: ``[n, m]`` or None.

        Returns:
            ``[b, 1, g, k, v]`` (unmasked) or ``[b, n, g, k, v]`` (each query its own context).
        """
        norm = self.key_normalization
        if mask is None:
            if norm == "softmax":
                keys = _softmax(keys, axis=1)
            elif norm == "l2":
                keys = _l2_normalize(keys, axis=1)
            return ops.einsum("bmgku,bmgvu->bgkv", keys, values)[:, None]
        # Masked: normalise the keys over each query's own context, [b, n, m, g, k, u].
        visible = mask[None, :, :, None, None, None] > 0
        keys = keys[:, None]
        if norm == "softmax":
            hidden = ops.where(visible, keys, ops.full_like(keys, -np.inf))
            shift = ops.max(hidden, axis=2, keepdims=True)
            shift = ops.stop_gradient(ops.where(ops.isfinite(shift), shift, 0.0))
            weights = ops.where(visible, ops.exp(keys - shift), 0.0)
            total = ops.sum(weights, axis=2, keepdims=True)
            keys = weights / ops.where(total > 0, total, 1.0)
        else:
            keys = ops.where(visible, keys, 0.0)
            if norm == "l2":
                keys = _l2_normalize(keys, axis=2)
        return ops.einsum("bnmgku,bmgvu->bngkv", keys, values)

    def _einsum_outputs(self, q, values, content, spatial, mask):
        """Outputs with einsum position lambdas, computed in chunks of queries.

        The dense embeddings ``E[k, n, m]`` take ``Θ(knm)`` memory; on large maps they are
        built, used and dropped ``EINSUM_CHUNK_ELEMENTS`` at a time, together with the
        position lambdas of those queries, so the forward pass never holds them whole.

        Args:
            q: ``[b, n, g, q, k]``; values: ``[b, m, g, v, u]``; content: None,
            ``[b, 1, g, k, v]`` or ``[b, n, g, k, v]``; mask: ``[n, m]`` or None.

        Returns:
            ``[b, n, g, q, v]``.
        """
        embedding = self.position_embedding
        n = q.shape[1]
        per_row = (n or 1) * self.groups * self.key_dim * self.intra_depth
        chunk = n if n is None else max(1, min(n, EINSUM_CHUNK_ELEMENTS // per_row))
        table = ops.cast(embedding.flat_table(), values.dtype)
        index = embedding.flat_index(spatial)
        outputs = []
        for start in range(0, n or 1, chunk or 1):
            rows = slice(start, None if n is None else start + chunk)
            dense = ops.take(table, index[rows], axis=3)  # [g, k, u, rows, m]
            if mask is not None:
                dense = dense * mask[rows]
            lambdas = einsum_position_lambdas(dense, values)
            if content is not None:
                lambdas = lambdas + (content if content.shape[1] == 1 else content[:, rows])
            outputs.append(_apply_lambdas(q[:, rows], lambdas))
        return outputs[0] if len(outputs) == 1 else ops.concatenate(outputs, axis=1)

    def _conv_position_lambdas(self, values, spatial, impl):
        """Position lambdas with the lambda convolution: ``[b, n, g, k, v]``."""
        kernel = ops.cast(self.position_embedding.window(spatial), values.dtype)
        if self.causal:
            kernel = kernel * ops.convert_to_tensor(
                causal_window_mask(tuple(kernel.shape[: self._rank])), kernel.dtype
            )
        batch = ops.shape(values)[0]
        grid = ops.reshape(values, [batch, *spatial, *values.shape[2:]])
        fn = conv_position_lambdas if impl == "conv" else depthwise_position_lambdas
        out = fn(kernel, grid)
        n = spatial[0] * spatial[1] if self._rank == 2 else spatial[0]
        return ops.reshape(out, [batch, n, *out.shape[-3:]])  # no -1: the batch may be empty

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        lambda_checks.check_input_rank(input_shape)
        return (*input_shape[:-1], self.dim_out or input_shape[-1])

    # ------------------------------------------------------------------ config
    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "dim_out": self.dim_out,
                "key_dim": self.key_dim,
                "num_heads": self.num_heads,
                "intra_depth": self.intra_depth,
                "scope_size": _to_list(self.scope_size),
                "max_size": _to_list(self.max_size),
                "implementation": self.implementation,
                "content": self.content,
                "position": self.position,
                "multi_head": self.multi_head,
                "key_normalization": self.key_normalization,
                "query_normalization": self.query_normalization,
                "query_batch_norm": self.query_batch_norm,
                "value_batch_norm": self.value_batch_norm,
                "batch_norm_momentum": self.batch_norm_momentum,
                "batch_norm_epsilon": self.batch_norm_epsilon,
                "causal": self.causal,
                "context_mask": None
                if self.context_mask is None
                else self.context_mask.astype(int).tolist(),
                "position_embedding": self.position_embedding if self._shared_embedding else None,
                "use_bias": self.use_bias,
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "use_position_bias": self.use_position_bias,
            }
        )
        return config


# ---------------------------------------------------------------------- helpers
def _apply_lambdas(q, lambdas):
    """``y_n = lambda_n^T q_n`` (Eq. 2) for ``q`` ``[b, n, g, q, k]``.

    ``lambdas`` is ``[b, n, g, k, v]`` or ``[b, 1, g, k, v]`` (one lambda for all queries).
    """
    if lambdas.shape[1] == 1:
        return ops.einsum("bngqk,bgkv->bngqv", q, lambdas[:, 0])
    return ops.einsum("bngqk,bngkv->bngqv", q, lambdas)


def _softmax(x, axis: int):
    """``keras.ops.softmax``; over an axis of one element (a 1x1 map) it is 1, said quietly."""
    return ops.ones_like(x) if x.shape[axis] == 1 else ops.softmax(x, axis=axis)


def _l2_normalize(x, axis: int):
    """``x / max(||x||, 1e-6)`` along ``axis`` (TensorFlow's ``l2_normalize`` rule)."""
    squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * ops.rsqrt(ops.maximum(squares, 1e-12))


def _to_list(value):
    return list(value) if isinstance(value, tuple) else value
