"""A small MLP package whose RMSNorm is a Triton kernel (mlp.ops.rms)."""
